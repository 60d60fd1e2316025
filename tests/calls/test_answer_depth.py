"""An answer's nesting is bounded by a count of its bytes, not by the reader's stack: the same
bytes are JSON, or text, wherever they are read (the gateway, a replay, a re-judging), and a
mapped output nesting past the bound fails the mapping boundary, named, on any stack."""

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


@settings(max_examples=60, deadline=None)
@given(
    depth=st.one_of(st.integers(0, JSON_DEPTH + 3), st.sampled_from((300, 600, 900, 960, 990))),
    frames=st.integers(0, 800),
    strings=st.booleans(),
)
def test_an_answer_reads_the_same_on_any_stack(depth: int, frames: int, strings: bool) -> None:
    """Nested at most JSON_DEPTH deep an answer is JSON, deeper it is its text, read at the top
    of a stack or 800 frames down (before, Python's parser gave up near 1,000 levels less the
    reader's frames: the gateway judged an answer nested 960 deep as text, a replay as JSON);
    brackets inside strings are text, not nesting."""
    inner = '[{[{ " \\ ]}' if strings else 1
    raw = json.dumps({"days": _nested(depth - 1, inner)} if depth else inner).encode()
    assert deeper_than(raw, JSON_DEPTH) == (depth > JSON_DEPTH)
    here = received_response(raw).body
    there = _on_stack(frames, lambda: received_response(raw).body)
    assert here == there
    assert here == (raw.decode() if depth > JSON_DEPTH else json.loads(raw))


def test_a_mapping_nesting_its_output_too_deep_fails_the_mapping_boundary() -> None:
    """A field mapped as a list of an answer JSON_DEPTH deep nests one deeper in the output: the
    mapping boundary fails, saying so, on any stack; one level less maps."""
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
