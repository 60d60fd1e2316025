"""Falsifiability by witness, for the gates a poster declares (spec 002's rail: "An obligation
that cannot fail is refused"; its criteria are spec 000's).

A gate is falsifiable when some result fails it, and a result that fails it proves so. For each
gate set, this builds witnesses meant to fail that gate alone — results that avoid a keyword,
carry a forbidden phrase, hold no required field, match nothing but the empty string — and runs
the real auto check on them with that gate alone. A gate that scores 100% on every witness is
refused: ``contains_keywords: [" "]``, ``regex_pattern: ".*"`` or ``"a*"`` (they match any
text, including none), a ``required_fields`` name that is blank, a forbidden phrase that folds to
nothing. "A false refusal costs an argument; a false admission signs a verdict that means
nothing."
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from adjudge.autocheck.check import auto_check

#: Filler words a witness is made of: long enough for every floor and word count.
_FILLER = (
    "quiet river stone lamp orchard window ledger harbor violet canyon meadow saddle "
    "pencil garden thunder marble copper lantern feather compass "
)
#: Characters a witness may be written in, when avoiding what a gate looks for.
_ALPHABETS = ("q", "z", "ж", "م", "9")


def _avoiding(needles: list[str]) -> list[str]:
    """Witness texts that contain none of ``needles``' characters, where one can be found."""
    used = set("".join(needles))
    return [
        " ".join(letter * n for n in range(1, 41))  # 40 distinct words of one letter
        for letter in _ALPHABETS
        if letter not in used
    ]


def _witnesses(field: str, value: Any) -> list[object]:
    """Results meant to fail the gate ``field`` alone."""
    if field == "contains_keywords":
        return [*_avoiding([str(k) for k in value]), _FILLER * 3]
    if field == "forbidden_phrases":
        return [f"{_FILLER} {phrase} {_FILLER}" for phrase in value if isinstance(phrase, str)]
    if field in ("required_fields", "expected_schema"):
        return ['{"unrelated": "value"}', _FILLER * 2]
    if field == "regex_pattern":
        return ["\n", "0", "x", _FILLER, "-" * 40]
    if field == "expected_answer":
        return ["The answer is 7.", "The answer is no.", _FILLER * 2]
    return []


_GATES: tuple[str, ...] = (
    "required_fields",
    "expected_schema",
    "forbidden_phrases",
    "contains_keywords",
    "regex_pattern",
    "expected_answer",
)


def unfalsifiable(
    criteria: Mapping[str, Any], check: Callable[..., Any] = auto_check
) -> list[tuple[str, str]]:
    """The gates of ``criteria`` no witness could fail, each with why: ``(field, sentence)``.

    Only gates that parse are judged (the criteria checks refuse the rest); a gate with nothing
    to test (an empty list) is the auto check's own concern. A witness the check fails before
    scoring (a hard failure) proves nothing either way; a gate is refused only when some
    witness reached it and none failed it.
    """
    found = []
    for field in _GATES:
        value = criteria.get(field)
        if value in (None, [], {}, ""):
            continue
        alone = {field: value, "min_length": 1}
        reached = failed = False
        for witness in _witnesses(field, value):
            item = next((i for i in check(witness, alone).breakdown if i.name == field), None)
            if item is None:
                continue  # a hard failure: this witness never reached the gate
            reached = True
            if item.score < 1:
                failed = True  # a witness that fails it: the gate is falsifiable
                break
        if reached and not failed:
            found.append(
                (
                    field,
                    f"no result can fail `{field}` as written (every witness passed it), so "
                    "it checks nothing; write it so that some result fails it",
                )
            )
    return found
