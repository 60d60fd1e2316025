"""The parse without recursion: json.loads's values at any depth, and no global state touched."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import requires_node, run_node

import adjudge
from adjudge.autocheck import deepjson, jsvalues


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _outcome(parse: Callable[[str], Any], text: str) -> tuple[str, Any]:
    """What ``parse`` makes of ``text``: its value, or that it refused (any other error fails)."""
    try:
        return "value", parse(text)
    except ValueError:
        return "refused", None


def _stdlib(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse, parse_int=float)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types, keys in the same order, ``-0.0`` apart from ``0.0``.

    A walk with its own stack, so it compares values nested 100,000 deep.
    """
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, float):
            if x != y or math.copysign(1, x) != math.copysign(1, y):
                return False
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif isinstance(x, dict):
            if list(x) != list(y):
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


# Texts json.loads reads: every gap may hold any of its four white-space characters.
_gap = st.text(alphabet=" \t\n\r", max_size=3)
_numbers = st.from_regex(
    r"-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?", fullmatch=True
) | st.sampled_from(
    [
        "-0",
        "-0.0",
        "0e0",
        "1e400",  # past the largest double: inf
        "-1e400",
        "1e-400",  # below the smallest: 0.0
        "4.9e-324",
        "2.4703282292062328e-324",  # a tie at the bottom of the subnormals
        "1.7976931348623157e308",
        "1.7976931348623158e308",  # rounds down to the largest double
        "9007199254740993",  # 2**53 + 1: rounds to even
        "9" * 400,  # an integer no double holds: inf, where int() would refuse 4,300 digits
        "1" + "0" * 5000,
        "0." + "0" * 400 + "1",
    ]
)
_escapes = st.sampled_from(
    [
        *['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u00e9", "\\u0041"],
        *["\\u0000", "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\ud800", "\\udc00", "\\udc00\\ud800"],
        "\\udbff\\u0041",  # a high surrogate, then not a low one
    ]
) | st.integers(0, 0xFFFF).map(lambda n: f"\\u{n:04x}")
_plain = st.characters(
    codec="utf-8", exclude_characters='"\\', min_codepoint=0x20
) | st.sampled_from(
    ["😀", "\u2028", "\ufeff", "\x7f", "\ud800"]  # a lone surrogate as a character, too
)
_strings = st.lists(_plain | _escapes, max_size=6).map(lambda parts: '"' + "".join(parts) + '"')
# A few keys, one spelled two ways ("a" and "\u0061"), so objects repeat keys often.
_keys = st.sampled_from(['"a"', '"b"', '"\\u0061"', '""', '"0"', '"10"']) | _strings
_scalars = _numbers | _strings | st.sampled_from(["true", "false", "null"])


def _array(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    items = st.lists(st.tuples(_gap, inner, _gap), max_size=4)
    return st.builds(
        lambda gap, items: "[" + gap + ",".join(a + v + b for a, v, b in items) + "]", _gap, items
    )


def _object(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    members = st.lists(st.tuples(_gap, _keys, _gap, _gap, inner, _gap), max_size=5)
    return st.builds(
        lambda gap, members: (
            "{" + gap + ",".join(a + k + b + ":" + c + v + d for a, k, b, c, v, d in members) + "}"
        ),
        _gap,
        members,
    )


_values = st.recursive(_scalars, lambda inner: _array(inner) | _object(inner), max_leaves=25)
json_texts = st.builds(lambda a, v, b: a + v + b, _gap, _values, _gap)

# What a text can be broken with: structure, white space json.loads refuses (NBSP, BOM, form
# feed), control characters, other scripts' digits, the constants, and what numbers are made of.
_breakers = [
    *'[]{},:"\\ \t\n\r0123456789-+.eEnulltruefalseNaIy',
    "\x00",
    "\x0b",
    "\x0c",
    "\x1f",
    "\xa0",
    "\ufeff",
    "\u0663",
    "\ud800",
    "NaN",
    "Infinity",
    "-Infinity",
    "\\u",
    "\\ud800",
    '"a":',
]


@st.composite
def broken_texts(draw: st.DrawFn) -> str:
    """A JSON text with one to three characters or runs deleted, inserted, replaced or cut."""
    text = draw(json_texts)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(["delete", "insert", "replace", "cut", "repeat"]))
        piece = draw(st.sampled_from(_breakers))
        if how == "delete":
            text = text[:at] + text[at + 1 :]
        elif how == "insert":
            text = text[:at] + piece + text[at:]
        elif how == "replace":
            text = text[:at] + piece + text[at + 1 :]
        elif how == "cut":
            text = text[:at]
        else:
            text = text[:at] + text[at : at + 3] + text[at:]
    return text


@given(json_texts)
def test_same_values_as_json_loads(text: str) -> None:
    """Every text json.loads reads gives the same values, of the same types, keys in order."""
    expected = _stdlib(text)
    assert _same(deepjson.loads(text), expected)


@given(broken_texts() | st.lists(st.sampled_from(_breakers), max_size=12).map("".join))
def test_refuses_what_json_loads_refuses(text: str) -> None:
    """A broken text is refused by both or read the same by both."""
    ours, theirs = _outcome(deepjson.loads, text), _outcome(_stdlib, text)
    assert ours[0] == theirs[0]
    assert _same(ours[1], theirs[1])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": 2, "a": 3}', {"a": 3.0, "b": 2.0}),  # the last value, the first place
        ('"\\ud800x"', "\ud800x"),  # a lone surrogate escape is kept
        ("-0", -0.0),
        ("1e400", math.inf),
        ("9" * 400, math.inf),
        (" \t\n\r[ ]\r\n\t ", []),
    ],
)
def test_edges(text: str, expected: Any) -> None:
    """The cases the stdlib's hooks decide: keys, surrogates, signed zero, overflow, white space."""
    assert _same(deepjson.loads(text), expected)
    assert _same(_stdlib(text), expected)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "NaN",
        "[-Infinity]",
        '{"a": Infinity}',
        "1\u0663",  # a digit of another script: NUMBER_RE's \d would read it
        "[1]\xa0",  # white space to JavaScript, not to JSON
        "\ufeff[]",
        '"a\x01"',
        "[1,]",
        '{"a":1,}',
        "[] []",
        "01",
    ],
)
def test_refusals(text: str) -> None:
    """Constants, foreign digits and white space, control characters, trailing data."""
    with pytest.raises(ValueError):
        _stdlib(text)
    with pytest.raises(ValueError):
        deepjson.loads(text)


DEPTH = 100_000


def _nest(depth: int, leaf: Any, wrap: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = wrap(level, value)
    return value


def _deep() -> dict[str, tuple[str, Any]]:
    """Deep texts and their values, built when a test asks (kept, they would slow every later
    garbage collection of the worker)."""
    half = DEPTH // 2
    return {
        "arrays": ("[" * DEPTH + "]" * DEPTH, _nest(DEPTH - 1, [], lambda _, v: [v])),
        "objects": ('{"a":' * DEPTH + "1" + "}" * DEPTH, _nest(DEPTH, 1.0, lambda _, v: {"a": v})),
        # Levels alternate; each has a sibling before and after, and white space around it.
        "mixed": (
            '[ 1, {"k" : "x", "a": ' * half + "null" + ' , "k": -0.0 } , true ]' * half,
            _nest(half, None, lambda _, v: [1.0, {"k": -0.0, "a": v}, True]),
        ),
    }


def _stack_size() -> int:
    """``threading.stack_size()``: called bare it also sets it (to 0), so it is put back."""
    size = threading.stack_size()
    threading.stack_size(size)
    return size


def test_deep_texts_parse_and_leave_the_interpreter_alone() -> None:
    """Nesting 100,000 deep parses to its structure; no thread sees the recursion limit or the
    stack size of new threads change, while it parses or after."""
    before = (sys.getrecursionlimit(), _stack_size())
    seen: set[tuple[int, int]] = set()
    samples = [0]
    stop, first = threading.Event(), threading.Event()

    def watch() -> None:
        while not stop.wait(0.001):  # a pause between samples leaves the parse the interpreter
            seen.add((sys.getrecursionlimit(), _stack_size()))
            samples[0] += 1
            first.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    first.wait()
    at_start = samples[0]
    try:
        for text, expected in _deep().values():
            assert _same(jsvalues.parse(text), expected)
    finally:
        at_end = samples[0]
        stop.set()
        watcher.join()
    assert at_end > at_start, "the watcher never ran while the texts were parsed"
    assert seen == {before}
    assert (sys.getrecursionlimit(), _stack_size()) == before


def test_deep_broken_texts_are_refused() -> None:
    """Deep texts json.loads cannot read for their depth are refused where they are broken."""
    for text in (
        "[" * DEPTH + "]" * (DEPTH - 1),  # one left open
        "[" * DEPTH + "]" * DEPTH + "]",
        "[" * DEPTH + "1," + "]" * DEPTH,
        '{"a":' * DEPTH + "NaN" + "}" * DEPTH,
        '{"a":' * DEPTH + "}" * DEPTH,
    ):
        with pytest.raises(ValueError):
            jsvalues.parse(text)


_FLATTEN_JS = """
function flatten(root) {  // the value as tokens, walked with its own stack (any depth)
  const out = [], todo = [["value", root]];
  while (todo.length) {
    const [kind, v] = todo.pop();
    if (kind === "token") {
      out.push(v);
    } else if (Array.isArray(v)) {
      out.push("[");
      todo.push(["token", "]"]);
      for (let i = v.length - 1; i >= 0; i--) todo.push(["value", v[i]]);
    } else if (v !== null && typeof v === "object") {
      out.push("{");
      todo.push(["token", "}"]);
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        todo.push(["value", v[keys[i]]], ["token", JSON.stringify(keys[i]) + ":"]);
      }
    } else {
      out.push(JSON.stringify(v));
    }
  }
  return out;
}
const RESULTS = CASES.map(s => {
  try { return flatten(JSON.parse(s)); } catch (e) { return null; }
});
"""


def _flatten(root: Any) -> list[str]:
    """The value as the tokens ``_FLATTEN_JS`` gives: brackets, keys in JavaScript's order, and
    leaves as ``JSON.stringify`` writes them."""
    out: list[str] = []
    todo: list[tuple[str, Any]] = [("value", root)]
    while todo:
        kind, value = todo.pop()
        if kind == "token":
            out.append(value)
        elif isinstance(value, list):
            out.append("[")
            todo.append(("token", "]"))
            todo.extend(("value", item) for item in reversed(value))
        elif isinstance(value, dict):
            out.append("{")
            todo.append(("token", "}"))
            for key, item in reversed(jsvalues._ordered_items(value)):
                todo += [("value", item), ("token", jsvalues.stringify(key) + ":")]
        else:
            out.append(jsvalues.stringify(value))
    return out


def _parsed_tokens(text: str) -> list[str] | None:
    try:
        return _flatten(jsvalues.parse(text))
    except ValueError:
        return None


@pytest.mark.node
@requires_node
def test_deep_texts_match_node() -> None:
    """JSON.parse in node reads deep texts to the same values, and refuses the same ones."""
    levels = 10_000  # ten times the recursion limit
    cases = [text for text, _ in _deep().values()] + [
        # Repeated keys (the last value, the first place) and an index-like key (first in
        # JavaScript's order) at every level, huge and signed-zero numbers at the bottom.
        '{"b": 1, "1": 2, "a":' * levels + "[-0, 1e400, 1E-400]" + ', "b": "\\ud800"}' * levels,
        "[" * DEPTH + "]" * (DEPTH - 1),
        '{"a":' * DEPTH + "NaN" + "}" * DEPTH,
        "[" * DEPTH + "1," + "]" * DEPTH,
    ]
    expected = run_node(_FLATTEN_JS, cases)
    got = [_parsed_tokens(text) for text in cases]
    assert [tokens is None for tokens in got] == [tokens is None for tokens in expected]
    assert got == expected


# Threads parse a deep result while others call json.loads on an ordinary stack, as the
# service's request threads do. Every thread has its stack before the first parse (a thread
# started while the stack size of new threads was raised would hide the crash).
_CONCURRENT = textwrap.dedent(
    """
    import json, sys, threading, time
    from adjudge.autocheck import jsvalues

    N = 99_000  # a 198 KB result: within the 200,000 characters a result may have
    result = '{"a":"alpha beta gamma","b":' + "[" * N + "]" * N + "}"
    started = threading.Barrier(8)
    end = time.monotonic() + float(sys.argv[1])

    def parse() -> None:
        started.wait()
        while time.monotonic() < end:
            assert isinstance(jsvalues.parse(result), dict)

    def loads() -> None:
        started.wait()
        while time.monotonic() < end:
            try:
                json.loads(result)
            except RecursionError:
                pass

    threads = [threading.Thread(target=f) for f in [parse] * 4 + [loads] * 4]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("survived")
    """
)


def test_concurrent_deep_parses_keep_the_process_alive() -> None:
    """Deep results parsed on several threads for 5 s, beside plain json.loads calls: the
    process lives (a process-wide recursion limit raised for one parse let another thread's
    json.loads run past its stack, and the process died of SIGSEGV within a second)."""
    src = os.path.dirname(os.path.dirname(adjudge.__file__))
    env = dict(os.environ, PYTHONPATH=src)
    done = subprocess.run(
        [sys.executable, "-c", _CONCURRENT, "5"],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, "survived\n"), (
        f"the process ended with {done.returncode} (-11 is SIGSEGV): {done.stderr[-2000:]}"
    )
