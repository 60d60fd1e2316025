"""JSON text written by orjson wherever that means exactly what :func:`json.dumps` would.

A paid call writes about 15 KB of JSON (its record, its answer kept for a replay, its receipt,
the MCP answer sent back), and ``json.dumps`` took about 5% of the call's CPU doing it: orjson
writes the same values some 15 times faster. Its text differs from json's only in spacing and a
float's spelling, which no reader sees once parsed; but it writes a NaN or an infinity as
``null`` (json writes ``NaN``, or refuses with ``allow_nan=False``), and refuses integers past 64
bits, lone surrogates and keys that are not strings. So its text is kept only when orjson parses
it back equal to the value (a non-finite float comes back ``None``, never equal); any other
value is written by json, exactly as before. Read back, :func:`loads` is json's reading by
orjson where the two agree. This module imports nothing of adjudge.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

import orjson

__all__ = [
    "JSON_DEPTH",
    "deeper_than",
    "dumps",
    "dumps_utf8",
    "finite_float",
    "json_text",
    "loads",
    "no_constant",
    "unique_keys",
]

#: The deepest arrays and objects nest in any JSON the service takes or judges: a request's
#: body, a provider's answer, a mapped output. Well within every reader's stack (Python's
#: parser and writer give up near 1,000 levels less the caller's frames, pydantic's writer at
#: 254), so a value read once reads the same everywhere, and every record of it can be shown.
JSON_DEPTH = 100

#: Types json refuses stay refused: orjson would write them, and the check would catch a
#: dataclass only after writing it.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def _fast(value: Any) -> bytes | None:
    """orjson's text of ``value`` if it reads back as ``value``, else None."""
    try:
        text = orjson.dumps(value, option=_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return None
    return text if orjson.loads(text) == value else None


def dumps(value: Any) -> str:
    """``json.dumps(value)``: the same JSON value, written compactly, and as ASCII as json's
    (orjson writes other characters as themselves: such a value is json's to write, so the text
    a database is given is in every encoding it may use)."""
    text = _fast(value)
    return json.dumps(value) if text is None or not text.isascii() else text.decode()


def dumps_utf8(value: Any) -> bytes:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)`` as
    UTF-8: the same bytes but for a float's spelling (``1e-7`` for ``1e-07``), and the same
    refusals (``ValueError`` for a NaN or an infinity)."""
    text = _fast(value)
    if text is not None:
        return text
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


#: A run of 19 digits: an integer orjson may read as a float (past 64 bits) or that is near it.
_LONG_TEXT, _LONG_BYTES = re.compile(r"\d{19}"), re.compile(rb"\d{19}")


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``: the same value, read by orjson (5-10 times faster) wherever it
    reads what json reads. It refuses what json takes past strict JSON (a ``NaN``, an
    infinity, a number too large for a float, a lone surrogate, text not in UTF-8), and those
    are json's to read; but an integer past 64 bits it reads as a float, without a word, so a
    text with 19 digits in a row (an integer near or past that, or only a long string of
    digits) is json's to read too. The store reads its JSON columns this way: what it wrote
    (:func:`dumps`) comes back as json would give it."""
    long = _LONG_BYTES.search(text) if isinstance(text, bytes) else _LONG_TEXT.search(text)
    if long is None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` refusing (``ValueError``) an object with a key twice: json
    keeps the last of them, and a reader that keeps the first would read another value."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise ValueError(f"the key {name[:80]!r} appears twice in one object")
            seen.add(name)
    return found


def no_constant(name: str) -> Any:
    """A ``parse_constant`` refusing (``ValueError``) ``NaN`` and the infinities, which json
    reads though JSON has none."""
    raise ValueError(f"{name} is not JSON")


def finite_float(text: str) -> float:
    """A ``parse_float`` refusing (``ValueError``) a number too large for a double, which json
    reads as an infinity that no JSON writer can write back."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large for a double")
    return value


#: A JSON string, escapes and all, or what is left of the text after a quote that never closes
#: (a lone backslash at the end included): so no quote fails to match, and none is tried again
#: from another start (possessive, and ``.`` any character: each is read once, the whole count
#: linear). Anything it calls a string that JSON would not, its parser refuses.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
#: A run of characters that neither open nor close an array or an object.
_NOT_BRACKETS = re.compile(r"[^\[\]{}]++")
#: Each bracket's step of nesting: in at an opening one, out at a closing one.
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_text(raw: bytes) -> str:
    """The text :func:`json.loads` reads ``raw`` as (UTF-8, with or without its mark, or
    UTF-16 or UTF-32, as json detects it; surrogates passed): the same text, given to the
    parser and to :func:`deeper_than`, so both read what the other does. ``ValueError`` (a
    ``UnicodeDecodeError``) when the bytes are not in that encoding."""
    return raw.decode(json.detect_encoding(raw), "surrogatepass")


def deeper_than(text: str, depth: int) -> bool:
    """Whether the JSON ``text`` nests arrays and objects more than ``depth`` deep, counted on
    its characters (strings skipped). Python's parser stops at a depth that depends on the
    stack of whoever calls it, so bytes read in two places (the gateway, a replay) could be
    JSON in one and not in the other; a bound checked first means the same everywhere. Linear
    and in C but for a bracket's step (about 30 ns), and nothing at all for a text with few
    brackets."""
    if text.count("[") + text.count("{") <= depth:
        return False
    bare = _STRING.sub("", text) if '"' in text else text
    steps = map(_STEP.__getitem__, _NOT_BRACKETS.sub("", bare))
    return max(accumulate(steps), default=0) > depth
