"""The criteria lint: its vectors, the margin judged by the real auto check, and its invariants."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge import auto_check
from adjudge.app.tasks import criteria_refusals
from adjudge.app.wiring import AutoCheck
from adjudge.autocheck.jsvalues import utf16_len
from adjudge.autocheck.lint import CODES, lint
from adjudge.errors import CriteriaError

VECTORS = Path(__file__).parent.parent / "vectors"
FILE = json.loads((VECTORS / "criteria_lint.json").read_text(encoding="utf-8"))
SCHEMA = json.loads((VECTORS / "criteria_lint.schema.json").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = FILE["vectors"]


def test_the_vector_file_fits_its_schema() -> None:
    """The vectors are data with a schema: every code they name is a code the lint has."""
    jsonschema.validate(FILE, SCHEMA)
    assert SCHEMA["properties"]["vectors"]["items"]["properties"]["codes"]["items"]["enum"] == list(
        CODES
    )


def test_every_code_has_a_vector() -> None:
    """Each finding code is pinned by at least one vector."""
    assert {code for case in CASES for code in case["codes"]} == set(CODES)


@pytest.mark.parametrize("case", CASES, ids=[c["description"] for c in CASES])
def test_vector(case: dict[str, Any]) -> None:
    """The codes found (in any order), and whether some cheap result passes, and how."""
    found = lint(
        case["criteria"], brief=case.get("brief"), longest_result=case.get("longest_result")
    )
    assert sorted(f.code for f in found.findings) == sorted(case["codes"])
    assert (found.margin is not None) == case["margin"]
    if found.margin is not None:
        assert found.margin.how == case["margin_how"]
        verdict = auto_check(found.margin.result, case["criteria"])
        assert verdict.passed and verdict.score == found.margin.score


@pytest.mark.parametrize("case", CASES, ids=[c["description"] for c in CASES])
def test_posting_refusals_are_what_posting_refuses(case: dict[str, Any]) -> None:
    """A finding marked ``posting_refuses`` is one the service refuses an auto post for, by the
    same functions: the service refuses exactly when the lint says it will."""
    found = lint(case["criteria"], brief=case.get("brief"))
    refused = {f.code for f in found.findings if f.posting_refuses}
    service = {e.code for e in AutoCheck().admissibility(case["criteria"], "auto")}
    service |= {e.code for e in criteria_refusals(case["criteria"])}
    assert service <= refused
    assert bool(service) == bool(refused)


def test_a_finding_names_a_field_of_the_criteria() -> None:
    """Each finding's field is a field the criteria set, ``pass_threshold`` (set or at its
    default of 60), or ``criteria`` for the whole; each message is a finished sentence."""
    for case in CASES:
        for f in lint(case["criteria"], brief=case.get("brief")).findings:
            top = f.field.split(".")[0].split("[")[0]
            assert top in ("criteria", "pass_threshold") or top in case["criteria"], f
            assert f.message.endswith((".", "?", ")")), f.message


def test_the_regex_is_judged_by_the_javascript_engine() -> None:
    """``[^]`` is any character in JavaScript and a syntax error in Python's ``re``: the lint
    reads it as the auto check does, so it matches the empty string and every text."""
    found = lint({"regex_pattern": "[^]*"})
    empty = [f for f in found.findings if f.code == "REGEX_MATCHES_EMPTY"]
    assert len(empty) == 1 and "whatever the result says" in empty[0].message


def test_every_candidate_is_judged_by_the_check_given() -> None:
    """The margin is whatever the check says: a check that fails everything leaves none, and
    each candidate is judged once."""
    seen: list[str] = []

    def refuse_all(result: Any, criteria: Any, **kw: Any) -> Any:
        seen.append(result)
        return auto_check("", criteria)  # an empty result: a hard failure

    found = lint({"min_length": 200}, check=refuse_all)
    assert found.margin is None and found.summary.startswith("No cheap result passes")
    assert len(seen) >= found.candidates > 0


def test_the_margin_is_the_shortest_passing_candidate() -> None:
    """With keywords at min_length 20, the bare keywords (22 characters) beat every padded one."""
    found = lint({"min_length": 20, "contains_keywords": ["escrow", "refund", "deadline"]})
    assert found.margin is not None
    assert (found.margin.result, found.margin.score, found.margin.length) == (
        "escrow refund deadline",
        100,
        22,
    )
    assert "22-character result" in found.summary


def test_the_hidden_answer_is_never_material() -> None:
    """Candidates come from what an agent sees: an expected answer that nothing public gives
    away leaves no margin, even though the answer alone would pass."""
    crit = {"expected_answer": "Canberra", "required_fields": ["capital"]}
    assert auto_check("capital: Canberra", crit).passed
    found = lint(crit)
    assert found.margin is None


def test_criteria_that_do_not_parse_are_refused_with_their_code() -> None:
    """Only unusable criteria raise, with the same codes as parsing."""
    with pytest.raises(CriteriaError) as wrong_type:
        lint({"min_length": "10"})
    assert wrong_type.value.code == "CRITERIA_INVALID"
    with pytest.raises(CriteriaError) as over:
        lint({"contains_keywords": ["x"] * 51})
    assert over.value.code == "CRITERIA_OVER_LIMIT"


def test_a_large_floor_is_reached_exactly() -> None:
    """Filler reaches a floor of 100,000 characters, and the margin's length is its own."""
    found = lint({"min_length": 100_000})
    assert found.margin is not None
    assert 100_000 <= found.margin.length < 100_020
    assert found.margin.length == utf16_len(found.margin.result)


WORDS = ["escrow", "refund", "hash", "chain", "ipsum", "art", "summary", "Paris", "yes", " ", ""]
word_lists = st.lists(st.sampled_from(WORDS), max_size=4)
valid_criteria = st.fixed_dictionaries(
    {},
    optional={
        "min_length": st.integers(1, 400),
        "max_length": st.integers(1, 500),
        "contains_keywords": word_lists,
        "forbidden_phrases": word_lists,
        "required_fields": word_lists,
        "expected_answer": st.sampled_from(
            ["42", "Paris", "yes", "the quick brown fox jumps", " "]
        ),
        # Bounded or quick patterns only: a wall-clock timeout is not a property of the lint.
        "regex_pattern": st.sampled_from(
            ["^\\d+$", "Paris", "[a-z]+", "\\d*", "^INV-2026$", "[^]*", "(a+)+", "([", ""]
        ),
        "expected_schema": st.sampled_from(
            [{}, {"type": "object"}, {"required": ["a"]}, {"properties": {"b": {"type": "x"}}}]
        ),
        "rubric": st.lists(
            st.fixed_dictionaries(
                {"criterion": st.sampled_from(["depth", "sources"])},
                optional={
                    "keywords": word_lists,
                    "min_mentions": st.integers(1, 4),
                    "weight": st.sampled_from([0.5, 1, 3]),
                },
            ),
            max_size=3,
        ),
        "pass_threshold": st.floats(0, 100),
        "misspelled": st.integers(),
    },
)
briefs = st.one_of(st.none(), st.lists(st.sampled_from(WORDS), max_size=40).map(" ".join))


@settings(max_examples=150, deadline=None)
@given(valid_criteria, briefs, st.sampled_from([None, 300, 200_000]))
def test_the_margin_really_passes_and_lint_never_raises(
    crit: dict[str, Any], brief: Any, longest: int | None
) -> None:
    """On any valid criteria the lint answers; its margin passes the auto check with the score
    and length it reports, and fits the longest result; its codes are known; and it leaves the
    criteria as they were."""
    before = copy.deepcopy(crit)
    found = lint(crit, brief=brief, longest_result=longest)
    assert crit == before
    assert {f.code for f in found.findings} <= set(CODES)
    if found.margin is not None:
        verdict = auto_check(found.margin.result, crit)
        assert verdict.passed
        assert verdict.score == found.margin.score
        assert found.margin.length == utf16_len(found.margin.result)
        assert longest is None or len(found.margin.result) <= longest
    json.dumps(found.to_dict())  # the answer is JSON as it is
