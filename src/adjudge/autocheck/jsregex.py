"""JavaScript regular expressions for ``regex_pattern`` (interim: in-process, no time limit yet)."""

from __future__ import annotations

import re

import regress

from adjudge.autocheck.jsvalues import slice16, utf16_len
from adjudge.errors import Error

MAX_PATTERN_LENGTH = 200
INPUT_CAP = 20_000
TIMEOUT_SECONDS = 0.1

_BOUNDED = re.compile(r"\{\d*,?\d*\}")


class JsRegexError(Error):
    """A ``regex_pattern`` that cannot be applied."""

    code = "REGEX_PATTERN_UNUSABLE"


class UnsafePattern(JsRegexError):
    """Too long, or nested quantifiers."""

    code = "REGEX_PATTERN_UNUSABLE"


class InvalidPattern(JsRegexError):
    """Not a valid JavaScript regular expression."""

    code = "REGEX_PATTERN_INVALID"


class PatternTimeout(JsRegexError):
    """The match ran past the time limit."""

    code = "REGEX_PATTERN_TIMEOUT"


def is_safe(pattern: str) -> bool:
    """At most 200 code units and no quantifier applied to a group that holds one."""
    if utf16_len(pattern) > MAX_PATTERN_LENGTH:
        return False
    stack: list[bool] = []
    closed_had_quant = False
    prev_close = False
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            prev_close = False
            continue
        if ch == "[":
            i += 1
            while i < n and pattern[i] != "]":
                if pattern[i] == "\\":
                    i += 1
                i += 1
            prev_close = False
            i += 1
            continue
        if ch == "(":
            stack.append(False)
            prev_close = False
        elif ch == ")":
            had = stack.pop() if stack else False
            closed_had_quant = had
            if had and stack:
                stack[-1] = True
            prev_close = True
        elif ch in "*+" or (ch == "{" and _BOUNDED.match(pattern, i, i + 12)):
            if prev_close and closed_had_quant:
                return False
            if stack:
                stack[-1] = True
            prev_close = False
        else:
            prev_close = False
        i += 1
    return True


def compile(pattern: str) -> regress.Regex:
    """Compile with no flags; raises InvalidPattern."""
    try:
        return regress.Regex(pattern.replace("\\u{", "u{"))
    except Exception as exc:
        raise InvalidPattern(f"regex_pattern is not a valid regular expression: {exc}") from exc


def test(pattern: str, text: str, *, timeout: float = TIMEOUT_SECONDS) -> bool:
    """``new RegExp(pattern).test(text.slice(0, 20000))``."""
    if not is_safe(pattern):
        raise UnsafePattern("regex_pattern has nested quantifiers or is over 200 characters.")
    return compile(pattern).find(slice16(text, 0, INPUT_CAP)) is not None
