"""``json.loads`` without recursion, for texts nested deeper than Python's recursion limit.

JavaScript's ``JSON.parse`` reads any depth; Python's scanner recurses in C and stops at the
recursion limit. Raising that limit is not an option: it is process-wide, and every other
thread's C recursion (another ``json.loads``) would then run past its stack and crash the
process. So nesting is kept on an explicit stack here, in one loop.

No well-kept library does this with ``json.loads``'s exact semantics, hence our own walk: orjson
and pydantic_core stop at a depth of 1024 and about 200 and refuse a lone surrogate escape, and
simplejson recurses as the stdlib does. Each token is still read by the stdlib's own pieces (its
C ``scanstring``, its number pattern, its whitespace pattern), so strings, escapes, numbers and
white space are exactly ``json.loads``'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from json import JSONDecodeError, decoder
from json.scanner import NUMBER_RE
from typing import Any, cast

__all__ = ["loads"]

# The C scanner reads ASCII digits only; NUMBER_RE's `\d` also matches other scripts' digits
# (it would take "1٣" as 13, which json.loads refuses), so it is compiled again with re.ASCII.
_NUMBER = re.compile(NUMBER_RE.pattern, (NUMBER_RE.flags & ~re.UNICODE) | re.ASCII)
# typeshed leaves these two out of json.decoder; they are what json.loads reads strings and
# white space with (scanstring is the C one where it was built). The whitespace pattern matches
# the empty string too, so a match is never None.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = decoder.scanstring  # type: ignore[attr-defined]
_skip = cast(Callable[[str, int], re.Match[str]], decoder.WHITESPACE.match)  # type: ignore[attr-defined]
_BLANK = frozenset(" \t\n\r")  # the same four characters, to skip the match where none is next
_CLOSER = {"[": "]", "{": "}"}
_LITERALS: dict[str, tuple[str, Any]] = {
    "n": ("null", None),
    "t": ("true", True),
    "f": ("false", False),
}


def loads(text: str) -> Any:
    """``json.loads(text, parse_constant=<refuse>, parse_int=float)``, at any depth.

    Every number is a float (``float()`` of its text: a huge one is ``inf``, ``-0`` is ``-0.0``);
    ``NaN`` and ``Infinity`` are refused, as JavaScript refuses them. A key given twice keeps its
    first place and its last value. Raises ``JSONDecodeError`` (a ``ValueError``) wherever
    ``json.loads`` raises one; an empty text is refused.
    """
    if text.startswith("\ufeff"):
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    containers: list[list[Any] | dict[str, Any]] = []  # the open ones, innermost last
    keys: list[str] = []  # the key each open object's next value goes under
    value: Any
    pos = _skip(text, 0).end()
    while True:
        # (1) A value starts at pos: a container opens (its first value is read next), or a
        # whole value is read. Empty containers are whole values.
        char = text[pos : pos + 1]
        if char in {"[", "{"}:
            pos += 1
            after = text[pos : pos + 1]
            if after in _BLANK:
                pos = _skip(text, pos).end()
                after = text[pos : pos + 1]
            if after == _CLOSER[char]:
                value = [] if char == "[" else {}
                pos += 1
            else:
                if char == "{":
                    pos = _key(text, pos, keys)
                containers.append([] if char == "[" else {})
                continue
        else:
            value, pos = _scalar(text, pos)
        # (2) The value goes into the innermost open container; each container it closes is
        # then a whole value for the one around it. A container is filled only as it is read,
        # so an object's keys keep the order json.loads gives them.
        while containers:
            top = containers[-1]
            if isinstance(top, list):
                top.append(value)
            else:
                top[keys.pop()] = value
            char = text[pos : pos + 1]
            if char in _BLANK:
                pos = _skip(text, pos).end()
                char = text[pos : pos + 1]
            if char == ",":
                pos += 1
                if text[pos : pos + 1] in _BLANK:
                    pos = _skip(text, pos).end()
                if isinstance(top, dict):
                    pos = _key(text, pos, keys)
                break
            if char != ("]" if isinstance(top, list) else "}"):
                raise JSONDecodeError("Expecting ',' delimiter", text, pos)
            value = containers.pop()
            pos += 1
        else:
            pos = _skip(text, pos).end()
            if pos != len(text):
                raise JSONDecodeError("Extra data", text, pos)
            return value


def _key(text: str, pos: int, keys: list[str]) -> int:
    """Read an object's key and colon at ``pos``; push the key; return where its value starts."""
    if not text.startswith('"', pos):
        raise JSONDecodeError("Expecting property name enclosed in double quotes", text, pos)
    key, pos = _scanstring(text, pos + 1, True)
    if text[pos : pos + 1] in _BLANK:
        pos = _skip(text, pos).end()
    if not text.startswith(":", pos):
        raise JSONDecodeError("Expecting ':' delimiter", text, pos)
    keys.append(key)
    pos += 1
    return _skip(text, pos).end() if text[pos : pos + 1] in _BLANK else pos


def _scalar(text: str, pos: int) -> tuple[Any, int]:
    """Read the string, number, ``true``, ``false`` or ``null`` at ``pos``; return it, its end."""
    char = text[pos : pos + 1]
    if char == '"':
        return _scanstring(text, pos + 1, True)
    literal = _LITERALS.get(char)
    if literal is not None and text.startswith(literal[0], pos):
        return literal[1], pos + len(literal[0])
    found = _NUMBER.match(text, pos)
    if found is None:  # NaN, Infinity: json.loads hands them to parse_constant, which refuses
        raise JSONDecodeError("Expecting value", text, pos)
    return float(found.group()), found.end()
