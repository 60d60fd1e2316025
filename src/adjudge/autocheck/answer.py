"""``expected_answer``: matching by words, competing answers, buried answers.

Spec 000: "Matching compares words, so "Paris.", "**Paris**", and "The answer is Paris" all match
``Paris``, and a number like ``443.21`` stays one word." A short answer (3 words or fewer) is a
gate: every expected word present, no competing answer (another number when a number is
expected, the opposite of yes/no/true/false), and not buried (the expected words at least a third
of the result's distinct words, filler aside). A longer answer scores the share of its words.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from adjudge.autocheck import chars
from adjudge.autocheck._unicode_tables import NUMBER, NUMBER_ASTRAL
from adjudge.autocheck.jsvalues import includes
from adjudge.autocheck.text import canonical, flatten, lower

SHORT_EXPECTED_TOKENS = 3
MIN_EXPECTED_SHARE = 1 / 3

# Words that dress a short answer without being a competing answer.
ANSWER_DRESSING = frozenset(
    [
        "the",
        "a",
        "an",
        "is",
        "are",
        "was",
        "it",
        "its",
        "it's",
        "this",
        "that",
        "of",
        "to",
        "in",
        "for",
        "and",
        "so",
        "answer",
        "result",
        "final",
        "correct",
        "output",
        "value",
        "equals",
        "equal",
        "therefore",
        "thus",
        "hence",
    ]
)
OPPOSITES = {"yes": ("no",), "no": ("yes",), "true": ("false",), "false": ("true",)}

# Answer tokens keep a number whole ("12.5", "1,234.56"), so "13.5" never half-matches "12.5".
_NUMBER = re.compile(f"(?:[{NUMBER}]|[{NUMBER_ASTRAL}])+(?:[.,](?:[{NUMBER}]|[{NUMBER_ASTRAL}])+)*")


def answer_words(text: str) -> list[str]:
    """The lowercase answer tokens of ``text``."""
    return chars.tokens(lower(text), True)


def is_number(token: str) -> bool:
    """Whether an answer token is a number."""
    return _NUMBER.fullmatch(token) is not None


def is_short(expected: str) -> bool:
    """A short expected answer (3 words or fewer) is a gate; a longer one is scored."""
    return len(answer_words(flatten(canonical(expected)))) <= SHORT_EXPECTED_TOKENS


def score_expected_answer(
    expected_raw: str, flat_output: str, note: Callable[[str], None]
) -> float:
    """Score the deliverable ``flat_output`` against the poster's answer; ``note`` gets why not."""
    expected_text = flatten(canonical(expected_raw))
    expected = answer_words(expected_text)
    if not expected:
        # Nothing word-like to compare ("->", "∅"): literal containment, in code units.
        return 1.0 if includes(flat_output, expected_text) else 0.0
    # An ordered set: first appearance first.
    actual = dict.fromkeys(chars.distinct_tokens(lower(flat_output), True))
    overlap = sum(1 for w in expected if w in actual) / len(expected)
    if len(expected) > SHORT_EXPECTED_TOKENS:
        return overlap
    # A short answer is right or wrong: "George Bush" is not half of "George Washington".
    if overlap < 1:
        if overlap > 0:
            note("only part of the expected answer is present")
        return 0.0
    expected_set = set(expected)
    others = [w for w in actual if w not in expected_set and w not in ANSWER_DRESSING]
    expects_number = any(is_number(w) for w in expected)
    opposites = {o for e in expected for o in OPPOSITES.get(e, ())}
    competing = [w for w in others if (expects_number and is_number(w)) or w in opposites]
    if competing:
        note(f'output also offers "{competing[0]}" — more than one answer')
        return 0.0
    if len(expected_set) / (len(expected_set) + len(others)) < MIN_EXPECTED_SHARE:
        note(f"expected answer is present but buried among {len(others)} other words")
        return 0.0
    return 1.0
