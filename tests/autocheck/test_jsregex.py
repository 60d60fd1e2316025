"""jsregex: the reference's three steps for a poster's regex_pattern, and the match sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge import Error
from adjudge.autocheck import _regexsource, _sandbox, jsregex
from adjudge.autocheck.jsvalues import utf16_len

CATASTROPHIC = [
    ("(a|a)+$", "a" * 40 + "b"),
    ("(a|b|ab)*c", "ab" * 30),
]


def test_constants() -> None:
    """The reference's limits, by name."""
    assert jsregex.MAX_PATTERN_LENGTH == 200
    assert jsregex.INPUT_CAP == 20_000
    assert jsregex.TIMEOUT_SECONDS == 0.1


# Step 1: the nested-quantifier scan.

UNSAFE = [
    "(a+)+",
    "((a+))+",
    "(a+|b)+",
    "(?:a*)*",
    "(a{2,})*",
    "(a{2})+",
    "(a*){2}",
    "(a*){2,}",
    "(a+){}",
    "(a+){,}",
    "(a+){1234567890}",
    "((a)+)+",
    "(a(b+)c)*",
    "x(a+)+y",
    "(?=a+)+",
    "(a+)(b)(c+)*",
    "(\\d+)*",
    "([a-z]+)*",
    "(😀+)+",
]

SAFE = [
    "",
    "a+",
    "(a)+",
    "(a+)",
    "(a+)?",
    "(a+)??",
    "(a?)+",
    "[(a+)]+",
    "\\(a+\\)+",
    "(a+)b+",
    "(a+)(b)+",
    "(a+))+",
    "(a+[)]+",
    "[]a+)+]",
    "(a+)\\+",
    "(a+){x}",
    "(a+){1,2",
    "(a+){12345678901}",
    "(a+){-1}",
    "(a+)\\{2}",
    "(a|b)+",
    "(a|b|ab)*c",
    "^\\d{3}-\\d{4}$",
    "(?:ab)*",
    "[\\]a+)]+",
    "(a+)[+]",
]


@pytest.mark.parametrize("pattern", UNSAFE)
def test_nested_quantifier_is_unsafe(pattern: str) -> None:
    """A group that holds a quantifier and is itself repeated is refused."""
    assert not jsregex.is_safe(pattern)
    with pytest.raises(jsregex.UnsafePattern) as info:
        jsregex.test(pattern, "aaaa")
    assert info.value.code == "REGEX_PATTERN_UNUSABLE"
    assert "nested quantifier" in info.value.message


@pytest.mark.parametrize("pattern", SAFE)
def test_shapes_the_scan_accepts(pattern: str) -> None:
    """Classes, escapes, "?" and non-quantifier braces do not count as nesting."""
    assert jsregex.is_safe(pattern)


def test_length_is_counted_in_utf16_code_units() -> None:
    """200 code units pass, 201 are refused; an astral character counts twice."""
    assert jsregex.is_safe("a" * 200)
    assert not jsregex.is_safe("a" * 201)
    assert jsregex.is_safe("😀" * 100)
    assert not jsregex.is_safe("a" * 199 + "😀")
    with pytest.raises(jsregex.UnsafePattern, match="201 characters long"):
        jsregex.test("a" * 201, "a")


def test_safety_comes_before_validity() -> None:
    """An unsafe pattern that also does not compile is reported as unsafe (step 1 first)."""
    with pytest.raises(jsregex.UnsafePattern):
        jsregex.test("(a+)+(", "a")
    assert jsregex.is_safe(")(")  # the scan does not check syntax


# Step 2: compiling.

INVALID = [
    "(",
    ")",
    "[a",
    "\\",
    "*",
    "a**",
    "x{2,1}",
    "[z-a]",
    "(?<a>x)(?<a>y)",
    "(?<a>x)|(?<a>y)",
    "(?i:a)",
    "(?<n>a)\\k<x>",
    "(?<a>.)[\\k]",
    "\\b*",
    "(?<=a)+",
    "[😀-😎]",
]


@pytest.mark.parametrize("pattern", INVALID)
def test_invalid_pattern(pattern: str) -> None:
    """What JavaScript's new RegExp refuses raises InvalidPattern, from compile and test."""
    with pytest.raises(jsregex.InvalidPattern) as info:
        jsregex.compile(pattern)
    assert info.value.code == "REGEX_PATTERN_INVALID"
    assert info.value.pattern == pattern
    assert "not a valid regular expression" in info.value.message
    with pytest.raises(jsregex.InvalidPattern):
        jsregex.test(pattern, "a")


def test_compile_is_cached_and_readable() -> None:
    """Compiling twice gives the same object, whose repr shows the poster's source."""
    first = jsregex.compile("a+b")
    assert jsregex.compile("a+b") is first
    assert repr(first) == "CompiledPattern(source='a+b')"


def test_errors_form_one_family() -> None:
    """Each refusal is an adjudge Error with a stable code and the pattern it refused."""
    for cls, code in [
        (jsregex.UnsafePattern, "REGEX_PATTERN_UNUSABLE"),
        (jsregex.InvalidPattern, "REGEX_PATTERN_INVALID"),
        (jsregex.PatternTimeout, "REGEX_PATTERN_TIMEOUT"),
    ]:
        err = cls("why.", pattern="p")
        assert isinstance(err, jsregex.JsRegexError)
        assert isinstance(err, Error)
        assert err.to_dict() == {"code": code, "message": "why."}
        assert err.pattern == "p"


# Step 3: matching, as JavaScript without flags.

MATCHES = [
    # (pattern, text, JavaScript's answer); each checked against node 20 by hand.
    ("abc", "xxabcxx", True),
    ("ABC", "abc", False),  # no flags: case-sensitive
    ("^a$", "b\na\nc", False),  # no "m" flag: ^ and $ anchor the whole text
    ("a$", "a\n", False),  # unlike Python's $, not before a final newline
    ("", "", True),
    ("^$", "", True),
    ("^.$", "😀", False),  # an astral character is two code units
    ("^..$", "😀", True),
    ("^[^a]$", "😀", False),
    ("^[^a][^a]$", "😀", True),
    ("^\\uD83D\\uDE00$", "😀", True),
    ("^\\uD83D$", "\ud83d", True),  # a lone surrogate in the text is one code unit
    ("^😀{2}$", "😀\ude00", True),  # the quantifier repeats the second half only
    ("^[\\u0000-\\uFFFF]{2}$", "😀", True),
    ("\\u{2}", "uu", True),  # without "u", \u{2} is "u" twice
    ("\\u{61}", "a", False),
    ("\\s", "\ufeff", True),
    ("\\s", "\x85", False),
    ("\\w", "é", False),
    ("\\8", "8", True),
    ("\\k<x>", "k<x>", True),
    ("[\\b]", "\x08", True),
    ("(?<=a)b", "ab", True),
]


@pytest.mark.parametrize(("pattern", "text", "expected"), MATCHES)
def test_match_reads_like_javascript(pattern: str, text: str, expected: bool) -> None:
    """test() answers what new RegExp(pattern).test(text) answers in JavaScript."""
    assert jsregex.test(pattern, text) is expected


def test_only_the_first_20000_code_units_are_read() -> None:
    """The text is cut at 20,000 UTF-16 code units, astral characters counting twice."""
    assert jsregex.test("b", "a" * 19_999 + "b")
    assert not jsregex.test("b", "a" * 20_000 + "b")
    assert jsregex.test("b$", "😀" * 9_999 + "b")
    assert not jsregex.test("b", "😀" * 10_000 + "b")
    # A cut through a surrogate pair keeps the first half.
    assert jsregex.test("\\uD83D$", "a" * 19_999 + "😀")
    assert not jsregex.test("\\uDE00", "a" * 19_999 + "😀")


def test_bounded_patterns_are_recognized() -> None:
    """Only patterns with one path per start position and few steps skip the worker."""
    bounded = [
        "abc",
        "^\\d{4}-\\d{2}-\\d{2}$",
        "^[A-Z]{3}-\\d{4}$",
        "a{2,2}",
        "a{200}",
        "(?=ab)[^x].",
        "(?<n>a)b",
        "[a+*|?{]",
        "\\0",
        "\\u{2}",  # "u" twice, without the u flag
        "." * 200,
        "(.)" * 50,
        # A repeat of a single atom that ends the pattern never backtracks.
        "a+",
        "a*",
        "a?",
        "a+?",
        "a{2,3}",
        "\\d{2,}",
        "^ID-\\w+",
        "(?<=x)[a-z]*",
        "." * 190 + "a{10,}",
    ]
    unbounded = [
        "a+b",
        "a+$",
        "\\d+\\b",
        "(a+)",
        "(?:a+)",
        "(?=a+)",
        "a+|b",
        "a?b?",
        "." * 190 + "a{11,}",  # over the step budget: a{11,} fails only after 11 steps
        "a{2}?",
        "a{",
        "a|b",
        "(a)\\1",
        "(?<n>a)\\k<n>",
        "(?:ab){3}",  # a repeated group: too dear per step to count on
        "a{201}",
        "." * 201,
        "(.)" * 51,
    ]
    for pattern in bounded:
        assert jsregex.compile(pattern).bounded, pattern
    for pattern in unbounded:
        assert not jsregex.compile(pattern).bounded, pattern


@pytest.mark.parametrize("pattern", ["." * 199 + "x", ".{199}x", "(.)" * 49 + "x"])
def test_bounded_worst_case_is_far_below_the_limit(pattern: str) -> None:
    """The slowest bounded shapes on the longest text finish well inside the time limit."""
    assert jsregex.compile(pattern).bounded
    started = time.perf_counter()
    assert not jsregex.test(pattern, "a" * 20_000)
    assert time.perf_counter() - started < 1.0  # 5-8 ms measured; generous for a busy machine


def test_final_repeat_worst_case_is_far_below_the_limit() -> None:
    """A pattern ending in a repeat fails within its low count at every start position."""
    pattern = "." * 190 + "a{10,}"
    assert jsregex.compile(pattern).bounded
    text = ("a" * 9 + "b") * 2_000
    started = time.perf_counter()
    assert not jsregex.test(pattern, text)
    assert jsregex.test(pattern, text[:-1] + "a" * 10)
    assert time.perf_counter() - started < 1.0


# Step 3: the time limit and the worker.


@pytest.mark.parametrize(("pattern", "text"), CATASTROPHIC)
def test_catastrophic_match_is_stopped(pattern: str, text: str) -> None:
    """A pattern that passes the scan but backtracks exponentially is stopped at the limit."""
    assert jsregex.is_safe(pattern)
    jsregex.test("a+$", "a")  # start the worker outside the measured time
    started = time.perf_counter()
    with pytest.raises(jsregex.PatternTimeout) as info:
        jsregex.test(pattern, text)
    elapsed = time.perf_counter() - started
    assert elapsed < 0.5
    assert info.value.code == "REGEX_PATTERN_TIMEOUT"
    assert "100 ms" in info.value.message
    # The next calls work, on a fresh worker.
    assert jsregex.test("a+b", "xaab")
    assert not jsregex.test("a+b", "xaa")


def test_worker_is_reused() -> None:
    """Calls share one worker process while none times out."""
    jsregex.test("a+$", "a")
    pid = _sandbox.worker_pid()
    assert pid is not None
    for _ in range(20):
        jsregex.test("(x|y)+z", "xyxyz")
    assert _sandbox.worker_pid() == pid


def test_caller_timeout_is_honoured() -> None:
    """A longer timeout lets a slow but finite match finish; a non-positive one is refused."""
    assert not jsregex.test("(a|b|ab)*c", "ab" * 12, timeout=5.0)
    with pytest.raises(ValueError, match="positive"):
        jsregex.test("a", "a", timeout=0)


def test_concurrent_callers_get_their_own_answers() -> None:
    """Threads calling at once never read each other's replies."""
    failures: list[str] = []

    def call(k: int) -> None:
        for j in range(30):
            text = "x" * ((k + j) % 7) + str(k)
            pattern = f"^x*{k}$" if j % 2 else f"^x+{k}$"
            expected = j % 2 == 1 or (k + j) % 7 > 0
            if jsregex.test(pattern, text) is not expected:
                failures.append(f"{pattern} on {text}")
            if j == 10 and k == 3:
                try:
                    jsregex.test(*CATASTROPHIC[0])
                except jsregex.PatternTimeout:
                    pass
                else:
                    failures.append("no timeout")

    threads = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_forked_child_starts_its_own_worker() -> None:
    """After fork the child neither shares nor kills its parent's worker."""
    jsregex.test("a+$", "a")
    parent_worker = _sandbox.worker_pid()
    child = os.fork()
    if child == 0:  # pragma: no cover  # runs in the child
        ok = jsregex.test("b+$", "b") and _sandbox.worker_pid() not in (None, parent_worker)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _sandbox.worker_pid() == parent_worker
    assert jsregex.test("a+$", "a")


def _gone(pid: int) -> bool:
    """Whether a process no longer runs (a zombie waiting for a reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


_ORPHAN_SCRIPT = """
import sys
from adjudge.autocheck import _sandbox, jsregex
jsregex.test("a+$", "a")
print(_sandbox.worker_pid(), flush=True)
if sys.argv[1] == "busy":
    jsregex.test("(a|a)+$", "a" * 40 + "b", timeout=0.5)
else:
    sys.stdin.read()
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process state from /proc")
@pytest.mark.parametrize("mode", ["idle", "busy"])
def test_worker_dies_with_its_parent(mode: str) -> None:
    """A parent killed outright takes its worker along, idle or in the middle of a match."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN_SCRIPT, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    time.sleep(0.05)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 3.0  # busy: the worker's own timer fires at 0.5 s + grace
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(worker)


def test_worker_killed_between_calls_is_replaced() -> None:
    """A worker that died while idle is replaced on the next call, which still answers."""
    jsregex.test("a+$", "a")
    pid = _sandbox.worker_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    while not _gone(pid):
        time.sleep(0.01)
    assert jsregex.test("a+b", "aab")
    assert _sandbox.worker_pid() not in (None, pid)


def test_worker_that_cannot_start_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that cannot start breaks the check loudly instead of reading as a timeout."""
    broken = tmp_path / "broken_worker.py"
    broken.write_text("raise SystemExit(3)\n")
    monkeypatch.setattr(_sandbox, "_WORKER_SCRIPT", broken)
    monkeypatch.setattr(_sandbox, "_pool", _sandbox._Pool(1))  # the running pool comes back
    with pytest.raises(jsregex.EngineUnavailable) as info:
        jsregex.test("a+$", "a")
    assert info.value.code == "CHECKER_UNAVAILABLE"


def _engine_text_by_definition(text: str, cap: int) -> str:
    """The engine alphabet, character by character: one code point per UTF-16 code unit."""
    out = []
    for ch in text:
        c = ord(ch)
        if c >= 0x10000:
            c -= 0x10000
            units = [0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF)]
        else:
            units = [c]
        out += [chr(0xF0000 + u - 0xD800) if 0xD800 <= u <= 0xDFFF else chr(u) for u in units]
    return "".join(out[:cap])


_UNIT_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(["a", "é", "😀", "\U000f0000", "\U0010ffff", "\uffff", "\ue000"]),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.characters(),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(_UNIT_TEXT, st.integers(0, 50))
def test_engine_text_has_one_code_point_per_code_unit(text: str, cap: int) -> None:
    """The fast byte-level rewrite of the text equals the per-character definition."""
    expected = _engine_text_by_definition(text, cap)
    assert _regexsource.engine_text(text, cap) == expected
    assert _regexsource.engine_utf8(text, cap) == expected.encode()
    assert len(expected) == min(utf16_len(text), cap)
