"""Invariants of the auto check over arbitrary text, JSON values and criteria."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge import auto_check
from adjudge.autocheck.check import PASSED_REASON
from adjudge.autocheck.jsvalues import to_units
from adjudge.autocheck.text import count_words, words

WORDS = [
    "revenue",
    "churn",
    "Paris",
    "42",
    "unable",
    "I was unable to",
    "status",
    "failed",
    "Not done",
    "## Summary",
    "Summary:",
    "{",
    "}",
    '"',
    "```json",
    "\n",
    " ",
    "é",
    "😀",
    "\u200b",
    "as an AI",
    "sorry",
    "lorem ipsum",
    "yes",
    "no",
    "3.14",
    "£",
]

texts = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(WORDS), max_size=80).map(" ".join),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
results = st.one_of(texts, st.dictionaries(st.sampled_from(["output", "a", "1"]), json_values))
short_lists = st.lists(st.sampled_from([*WORDS, "name", "price", ""]), max_size=4)
criteria = st.fixed_dictionaries(
    {},
    optional={
        "min_length": st.integers(1, 400),
        "contains_keywords": short_lists,
        "forbidden_phrases": short_lists,
        "required_fields": short_lists,
        "expected_answer": st.sampled_from(["42", "Paris", "yes", "the quick brown fox jumps"]),
        "regex_pattern": st.sampled_from(["^\\d+$", "Paris", "[a-z]+", "(a+)+", "([", ""]),
        "max_length": st.integers(1, 500),
        "expected_schema": st.sampled_from([{}, {"type": "object"}, {"required": ["a"]}]),
        "rubric": st.lists(
            st.fixed_dictionaries(
                {"criterion": st.sampled_from(["depth", "sources"])},
                optional={
                    "keywords": short_lists,
                    "min_mentions": st.integers(1, 3),
                    "weight": st.sampled_from([0.5, 1, 3]),
                },
            ),
            max_size=3,
        ),
        "pass_threshold": st.floats(0, 100),
        "misspelled": st.integers(),
    },
)
anything = st.one_of(json_values, criteria)


@settings(max_examples=400, deadline=None)
@given(results, criteria)
def test_verdict_invariants(result: Any, crit: dict[str, Any]) -> None:
    """Score in 0..100; a failed gate never passes; pass starts with the pass reason."""
    verdict = auto_check(result, crit)
    assert 0 <= verdict.score <= 100
    if any(item.gate and item.score < 1 for item in verdict.breakdown):
        assert not verdict.passed
    if verdict.passed:
        assert verdict.reasons[0] == PASSED_REASON
        assert verdict.exact_score >= crit.get("pass_threshold", 60) / 100
    if not verdict.breakdown:
        assert not verdict.passed and verdict.score == 0 and len(verdict.reasons) == 1
    assert json.loads(verdict.to_json()) == verdict.to_dict()


@settings(max_examples=300, deadline=None)
@given(results, anything)
def test_never_raises_on_any_criteria(result: Any, crit: Any) -> None:
    """Any JSON value as criteria is a verdict, never an exception; junk never passes."""
    verdict = auto_check(result, crit)
    if not isinstance(crit, dict):
        assert verdict.reasons[0].startswith("Verification criteria exceed")


@settings(max_examples=200, deadline=None)
@given(results, criteria)
def test_deterministic(result: Any, crit: dict[str, Any]) -> None:
    """The same inputs always give the same bytes."""
    assert auto_check(result, crit).to_json() == auto_check(result, crit).to_json()


# Mostly short words over two letters (so prefixes repeat and split words), and the characters
# that make word boundaries hard: quotes, hyphens, a final sigma, astral ideographs. Drawn as
# one string, the pieces of two characters (and a second space, so spaces come twice as often)
# standing in as \x01-\x05: a list of some hundreds of pieces was 0.02 s of the engine's choices
# each, most of the test.
_PIECES = str.maketrans({"\x01": "ab", "\x02": "ba", "\x03": " ", "\x04": "  ", "\x05": ".\n"})
_wordy = st.text("ab\x01\x02 \x03\x04'-\x05Σé😀数\U00020000", min_size=100, max_size=900).map(
    lambda text: text.translate(_PIECES)
)


@settings(max_examples=400)
@given(_wordy, st.integers(0, 30), st.integers(0, 10))
def test_count_words_is_exact_below_its_bounds(
    text: str, enough: int, enough_distinct: int
) -> None:
    """The count is the whole text's, or a prefix's (its first words) that reaches both bounds."""
    every = words(text)
    exact = (len(every), len(set(every)))
    total, distinct = count_words(to_units(text), enough, enough_distinct)
    if (total, distinct) != exact:
        assert enough <= total <= exact[0]
        assert enough_distinct <= distinct == len(set(every[:total]))
