"""Criteria parsing, limits, dropped fields and post-time admissibility."""

from __future__ import annotations

from typing import Any

import pytest

from adjudge import admissibility, auto_check
from adjudge.autocheck import parse
from adjudge.errors import CriteriaError


def test_misspelled_field_is_dropped_and_recorded() -> None:
    """`min_lenght` sets nothing, and the parse says it was dropped."""
    c = parse({"min_lenght": 500, "min_length": 30})
    assert c.min_length == 30
    assert c.dropped == ("min_lenght",)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ({"min_length": "30"}, "CRITERIA_INVALID"),
        ({"min_length": True}, "CRITERIA_INVALID"),
        ({"min_length": 2.5}, "CRITERIA_INVALID"),
        ({"min_length": None}, "CRITERIA_INVALID"),
        ({"contains_keywords": "revenue"}, "CRITERIA_INVALID"),
        ({"rubric": [{"keywords": ["a"]}]}, "CRITERIA_INVALID"),
        ({"expected_schema": []}, "CRITERIA_INVALID"),
        ({"min_length": 0}, "CRITERIA_OVER_LIMIT"),
        ({"min_length": 1_000_001}, "CRITERIA_OVER_LIMIT"),
        ({"contains_keywords": ["k"] * 51}, "CRITERIA_OVER_LIMIT"),
        ({"forbidden_phrases": ["x" * 201]}, "CRITERIA_OVER_LIMIT"),
        ({"rubric": [{"criterion": "c"}] * 21}, "CRITERIA_OVER_LIMIT"),
        ({"rubric": [{"criterion": "c", "keywords": ["k"] * 21}]}, "CRITERIA_OVER_LIMIT"),
        ({"rubric": [{"criterion": "c", "weight": 101}]}, "CRITERIA_OVER_LIMIT"),
        ({"expected_answer": "x" * 2001}, "CRITERIA_OVER_LIMIT"),
        (
            {"expected_schema": {"properties": {f"p{i}": {} for i in range(51)}}},
            "CRITERIA_OVER_LIMIT",
        ),
        ({"pass_threshold": 101}, "CRITERIA_OVER_LIMIT"),
        ({"regex_pattern": "a" * 201}, "CRITERIA_OVER_LIMIT"),
        ({"acceptance": "a" * 4001}, "CRITERIA_OVER_LIMIT"),
    ],
)
def test_refusals_have_stable_codes(raw: dict[str, Any], code: str) -> None:
    """Wrong types and values past a limit are refused with a code that names the kind."""
    with pytest.raises(CriteriaError) as info:
        parse(raw)
    assert info.value.code == code
    assert info.value.message  # a sentence a person can act on
    # …and the checker turns every one of them into the reference's hard failure.
    verdict = auto_check("The capital of France is Paris.", raw)
    assert verdict.reasons == (
        "Verification criteria exceed the supported size — cannot auto-verify against them",
    )


def test_limits_count_utf16_units() -> None:
    """A list item of 100 emoji is 200 code units: at the limit, not over it."""
    assert parse({"contains_keywords": ["😀" * 100]}).contains_keywords
    with pytest.raises(CriteriaError):
        parse({"contains_keywords": ["😀" * 100 + "a"]})


def _codes(raw: Any, mode: str = "auto") -> list[str]:
    return [e.code for e in admissibility(raw, mode)]


def test_admissibility() -> None:
    """The post-time refusals of spec 000, each with its code."""
    assert _codes({"min_length": 10}) == []
    assert _codes({"forbidden_phrases": ["lorem"]}) == ["AUTO_CRITERIA_REQUIRED"]
    assert _codes({}) == ["AUTO_CRITERIA_REQUIRED"]
    assert _codes({}, "manual") == []
    assert _codes({"min_length": 10}, "oracle") == ["VERIFICATION_MODE_UNSUPPORTED"]
    assert _codes({"regex_pattern": "(a+)+"}) == [
        "REGEX_PATTERN_UNUSABLE",
        "AUTO_CRITERIA_REQUIRED",
    ]
    assert _codes({"regex_pattern": "(["}) == ["REGEX_PATTERN_UNUSABLE", "AUTO_CRITERIA_REQUIRED"]
    assert _codes({"regex_pattern": "^\\d+$"}) == []
    assert _codes({"expected_schema": {"properties": {"a": {}}}}) == ["AUTO_CRITERIA_REQUIRED"]
    assert _codes({"expected_schema": {"type": "object"}}) == []
    assert _codes({"rubric": [{"criterion": "x"}]}) == ["AUTO_CRITERIA_REQUIRED"]
    assert _codes({"rubric": [{"criterion": "x", "keywords": ["k"]}]}) == []
    assert _codes({"expected_answer": "  "}) == ["AUTO_CRITERIA_REQUIRED"]
    assert _codes({"min_length": "x"}) == ["CRITERIA_INVALID"]
