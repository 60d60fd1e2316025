"""Posting-time screens for ``regex_pattern``s whose matching time explodes: ReDoS shapes.

The reference refuses nested quantifiers such as ``(a+)+`` and adjudge keeps that scan, exactly,
for the verdict (:mod:`adjudge.autocheck.jsregex`). Whatever passes runs in the time-limited
pool, where a slow pattern costs its 100 ms of a worker on every check: time that everyone
else's checks wait for. Posting refuses two more shapes (``REGEX_PATTERN_UNUSABLE``), both from
the pattern's tree (:mod:`adjudge.autocheck._regextree`); a pattern the tree cannot parse is not
judged here (the compile check refuses what JavaScript refuses).

**Exponential: ambiguous repeats** (:func:`ambiguous_repeat`). A repeat (``*``, ``+``,
``{n,}`` or ``{n,m}`` with ``m >`` :data:`FEW_REPEATS`) whose body is nullable or holds an
alternation two of whose branches can begin the same way: their first characters overlap, and
their fixed leading characters never diverge before one of them ends. Every way of splitting a
run of ``a`` between the branches of ``(a|aa)+$`` is a path the matcher tries before it fails.
It errs on the side of refusing: ``(http|https)+`` is refused (write ``(https?)+``), while
``(ab|ac)+`` and ``(foo|bar)*`` pass. Such a repeat that ends in a repeat (``*``, ``+`` or a
``{n,m}`` that may repeat more than once) able to begin its next round is refused too: that is
the reference's own nested-quantifier refusal, ``(a+)+``, which its scan misses when either
quantifier is a ``{n,m}`` of more than 12 characters (``(-+){1,9999999999}!``), where it is
slow (``(ab+){1,99999999999}`` is not, and passes).

**Polynomial: a run of overlapping repeats** (:func:`slow_run`). Unbounded repeats in sequence
that can all match one same character ``c``, with nothing between them that ``c`` cannot match
(a ``-`` between two ``\\d+`` forces where the first ends; a ``\\s*`` between two ``\\w+`` does
not), followed by something that can fail. On a text of ``n`` ``c``s that the rest fails on,
the matcher tries every way of splitting the ``n`` between the ``k`` repeats: about
``n**k / k!`` paths. An unanchored pattern is also tried from every start position, one power
more (a run that begins the pattern counts the search as a repeat of its own, as if the
pattern began with ``[\\s\\S]*?``). Posting refuses a run of two or more repeats whose power is
above :data:`MAX_DEGREE` (2), so the shapes that are merely quadratic, which ordinary patterns
are, pass.

Refused (the power in brackets):

- ``a*a*a*a*a*a*a*a*a*b`` (10): nine ``a*`` share ``a``, ``b`` fails, and it is unanchored;
- ``\\d*\\d*\\d*\\d*\\d*\\d*\\d*x`` (8) and ``.*.*.*.*.*.*=.*`` (7: a text without ``=``);
- ``a*a*b`` (3: two repeats and the search), ``\\w+\\s*\\w+!`` (3: ``\\s*`` can be empty, so
  nothing splits the two ``\\w+``), ``.*\\d+ms`` (3), ``^\\d*\\d*\\d*$`` (3: ``$`` fails before a
  final ``!``).

Passed: ``^a*a*b`` (2: anchored), ``.*foo.*`` and ``\\w+@\\w+\\.\\w+`` (2: ``@`` and ``\\.``
force the splits), ``^\\d+-\\d+$`` (1), ``.*.*`` and ``\\w+\\s*\\w+`` (nothing after the run can
fail, so the first split tried succeeds), ``\\d+ms`` (what ``.*\\d+ms`` means for a test).

The screen claims only what it can show. Every refusal names the run and carries a text that
makes it slow (:meth:`SlowRun.text`): a lead that takes the matcher to the run, ``c`` repeated,
and either the end of the text or a character no part of the pattern matches (for a ``$``
right after the run). So it errs on the side of passing: a run after a lookaround, a ``\\b`` or
a back reference, one that starts inside any but the first alternative, one that starts past
text of its own inside an optional part or an alternative when a path around that part could
begin with that text, and one another path could match around are not refused; a repeat
bounded at :data:`LONG_REPEAT` or fewer counts as a fixed part (``\\d{1,4}``). A lead is
at most :data:`LONGEST_TEXT` characters, the most of a text the matcher reads: a run past a
longer one (``a{30000}b*b*b*c``) is never reached, so it is not refused, and a count never sizes
what is built (``a{2147483647}`` builds nothing; the auto check fails it on every result, as
the reference does, so posting accepts it).
``tests/autocheck/test_redos.py`` runs every refused pattern of its table, and a grammar of
generated ones, on its text in the real worker and sees it stopped at the 100 ms limit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from adjudge.autocheck._regextree import (
    ALL,
    Chars,
    Node,
    complement,
    first,
    first_of_seq,
    intersect,
    norm,
    nullable,
    overlaps,
    parse,
    subtract,
)
from adjudge.autocheck.jsregex import INPUT_CAP


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
    if nullable(a) or nullable(b):
        return True
    if not overlaps(first(a), first(b)):
        return False
    # They do not collide if they diverge on a fixed character before either ends.
    return all(overlaps(x, y) for x, y in zip(_fixed_prefix(a), _fixed_prefix(b), strict=False))


def _ambiguous_body(n: Node, *, rounds: bool = True) -> str | None:
    """Why a repeat of ``n`` can backtrack exponentially, or None; ``rounds``: ``n`` is the
    whole repeated part (a part of it, in the recursion, begins no round)."""
    if nullable(n):
        return "its repeated part can match the empty string"
    if n.kind == "alt":
        for i, a in enumerate(n.items):
            for b in n.items[i + 1 :]:
                if _branches_collide(a, b):
                    return "two of its alternatives can match the same text"
    # The reference refuses a repeat that holds a repeat, ``(a+)+``, but its scan reads a
    # ``{n,m}`` of more than 12 characters as text, so ``(-+){1,9999999999}`` reaches here.
    # Refused where it is slow: a repeat the body can end in (nothing after it but what may
    # match nothing) that can also begin the next round, so a run splits between the two
    # repeats in every way. ``(ab+){1,99999999999}`` (each round begins with an ``a``
    # the ``b+`` cannot match) and ``(a{2,9999999999}b)+`` (a ``b`` after it) pass, as does a
    # ``?``, no quantifier to the reference: ``(ab?)+``.
    begins = first(n)
    if rounds and any(overlaps(first(r), begins) for r in _ending_repeats(n)):
        return "a repeat it ends in can begin its next round (a nested quantifier, as in (a+)+)"
    for item in n.items:
        kind = item.kind in ("alt", "group", "seq")
        found = _ambiguous_body(item, rounds=False) if kind else None
        if found:
            return found
    return None


def _ending_repeats(n: Node) -> list[Node]:
    """The repeats (of more than one round) a match of ``n`` can end in: nothing after them in
    ``n`` but parts that may match nothing."""
    if n.kind == "rep":
        inner = _ending_repeats(n.items[0])
        return [n, *inner] if n.high is None or n.high > 1 else inner
    if n.kind == "group":
        return _ending_repeats(n.items[0])
    if n.kind == "alt":
        return [r for item in n.items for r in _ending_repeats(item)]
    if n.kind == "seq":
        found: list[Node] = []
        for item in reversed(n.items):
            found += _ending_repeats(item)
            if not nullable(item):
                break
        return found
    return []


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
    tree = parse(pattern)
    return None if tree is None else _walk(tree)


# --- polynomial: runs of overlapping repeats ---------------------------------------------------

#: The highest power of the text's length a pattern's matching time may grow with.
MAX_DEGREE = 2
#: A repeat bounded at more than this many counts as unbounded: three of them split a run a
#: million ways at each start position.
LONG_REPEAT = 100
#: Candidates for the character a slow text repeats, and for the one that ends it, best first.
_FEED = "a1A =_-.x/:,;"
_ENDS = "!#~%\n"
#: At most this many partial runs are followed through a pattern at once (the longest kept).
_MAX_CHAINS = 64
#: The longest lead or witness built, in characters (each one UTF-16 code unit): the matcher
#: reads no more of a text than this (``text.slice(0, 20000)``), so no text reaches a part of
#: the pattern past a longer one, and a count (``a{2147483647}``) never sizes a string.
LONGEST_TEXT = INPUT_CAP


@dataclass(frozen=True)
class SlowRun:
    """A run of repeats in ``pattern`` whose matching time grows as a power of the text's length.

    ``run`` is the part of the pattern from its first repeat to its last, ``repeats`` how many
    unbounded repeats it holds, ``degree`` the power (one more when the pattern is tried from
    every start position). :meth:`text` is a text that makes it slow: ``lead``, then ``char``
    repeated, then ``end`` ("" for the end of the text).
    """

    pattern: str
    run: str
    repeats: int
    degree: int
    lead: str
    char: str
    end: str

    @property
    def reason(self) -> str:
        """The refusal's explanation, naming the run."""
        search = " (and the search from every start position)" if self.degree > self.repeats else ""
        return (
            f"in `{self.run}`, {self.repeats} unbounded repeats can all match {self.char!r} with "
            f"nothing between them that forces where one ends{search}, and what follows can "
            f"fail, so a text of n such characters takes on the order of n^{self.degree} steps"
        )

    def text(self, length: int = 20_000) -> str:
        """A text of ``length`` characters on which matching takes ~``length**degree`` steps."""
        return self.lead + self.char * max(0, length - len(self.lead) - len(self.end)) + self.end


@dataclass(frozen=True)
class _Chain:
    """A run followed so far: the characters all its parts can match, and where it is."""

    chars: Chars
    repeats: int
    searched: bool  # the search from every start position counts as one more repeat
    lead: str  # a text that takes the matcher to the run's start
    start: int = -1  # the run's first repeat in the source
    end: int = -1  # the end of its last repeat
    guards: tuple[_Other, ...] = ()  # the other paths where the run began, met after it too


@dataclass(frozen=True)
class _Other:
    """Another path from a branch point to the pattern's end, which the slow text must fail too.

    ``lead`` is the text that takes the matcher to the branch point (None: unknown).
    """

    path: tuple[Node, ...]
    lead: str | None

    def fails_on_lead(self, lead: str) -> bool:
        """Whether this path fails on what a run's ``lead`` puts after the branch point.

        A run that starts inside an optional part or a first alternative, past text of its own,
        puts that text before its repeated character: the path that skips the part meets it
        first, and could match there (``a*(a(b+a*)a*)?a*b+`` matches ``ab``…). Claimed only when
        the path cannot be empty and cannot begin with the text's first character.
        """
        if self.lead is None or len(lead) <= len(self.lead):
            return True  # the run began before the branch point: only its character follows
        rest = lead[len(self.lead) :]
        if all(nullable(n) for n in self.path):
            return False
        return not overlaps(first_of_seq(self.path), ((ord(rest[0]), ord(rest[0])),))


def slow_run(pattern: str) -> SlowRun | None:
    """The slowest run of overlapping repeats in ``pattern`` whose matching time grows faster
    than :data:`MAX_DEGREE` powers of the text's length, or None (see the module)."""
    tree = parse(pattern)
    if tree is None:
        return None
    runs = _Runs(pattern, tree)
    # A pattern that can match nothing succeeds at the first start position: no search.
    start = [] if nullable(tree) else [_Chain(ALL, 0, True, "")]
    runs.walk(tree, start, (), (), "")
    return runs.found


class _Runs:
    """One pass over a pattern's tree, following every run that may still grow."""

    def __init__(self, pattern: str, tree: Node) -> None:
        self.pattern = pattern
        self.found: SlowRun | None = None
        # A character no part of the pattern matches ends a text no path can get past.
        self.outside = subtract(complement(_mentioned(tree)), _SURROGATES)
        self.groups = [(g.start, g.end) for g in _nodes(tree) if g.kind in ("group", "look")]

    def widened(self, start: int, end: int) -> tuple[int, int]:
        """The smallest balanced part of the source holding ``start:end`` (whole groups)."""
        changed = True
        while changed:
            changed = False
            for lo, hi in self.groups:
                if (lo < start < hi < end) or (start < lo < end < hi):
                    start, end, changed = min(start, lo), max(end, hi), True
        return start, end

    def walk(
        self,
        n: Node,
        chains: list[_Chain],
        after: tuple[Node, ...],
        others: tuple[_Other, ...],
        lead: str | None,
    ) -> tuple[list[_Chain], str | None]:
        """Follow ``chains`` through ``n``; ``after`` is what follows ``n`` to the pattern's end,
        ``others`` the other paths that must fail too, and ``lead`` a text that takes the matcher
        to ``n`` (None: unknown, so no run starting here is claimed). Answers the chains that
        come out of ``n`` and the lead past it."""
        if n.kind == "seq":
            for i, item in enumerate(n.items):
                chains, lead = self.walk(item, chains, n.items[i + 1 :] + after, others, lead)
            return chains, lead
        if n.kind == "group":
            return self.walk(n.items[0], chains, after, others, lead)
        if n.kind == "alt":
            out: list[_Chain] = []
            past: str | None = None
            for k, branch in enumerate(n.items):
                rest = tuple(_Other((b, *after), lead) for j, b in enumerate(n.items) if j != k)
                # The first branch is the one tried first: only it leads to a new run.
                begin = lead if k == 0 else None
                came, led = self.walk(branch, chains, after, others + rest, begin)
                out.extend(came)
                past = led if k == 0 else past
            if past is None and lead is not None:  # past a first branch too long to read
                past = _past_alt(n, lead)
            return _prune(out), past
        if n.kind == "rep" and n.low == 0 and n.high == 1:
            came, _ = self.walk(n.items[0], chains, after, (*others, _Other(after, lead)), lead)
            return _prune(came + chains), lead
        if n.kind == "rep" and n.low == n.high == 1:
            return self.walk(n.items[0], chains, after, others, lead)
        if n.kind == "rep" and (n.high is None or n.high > LONG_REPEAT):
            return self.repeat(n, chains, after, others, lead)
        # A fixed part (a character, a bounded repeat, an assertion): a run goes on through it
        # only with the characters it can match; an assertion or a reference ends every run.
        can = _runs_of(n, "run")
        kept = [replace(c, chars=both) for c in chains if (both := intersect(c.chars, can))]
        if n.kind == "assert" and n.name == "^" and lead == "":
            return kept, ""
        if lead is None or n.kind in ("assert", "look", "ref"):
            return kept, None
        text = _witness(n)
        return kept, _joined(lead, text, 1)

    def repeat(
        self,
        n: Node,
        chains: list[_Chain],
        after: tuple[Node, ...],
        others: tuple[_Other, ...],
        lead: str | None,
    ) -> tuple[list[_Chain], str | None]:
        """An unbounded repeat joins every run it shares characters with, and starts one."""
        body = n.items[0]
        can = _units_of(body)
        out: list[_Chain] = []
        for c in chains:
            both = intersect(c.chars, can)
            if both:
                grown = _Chain(
                    both,
                    c.repeats + 1,
                    c.searched,
                    c.lead,
                    c.start if c.start >= 0 else n.start,
                    n.end,
                    c.guards,
                )
                out.append(grown)
                self.judge(grown, after, others)
            if n.low == 0:
                out.append(c)  # the repeat matched nothing: the run goes on past it
        if lead is not None and can:
            out.append(_Chain(can, 1, False, lead, n.start, n.end, others))
        return _prune(out), _joined(lead, _witness(body), n.low)

    def judge(self, chain: _Chain, after: tuple[Node, ...], others: tuple[_Other, ...]) -> None:
        """Keep ``chain`` when it is slower than allowed and a text can make everything after
        it fail at every split: a run of one character that ``after`` and every other path
        cannot match, ended by the end of the text or by a character nothing matches."""
        degree = chain.repeats + chain.searched
        if chain.repeats < 2 or degree <= MAX_DEGREE or chain.lead is None:
            return
        if self.found is not None and self.found.degree >= degree:
            return
        if not all(o.fails_on_lead(chain.lead) for o in (*others, *chain.guards)):
            return
        for mode, end in (("eot", ""), ("stop", _pick(self.outside, _ENDS))):
            if end is None:
                continue
            feed = chain.chars
            for path in (after, *(o.path for o in others)):
                feed = subtract(feed, _runs_of_seq(path, mode))
            char = _pick(feed, _FEED)
            if char is not None:
                start, stop = self.widened(chain.start, chain.end)
                run = self.pattern[start:stop]
                self.found = SlowRun(
                    self.pattern, run, chain.repeats, degree, chain.lead, char, end
                )
                return


_SURROGATES: Chars = ((0xD800, 0xDFFF),)


def _runs_of(n: Node, mode: str) -> Chars:
    """The characters ``c`` such that ``n`` can match a string of ``c`` alone (or nothing).

    ``mode`` says what an assertion, a lookaround or a back reference does. Inside a run
    (``run``) it ends the run: it matches nothing. After a run it may let the match succeed,
    so it matches everything, except that ``$`` fails before a stopping character (``stop``)
    and may succeed at the end of the text (``eot``).
    """
    if n.kind == "set":
        return n.chars
    if n.kind in ("assert", "look", "ref"):
        if mode == "run" or (mode == "stop" and n.name == "$"):
            return ()
        return ALL
    if n.kind == "seq":
        return _runs_of_seq(n.items, mode)
    if n.kind == "alt":
        return norm([p for b in n.items for p in _runs_of(b, mode)])
    if n.kind == "group":
        return _runs_of(n.items[0], mode)
    if n.high == 0 or n.low == 0:  # rep
        return ALL
    return _runs_of(n.items[0], mode)


def _runs_of_seq(items: tuple[Node, ...], mode: str) -> Chars:
    out = ALL
    for item in items:
        out = intersect(out, _runs_of(item, mode))
        if not out:
            break
    return out


def _units_of(n: Node) -> Chars:
    """The characters ``c`` such that ``n`` can match a non-empty string of ``c`` alone."""
    if n.kind == "set":
        return n.chars
    if n.kind in ("assert", "look", "ref"):
        return ()
    if n.kind == "seq":
        some = norm([p for i in n.items for p in _units_of(i)])
        return intersect(some, _runs_of_seq(n.items, "run"))
    if n.kind == "alt":
        return norm([p for b in n.items for p in _units_of(b)])
    if n.kind == "group":
        return _units_of(n.items[0])
    return () if n.high == 0 else _units_of(n.items[0])  # rep


def _witness(n: Node) -> str | None:
    """A shortest text ``n`` matches along its first path, or None when unknown."""
    if n.kind == "set":
        return _pick(n.chars, _FEED)
    if n.kind in ("assert", "look", "ref"):
        return None
    if n.kind == "seq":
        text: str | None = ""
        for item in n.items:
            text = _joined(text, _witness(item), 1)
            if text is None:
                return None
        return text
    if n.kind == "group":
        return _witness(n.items[0])
    if n.kind == "alt":
        return _past_alt(n, "")
    if n.low == 0:  # rep
        return ""
    return _joined("", _witness(n.items[0]), n.low)


def _past_alt(n: Node, lead: str) -> str | None:
    """``lead`` then the first branch's witness; when that branch is known but longer than any
    text the matcher reads, the shortest other branch's (a run behind ``(?:x{30000}|b)`` is
    reached through ``b``, the first branch failing on it); None when unknown."""
    found = _joined(lead, _witness(n.items[0]), 1)
    if found is not None or _witness_length(n.items[0]) is None:
        return found
    others = (_joined(lead, _witness(b), 1) for b in n.items[1:])
    return min((t for t in others if t is not None), key=len, default=None)


def _witness_length(n: Node) -> int | None:
    """The length of :func:`_witness`'s text, however long (None: unknown); nothing built."""
    if n.kind == "set":
        return 1
    if n.kind in ("assert", "look", "ref"):
        return None
    if n.kind == "seq":
        total = 0
        for item in n.items:
            size = _witness_length(item)
            if size is None:
                return None
            total += size
        return total
    if n.kind in ("alt", "group"):
        return _witness_length(n.items[0])
    if n.low == 0:  # rep
        return 0
    body = _witness_length(n.items[0])
    return None if body is None else body * n.low


def _joined(lead: str | None, text: str | None, times: int) -> str | None:
    """``lead`` then ``text`` ``times`` over, or None when either is unknown or the whole is
    longer than :data:`LONGEST_TEXT` (no text the matcher reads gets past it). The length is
    checked before anything is built."""
    if lead is None or text is None or len(lead) + len(text) * times > LONGEST_TEXT:
        return None
    return lead + text * times


def _nodes(n: Node) -> list[Node]:
    """``n`` and every node under it."""
    return [n, *(d for i in n.items for d in _nodes(i))]


def _mentioned(n: Node) -> Chars:
    """Every character some part of ``n`` can match (a back reference: any)."""
    if n.kind == "set":
        return n.chars
    if n.kind == "ref":
        return ALL
    return norm([p for i in n.items for p in _mentioned(i)])


def _pick(chars: Chars, prefer: str) -> str | None:
    """A character of ``chars``: one of ``prefer`` if it can, never a surrogate half."""
    for ch in prefer:
        if overlaps(chars, ((ord(ch), ord(ch)),)):
            return ch
    usable = subtract(chars, _SURROGATES)
    return chr(usable[0][0]) if usable else None


def _prune(chains: list[_Chain]) -> list[_Chain]:
    """The runs worth following: for each set of characters and start, the longest."""
    best: dict[tuple[Chars, bool, bool], _Chain] = {}
    for c in chains:
        key = (c.chars, c.searched, c.lead is None)
        if key not in best or best[key].repeats < c.repeats:
            best[key] = c
    kept = sorted(best.values(), key=lambda c: -(c.repeats + c.searched))
    return kept[:_MAX_CHAINS]
