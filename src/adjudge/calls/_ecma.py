"""ECMA-262 regular expressions with the u flag: what JSON Schema 2020-12 says ``pattern`` is.

JSON Schema 2020-12 (core, 6.4) reads ``pattern``, ``patternProperties`` and ``format: regex``
as ECMA-262 regular expressions built with the u flag. Python's ``re`` differs in ways that
change verdicts: ``$`` also matches before a trailing newline, ``\\d`` and ``\\w`` match every
Unicode digit and letter, ``\\s`` misses U+FEFF, and Python-only syntax (``\\Z``, ``(?P<n>)``,
``(?i)``) is accepted. Both validators of the schema stage therefore match through this one
engine, regress (ECMAScript, in Rust), which the auto check already uses.

A pattern that the u-flag grammar refuses is refused when the contract is registered. Texts are
matched whole (JSON Schema does not cap them). A lone surrogate in a text (JSON can carry one,
Unicode text cannot) is matched as a private-use code point: ``.``, ``\\S`` and negated classes
match it as in ECMAScript, a pattern that names a surrogate code unit does not.

regress backtracks, so a pattern such as ``(a|a)*$`` can take exponential time on a crafted
text, and nothing interrupts a match: a contract whose patterns can backtrack is judged in a
worker process killed at a time limit (:mod:`adjudge.calls.bounds`, ``adjudge.app.isolation``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import regress

__all__ = ["EcmaPattern", "PatternError", "compile_pattern", "compile_uncached"]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PRIVATE_BASE = 0xF0000


class PatternError(ValueError):
    """A pattern that is not an ECMA-262 regular expression under the u flag."""


class EcmaPattern:
    """A compiled pattern; ``search(text)`` is truthy when it matches somewhere in ``text``.

    The method name and answer mirror ``re.Pattern.search``, so a compiled validator that calls
    ``.search`` on its patterns can be handed these instead.
    """

    __slots__ = ("_find", "source")

    def __init__(self, source: str, regex: Any) -> None:
        self.source = source
        self._find = regex.find

    def search(self, text: str) -> Any:
        """A match object (truthy) when the pattern matches anywhere in ``text``, else None."""
        try:
            return self._find(text)
        except UnicodeEncodeError:  # a lone surrogate: see the module docstring
            return self._find(_LONE_SURROGATE.sub(_private, text))

    def __repr__(self) -> str:
        return f"EcmaPattern({self.source!r})"


def _private(match: re.Match[str]) -> str:
    return chr(_PRIVATE_BASE + ord(match.group()) - 0xD800)


@functools.lru_cache(maxsize=4096)
def compile_pattern(source: str) -> EcmaPattern:
    """Compile ``source`` with the u flag; raises :class:`PatternError` if it is not one.

    Cached: for the patterns a contract or policy holds, never for text from an answer
    (:func:`compile_uncached`)."""
    return compile_uncached(source)


def compile_uncached(source: str) -> EcmaPattern:
    """:func:`compile_pattern` without its cache."""
    try:
        regex = regress.Regex(source, "u")
    except (regress.RegressError, UnicodeError) as exc:
        raise PatternError(f"{source!r} is not an ECMA-262 regular expression: {exc}") from None
    return EcmaPattern(source, regex)
