"""JavaScript pattern and subject text, rewritten so the regress engine reads them as JavaScript.

JavaScript's ``new RegExp(pattern)`` without the ``u`` flag works on UTF-16 code units; regress
works on code points and cannot take a lone surrogate at all. Both sides are therefore rewritten
into one alphabet in which every UTF-16 code unit is exactly one code point:

* a code unit outside the surrogate block stays itself;
* a surrogate code unit ``0xD800 + k`` becomes the private-use code point ``U+F0000 + k``.

In that alphabet an astral character in the text is two code points, as it is two code units to
JavaScript; ``.``, ``[^a]`` and ``\\S`` match each half; a literal astral character in a pattern
is two atoms (``😀+`` repeats only the second half). No astral code point of the input survives
the rewrite, so the private-use block cannot collide with real text.

The pattern rewrite is a single left-to-right tokenization that follows the Annex B grammar
(``RegExp`` without ``u``) and changes only what regress would read differently:

1. a surrogate code unit, literal or written ``\\uD83D`` (or as an identity escape), becomes its
   private-use code point;
2. ``\\u`` not followed by four hex digits is the identity escape ``u``: JavaScript reads
   ``\\u{61}`` as ``u`` repeated 61 times, regress would read a code point;
3. a class range that overlaps the surrogate block (``[\\u0000-\\uFFFF]``) is split into its
   parts below, inside and above the block, the inside part moved to the private-use block;
4. refusals regress does not make but node 20 does: a group name used twice (also in different
   alternatives), modifier groups such as ``(?i:a)``, ``\\k`` inside a class when the pattern
   has named groups, and a quantified ``\\b`` or ``\\B``.

Group names (``(?<name>`` and, when the pattern has named groups, ``\\k<name>``) are copied
unchanged: JavaScript reads them as code points even without ``u``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adjudge.autocheck.jsvalues import has_astral, has_surrogate, to_units

SURROGATE_FIRST = 0xD800
SURROGATE_LAST = 0xDFFF
#: Where surrogate code unit ``0xD800 + k`` lives in the engine's alphabet (plane 15, private use).
PRIVATE_BASE = 0xF0000

# Byte tables for _units_as_code_points: a surrogate's high byte D8..DF becomes 0..7 (and the
# code point's third byte 0x0F, plane 15); any other high byte stays (third byte 0).
_HIGH_BYTE = bytes(b - 0xD8 if 0xD8 <= b <= 0xDF else b for b in range(256))
_PLANE_BYTE = bytes(PRIVATE_BASE >> 16 if 0xD8 <= b <= 0xDF else 0 for b in range(256))
_HEX = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")
_CLASS_ESCAPES = frozenset("dDsSwW")
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_CLASS_CONTROL = _ASCII_LETTERS | frozenset("0123456789_")
_QUANTIFIER = re.compile(r"[*+?]|\{[0-9]+(?:,[0-9]*)?\}")
_EXACT_COUNT = re.compile(r"\{([0-9]+)(?:,([0-9]*))?\}")
# A quantifier (greedy or lazy) that ends the pattern; group 1 is the low count of "{n,m}".
_FINAL_REPEAT = re.compile(r"(?:[*+?]|\{([0-9]+)(?:,[0-9]*)?\})\??\Z")
#: The most steps one pass through a ``bounded`` pattern may take: as many as 200 single atoms.
#: Measured with regress on 20,000 code units: 200 steps of "." take about 6 ms.
BOUNDED_STEPS = 200
#: What opening a group costs in steps: a capture group measured at about 2.7 single atoms.
GROUP_STEPS = 3
_GROUP_NAME_ESCAPE = re.compile(r"\\u\{([0-9a-fA-F]+)\}|\\u([0-9a-fA-F]{4})")


class SourceError(ValueError):
    """A pattern JavaScript refuses to compile, found by the rewrite itself (not by regress)."""


@dataclass(frozen=True)
class EngineSource:
    """A pattern rewritten for regress, and whether its match time is bounded by construction.

    ``bounded`` is true when the pattern has no quantifier other than an exact count of a
    single atom (``\\d{4}``), no alternation and no back reference, and one pass through it
    takes at most ``BOUNDED_STEPS`` steps (an atom one step, ``\\d{4}`` four, each group
    ``GROUP_STEPS``; lookarounds included). A backtracking matcher then follows at most one
    path from each start position, so a match costs at most ``BOUNDED_STEPS`` x (text length)
    steps, whatever the text. One more quantifier is allowed: any repeat of a single atom that
    ends the pattern, outside every group (``\\d{2,}``, ``^ID-\\w+``). Nothing follows it that
    could fail, so it never backtracks: from a start position it either stops short of its low
    count (counted in the steps) or succeeds, and the first success ends the search.
    """

    source: str
    bounded: bool


def engine_text(text: str, cap: int) -> str:
    """The first ``cap`` UTF-16 code units of ``text``, in the engine's alphabet.

    An empty text stays empty. A cut through a surrogate pair keeps the first half, as
    JavaScript's ``text.slice(0, cap)`` does.
    """
    head = text[:cap]  # cap code points hold at least cap code units
    if head.isascii() or not (has_astral(head) or has_surrogate(head)):
        return head  # every character is one code unit already
    return _units_as_code_points(head, cap)


def engine_utf8(text: str, cap: int) -> bytes:
    """``engine_text(text, cap)`` encoded in UTF-8 (what the match worker reads), computed fast."""
    head = text[:cap]
    if head.isascii():
        return head.encode("ascii")
    if not has_astral(head):
        try:
            return head.encode()  # UTF-8 refuses a lone surrogate
        except UnicodeEncodeError:
            pass
    return _units_as_code_points(head, cap).encode()


def _units_as_code_points(head: str, cap: int) -> str:
    """The first ``cap`` UTF-16 code units of ``head``, one code point each, surrogates moved.

    Done on bytes, in C, rather than per character: each 2-byte little-endian code unit
    ``lo, hi`` becomes the 4-byte UTF-32 code point ``lo, hi, 0, 0``, except a surrogate
    (``hi`` in D8..DF), which becomes ``PRIVATE_BASE + unit - 0xD800``: ``lo, hi - 0xD8, 0x0F, 0``.
    """
    units = head.encode("utf-16-le", "surrogatepass")[: 2 * cap]
    high = units[1::2]
    out = bytearray(2 * len(units))
    out[0::4] = units[0::2]
    out[1::4] = high.translate(_HIGH_BYTE)
    out[2::4] = high.translate(_PLANE_BYTE)
    return out.decode("utf-32-le")


def rewrite(pattern: str) -> EngineSource:
    """Rewrite a JavaScript (no flags) pattern for regress; see the module docstring.

    Raises SourceError for the refusals regress would not make itself. Everything else that is
    malformed is passed through for regress to refuse.
    """
    return _Rewriter(to_units(pattern)).run()


def _private(unit: int) -> str:
    return chr(PRIVATE_BASE + unit - SURROGATE_FIRST)


def _is_surrogate(unit: int) -> bool:
    return SURROGATE_FIRST <= unit <= SURROGATE_LAST


def _bmp_escape(unit: int) -> str:
    return f"\\u{unit:04X}"


@dataclass(frozen=True)
class _ClassAtom:
    """One class atom: a code unit (``value``) or a class escape like ``\\d`` (``value`` None)."""

    value: int | None
    text: str  # the source to emit when no rewrite is needed

    def emit(self) -> str:
        if self.value is not None and _is_surrogate(self.value):
            return _private(self.value)
        return self.text


class _Rewriter:
    """One pass over a pattern's code units (see ``rewrite``)."""

    def __init__(self, units: str) -> None:
        self.u = units
        self.n = len(units)
        self.out: list[str] = []
        self.named = _has_group_names(units)
        # For ``bounded``: no quantifier but exact counts of single atoms, no alternation, no
        # back reference, and the steps of one pass within budget (see EngineSource).
        self.bounded = True
        self.steps = 0
        self.after_atom = False  # whether "{n}" here would repeat a single atom
        self.depth = 0  # open groups

    def run(self) -> EngineSource:
        u, n = self.u, self.n
        names: set[str] = set()
        i = 0
        while i < n:
            c = u[i]
            if c == "\\":
                i = self._escape(i)
                self._atom()
            elif c == "[":
                i = self._char_class(i)
                self._atom()
            elif c == "(":
                i = self._group_prefix(i, names) if u.startswith("(?", i) else self._emit(i)
                self.steps += GROUP_STEPS
                self.after_atom = False
                self.depth += 1
            elif c == ")":
                i = self._emit(i)
                self.after_atom = False  # "(ab){3}" is not bounded: groups repeat dearly
                self.depth -= 1
            elif c == "{" and (exact := _EXACT_COUNT.match(u, i)) and _is_exact(exact):
                if not self.after_atom:
                    self.bounded = False
                self.steps += int(exact.group(1)) - 1  # "\\d{4}" takes four steps, not one
                self.after_atom = False
                self.out.append(exact.group())
                i = exact.end()
            elif self.after_atom and self.depth == 0 and (last := _FINAL_REPEAT.match(u, i)):
                self.steps += max(0, int(last.group(1) or 1) - 1)  # "x{5,}" fails within 5
                self.after_atom = False
                self.out.append(last.group())
                i = last.end()
            else:
                if c in "*+?{|":
                    self.bounded = False
                    self.after_atom = False
                else:
                    self._atom()
                i = self._emit(i)
        bounded = self.bounded and self.steps <= BOUNDED_STEPS
        return EngineSource(_join(self.out), bounded)

    def _emit(self, i: int) -> int:
        """Copy the code unit at ``i`` (moved if it is a surrogate); return the next index."""
        c = self.u[i]
        self.out.append(_private(ord(c)) if _is_surrogate(ord(c)) else c)
        return i + 1

    def _atom(self) -> None:
        self.steps += 1
        self.after_atom = True

    def _escape(self, i: int) -> int:
        u, n = self.u, self.n
        if i + 1 >= n:
            self.out.append("\\")  # regress refuses "\ at end of pattern", as JavaScript does
            return n
        d = u[i + 1]
        if d == "u":
            hex4 = u[i + 2 : i + 6]
            if len(hex4) == 4 and all(h in _HEX for h in hex4):
                unit = int(hex4, 16)
                self.out.append(_private(unit) if _is_surrogate(unit) else u[i : i + 6])
                return i + 6
            self.out.append("u")  # (2) identity escape: \u{61} is "u" repeated 61 times
            return i + 2
        if _is_surrogate(ord(d)):
            self.out.append(_private(ord(d)))  # (1) identity escape of a surrogate code unit
            return i + 2
        if d == "c" and not (i + 2 < n and u[i + 2] in _ASCII_LETTERS):
            # "\c" without a control letter is a literal backslash, then "c". Say so
            # explicitly, or a rewrite of what follows ("\c\u{0}" -> "\cu{0}") changes it.
            self.out.append("\\\\")
            return i + 1
        if d in "123456789":
            self.bounded = False  # a back reference (or an octal escape; either way not linear)
        if d == "k":
            self.bounded = False
            if self.named and u.startswith("<", i + 2):
                end = u.find(">", i + 3)
                end = n - 1 if end < 0 else end
                self.out.append(u[i : end + 1])  # a group name, copied unchanged
                return end + 1
        if d in "bB" and _QUANTIFIER.match(u, i + 2):
            # (4) regress repeats an assertion; JavaScript refuses "\b*" ("nothing to repeat").
            raise SourceError(f"nothing to repeat: the assertion \\{d} cannot be quantified")
        self.out.append(u[i : i + 2])
        return i + 2

    def _group_prefix(self, i: int, names: set[str]) -> int:
        u = self.u
        if u.startswith(("(?:", "(?=", "(?!", "(?<=", "(?<!"), i):
            length = 4 if u.startswith("(?<", i) else 3
            self.out.append(u[i : i + length])
            return i + length
        if u.startswith("(?<", i):
            end = u.find(">", i + 3)
            if end < 0:
                self.out.append(u[i:])  # unterminated: regress refuses it
                return self.n
            name = _decode_group_name(u[i + 3 : end])
            if name in names:
                raise SourceError(f"the group name {name!r} is used twice")
            names.add(name)
            self.out.append(u[i : end + 1])
            return end + 1
        # (4) "(?" followed by anything else: node 20 refuses modifiers such as (?i:a).
        raise SourceError("invalid group: '(?' must start (?:, (?=, (?!, (?<=, (?<! or (?<name>")

    def _char_class(self, i: int) -> int:
        u, n = self.u, self.n
        j = i + 1
        head = "[^" if u.startswith("^", j) else "["
        j += len(head) - 1
        parts = [head]
        while j < n and u[j] != "]":
            first, j = self._class_atom(j)
            if j + 1 < n and u[j] == "-" and u[j + 1] != "]":
                second, j = self._class_atom(j + 1)
                parts.append(_class_range(first, second))
            else:
                parts.append(first.emit())
        if j >= n:
            self.out.append(u[i:])  # unterminated: regress refuses it
            return n
        parts.append("]")
        self.out.append("".join(parts))
        return j + 1

    def _class_atom(self, j: int) -> tuple[_ClassAtom, int]:
        """Read one ClassAtom of Annex B at ``j``; return it and the index after it."""
        u, n = self.u, self.n
        c = u[j]
        if c != "\\":
            return _ClassAtom(ord(c), c), j + 1
        if j + 1 >= n:
            return _ClassAtom(None, "\\"), n  # regress refuses the unterminated class
        d = u[j + 1]
        if d in _CLASS_ESCAPES:
            return _ClassAtom(None, u[j : j + 2]), j + 2
        if d == "b":
            return _ClassAtom(0x08, "\\b"), j + 2
        if d == "c":
            if j + 2 < n and u[j + 2] in _CLASS_CONTROL:
                return _ClassAtom(ord(u[j + 2]) % 32, u[j : j + 3]), j + 3
            return _ClassAtom(0x5C, "\\\\"), j + 1  # "\c" alone is a backslash, then "c"
        if d in _OCTAL:
            k = j + 2
            limit = j + (4 if d in "0123" else 3)
            while k < min(limit, n) and u[k] in _OCTAL:
                k += 1
            return _ClassAtom(int(u[j + 1 : k], 8), u[j:k]), k
        if d == "x":
            hex2 = u[j + 2 : j + 4]
            if len(hex2) == 2 and all(h in _HEX for h in hex2):
                return _ClassAtom(int(hex2, 16), u[j : j + 4]), j + 4
            return _ClassAtom(ord("x"), "x"), j + 2
        if d == "u":
            hex4 = u[j + 2 : j + 6]
            if len(hex4) == 4 and all(h in _HEX for h in hex4):
                return _ClassAtom(int(hex4, 16), u[j : j + 6]), j + 6
            return _ClassAtom(ord("u"), "u"), j + 2  # (2), as outside a class
        if d in _CONTROL_ESCAPES:
            return _ClassAtom(_CONTROL_ESCAPES[d], u[j : j + 2]), j + 2
        if d == "k" and self.named:
            # (4) with named groups, Annex B's identity escapes exclude "k".
            raise SourceError(r"invalid escape '\k' in a character class")
        return _ClassAtom(ord(d), u[j : j + 2]), j + 2  # identity escape


def _is_exact(count: re.Match[str]) -> bool:
    """Whether a ``{n}`` or ``{n,m}`` quantifier repeats exactly: ``{n}`` or ``{n,n}``."""
    low, high = count.group(1), count.group(2)
    return high is None or (high != "" and int(high) == int(low))


def _class_range(first: _ClassAtom, second: _ClassAtom) -> str:
    """The source of ``first-second`` inside a class, split around the surrogate block."""
    if first.value is None or second.value is None:
        # Annex B: a class escape at either end makes the dash a literal: union of the three.
        return first.emit() + "-" + second.emit()
    lo, hi = first.value, second.value
    if lo > hi:
        raise SourceError("a character class range is out of order")
    if hi < SURROGATE_FIRST or lo > SURROGATE_LAST:
        return first.text + "-" + second.text
    parts = []  # (3) below, inside and above the surrogate block
    if lo < SURROGATE_FIRST:
        parts.append(_bmp_escape(lo) + "-" + _bmp_escape(SURROGATE_FIRST - 1))
    parts.append(_private(max(lo, SURROGATE_FIRST)) + "-" + _private(min(hi, SURROGATE_LAST)))
    if hi > SURROGATE_LAST:
        parts.append(_bmp_escape(SURROGATE_LAST + 1) + "-" + _bmp_escape(hi))
    return "".join(parts)


def _has_group_names(units: str) -> bool:
    """Whether the pattern has a ``(?<name>`` group, scanning as V8 does (escapes, classes)."""
    i, n = 0, len(units)
    while i < n:
        c = units[i]
        if c == "\\":
            i += 2
        elif c == "[":
            i += 1
            while i < n and units[i] != "]":
                i += 2 if units[i] == "\\" else 1
            i += 1
        elif units.startswith("(?<", i) and not units.startswith(("(?<=", "(?<!"), i):
            return True
        else:
            i += 1
    return False


def _decode_group_name(raw: str) -> str:
    """A group name's identity, its escapes decoded, as the duplicate check compares it.

    ``\\u0061`` and ``\\u{61}`` name the same group as ``a``; ``\\uD835\\uDC9C`` and
    ``\\u{1D49C}`` the same as ``𝒜``.
    """

    def char(m: re.Match[str]) -> str:
        value = int(m.group(1) or m.group(2), 16)
        return chr(value) if value <= 0x10FFFF else m.group()

    decoded = _GROUP_NAME_ESCAPE.sub(char, raw)
    # Surrogates, literal (split into units) or escaped, pair up as JavaScript pairs them here.
    return decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _join(parts: list[str]) -> str:
    """Join the output; surrogates left (in group names) pair up again, lone ones are refused."""
    out = "".join(parts)
    if any(_is_surrogate(ord(c)) for c in out if c >= "\ud800"):
        try:
            out = out.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError:
            raise SourceError("a group name holds a lone surrogate") from None
    return out
