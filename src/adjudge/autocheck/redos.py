"""A posting-time screen for ``regex_pattern``s that backtrack exponentially: ambiguous repeats.

The reference refuses nested quantifiers such as ``(a+)+`` and adjudge keeps that scan, exactly,
for the verdict (:mod:`adjudge.autocheck.jsregex`). It cannot see the other classic cause of
exponential backtracking: a repeated group whose alternatives can match the same text, as in
``(a|aa)+$`` or ``(\\w|\\d)+$``. There every way of splitting a run of ``a`` between the
branches is a path the matcher tries before it fails, and there are exponentially many.

This module parses a JavaScript pattern (Annex B, no flags) into a small tree and flags a
repeat (``*``, ``+``, ``{n,}`` or ``{n,m}`` with ``m >`` :data:`FEW_REPEATS`) whose body is
nullable or holds an alternation two of whose branches can begin the same way: their first
characters overlap, and their fixed leading characters never diverge before one of them ends.
It errs on the side of refusing: ``(http|https)+`` is refused (write ``(https?)+``), while
``(ab|ac)+`` and ``(foo|bar)*`` pass. A pattern it cannot parse is not judged here (the compile
check refuses what JavaScript refuses). Whatever passes still runs in the time-limited pool.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Code unit intervals, inclusive, sorted and disjoint.
Chars = tuple[tuple[int, int], ...]

_MAX = 0xFFFF
ALL: Chars = ((0, _MAX),)
DIGIT: Chars = ((0x30, 0x39),)
WORD: Chars = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
SPACE: Chars = (
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
)
LINE_ENDS: Chars = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_CONTROL = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}


def _norm(parts: list[tuple[int, int]]) -> Chars:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(parts):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def complement(chars: Chars) -> Chars:
    """Every code unit not in ``chars``."""
    out, start = [], 0
    for lo, hi in chars:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= _MAX:
        out.append((start, _MAX))
    return tuple(out)


def overlaps(a: Chars, b: Chars) -> bool:
    """Whether two sets share a code unit."""
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


@dataclass(frozen=True)
class Node:
    """A parsed pattern: ``kind`` is set, seq, alt, group, look, assert, rep or ref."""

    kind: str
    chars: Chars = ()
    items: tuple[Node, ...] = ()
    low: int = 0
    high: int | None = None  # None: unbounded


class _Unparsed(Exception):
    """The pattern uses something this screen does not model; it is not judged here."""


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.s = pattern
        self.i = 0

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def take(self) -> str:
        if self.i >= len(self.s):
            raise _Unparsed
        c = self.s[self.i]
        self.i += 1
        return c

    def alternation(self) -> Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else Node("alt", items=tuple(branches))

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            atom = self.atom()
            items.append(self.quantified(atom))
        return Node("seq", items=tuple(items))

    def quantified(self, atom: Node) -> Node:
        c = self.peek()
        low, high = 0, None
        if c == "*":
            self.i += 1
        elif c == "+":
            self.i += 1
            low = 1
        elif c == "?":
            self.i += 1
            high = 1
        elif c == "{":
            end = self.s.find("}", self.i)
            body = self.s[self.i + 1 : end] if end != -1 else ""
            parts = body.split(",")
            if end == -1 or not parts[0].isdigit() or len(parts) > 2:
                return atom  # Annex B: a "{" that is not a quantifier is a literal
            if len(parts) == 2 and parts[1] and not parts[1].isdigit():
                return atom
            low = int(parts[0])
            high = low if len(parts) == 1 else (int(parts[1]) if parts[1] else None)
            self.i = end + 1
        else:
            return atom
        if self.peek() == "?":
            self.i += 1  # lazy: the same paths, in another order
        return Node("rep", items=(atom,), low=low, high=high)

    def atom(self) -> Node:
        c = self.take()
        if c == "(":
            return self.group()
        if c == "[":
            return Node("set", chars=self.char_class())
        if c == ".":
            return Node("set", chars=complement(LINE_ENDS))
        if c in "^$":
            return Node("assert")
        if c == "\\":
            return self.escape()
        return Node("set", chars=((ord(c), ord(c)),))

    def group(self) -> Node:
        kind = "group"
        if self.s.startswith("?:", self.i):
            self.i += 2
        elif self.s.startswith(("?=", "?!"), self.i):
            self.i += 2
            kind = "look"
        elif self.s.startswith(("?<=", "?<!"), self.i):
            self.i += 3
            kind = "look"
        elif self.s.startswith("?<", self.i):
            end = self.s.find(">", self.i)
            if end == -1:
                raise _Unparsed
            self.i = end + 1
        elif self.peek() == "?":
            raise _Unparsed
        inner = self.alternation()
        if self.take() != ")":
            raise _Unparsed
        return Node(kind, items=(inner,))

    def escape(self) -> Node:
        c = self.take()
        classes = {"d": DIGIT, "w": WORD, "s": SPACE}
        if c.lower() in classes:
            chars = classes[c.lower()]
            return Node("set", chars=complement(chars) if c.isupper() else chars)
        if c in "bB":
            return Node("assert")
        if c.isdigit() and c != "0":
            while self.peek().isdigit():
                self.i += 1
            return Node("ref")
        if c == "k" and self.peek() == "<":
            end = self.s.find(">", self.i)
            if end == -1:
                return Node("set", chars=((ord("k"), ord("k")),))
            self.i = end + 1
            return Node("ref")
        unit = self.escaped_unit(c)
        return Node("set", chars=((unit, unit),))

    def escaped_unit(self, c: str) -> int:
        if c in _CONTROL:
            return _CONTROL[c]
        if c == "0":
            return 0
        if c == "x" and _is_hex(self.s[self.i : self.i + 2]):
            self.i += 2
            return int(self.s[self.i - 2 : self.i], 16)
        if c == "u" and _is_hex(self.s[self.i : self.i + 4]):
            self.i += 4
            return int(self.s[self.i - 4 : self.i], 16)
        if c == "c" and self.peek().isascii() and self.peek().isalpha():
            return ord(self.take()) % 32
        return ord(c)

    def char_class(self) -> Chars:
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        parts: list[tuple[int, int]] = []
        first = True
        while True:
            c = self.take()
            if c == "]" and not first:
                break
            if c == "]":  # "[]" matches nothing; "[^]" everything
                break
            first = False
            lo = self.class_atom(c, parts)
            if lo is None:
                continue
            if self.peek() == "-" and self.s[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                hi = self.class_atom(self.take(), parts)
                if hi is None:  # "[a-\d]": Annex B reads both as members
                    parts.append((lo, lo))
                    parts.append((ord("-"), ord("-")))
                    continue
                parts.append((min(lo, hi), max(lo, hi)))
            else:
                parts.append((lo, lo))
        chars = _norm(parts)
        return complement(chars) if negated else chars

    def class_atom(self, c: str, parts: list[tuple[int, int]]) -> int | None:
        """One class member's code unit, or None for a class escape (added to ``parts``)."""
        if c != "\\":
            return ord(c)
        e = self.take()
        classes = {"d": DIGIT, "w": WORD, "s": SPACE}
        if e.lower() in classes:
            chars = classes[e.lower()]
            parts.extend(complement(chars) if e.isupper() else chars)
            return None
        if e == "b":
            return 0x08
        return self.escaped_unit(e)


def _is_hex(text: str) -> bool:
    return bool(text) and all(ch in "0123456789abcdefABCDEF" for ch in text)


def _nullable(n: Node) -> bool:
    if n.kind == "set":
        return False
    if n.kind in ("assert", "look", "ref"):
        return True
    if n.kind == "seq":
        return all(_nullable(i) for i in n.items)
    if n.kind == "alt":
        return any(_nullable(i) for i in n.items)
    if n.kind == "group":
        return _nullable(n.items[0])
    return n.low == 0 or _nullable(n.items[0])  # rep


def _first(n: Node) -> Chars:
    """The code units a non-empty match of ``n`` can begin with."""
    if n.kind == "set":
        return n.chars
    if n.kind in ("assert", "look"):
        return ()
    if n.kind == "ref":
        return ALL
    if n.kind == "seq":
        parts: list[tuple[int, int]] = []
        for item in n.items:
            parts.extend(_first(item))
            if not _nullable(item):
                break
        return _norm(parts)
    if n.kind == "alt":
        return _norm([p for i in n.items for p in _first(i)])
    return _first(n.items[0])  # group, rep


def _fixed_prefix(n: Node) -> list[Chars]:
    """The single characters every match of ``n`` must begin with, in order."""
    if n.kind == "set":
        return [n.chars]
    if n.kind == "group":
        return _fixed_prefix(n.items[0])
    if n.kind == "seq":
        out: list[Chars] = []
        for item in n.items:
            if item.kind == "assert":
                continue
            part = _fixed_prefix(item)
            out.extend(part)
            if item.kind not in ("set", "group") or len(part) != _length(item):
                break
        return out
    if n.kind == "rep" and n.low >= 1 and n.items[0].kind == "set":
        return [n.items[0].chars] * min(n.low, 8)
    return []


def _length(n: Node) -> int:
    """The fixed length of a node made of single characters only (-1 otherwise)."""
    if n.kind == "set":
        return 1
    if n.kind == "group":
        return _length(n.items[0])
    if n.kind == "seq":
        total = 0
        for item in n.items:
            size = _length(item)
            if size < 0:
                return -1
            total += size
        return total
    return -1


def _branches_collide(a: Node, b: Node) -> bool:
    """Whether two alternatives can begin the same way (see the module)."""
    if _nullable(a) or _nullable(b):
        return True
    if not overlaps(_first(a), _first(b)):
        return False
    # They do not collide if they diverge on a fixed character before either ends.
    return all(overlaps(x, y) for x, y in zip(_fixed_prefix(a), _fixed_prefix(b), strict=False))


def _ambiguous_body(n: Node) -> str | None:
    if _nullable(n):
        return "its repeated part can match the empty string"
    if n.kind == "alt":
        for i, a in enumerate(n.items):
            for b in n.items[i + 1 :]:
                if _branches_collide(a, b):
                    return "two of its alternatives can match the same text"
    for item in n.items:
        if item.kind != "rep":  # a nested repeat is the reference's own refusal
            found = _ambiguous_body(item) if item.kind in ("alt", "group", "seq") else None
            if found:
                return found
    return None


#: A repeat bounded at most this many times backtracks through few enough paths to leave alone.
FEW_REPEATS = 16


def _walk(n: Node) -> str | None:
    if n.kind == "rep" and (n.high is None or n.high > FEW_REPEATS):
        found = _ambiguous_body(n.items[0])
        if found:
            return found
    for item in n.items:
        found = _walk(item)
        if found:
            return found
    return None


def ambiguous_repeat(pattern: str) -> str | None:
    """Why ``pattern`` can backtrack exponentially (a repeated group whose alternatives
    collide, or that can repeat nothing), or None when this screen finds no such repeat."""
    parser = _Parser(pattern)
    try:
        tree = parser.alternation()
        if parser.i != len(pattern):
            return None
    except _Unparsed:
        return None
    return _walk(tree)
