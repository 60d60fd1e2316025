"""A JavaScript pattern (Annex B, no flags) as a small tree, for the posting-time screens.

The screens of :mod:`adjudge.autocheck.redos` reason about the shape of a pattern: which
characters each part can match, what repeats what, what follows what. This module parses a
pattern into that shape and nothing more: it checks no syntax (the compile check refuses what
JavaScript refuses), and a pattern using something it does not model is not parsed
(:func:`parse` answers None, so no screen judges it). Characters are UTF-16 code units, as
JavaScript without the ``u`` flag sees them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

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


def norm(parts: list[tuple[int, int]]) -> Chars:
    """The union of some intervals, sorted and merged."""
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
    return bool(intersect(a, b))


def intersect(a: Chars, b: Chars) -> Chars:
    """The code units in both sets."""
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def subtract(a: Chars, b: Chars) -> Chars:
    """The code units in ``a`` and not in ``b``."""
    return intersect(a, complement(b))


@dataclass(frozen=True)
class Node:
    """A parsed pattern: ``kind`` is set, seq, alt, group, look, assert, rep or ref.

    ``name`` tells assertions apart (``^``, ``$``, ``b``, ``B``); ``start`` and ``end`` are the
    node's place in the pattern's source (for naming the part a screen refuses).
    """

    kind: str
    chars: Chars = ()
    items: tuple[Node, ...] = ()
    low: int = 0
    high: int | None = None  # None: unbounded
    name: str = ""
    start: int = field(default=0, compare=False)
    end: int = field(default=0, compare=False)


class _Unparsed(Exception):
    """The pattern uses something this tree does not model; it is not judged."""


def parse(pattern: str) -> Node | None:
    """The tree of ``pattern``, or None when it uses something this module does not model."""
    parser = _Parser(pattern)
    try:
        tree = parser.alternation()
    except _Unparsed:
        return None
    return tree if parser.i == len(pattern) else None


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

    def spanned(self, node: Node, start: int) -> Node:
        return replace(node, start=start, end=self.i)

    def alternation(self) -> Node:
        start = self.i
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        if len(branches) == 1:
            return branches[0]
        return self.spanned(Node("alt", items=tuple(branches)), start)

    def sequence(self) -> Node:
        start = self.i
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            at = self.i
            atom = self.spanned(self.atom(), at)
            items.append(self.quantified(atom))
        return self.spanned(Node("seq", items=tuple(items)), start)

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
        return self.spanned(Node("rep", items=(atom,), low=low, high=high), atom.start)

    def atom(self) -> Node:
        c = self.take()
        if c == "(":
            return self.group()
        if c == "[":
            return Node("set", chars=self.char_class())
        if c == ".":
            return Node("set", chars=complement(LINE_ENDS))
        if c in "^$":
            return Node("assert", name=c)
        if c == "\\":
            return self.escape()
        return Node("set", chars=((ord(c), ord(c)),))

    def group(self) -> Node:
        kind, name = "group", ""
        if self.s.startswith("?:", self.i):
            self.i += 2
        elif self.s.startswith(("?=", "?!"), self.i):
            name = self.s[self.i + 1]
            self.i += 2
            kind = "look"
        elif self.s.startswith(("?<=", "?<!"), self.i):
            name = self.s[self.i + 1 : self.i + 3]
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
        return Node(kind, items=(inner,), name=name)

    def escape(self) -> Node:
        c = self.take()
        classes = {"d": DIGIT, "w": WORD, "s": SPACE}
        if c.lower() in classes:
            chars = classes[c.lower()]
            return Node("set", chars=complement(chars) if c.isupper() else chars)
        if c in "bB":
            return Node("assert", name=c)
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
        chars = norm(parts)
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


def nullable(n: Node) -> bool:
    """Whether ``n`` can match the empty string (an assertion or a back reference may)."""
    if n.kind == "set":
        return False
    if n.kind in ("assert", "look", "ref"):
        return True
    if n.kind == "seq":
        return all(nullable(i) for i in n.items)
    if n.kind == "alt":
        return any(nullable(i) for i in n.items)
    if n.kind == "group":
        return nullable(n.items[0])
    return n.low == 0 or nullable(n.items[0])  # rep


def first(n: Node) -> Chars:
    """The code units a non-empty match of ``n`` can begin with."""
    if n.kind == "set":
        return n.chars
    if n.kind in ("assert", "look"):
        return ()
    if n.kind == "ref":
        return ALL
    if n.kind == "seq":
        return first_of_seq(n.items)
    if n.kind == "alt":
        return norm([p for i in n.items for p in first(i)])
    return first(n.items[0])  # group, rep


def first_of_seq(items: tuple[Node, ...]) -> Chars:
    """The code units a non-empty match of ``items`` in sequence can begin with."""
    parts: list[tuple[int, int]] = []
    for item in items:
        parts.extend(first(item))
        if not nullable(item):
            break
    return norm(parts)
