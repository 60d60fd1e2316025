"""The fast JSON text means what json's would: the same value read back, the same refusals."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge import json_text

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # past 64 bits, which orjson refuses
    | st.floats()  # NaN and both infinities included
    | st.text()  # lone surrogates included
)
_KEYS = st.text() | st.integers(min_value=-5, max_value=5)  # json writes an int key as text
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)  # json writes a tuple as a list
        | st.dictionaries(_KEYS, inner, max_size=4)
    ),
    max_leaves=20,
)


def _read(text: str | bytes) -> str:
    """A value's text as json reads it, written one way (NaN compares equal to NaN as text)."""
    return json.dumps(json.loads(text), sort_keys=True)


def _outcome(fn: Any, value: Any) -> tuple[str, Any]:
    try:
        return ("ok", _read(fn(value)))
    except Exception as exc:  # the refusal's kind is what must match
        return ("refused", type(exc))


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_dumps_reads_back_as_json_dumps_does(value: Any) -> None:
    assert _outcome(json_text.dumps, value) == _outcome(json.dumps, value)
    if _outcome(json.dumps, value)[0] == "ok":
        assert json_text.dumps(value).isascii()  # as json's: any database encoding takes it


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_dumps_utf8_reads_back_and_refuses_as_json_does(value: Any) -> None:
    def strict(v: Any) -> bytes:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()

    assert _outcome(json_text.dumps_utf8, value) == _outcome(strict, value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_float_is_never_written_as_null(bad: float) -> None:
    """orjson alone would write ``null``: the value read back would be another."""
    assert json_text.dumps({"x": [bad]}) == json.dumps({"x": [bad]})
    with pytest.raises(ValueError, match="Out of range float"):
        json_text.dumps_utf8({"x": bad})


@dataclass
class _Row:
    n: int


@pytest.mark.parametrize("refused", [_Row(1), datetime(2026, 1, 1, tzinfo=UTC), {1, 2}])
def test_what_json_refuses_stays_refused(refused: Any) -> None:
    for fn in (json_text.dumps, json_text.dumps_utf8):
        with pytest.raises(TypeError):
            fn({"value": refused})


def test_the_text_is_compact_ascii_for_a_database_and_utf8_for_an_answer() -> None:
    assert json_text.dumps({"a": [1, "b"]}) == '{"a":[1,"b"]}'
    assert json_text.dumps({"a": "é"}) == json.dumps({"a": "é"}) == '{"a": "\\u00e9"}'
    assert json_text.dumps_utf8({"a": "é"}) == '{"a":"é"}'.encode()


def _typed(value: Any) -> Any:
    """A value with each scalar's type beside it: ``1``, ``1.0`` and ``True`` are equal in
    Python, and a reader that gave one for another would not be json's."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, repr(value))  # repr: NaN is itself, -0.0 is not 0.0


@settings(max_examples=600, deadline=None)
@given(_VALUES, st.booleans())
def test_loads_reads_what_json_reads(value: Any, as_bytes: bool) -> None:
    """Past 64 bits, non-finite floats, lone surrogates and all: json's text, or orjson's."""
    for text in {json.dumps(value), json_text.dumps(value), json.dumps(value, indent=1)}:
        given_ = text.encode("utf-8", "surrogatepass") if as_bytes else text
        assert _typed(json_text.loads(given_)) == _typed(json.loads(given_))


@pytest.mark.parametrize(
    "text",
    [
        "18446744073709551616",  # 2**64: orjson alone gives a float
        "-9223372036854775809",
        '{"n": [123456789012345678901234567890]}',
        "[NaN, Infinity, -Infinity]",
        "1e400",
        '"\\ud800"',
        b'"\xed\xa0\x80"',  # a surrogate in UTF-8 bytes: json reads it, orjson refuses
        "0.1",
        '{"a": 1, "a": 2}',
    ],
)
def test_loads_where_orjson_alone_would_differ(text: str | bytes) -> None:
    assert _typed(json_text.loads(text)) == _typed(json.loads(text))


@pytest.mark.parametrize("bad", ["", "[1,]", "{'a': 1}", b"\xff", "nul"])
def test_loads_refuses_what_json_refuses(bad: str | bytes) -> None:
    with pytest.raises(ValueError):  # json's JSONDecodeError and UnicodeDecodeError both are
        json.loads(bad)
    with pytest.raises(ValueError):
        json_text.loads(bad)
