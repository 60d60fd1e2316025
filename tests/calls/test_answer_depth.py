"""An answer's nesting is bounded by a count of its characters, not by the reader's stack: the
same bytes are JSON, or text, wherever they are read (the gateway, a replay, a re-judging), in
every encoding json reads, and the count reads each character once; a mapped output nesting
past the bound fails the mapping boundary, named, on any stack."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.calls.contract import map_response, register_contract
from adjudge.calls.verify import received_response
from adjudge.json_text import JSON_DEPTH, deeper_than


def _nested(depth: int, inner: Any = 1) -> Any:
    value = inner
    for n in range(depth):
        value = [value] if n % 2 else {"k": value}
    return value


def _on_stack(frames: int, read: Callable[[], Any]) -> Any:
    """``read()`` called ``frames`` Python frames deeper than here."""
    if frames == 0:
        return read()
    return _on_stack(frames - 1, read)


@settings(max_examples=80, deadline=None)
@given(
    depth=st.one_of(st.integers(0, JSON_DEPTH + 3), st.sampled_from((300, 600, 900, 960, 990))),
    frames=st.integers(0, 800),
    inner=st.sampled_from((1, '[{[{ " \\ ]}', "\u5c00", "\\")),
    encoding=st.sampled_from(("utf-8", "utf-8-sig", "utf-16-le", "utf-16", "utf-32-be")),
)
def test_an_answer_reads_the_same_on_any_stack(
    depth: int, frames: int, inner: Any, encoding: str
) -> None:
    """Nested at most JSON_DEPTH deep an answer is JSON, deeper it is its text, read at the top
    of a stack or 800 frames down (before, Python's parser gave up near 1,000 levels less the
    reader's frames: the gateway judged an answer nested 960 deep as text, a replay as JSON);
    brackets inside strings are text, not nesting, in every encoding json reads (U+5C00 holds
    a backslash's byte in UTF-16: counted on the bytes, it hid the nesting after it)."""
    value = {"days": _nested(depth - 1, inner)} if depth else inner
    raw = json.dumps(value, ensure_ascii=False).encode(encoding)
    here = received_response(raw).body
    there = _on_stack(frames, lambda: received_response(raw).body)
    assert here == there
    if depth > JSON_DEPTH:
        assert here == raw.decode("utf-8", errors="replace")
    else:
        assert here == json.loads(raw)


def _depth(text: str) -> int:
    """How deep ``text`` nests, read a character at a time (strings skipped, one never closed
    to the end): what :func:`deeper_than` counts."""
    deepest = level = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif char in "]}":
            level -= 1
    return deepest


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet='[]{}"\\a\n\u5c00', max_size=60), depth=st.integers(0, 6))
def test_the_count_agrees_with_a_reading_a_character_at_a_time(text: str, depth: int) -> None:
    """Whatever the text (quotes never closed, escapes at its end, brackets in strings), the
    count of its nesting is a reading of one character at a time."""
    assert deeper_than(text, depth) == (_depth(text) > depth)


def test_the_count_reads_each_character_once() -> None:
    """Texts made to read the rest again from every quote (a quote never closed, escaped
    quotes after it: 200,000 of them, 400 KB) are counted as a character-at-a-time reading
    counts them, reading each once (before, each quote read the rest of the text again: 80 KB
    took 16 s, a provider's answer may be 4 MB)."""
    for tail in ('"\\', '\\"', '"\\\n', '"a\\'):
        long = "[" * (JSON_DEPTH + 1) + tail * 200_000
        assert deeper_than(long, JSON_DEPTH) == (_depth(long) > JSON_DEPTH)
        assert isinstance(received_response(long.encode()).body, str)


def test_a_mapping_nesting_its_output_too_deep_fails_the_mapping_boundary() -> None:
    """A field mapped as a list of an answer JSON_DEPTH deep nests one deeper in the output:
    the mapping boundary fails, saying so, on any stack; one level less maps."""
    contract = register_contract(
        {"tool": "t", "version": "1", "response_mapping": {"days": "[data]"}}
    )
    for depth, ok in ((JSON_DEPTH - 1, True), (JSON_DEPTH, False)):
        raw = json.dumps({"data": _nested(depth - 1)}).encode()
        body = received_response(raw).body
        assert isinstance(body, dict)
        for frames in (0, 700):
            shape = _on_stack(frames, lambda b=body: map_response(contract, b))
            assert shape.ok is ok, (depth, frames)
            if not ok:
                assert shape.stage == "mapping" and shape.path == "/days"
                assert f"nests arrays and objects more than {JSON_DEPTH} deep" in shape.reason


def test_a_lone_surrogate_is_text_in_every_encoding_json_reads() -> None:
    """Half a surrogate pair, escaped or encoded, in an answer sent as UTF-16 or UTF-32: the
    answer is passed as its text, as in UTF-8 (the search for one looked at UTF-8's bytes
    only, and the body kept it: the record's writer could not write it)."""
    for text in ('{"a": "\\ud800"}', '{"a": "\ud800"}'):
        for encoding in ("utf-8", "utf-16-le", "utf-16-be", "utf-32-le"):
            raw = text.encode(encoding, "surrogatepass")
            assert isinstance(received_response(raw).body, str), (text, encoding)
    assert received_response('{"a": "\U0001f600"}'.encode("utf-16")).body == {"a": "\U0001f600"}
