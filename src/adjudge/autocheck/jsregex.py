"""ECMAScript regular expressions as the reference checker runs a poster's ``regex_pattern``.

The reference does exactly three things, and so does ``test``:

1. ``isSafeRegexSource``: refuse a pattern longer than 200 UTF-16 code units, or one with a
   nested quantifier found by one left-to-right scan (``is_safe``);
2. compile it with ``new RegExp(pattern)``, no flags; a SyntaxError means invalid (``compile``);
3. ``re.test(text.slice(0, 20000))`` with a 100 ms wall-clock limit that really stops a
   catastrophic match.

The engine is regress (ECMAScript, in Rust). Where it reads a pattern differently from
JavaScript without the ``u`` flag, the pattern is rewritten first (``_regexsource``): astral
characters count as two UTF-16 code units on both sides, ``\\u{61}`` is ``u`` repeated 61
times, and node 20's refusals of duplicate group names, modifier groups, ``[\\k]`` (with
named groups) and a quantified ``\\b`` are reproduced. Differential tests against node pin
this down.

Step 3 runs in a worker process (``_sandbox``) that is killed when the limit passes, except for
patterns whose match time is bounded by construction, which run in-process: no quantifier but
exact counts of single atoms (``\\d{4}``), no alternation, no back reference, and at most 200
steps per start position (one path each, so at most 200 x 20,000 steps: 5-8 ms measured, under
40 ms on a loaded machine; see ``_regexsource.EngineSource``).

Known gaps (see docs/autocheck-regex.md):

* The limit is wall-clock, as in the reference, but regress is slower than V8 on
  backtracking-heavy matches (up to about 13 times measured), so a match node finishes in
  10-100 ms may time out here; CPU contention also counts against the limit. A timeout is
  never a PASS (the check fails with its own reason).
* Behaviour follows node 20 where JavaScript versions differ (for example, node 23+ accepts
  ``(?<a>x)|(?<a>y)`` and ``(?i:a)``; node 20 and this module refuse both).
* A worker that cannot start raises RuntimeError: the check itself broke.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

import regress

from adjudge.autocheck import _regexsource, _sandbox
from adjudge.autocheck.jsvalues import to_units, utf16_len
from adjudge.errors import BadInput, Unavailable

__all__ = [
    "INPUT_CAP",
    "MAX_PATTERN_LENGTH",
    "TIMEOUT_SECONDS",
    "CompiledPattern",
    "InvalidPattern",
    "JsRegexError",
    "PatternTimeout",
    "UnsafePattern",
    "compile",
    "configure_pool",
    "is_safe",
    "owned_by",
    "pool_size",
    "test",
]

#: ``with owned_by(account):`` counts the matches run inside as that account's, so the worker
#: pool can share its workers fairly between accounts (see ``_sandbox``).
owned_by = _sandbox.owned_by
#: ``configure_pool(workers)`` sizes the worker pool (None: the machine's CPUs less one, at least
#: two); the process's edge calls it with its setting (``adjudge serve``'s ``regex_workers``).
configure_pool = _sandbox.configure
#: How many workers the pool holds at most.
pool_size = _sandbox.pool_size

#: The longest pattern accepted, in UTF-16 code units (JavaScript's ``pattern.length``).
MAX_PATTERN_LENGTH = 200
#: How much of the text is tested, in UTF-16 code units (``text.slice(0, 20000)``).
INPUT_CAP = 20_000
#: The wall-clock limit of one match.
TIMEOUT_SECONDS = 0.1

# A "{" starts a quantifier for the scan when the next 12 characters begin like "{2}", "{2,}",
# "{,5}" or even "{}" (the reference's own test, /^\{\d*,?\d*\}/, with ASCII digits).
_BRACE_QUANTIFIER = re.compile(r"\{[0-9]*,?[0-9]*\}")


class JsRegexError(BadInput):
    """A ``regex_pattern`` that could not be applied; ``pattern`` is the poster's source."""

    code = "REGEX_PATTERN_UNUSABLE"

    def __init__(self, message: str, *, pattern: str = "") -> None:
        super().__init__(message)
        self.pattern = pattern


class UnsafePattern(JsRegexError):
    """Refused before compiling: too long, or a nested quantifier (step 1)."""

    code = "REGEX_PATTERN_UNUSABLE"


class InvalidPattern(JsRegexError):
    """JavaScript's ``new RegExp(pattern)`` would throw a SyntaxError (step 2)."""

    code = "REGEX_PATTERN_INVALID"


class PatternTimeout(JsRegexError):
    """The match did not finish within the time limit and was stopped (step 3)."""

    code = "REGEX_PATTERN_TIMEOUT"


class EngineUnavailable(Unavailable):
    """The time-limited engine could not run (no worker could start, or all stayed busy).

    Not a verdict on the pattern or the text — the check itself could not run — so it is not a
    :class:`JsRegexError`, which the auto check turns into a reason: it propagates, and the
    caller refuses the request (``CHECKER_UNAVAILABLE``) without judging anything.
    """

    code = "CHECKER_UNAVAILABLE"


@dataclass(frozen=True)
class CompiledPattern:
    """A pattern that compiles: its source and the rewritten source regress runs."""

    source: str
    engine_source: str = field(repr=False)
    bounded: bool = field(repr=False)
    _regex: Any = field(repr=False, compare=False)

    def search(self, text: str) -> bool:
        """Whether the pattern matches the first 20,000 code units of ``text``, in-process.

        No time limit: for ``bounded`` patterns, or when the caller bounds the text otherwise
        (``test`` is the bounded call).
        """
        return self._regex.find(_regexsource.engine_text(text, INPUT_CAP)) is not None


def is_safe(pattern: str) -> bool:
    """Step 1: whether the reference's ``isSafeRegexSource`` accepts ``pattern``.

    The empty pattern is safe. Validity is not checked here (an unbalanced ")" is "safe").
    """
    return _unsafe_reason(pattern) is None


def compile(pattern: str) -> CompiledPattern:  # the API's own verb, like re.compile
    """Step 2: compile ``pattern`` as ``new RegExp(pattern)`` would, without flags.

    Raises InvalidPattern where JavaScript throws a SyntaxError. The empty pattern compiles
    (and matches everything). Results are cached.
    """
    return _compile(pattern)


def test(pattern: str, text: str, *, timeout: float = TIMEOUT_SECONDS) -> bool:
    """JavaScript's ``new RegExp(pattern).test(text.slice(0, 20000))`` with the reference's rules.

    Raises UnsafePattern (step 1), InvalidPattern (step 2) or PatternTimeout (step 3, the match
    was stopped after ``timeout`` seconds). An empty text is matched like any other.
    """
    if not timeout > 0:
        raise ValueError("timeout must be a positive number of seconds")
    reason = _unsafe_reason(pattern)  # (1)
    if reason is not None:
        raise UnsafePattern(
            f"regex_pattern was not applied: it {reason}.",
            pattern=pattern,
        )
    compiled = _compile(pattern)  # (2)
    if compiled.bounded:  # (3) at most one path per start position: no time limit needed
        return compiled.search(text)
    try:  # (3) in the worker, killed at the limit
        return _sandbox.find(
            compiled.engine_source, _regexsource.engine_utf8(text, INPUT_CAP), timeout
        )
    except _sandbox.WorkerStartError as exc:
        raise EngineUnavailable(
            f"The regex engine could not run this check now ({exc}); nothing was judged. "
            "Try again shortly."
        ) from None
    except _sandbox.MatchTimeout:
        raise PatternTimeout(
            f"regex_pattern timed out on this output: matching took longer than "
            f"{timeout * 1000:g} ms and was stopped. Simplify the pattern; alternatives that "
            f"can match the same text under a repetition, like (a|a)+ or (a|b|ab)*, "
            f"take exponential time.",
            pattern=pattern,
        ) from None


def _unsafe_reason(pattern: str) -> str | None:
    """Why the reference's ``isSafeRegexSource`` refuses ``pattern``, or None if it accepts it.

    The scan, exactly: a stack with one flag per open "(" (the group holds a quantifier),
    whether the group closed last held one, and whether the previous character closed a group.
    "?" is not a quantifier for this scan; "[...]" and "\\x" are skipped.
    """
    length = utf16_len(pattern)
    if length > MAX_PATTERN_LENGTH:
        return (
            f"is {length} characters long and the limit is {MAX_PATTERN_LENGTH}; "
            f"shorten the pattern"
        )
    src = to_units(pattern)
    n = len(src)
    stack: list[bool] = []
    closed_group_had_quant = False
    prev_was_group_close = False
    i = 0
    while i < n:
        c = src[i]
        if c == "\\":
            i += 1  # the escaped character is skipped
        elif c == "[":
            i += 1  # the "]" right after "[" closes the class too
            while i < n and src[i] != "]":
                if src[i] == "\\":
                    i += 1
                i += 1
        elif c == "(":
            stack.append(False)
        elif c == ")":
            closed_group_had_quant = stack.pop() if stack else False
            if closed_group_had_quant and stack:
                stack[-1] = True
            prev_was_group_close = True
            i += 1
            continue
        elif c in "*+" or (c == "{" and _BRACE_QUANTIFIER.match(src, i, i + 12)):
            if prev_was_group_close and closed_group_had_quant:
                return (
                    "has a nested quantifier (a group that repeats something is itself "
                    "repeated, as in (a+)+), which can take exponential time; remove one of "
                    "the two repetitions, for example write (a+)+ as a+"
                )
            if stack:
                stack[-1] = True
        prev_was_group_close = False
        i += 1
    return None


def _compile(pattern: str) -> CompiledPattern:
    # Only patterns of a usable length are cached, so a caller compiling huge ones cannot fill
    # memory (the cache holds 1,024 entries).
    if len(pattern) <= 2 * MAX_PATTERN_LENGTH:
        return _compile_cached(pattern)
    return _compile_uncached(pattern)


def _compile_uncached(pattern: str) -> CompiledPattern:
    try:
        engine = _regexsource.rewrite(pattern)
        regex = regress.Regex(engine.source)
    except (_regexsource.SourceError, regress.RegressError, UnicodeError) as exc:
        raise InvalidPattern(
            f"regex_pattern is not a valid regular expression: {exc}. It is compiled as "
            f"JavaScript's new RegExp(pattern) with no flags; fix the syntax or escape the "
            f"character with a backslash.",
            pattern=pattern,
        ) from None
    return CompiledPattern(pattern, engine.source, engine.bounded, regex)


_compile_cached = functools.lru_cache(maxsize=1024)(_compile_uncached)
