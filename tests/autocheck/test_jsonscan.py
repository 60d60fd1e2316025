"""The JSON object scan: the same objects as the walk it replaced, in work linear in the text."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge import auto_check
from adjudge.autocheck import items, jsonscan
from adjudge.autocheck.jsonscan import (
    _FENCE,
    JSON_SCAN_CAP,
    JSON_SCAN_MAX_STARTS,
    _as_object,
    _Closings,
    extract_json_object,
)
from adjudge.autocheck.jsvalues import slice16, trim

# The oracle: the scan as it was, every start walking the rest of the text on its own.
_OLD_BRACE_SCAN = re.compile(r'[{}"\\]')
_OLD_IN_STRING = re.compile(r'["\\]')


def _old_extract_json_object(output: str) -> dict[str, Any] | None:
    src = slice16(output, 0, JSON_SCAN_CAP) if len(output) > JSON_SCAN_CAP // 2 else output
    if "{" not in src:
        return None
    whole = _as_object(trim(src))
    if whole is not None:
        return whole
    if "```" in src:
        for m in _FENCE.finditer(src):
            fenced = _as_object(trim(m.group(1)))
            if fenced is not None:
                return fenced
    starts = 0
    start = src.find("{")
    while start != -1 and starts < JSON_SCAN_MAX_STARTS:
        end = _old_balanced_end(src, start)
        if end is not None:
            candidate = _as_object(src[start : end + 1])
            if candidate is not None:
                return candidate
        start = src.find("{", start + 1)
        starts += 1
    return None


def _old_balanced_end(src: str, start: int) -> int | None:
    depth = 0
    pos = start
    while (m := _OLD_BRACE_SCAN.search(src, pos)) is not None:
        ch = m.group()
        i = m.start()
        if ch == '"':
            j = i + 1
            while (s := _OLD_IN_STRING.search(src, j)) is not None and s.group() == "\\":
                j = s.start() + 2
            if s is None:
                return None
            pos = s.start() + 1
            continue
        if ch == "\\":
            pos = i + 1
            continue
        if ch == "{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i
        pos = i + 1
    return None


# Texts made mostly of what the scan reads, and pieces of real objects so that some parse.
_CHARS = st.sampled_from([*'{}[]"\\:,a1 \n\t', "\\\\", '\\"', "é", "😀", "\u2028", "\ufeff"])
_PIECES = st.sampled_from(
    ['{"a":1}', '{"summary":"x"}', '"\\"}"', "```json\n", "```", '{"a":{', "}}", "[{}]", "null"]
)
_TEXTS = st.lists(_CHARS | _PIECES | st.characters(), max_size=60).map("".join)
# The same pieces as _CHARS drawn as one string, the two escaped pairs standing in as \x01 and
# \x02: a list of some hundreds of pieces was 0.03 s of the engine's choices each (90% of the
# test), a string is one choice.
_PAIRS = str.maketrans({"\x01": "\\\\", "\x02": '\\"'})
_LONG_TEXTS = st.text('{}[]"\\:,a1 \n\t\x01\x02é😀\u2028\ufeff', min_size=200, max_size=3000).map(
    lambda text: text.translate(_PAIRS)
)


def _same(text: str) -> None:
    """The extraction and every start's closing brace agree with the old walk exactly."""
    assert repr(extract_json_object(text)) == repr(_old_extract_json_object(text))
    closings = _Closings(text)
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        assert closings.end(start) == _old_balanced_end(text, start), (text, start)


@settings(max_examples=2000, deadline=None)
@given(_TEXTS)
def test_same_as_the_old_walk(text: str) -> None:
    _same(text)


@settings(max_examples=300, deadline=None)
@given(_LONG_TEXTS)
def test_same_as_the_old_walk_on_long_texts(text: str) -> None:
    _same(text)


@settings(max_examples=300, deadline=None)
@given(_TEXTS, st.randoms(use_true_random=False))
def test_closings_do_not_depend_on_the_order_of_starts(text: str, rng: Any) -> None:
    """What a scan records holds for any later scan, not only for later starts."""
    starts = [i for i, ch in enumerate(text) if ch == "{"]
    rng.shuffle(starts)
    closings = _Closings(text)
    for start in starts:
        assert closings.end(start) == _old_balanced_end(text, start)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1}',
        'see {"a": {"b": "}"}} here',
        '{"a": "\\"}"} {"b": 2}',
        '{ {"summary": "x"}',
        '{"{\\"' * 30 + '"} {"ok": true}',
        "{" * 60 + '{"late": 1}',
    ],
)
def test_examples(text: str) -> None:
    _same(text)


class _Counting:
    """A compiled pattern whose searches count the characters they pass over, up to a budget."""

    def __init__(self, pattern: re.Pattern[str], budget: list[int]) -> None:
        self.pattern = pattern
        self.budget = budget

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        m = self.pattern.search(text, pos)
        self.budget[0] -= 1 + max(0, (len(text) if m is None else m.end()) - pos)
        if self.budget[0] < 0:
            raise AssertionError("the scan went over its budget of steps")
        return m

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pattern, name)


@pytest.mark.parametrize(
    "text",
    [
        "{" * 8192,
        "{" * 200_000,
        '{"' * 100_000,
        "{" * 199_999 + "}",
        '{"' + '{\\"' * 60_000,  # every start inside the first one's string, merging into it
        '"' + '{"' * 99_999,
        "[{" * 100_000,
        "{ " * 100_000,
    ],
    ids=lambda text: f"{text[:3]!r}..{text[-2:]!r}x{len(text)}",
)
def test_worst_cases_scan_in_linear_steps(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The searches pass over each character a few times in all, not once per start (50)."""
    budget = [4 * len(text) + 100]
    for name, value in vars(jsonscan).items():
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(jsonscan, name, _Counting(value, budget))
    assert extract_json_object(text) is None


def test_a_check_extracts_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """required_fields, expected_schema and its note read one extraction."""
    calls = []

    def counted(output: str) -> dict[str, Any] | None:
        calls.append(output)
        return extract_json_object(output)

    monkeypatch.setattr(items, "extract_json_object", counted)
    criteria = {
        "required_fields": ["summary", "sources"],
        "expected_schema": {"type": "object", "required": ["summary"]},
    }
    result = auto_check("{" * 100 + " no object here, summary: none", criteria)
    assert len(calls) == 1
    assert result.reasons == ("required_fields: 0%", "expected_schema: output is not JSON")
