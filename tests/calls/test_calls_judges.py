"""A policy's named meaning judges in the pure core: registration of judges and quorum, and
the k-of-n fold of their judgments (a model never votes PASS; a split casts no vote and asks
for a person)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adjudge.calls import parse_request, parse_response, register_contract, register_policy
from adjudge.calls.kernel_rows import determine_call
from adjudge.calls.verify import Citation, Judgment, digest_of, verify_call, wants_judges
from adjudge.errors import CriteriaError

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "calls"
AT = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)


def _load(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


def _policy(judges: list[str], quorum: int | None) -> dict[str, Any]:
    policy = copy.deepcopy(_load("search.policy.json"))
    meaning: dict[str, Any] = {"sample_rate": "1", "judges": judges}
    if quorum is not None:
        meaning["quorum"] = quorum
    policy["meaning"] = meaning
    return policy


def _verify(policy: dict[str, Any], judgments: list[Judgment]) -> Any:
    contract = register_contract(_load("search.contract.json"))
    return verify_call(
        contract,
        register_policy(policy, contract),
        parse_request(_load("search.request.json")),
        parse_response(_load("search.good.response.json")),
        AT,
        judgments=judgments,
    )


def _judgment(result: Any, judge: str, kind: str) -> Judgment:
    """``cited``: a conflict citing the first title exactly; ``forged``: citing a quote that is
    not there; ``none``: no conflict; ``down``: unavailable."""
    title = "Comparing Rust async runtimes"
    cite = {
        "cited": (Citation("/results/0/title", digest_of(title)),),
        "forged": (Citation("/results/0/title", digest_of("something else")),),
    }.get(kind, ())
    return Judgment(
        result.call_id,
        result.response_digest,
        kind != "down",
        conflict=kind in ("cited", "forged"),
        citations=cite,
        judge=judge,
    )


@pytest.mark.parametrize(
    ("kinds", "quorum", "outcome", "verdict", "review"),
    [
        (["cited", "cited"], 2, "fail", "FAIL", False),
        (["cited", "none"], 2, "unavailable", "DEGRADED", True),
        (["cited", "none"], 1, "fail", "FAIL", False),
        (["none", "none"], 2, "no_conflict", "PASS", False),
        (["forged", "forged"], 1, "no_conflict", "PASS", False),
        (["down", "none"], 2, "unavailable", "DEGRADED", False),
        (["down", "down"], 1, "unavailable", "DEGRADED", False),
    ],
)
def test_the_quorum_folds_the_judges(
    kinds: list[str], quorum: int, outcome: str, verdict: str, review: bool
) -> None:
    """k cited conflicts fail; fewer but some is a split for a person; forged citations and
    no-conflict answers cast no vote; too few answers leave the check unavailable."""
    policy = _policy(["a", "b"], quorum)
    first = _verify(policy, [])
    assert wants_judges(first)
    judged = [_judgment(first, key, kind) for key, kind in zip(["a", "b"], kinds, strict=True)]
    result = _verify(policy, judged)
    meaning = next(r for r in result.rows if r.name == "meaning")
    assert (meaning.outcome.value, result.verdict.value) == (outcome, verdict)
    assert result.needs_review is review
    names = {c.name: c.verdict.value for c in determine_call(result, now=AT).checks}
    assert {"meaning:a", "meaning:b"} <= set(names)
    assert "PASS" not in (names["meaning:a"], names["meaning:b"])  # a model never says yes


def test_a_judgment_for_another_call_is_not_considered() -> None:
    """A judge's answer bound to another response digest is unavailable, not a vote."""
    policy = _policy(["a"], 1)
    first = _verify(policy, [])
    stray = Judgment(first.call_id, "sha256:" + "1" * 64, True, True, (), judge="a")
    result = _verify(policy, [stray])
    assert next(r for r in result.rows if r.name == "meaning:a").outcome.value == "unavailable"


@pytest.mark.parametrize(
    "meaning",
    [
        {"sample_rate": "1", "judges": ["a", "a"]},
        {"sample_rate": "1", "judges": ["a"], "quorum": 2},
        {"sample_rate": "1", "judges": ["a"], "quorum": 0},
        {"sample_rate": "1", "judges": "a"},
        {"sample_rate": "1", "judges": [], "quorum": 1},
        {"judges": ["a"]},
    ],
)
def test_malformed_judges_are_refused(meaning: dict[str, Any]) -> None:
    """Repeated keys, a quorum outside 1..n, judges that are not a list, or no sample rate:
    POLICY_INVALID at registration."""
    policy = copy.deepcopy(_load("search.policy.json")) | {"meaning": meaning}
    with pytest.raises(CriteriaError) as refused:
        register_policy(policy, register_contract(_load("search.contract.json")))
    assert refused.value.code == "POLICY_INVALID"
