"""JavaScript's strings where they show in a verdict: code-unit matching, surrogate halves that
meet again, the result read as JSON, zod's ``__proto__``, and what adjudge does where the
reference throws. The reference's own outputs for these are in autocheck_reference.json."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adjudge import auto_check
from adjudge.autocheck import parse, result_text
from adjudge.autocheck.jsvalues import includes, to_units
from adjudge.autocheck.text import canonical, fold, phrase_text
from adjudge.errors import CriteriaError

EMOJI = "\U0001f600"  # 😀, the code units d83d de00
REPORT = (
    "The quarterly review covers revenue, churn and hiring across the three regions. "
    "Revenue grew eight percent on the year, driven mostly by the Nordic accounts."
)


@pytest.mark.parametrize(
    ("text", "needle", "found"),
    [
        (f"x{EMOJI}y", "\ud83d", True),  # the high half of the pair
        (f"x{EMOJI}y", "\ude00", True),  # the low half
        (f"x{EMOJI}y", "x\ud83d", True),
        (f"x{EMOJI}y", "\ude00y", True),
        (f"x{EMOJI}y", "\ude00x", False),
        ("no emoji", "\ud83d", False),
        (f"x{EMOJI}y", EMOJI, True),
        ("x\ud83dy", "\ud83d", True),  # a lone half finds a lone half
    ],
)
def test_includes_compares_code_units(text: str, needle: str, found: bool) -> None:
    assert includes(text, needle) is found


@given(st.text(max_size=12), st.text(max_size=4))
def test_includes_is_containment_of_the_code_unit_views(text: str, needle: str) -> None:
    assert includes(text, needle) is (to_units(needle) in to_units(text))


@pytest.mark.parametrize(
    "criteria",
    [
        {"contains_keywords": ["\ud83d"], "min_length": 20},
        {"rubric": [{"criterion": "emoji", "keywords": ["\ude00"]}], "min_length": 20},
        {"expected_answer": "\ud83d"},
    ],
)
def test_half_a_pair_is_found_inside_an_emoji(criteria: dict[str, object]) -> None:
    """Keywords, rubric keywords and a symbol-only expected answer match code units."""
    result = f"x{EMOJI}y" if "expected_answer" in criteria else f"Emoji {EMOJI} here. {REPORT}"
    assert auto_check(result, criteria).passed


def test_half_a_pair_as_a_forbidden_phrase_fails_an_emoji() -> None:
    verdict = auto_check(f"Emoji {EMOJI} here. {REPORT}", {"forbidden_phrases": ["\ude00"]})
    assert verdict.reasons == ("forbidden_phrases: 0%",)


@pytest.mark.parametrize("invisible", ["\u2060", "\u200b", "\u00ad", "\ufe0f", "\ufeff", "\x07"])
def test_halves_an_invisible_stood_between_are_one_character(invisible: str) -> None:
    """Removing the invisible brings the halves together: JavaScript then reads 𝕒, and
    folding makes it "a" (the text is not normalized again, as in the reference)."""
    text = f"un\ud835{invisible}\udd52ble"
    assert canonical(text) == "un\U0001d552ble"
    assert phrase_text(text) == "unable"
    verdict = auto_check(f"I was {text} to finish it.", {"min_length": 20})
    assert verdict.reasons == ("Output is a failure excuse, not a deliverable",)


def test_halves_a_mark_stood_between_are_one_character_after_folding() -> None:
    """Folding removes the mark after NFKD, so the character it leaves is not decomposed."""
    assert fold("\ud835\u0301\udd52") == "\U0001d552"


def test_halves_side_by_side_are_one_character_from_the_start() -> None:
    """Two surrogate code points in a Python string are the character JavaScript reads there,
    normalized like any other."""
    assert canonical("un\ud835\udd52ble") == "unable"
    verdict = auto_check("I was un\ud835\udd52ble to finish it.", {"min_length": 20})
    assert verdict.reasons == ("Output is a failure excuse, not a deliverable",)


@pytest.mark.parametrize(
    ("result", "text"),
    [
        ("", '""'),
        ("Paris", '"Paris"'),
        ("two\nlines", '"two\\nlines"'),
        (True, "true"),
        (3.25, "3.25"),
        ([], "[]"),
        ({"output": "the text"}, "the text"),
        ({"output": 5}, '{"output":5}'),
        (None, ""),
    ],
)
def test_a_json_result_is_read_as_its_json_text(result: object, text: str) -> None:
    """Spec 000: a string ``output`` field, "otherwise it reads the whole result as JSON". A
    JSON string is a value like any other; ``null``, on which the reference throws, is no
    result (and so "Empty output")."""
    assert result_text(result, json_value=True) == text


def test_a_python_string_is_the_text_unless_it_is_a_json_value() -> None:
    assert result_text("Paris") == "Paris"
    assert auto_check("", {"min_length": 1}).reasons == ("Empty output",)
    assert auto_check("", {"min_length": 1}, json_value=True).reasons == (
        "Output too short: 2 characters, minimum 20",
    )
    assert auto_check(None, {"min_length": 1}, json_value=True).reasons == ("Empty output",)


def _properties(n: int, **extra: object) -> dict[str, object]:
    return {"expected_schema": {"properties": {**{f"k{i}": {} for i in range(n)}, **extra}}}


def test_a_proto_property_is_not_counted() -> None:
    """zod's record drops ``__proto__`` before the 50-entry limit counts the properties."""
    assert parse(_properties(50, __proto__={"type": "string"})).expected_schema is not None
    with pytest.raises(CriteriaError) as over:
        parse(_properties(51))
    assert over.value.code == "CRITERIA_OVER_LIMIT"


@pytest.mark.parametrize("value", [5, None, {"type": 5}, []])
def test_a_proto_property_is_still_validated(value: object) -> None:
    with pytest.raises(CriteriaError) as bad:
        parse(_properties(3, __proto__=value))
    assert bad.value.code == "CRITERIA_INVALID"


@pytest.mark.parametrize(
    ("output", "passed"),
    [
        ("The constructor is ready.", True),
        ("constructor yes", True),
        ("constructor", True),
        ("The constructor or a builder, maybe both", False),  # buried, like any other word
    ],
)
def test_constructor_is_an_ordinary_expected_word(output: str, passed: bool) -> None:
    """The reference looks opposites up in a plain object, so ``constructor`` finds
    Object.prototype's and its scorer throws ("[CRASHED] expected_answer: …"). adjudge does
    not copy the crash: a word with no opposite has none, whatever its name."""
    verdict = auto_check(output, {"expected_answer": "constructor"})
    assert verdict.passed is passed
    assert not verdict.errors
    assert json.loads(verdict.to_json())["breakdown"][0]["reason"] == ""
