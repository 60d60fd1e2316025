"""Where the check found each keyword and forbidden phrase: spans of the result's own text.

The check looks for keywords in the result lowercased as JavaScript lowercases (full mappings:
"İ" is two code units, "i" and a combining dot), and for forbidden phrases in the result made
canonical (NFKC), flattened, folded (accents and look-alike letters removed) and lowercased. A
browser's case-insensitive search folds otherwise, so a viewer that searched for itself would
mark what the check did not count and miss what it did ("ﬁnal" holds "final" for the check).
These spans are the check's own matches, carried back to the result's text: each is the
smallest run of the text's characters whose transformed form holds the match, as UTF-16 offsets
(a JavaScript string's indices) into :func:`adjudge.autocheck.result_text` of the result.

The way back is built piece by piece — each character for lowercasing; a white-space run, or a
character with the combining marks after it, for the phrases' folding — and used only when the
pieces put together are the check's own text (the final sigma aside, which lowercases by its
neighbours but keeps its length). When they are not (NFKC joining across pieces, a lone
surrogate), :func:`matched_spans` answers None: no spans rather than a guess.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from adjudge.autocheck.check import result_text
from adjudge.autocheck.criteria import Criteria, parse
from adjudge.autocheck.jsvalues import has_surrogate
from adjudge.autocheck.text import canonical, fold, lower, phrase_text
from adjudge.errors import CriteriaError


@dataclass(frozen=True)
class Span:
    """One match: UTF-16 offsets [start, end) into the result's text, what was found (the
    criteria's own words), and whether it is a wanted ``keyword`` or a ``forbidden`` phrase."""

    start: int
    end: int
    kind: str
    needle: str

    def to_dict(self) -> dict[str, Any]:
        """The JSONL shape: ``{start, end, kind, text}``."""
        return {"start": self.start, "end": self.end, "kind": self.kind, "text": self.needle}


def matched_spans(result: object, criteria: Mapping[str, Any] | Criteria) -> list[Span] | None:
    """Every occurrence the check counts of each keyword (``contains_keywords`` and rubric
    keywords) and forbidden phrase in ``result``'s text, in text order; ``[]`` when the criteria
    name none; None when the criteria do not parse or the way back cannot be built."""
    try:
        c = parse(criteria)
    except CriteriaError:
        return None
    keywords = list(dict.fromkeys([*(c.contains_keywords or ()), *_rubric_keywords(c)]))
    phrases = list(dict.fromkeys(c.forbidden_phrases or ()))
    if not keywords and not phrases:
        return []
    text = result_text(result)
    if has_surrogate(text):
        return None
    found: list[Span] = []
    if keywords:
        lowered = lower(text)
        pieces = [
            (i, i + 1, ch.lower() if ch.isascii() else _lower1(ch)) for i, ch in enumerate(text)
        ]
        back = _way_back(text, pieces, lowered)
        if back is None:
            return None
        for k in keywords:
            found += [_span(back(a, b), "keyword", k) for a, b in _occurrences(lowered, lower(k))]
    if phrases:
        folded = lower(phrase_text(text))
        back = _way_back(text, list(_phrase_pieces(text)), folded)
        if back is None:
            return None
        for p in phrases:
            needle = lower(phrase_text(p))
            found += [_span(back(a, b), "forbidden", p) for a, b in _occurrences(folded, needle)]
    return sorted(found, key=lambda s: (s.start, s.end, s.kind, s.needle))


def _span(where: tuple[int, int], kind: str, needle: str) -> Span:
    return Span(where[0], where[1], kind, needle)


def _rubric_keywords(c: Criteria) -> Iterator[str]:
    for item in c.rubric or ():
        yield from item.keywords or ()


def _occurrences(haystack: str, needle: str) -> Iterator[tuple[int, int]]:
    """Each place ``needle`` starts in ``haystack`` (overlapping ones too), as [start, end)."""
    if not needle:
        return
    at = haystack.find(needle)
    while at >= 0:
        yield at, at + len(needle)
        at = haystack.find(needle, at + 1)


def _phrase_pieces(text: str) -> Iterator[tuple[int, int, str]]:
    """``text`` cut where the phrases' folding does not reach across: (start, end, folded)
    for each white-space run (one space, none at either end) and each character with the
    combining marks after it."""
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        if _blank(text[i]):
            while j < n and _blank(text[j]):
                j += 1
            spaced = any(canonical(ch) != "" for ch in text[i:j])
            edge = i == 0 or j == n
            yield i, j, " " if spaced and not edge else ""
        else:
            while j < n and unicodedata.combining(text[j]):
                j += 1
            yield i, j, _folded(text[i:j])
        i = j


@lru_cache(maxsize=4096)
def _blank(ch: str) -> bool:
    """White space, or a character the canonical text drops (an invisible one)."""
    made = canonical(ch)
    return made == "" or made.isspace()


@lru_cache(maxsize=4096)
def _folded(piece: str) -> str:
    """A piece of the text as the phrases' folding makes it (texts repeat their letters)."""
    return lower(fold(canonical(piece)))


@lru_cache(maxsize=4096)
def _lower1(ch: str) -> str:
    return lower(ch)


def _way_back(
    text: str, pieces: list[tuple[int, int, str]], made: str
) -> Callable[[int, int], tuple[int, int]] | None:
    """A function from [a, b) in ``made`` to UTF-16 [start, end) in ``text``, or None when the
    pieces put together are not ``made`` (the final sigma's two forms counted as one)."""
    joined = "".join(p for _, _, p in pieces)
    if joined.replace("ς", "σ") != made.replace("ς", "σ"):
        return None
    owner: list[int] = []  # the piece each character of ``made`` came from
    for index, (_, _, piece) in enumerate(pieces):
        owner += [index] * len(piece)
    units = [0]
    for ch in text:
        units.append(units[-1] + (2 if ord(ch) > 0xFFFF else 1))

    def back(a: int, b: int) -> tuple[int, int]:
        return units[pieces[owner[a]][0]], units[pieces[owner[b - 1]][1]]

    return back


__all__ = ["Span", "matched_spans"]
