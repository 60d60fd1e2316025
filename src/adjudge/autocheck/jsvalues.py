"""JavaScript's view of strings, numbers and JSON, which the reference checker's output depends on.

The reference checker is JavaScript, so its numbers are what JavaScript computes: a string's
``length`` counts UTF-16 code units (an emoji is 2), ``slice`` cuts code units, ``Math.round``
rounds halves up, ``toFixed`` rounds the exact binary value half up, ``trim`` and ``\\s`` know
their own set of white space, and ``JSON.stringify``/``JSON.parse`` differ from Python's ``json``
in number formatting, key order and the constants they accept. Each function here reproduces one
of those behaviours; ``tests/autocheck/test_jsvalues.py`` checks them against node.

No library offers these (they are JavaScript's quirks, not a standard), hence our own code.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from functools import cache
from typing import Any

from adjudge.autocheck import deepjson
from adjudge.autocheck._unicode_tables import UPPER

to_units_c: Callable[[str], str] | None
try:  # the auto check's C extension, optional (see adjudge.autocheck.chars)
    from adjudge.autocheck._speedups import to_units as to_units_c
except ImportError:
    to_units_c = None

# ECMAScript WhiteSpace + LineTerminator: what `\s` matches and `trim()` removes. Python's `\s`
# differs (it adds \x1c-\x1f and \x85, and lacks U+FEFF).
WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units.

    Encoding is a C loop with no match objects: about 1 µs for 4 KB, where counting astral
    characters with a regular expression takes 15 (lone surrogates pass as one unit each).
    """
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def has_astral(text: str) -> bool:
    """Whether any character of ``text`` takes two UTF-16 code units."""
    return not text.isascii() and utf16_len(text) != len(text)


def _split_pair(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def _join_pair(match: re.Match[str]) -> str:
    pair = match.group()
    return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))


def to_units(text: str) -> str:
    """The string as JavaScript indexes it: each astral character becomes its surrogate pair.

    Python regular expressions run over this view see exactly the code units a JavaScript
    regular expression without the ``u`` flag sees, and indices into it are JavaScript indices.
    One pass in the C extension where it was built (``to_units_c``), else :func:`to_units_re`.
    """
    if to_units_c is not None:
        return to_units_c(text)
    return to_units_re(text)


def to_units_re(text: str) -> str:
    """``to_units`` without the extension: the astral characters replaced by ``re``."""
    if not has_astral(text):
        return text
    return _ASTRAL.sub(_split_pair, text)


def from_units(units: str) -> str:
    """Undo :func:`to_units`: well-formed pairs become characters again; lone ones stay."""
    if units.isascii() or not has_surrogate(units):
        return units
    return _SURROGATE_PAIR.sub(_join_pair, units)


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (a code-unit view, or a lone half).

    UTF-8 refuses surrogates: encoding is a C loop, several times faster than searching.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def includes(text: str, needle: str) -> bool:
    """``text.includes(needle)``: over UTF-16 code units, as JavaScript compares strings.

    A needle that starts or ends with half of a surrogate pair is found inside the character
    that pair makes (``"\\ud83d"`` is in ``"😀"``); otherwise code units and characters agree.
    """
    if needle in text:
        return True
    if needle.isascii() or not has_surrogate(needle):
        return False
    return to_units(needle) in to_units(text)


def slice16(text: str, start: int, end: int | None = None) -> str:
    """``text.slice(start, end)`` in code units (negative indices count from the end)."""
    if text.isascii() or not has_astral(text):
        return text[start:end]
    return from_units(to_units(text)[start:end])


def trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(WHITESPACE)


def js_round(x: float) -> int:
    """``Math.round``: the nearest integer, halves toward +∞ (Python's ``round`` goes to even)."""
    floor = math.floor(x)
    return int(floor + 1 if x - floor >= 0.5 else floor)


def to_fixed0(x: float) -> str:
    """``x.toFixed(0)``: the exact binary value rounded half away from zero, as JavaScript does."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if abs(x) < 1e21 and x == math.floor(x):  # nothing to round (a score of 0 or 50): digits
        return str(int(x))
    text = str(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return "0" if text == "-0" else text


def number_to_string(x: float) -> str:
    """``Number.prototype.toString()`` (and so ``JSON.stringify`` of a number).

    JavaScript and Python both print the shortest digits that round-trip; only the layout
    differs (``1`` vs ``1.0``, ``1e-7`` vs ``1e-07``, ``1e+21`` vs ``1e+21``).
    """
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        if abs(x) < 2**53:
            return str(x)
        try:
            x = float(x)  # JavaScript would have parsed it into a double already
        except OverflowError:
            x = math.inf if x > 0 else -math.inf
    if math.isnan(x) or math.isinf(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    digits, exponent = _shortest_digits(abs(x))
    k = len(digits)
    n = exponent + k  # the decimal point sits after n digits
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


def _shortest_digits(x: float) -> tuple[str, int]:
    """Shortest round-trip digits of a positive double and the power of ten of the last one."""
    text = repr(x)
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    exponent = (int(exp) if exp else 0) - len(frac)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    return stripped or "0", exponent


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _quote(text: str) -> str:
    # Well-formed JSON.stringify (ES2019): a surrogate pair stays as it is, a lone surrogate is
    # escaped. Joining adjacent pairs first leaves only lone surrogates for the escape pass.
    if not text.isascii():
        text = from_units(text)
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def _is_array_index(key: str) -> bool:
    return (
        key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1
    )


def _ordered_items(obj: Mapping[Any, Any]) -> list[tuple[str, Any]]:
    """Property order of a JavaScript object: integer-like keys ascending, then insertion order."""
    items = [(str(k), v) for k, v in obj.items()]
    indices = sorted((kv for kv in items if _is_array_index(kv[0])), key=lambda kv: int(kv[0]))
    if not indices:
        return items
    return indices + [kv for kv in items if not _is_array_index(kv[0])]


def stringify(value: Any) -> str:
    """``JSON.stringify(value)`` of a JSON-like Python value (dicts, lists, str, numbers, None)."""
    parts: list[str] = []
    _stringify_into(value, parts)
    return "".join(parts)


def _stringify_into(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, int | float):
        text = number_to_string(value)
        out.append("null" if text in ("NaN", "Infinity", "-Infinity") else text)
    elif isinstance(value, Mapping):
        out.append("{")
        first = True
        for key, item in _ordered_items(value):
            out.append("" if first else ",")
            first = False
            out.append(_quote(key))
            out.append(":")
            _stringify_into(item, out)
        out.append("}")
    elif isinstance(value, Sequence):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _stringify_into(item, out)
        out.append("]")
    else:
        out.append(_quote(str(value)))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> Any:
    # Every JSON number is a double in JavaScript: `float` parses an integer literal exactly as
    # JavaScript does (correctly rounded; huge ones become Infinity, where Python's int would
    # refuse more than 4,300 digits).
    return json.loads(text, parse_constant=_reject_constant, parse_int=float)


def parse(text: str) -> Any:
    """``JSON.parse(text)``: raises ``ValueError`` where JavaScript throws a SyntaxError.

    Python's ``json`` also accepts ``NaN`` and ``Infinity``; JavaScript does not. Numbers come
    back as floats, as JavaScript has them. Nesting deeper than Python's recursion limit, which
    JavaScript parses, is parsed again by :func:`deepjson.loads`, which keeps its nesting on a
    list instead of the stack (the recursion limit is process-wide: raising it for one text
    lets any other thread's C recursion run past its stack).
    """
    try:
        return _loads(text)
    except RecursionError:
        return deepjson.loads(text)


# Unicode 17.0's full uppercase mappings of the BMP characters that have one.
_UPPER = {entry[0]: entry[1:] for entry in UPPER.split(" ")}


def _canonicalize(unit: str) -> str:
    """ECMAScript Canonicalize for ``i`` without ``u``: a code unit's upper case, with limits.

    The upper case (Unicode 17.0's) counts only if it is one code unit, and never maps a
    non-ASCII unit to an ASCII one (so ``ſ`` does not match ``s``, nor the Kelvin sign ``k``).
    """
    upper = _UPPER.get(unit, unit)
    if len(upper) != 1 or ord(upper) > 0xFFFF:
        return unit
    if ord(unit) >= 128 and ord(upper) < 128:
        return unit
    return upper


@cache
def _case_classes() -> dict[str, str]:
    groups: dict[str, list[str]] = {}
    for code in range(0x10000):
        unit = chr(code)
        groups.setdefault(_canonicalize(unit), []).append(unit)
    return {unit: "".join(members) for members in groups.values() for unit in members}


def ignorecase_source(units: str) -> str:
    """A ``re`` source matching the code units ``units`` as JavaScript's ``i`` flag (no ``u``).

    Python's ``re.IGNORECASE`` folds more (``ſ``/``s``, Kelvin sign/``k``, ``İ``/``i``), so each
    letter becomes an explicit class of the units JavaScript treats as the same.
    """
    classes = _case_classes()
    out = []
    for unit in units:
        members = classes.get(unit, unit)
        out.append(re.escape(unit) if len(members) == 1 else "[" + re.escape(members) + "]")
    return "".join(out)
