"""jsregex against node's own RegExp: a table of tricky cases and generated patterns.

One node process serves the whole module: each batch of cases goes to it as one JSON line and
comes back as one. Node runs the reference's three steps (``isSafeRegexSource``, ``new RegExp``,
``test`` on the first 20,000 code units); Python runs ``jsregex``. Texts stay short, so a
pattern that backtracks badly still finishes in both.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from adjudge.autocheck import jsregex

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(
        shutil.which("node") is None,
        reason="node is not on PATH: the differential tests compare against node's RegExp",
    ),
]

# The reference's step 1, transcribed from the spec's description, and steps 2 and 3.
_NODE_SCRIPT = r"""
function isSafeRegexSource(src) {
  if (src.length > 200) return false;
  const stack = [];
  let closedGroupHadQuant = false, prevWasGroupClose = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') { i++; prevWasGroupClose = false; continue; }
    if (c === '[') {
      i++;
      while (i < src.length && src[i] !== ']') { if (src[i] === '\\') i++; i++; }
      prevWasGroupClose = false; continue;
    }
    if (c === '(') { stack.push(false); prevWasGroupClose = false; continue; }
    if (c === ')') {
      const had = stack.length ? stack.pop() : false;
      closedGroupHadQuant = had;
      if (had && stack.length) stack[stack.length - 1] = true;
      prevWasGroupClose = true; continue;
    }
    const quant = c === '*' || c === '+' ||
      (c === '{' && /^\{\d*,?\d*\}/.test(src.slice(i, i + 12)));
    if (quant) {
      if (prevWasGroupClose && closedGroupHadQuant) return false;
      if (stack.length) stack[stack.length - 1] = true;
    }
    prevWasGroupClose = false;
  }
  return true;
}
require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const out = JSON.parse(line).map(([p, t]) => {
    let re;
    try { re = new RegExp(p); } catch (e) { return [isSafeRegexSource(p), 'invalid']; }
    return [isSafeRegexSource(p), re.test(t.slice(0, 20000))];
  });
  process.stdout.write(JSON.stringify(out) + '\n');
});
"""

Case = tuple[str, str]


class Node:
    """One node process answering batches of (pattern, text) cases."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", "-e", _NODE_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def run(self, cases: list[Case]) -> list[list[Any]]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        # ensure_ascii keeps lone surrogates as \udxxx escapes, which JSON.parse accepts.
        self.process.stdin.write(json.dumps(cases, ensure_ascii=True) + "\n")
        self.process.stdin.flush()
        result: list[list[Any]] = json.loads(self.process.stdout.readline())
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    """The module's node process."""
    process = Node()
    yield process
    process.close()


def ours(pattern: str, text: str) -> list[Any]:
    """What jsregex says for one case, in node's shape: [is safe, matched or "invalid"]."""
    safe = jsregex.is_safe(pattern)
    try:
        compiled = jsregex.compile(pattern)
    except jsregex.InvalidPattern:
        return [safe, "invalid"]
    if safe:
        return [safe, jsregex.test(pattern, text, timeout=5.0)]
    return [safe, compiled.search(text)]  # short texts: bounded even for nested quantifiers


def divergences(node: Node, cases: list[Case]) -> list[str]:
    """Every case where jsregex and node disagree, described."""
    return [
        f"{pattern!r} on {text!r}: node {theirs}, jsregex {mine}"
        for (pattern, text), theirs in zip(cases, node.run(cases), strict=True)
        if (mine := ours(pattern, text)) != theirs
    ]


# Tricky patterns, each with the texts that tell the readings apart.
TABLE: dict[str, list[str]] = {
    # Annex B: lone "]", "{" and "}" are literals; a "{" that is not a quantifier too.
    "]": ["]", "a"],
    "a]": ["a]", "a"],
    "{": ["{", "a"],
    "a{": ["a{"],
    "a{1": ["a{1"],
    "a{1,": ["a{1,"],
    "a{,5}": ["a{,5}", "a"],
    "x{1}}": ["x}"],
    "}": ["}"],
    "{1}": ["a"],
    "x{2,1}": ["xx"],
    "a**": ["a"],
    "a{1}{2}": ["a"],
    # \8 and \9 are identity escapes; \1 with no group is an octal escape.
    "\\8": ["8", "\x08"],
    "\\9": ["9"],
    "(a)\\8": ["a8"],
    "\\1": ["\x01", "1"],
    "(a)\\1": ["aa", "a\x01"],
    "\\1(a)": ["a"],
    "\\08": ["\x008"],
    "\\377": ["\xff"],
    "\\400": [" 0"],
    "\\0": ["\x00", "0"],
    "[\\1]": ["\x01", "1"],
    "[\\18]": ["8", "\x01"],
    "(a)(b)\\3": ["ab\x03", "abb"],
    # \c: a control letter, else a literal backslash; in classes also digits and "_".
    "\\cA": ["\x01"],
    "\\cj": ["\n"],
    "\\c": ["\\c", "c"],
    "\\c1": ["\\c1", "\x11"],
    "\\c_": ["\\c_", "\x1f"],
    "[\\c1]": ["\x11", "1"],
    "[\\c_]": ["\x1f"],
    "[\\c]": ["c", "\\", "\x03"],
    "[\\c-]": ["-", "\\"],
    "[\\c*]": ["*"],
    "\\c\\u{0}": ["]", "\\c", "\x15"],
    "[\\c\\u{0}]": ["]", "\\", "u", "\x15"],
    "\\c\\u0041": ["\\cA", "\x01"],
    "\\c\\uD83D": ["\\c\ud83d"],
    # \b is a word boundary outside classes, a backspace inside.
    "[\\b]": ["\x08", "b"],
    "\\b": ["a", " "],
    "a\\b": ["ab", "a b"],
    "\\B": ["ab", "a"],
    # Named groups and \k.
    "(?<n>a)\\k<n>": ["aa", "a"],
    "\\k<x>": ["k<x>"],
    "\\k": ["k"],
    "[\\k]": ["k"],
    "(?<a>.)[\\k]": ["ak"],
    "(?<n>a)\\k<x>": ["aa"],
    "(?<a>.)\\k": ["aa"],
    "(?<a>.)\\k<a": ["aa"],
    "\\k<a>(?<a>x)": ["x"],
    "(?<a>x)(?<a>y)": ["xy"],
    "(?<a>x)|(?<a>y)": ["y"],
    "(?<a>x)|(?<\\u0061>y)": ["y"],
    "[(?<a>)]\\k": ["k"],
    "(?<𝒜>.)": ["a"],
    "(?<\\u0061>.)\\k<a>": ["bb"],
    "(?<\\u{61}>.)": ["b"],
    "(?<\\uD835\\uDC9C>.)": ["b"],
    "(?<\\uD835\\uDC9C>x)|(?<𝒜>y)": ["y"],
    "(?<\\u{1D49C}>x)|(?<𝒜>y)": ["y"],
    "(?<\\uD835\\uDC9C>x)\\k<𝒜>": ["xx"],
    "(?<𝒜>x)\\k<\\u{1D49C}>": ["xx"],
    "(?<\\uD835>x)": ["x"],
    "(?<a": ["a"],
    "(?<1a>.)": ["a"],
    # Lookarounds, including lookbehind and quantified lookahead (Annex B).
    "(?<=a)b": ["ab", "b"],
    "(?<!a)b": ["ab", "cb"],
    "(?<=(a|b)+)c": ["abc", "c"],
    "(?=a)*": ["a"],
    "(?=a)+b": ["ab"],
    "(?!a){2}b": ["b"],
    "(?<=a)+": ["a"],
    "(?<=a)?": ["a"],
    # Assertions: "\b" and "\B" cannot be repeated, a group around them can.
    "\\b*": [""],
    "a\\b+": ["a"],
    "\\B?": [""],
    "\\b{2}": [""],
    "\\b{,2}": ["{,2}"],
    "\\b{2,}": [""],
    "(?:\\b)*": [""],
    "^*": [""],
    "$+": [""],
    # Modifiers and other groups node 20 refuses.
    "(?i:a)": ["A"],
    "(?i)a": ["A"],
    "(?-i:a)": ["a"],
    "(?": ["a"],
    "(?P<a>x)": ["x"],
    "(?#c)": [""],
    # White space and line terminators.
    "\\s": ["\ufeff", "\xa0", "\u1680", "\u180e", "\u2028", "\u2029", "\u200b", "\u3000", "\x85"],
    "\\S": ["\ufeff", "\u180e", "\x85"],
    "[\\s]": ["\ufeff", "\u180e"],
    "^.$": ["\n", "\r", "\u2028", "\u2029", "\x85", "\x0b", "😀", "a", "\ud83d"],
    # \w, \d and \b are ASCII without the u flag.
    "\\w": ["é", "ſ", "\u212a", "_"],
    "\\d": ["٣", "５"],
    "\\bé": ["é", "aé"],
    "é\\b": ["é", "éa"],
    "\\W": ["é"],
    # Anchors: no multiline, "$" only at the very end.
    "a$": ["a\n", "a"],
    "^a": ["\na", "a"],
    "a$\\n": ["a\n"],
    # Empty and universal classes.
    "[^]": ["x", "\n", ""],
    "[]": ["x", ""],
    "[]]": ["]", "]]"],
    "[^]]": ["]", "a]"],
    "[[]": ["["],
    "[a-]": ["-"],
    "[-a]": ["-"],
    "[--/]": [".", "-"],
    "[a-b-c]": ["-", "c"],
    "[\\d-z]": ["-", "m"],
    "[a-\\d]": ["-", "b"],
    "[\\w-a]": ["-"],
    "[z-a]": ["a"],
    "[\\-]": ["-"],
    "[\\x41-\\x43]": ["B", "D"],
    "[\\101-\\103]": ["B"],
    # Astral characters are two code units without the u flag.
    "^..$": ["😀", "ab"],
    "^[^a]$": ["😀", "\ude00"],
    "^[^a][^a]$": ["😀"],
    "^\\S\\S$": ["😀"],
    "^\\W\\W$": ["😀"],
    "^\\D$": ["😀"],
    "^😀$": ["😀", "\ud83d"],
    "😀+": ["😀", "😀\ude00\ude00", "\ud83d"],
    "^😀{2}$": ["😀😀", "😀\ude00"],
    "^[😀]$": ["\ud83d", "\ude00", "😀"],
    "^[😀]+$": ["😀", "😀😀"],
    "[😀-😎]": ["😀"],
    "[😎-😀]": ["😀"],
    "^\\uD83D\\uDE00$": ["😀"],
    "^\\uD83D$": ["\ud83d", "😀"],
    "\\uD83D": ["😀", "\ud83d", "a"],
    "\\uDE00$": ["😀", "a\ude00"],
    "^[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]$": ["😀", "𝒜", "ab"],
    "^[\\u0000-\\uFFFF]$": ["😀", "\ud83d", "a", "\uffff"],
    "^[\\u0000-\\uFFFF]{2}$": ["😀"],
    "^[^\\u0000-\\uFFFF]$": ["😀", "a"],
    "[^\\uD800-\\uDFFF]": ["😀", "a😀", "\ud83d"],
    "^[a-\\uD83D]$": ["\ud83d", "\ud83e", "\ue000", "b"],
    "^[\\uD83D-\\uFFFF]$": ["\ud83d", "\ud800", "\ue000", "\uffff"],
    "^[\\uDE00-\\uE000]$": ["\ude00", "\udfff", "\ue000", "\ue001"],
    "[\\uE000-\\uFFFF]": ["\ue000", "😀"],
    "^[\\s\\S]$": ["\ud83d", "😀"],
    "\\😀": ["😀"],
    "[\\😀]": ["\ude00"],
    "\\c😀": ["\\c😀"],
    "^.{3}$": ["a😀", "😀"],
    "(.)\\1": ["😀😀", "\ud83d\ud83d"],
    "\\ud83d\\ude00|x": ["😀"],
    "\U000f0000": ["\U000f0000", "\ud800"],
    # \u{...} is "u" and a quantifier without the u flag.
    "\\u{61}": ["a", "u" * 61, "u" * 60],
    "\\u{2}": ["uu", "u"],
    "^\\u{2}$": ["uu"],
    "\\u{2,}": ["uu"],
    "\\u{zz}": ["u{zz}"],
    "[\\u{61}]": ["a", "u", "{", "6"],
    "\\u12": ["u12"],
    "\\u": ["u"],
    "\\\\u{2}": ["\\uu"],
    "\\x4": ["x4"],
    "\\x": ["x"],
    # Identity escapes and errors.
    "\\p{L}": ["p{L}", "a"],
    "\\P": ["P"],
    "\\_": ["_"],
    "\\a": ["a"],
    "\\e": ["e"],
    "\\/": ["/"],
    "/": ["/"],
    "\\-": ["-"],
    "\\": ["x"],
    "a\\": ["a"],
    "(": ["x"],
    ")": [")"],
    "[": ["["],
    "[a": ["a"],
    "*": ["*"],
    "+a": ["a"],
    "?": ["?"],
    "a|*": ["a"],
    "(?:)": [""],
    "": ["", "a"],
    "|": [""],
    # Back references, also inside lookbehind (matched right to left) and to unset groups.
    "(?<=\\1(a))b": ["aab", "ab", "b"],
    "(?<=(a)\\1)b": ["aab", "ab"],
    "(?<=(\\d+)(\\d+))x\\1": ["1053x1", "1053x105"],
    "(?<=(\\d+)(\\d+))x\\2": ["1053x053", "1053x3"],
    "(?<!(a)\\1)b": ["aab", "ab"],
    "(?=(a+))a*b\\1": ["baaabac"],
    "(.*?)a(?!(a+)b\\2c)\\2(.*)": ["baaabaac"],
    "(a)|b\\1": ["b"],
    "(?:(a)|b)\\1": ["b", "aa"],
    "((a)|b)+\\2": ["aba", "ab"],
    # More octal and hex edges.
    "\\x7g": ["x7g"],
    "[\\x7g]": ["g", "x"],
    "\\0001": ["\x001"],
    "[\\0001]": ["1", "\x00"],
    "\\78": ["\x078"],
    "\\477": ["\x277"],
    # Huge repetition counts.
    "a{2147483648}": ["a"],
    "a{99999999999999999}": ["a"],
    "a{2,2147483648}": ["aa"],
    # Backtracking shapes that finish on short texts.
    "(?:a|b)+?c": ["abc"],
    "^(?:a|)*$": ["aaa"],
    "(a*)*b": ["aab", "aaa"],
    "^(a?){3}a{3}$": ["aaa"],
    "(\\2two|(one))+": ["oneonetwo"],
    "^(a+)+$": ["aaaa", "aaab"],
    "(a|ab)(c|bcd)(d*)": ["abcd"],
    "^(?:(a)|b)+$": ["ab"],
    "(z)((a+)?(b+)?(c))*": ["zaacbbbcac"],
}

TABLE_CASES: list[Case] = [(p, t) for p, texts in TABLE.items() for t in texts]


def test_table_agrees_with_node(node: Node) -> None:
    """Every hand-picked tricky case gives node's answer (validity and match)."""
    assert divergences(node, TABLE_CASES) == []


def test_input_cap_agrees_with_node(node: Node) -> None:
    """Only the first 20,000 UTF-16 code units are read, astral characters counting twice."""
    cases = [
        ("b", "a" * 20_000 + "b"),
        ("b", "a" * 19_999 + "b"),
        ("b$", "😀" * 9_999 + "b"),
        ("b", "😀" * 10_000 + "b"),
        ("\\uD83D$", "a" * 19_999 + "😀"),
        ("\\uDE00", "a" * 19_999 + "😀"),
        ("^[^]*$", "😀" * 10_001),
    ]
    assert divergences(node, cases) == []


# A small grammar of the syntax that differs between readings.
_ATOMS = [
    "a", "b", "u", "k", "-", ".", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B", "^",
    "$", "[ab]", "[^a]", "[a-c]", "[^]", "[]", "[\\b]", "[\\c_]", "[\\c]", "[\\d-z]", "]", "{",
    "}", "\\8", "\\1", "\\2", "\\01", "\\cA", "\\c", "\\u{2}", "\\u{61}", "\\x41", "\\u0061",
    "\\uD83D", "\\uDE00", "😀", "é", "\\k<g>", "\\k", "[\\u0000-\\uFFFF]", "[\\uD800-\\uDBFF]",
    "[^\\uDC00-\\uDFFF]", "[a-\\uD83D]", "[😀]", "\\😀", "\\p{L}", "(?=a)", "(?!b)", "(?<=a)",
    "(?<!b)", "\\n", "\\/", "\\-", "\\u{0}", "\\u{", "\\x4", "\\u12", "\\0", "\\00", "\\7",
    "\\377", "\\08", "\\18", "\\9", "\\10", "[\\1-\\8]", "[\\c1-\\c9]", "[\\x00-\\uFFFF]",
    "[\\uDBFF-\\uDC00]", "[\\ud83d\\ude00]", "[\\u{61}-z]", "[\\w-\\uD800]", "[😀-\\uDFFF]",
    "[^😀]", "(?<h>a)", "\\k<h>", "[-]", "[\\]]", "\\]", "\\{", "x{1,2", "\\c[", "[\\cz]", "𝒜",
    "ſ", "(?<𝒜>a)", "\\k<𝒜>", "\\q", "\\t",
]  # fmt: skip
_QUANTIFIERS = ["*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?", "??", "{2,}?", "{,2}", "{"]
_NOISE = "()[]{}|\\*+?^$.-<>k"
_TEXT_CHARS = [
    "a", "b", "u", "k", "A", "1", "_", " ", "-", "\n", "é", "😀", "\ud83d", "\ude00", "\u2028",
    "\ufeff", "\xa0", "<", ">", "g", "{", "}", "\x01", "\x1f", "\x08", "p",
]  # fmt: skip


def _group(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    wrappers = ["({})", "(?:{})", "(?={})", "(?!{})", "(?<={})", "(?<!{})", "(?<g>{})"]
    return st.tuples(st.sampled_from(wrappers), inner).map(lambda wi: wi[0].format(wi[1]))


_REGEX = st.recursive(
    st.sampled_from(_ATOMS),
    lambda inner: st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map("|".join),
        _group(inner),
        st.tuples(inner, st.sampled_from(_QUANTIFIERS)).map("".join),
    ),
    max_leaves=6,
)
_PATTERNS = st.one_of(
    _REGEX,
    st.lists(st.sampled_from(list(_NOISE) + _ATOMS[:20]), max_size=8).map("".join),
)
_TEXTS = st.text(alphabet=st.sampled_from(_TEXT_CHARS), max_size=10)
_BATCHES = st.lists(st.tuples(_PATTERNS, st.lists(_TEXTS, min_size=1, max_size=4)), min_size=60)

# No shrinking: a failing batch is long, and the assertion already lists each divergent case.
_FAST = settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_FAST
@given(_BATCHES)
def test_generated_patterns_agree_with_node(node: Node, batch: list[tuple[str, list[str]]]) -> None:
    """Generated patterns and texts: same safety, same validity, same match as node."""
    cases = [(pattern, text) for pattern, texts in batch for text in texts]
    assert divergences(node, cases) == []


@_FAST
@given(st.lists(st.text(alphabet=st.sampled_from(list("()[]{}\\*+?a1,|😀")), max_size=14)))
def test_safety_scan_agrees_with_node(node: Node, patterns: list[str]) -> None:
    """The nested-quantifier scan refuses exactly what the reference's scan refuses."""
    cases = [(pattern, "") for pattern in patterns]
    theirs = [safe for safe, _ in node.run(cases)]
    assert [jsregex.is_safe(p) for p in patterns] == theirs


# Classes whose ranges start, end or sit around the surrogate block, which the rewrite splits.
_EDGES = [0x0, 0x2D, 0x5C, 0x5D, 0x61, 0xFF, 0xD7FF, 0xD800, 0xD83D, 0xDBFF, 0xDC00, 0xDE00]
_EDGES += [0xDFFF, 0xE000, 0xFFFE, 0xFFFF]
_CLASS_TEXT = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00", "😀", "\ue000", "\uffff"]
_CLASS_TEXT += ["a", "-", "\\", "]", "\x00", "\xff", "\ud7ff", "1", "c", "u", "{"]


def _endpoint(unit: int, form: int) -> str:
    """A class endpoint for ``unit``: an escape, or the character itself where it can be."""
    if form == 0 or 0xD800 <= unit <= 0xDFFF:
        return f"\\u{unit:04X}"
    if form == 1 and unit < 0x100:
        return f"\\x{unit:02x}"
    return "\\" + chr(unit) if chr(unit) in "\\]-^[" else chr(unit)


_CLASS_ATOM = st.one_of(
    st.builds(
        _endpoint,
        st.one_of(st.sampled_from(_EDGES), st.integers(0, 0xFFFF)),
        st.integers(0, 2),
    ),
    st.sampled_from(["\\d", "\\S", "\\W", "\\c", "\\c1", "\\-", "\\u{41}", "😀", "\\😀", "\\b"]),
)
_CLASS_ITEM = st.one_of(_CLASS_ATOM, st.tuples(_CLASS_ATOM, _CLASS_ATOM).map("-".join))
_CLASSES = st.builds(
    lambda negated, items, tail: "^[" + negated + "".join(items) + "]" + tail,
    st.sampled_from(["", "^"]),
    st.lists(_CLASS_ITEM, max_size=4),
    st.sampled_from(["", "+", "{2}", "$"]),
)


@settings(_FAST, max_examples=15)
@given(
    st.lists(
        st.tuples(_CLASSES, st.lists(st.sampled_from(_CLASS_TEXT), max_size=3).map("".join)),
        min_size=40,
    )
)
def test_generated_classes_agree_with_node(node: Node, cases: list[Case]) -> None:
    """Class ranges around and across the surrogate block match the code units node matches."""
    assert divergences(node, cases) == []


@pytest.mark.skip(
    reason="known gap: the 100 ms limit is wall-clock and regress is up to ~13x slower than V8 "
    "on backtracking-heavy matches, so a match node finishes in 10-100 ms may time out here "
    "(docs/autocheck-regex.md, Known gaps)"
)
def test_timeouts_agree_with_node() -> None:
    """A match node finishes well within the limit also finishes here."""
    text = "ab" * 3_800  # (?:a|b)*?c on this: about 35 ms in node 20, 0.5 s in regress
    assert not jsregex.test("(?:a|b)*?c", text)
