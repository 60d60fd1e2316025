"""The "Not done / assumptions" section: found, and removed from the deliverable.

Spec 000: the checker "recognizes "Not done", "Assumptions", or "Not done / assumptions" (joined by
``/``, ``&``, ``and``, or a comma) at the start of a line: plain, as a Markdown heading, as a list
item, or in bold, followed by a colon or the end of the line. The section runs to the next heading
of the same or a higher level, or to the end." A plain label (no ``#``) counts as level 6, so any
heading ends it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from adjudge.autocheck import chars

# Runs over canonical text, where "\n" is the only line break left. ASCII case folding only,
# as JavaScript's `i` flag without `u` folds.
_JOINER = r" ?(?:/|&|and|,) ?"
DISCLOSURE_HEADING = re.compile(
    r"^ ?(#{1,6})? ?(?:[-*+] |\d{1,3}[.)] )?(?:\*\*|__)? ?"
    rf"(?:not done(?:{_JOINER}assumptions)?|assumptions(?:{_JOINER}not done)?)"
    r"(?: made)? ?(?:\*\*|__)? ?(?::|$)",
    re.IGNORECASE | re.MULTILINE | re.ASCII,
)
_NAMES = ("not done", "assumptions")
_MD_HEADING = re.compile(r"^ ?(#{1,6}) [^\s]", re.MULTILINE | re.ASCII)


class Split(NamedTuple):
    """The deliverable, and whether a disclosure section was taken out of it."""

    deliverable: str
    disclosed: bool


def _at_line_starts(pattern: re.Pattern[str], text: str, pos: int) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text, pos)`` for a pattern that starts with ``^`` (multiline) and never
    spans a line break: tried at each line start only, where ``re`` would try every position."""
    if pos and text[pos - 1] != "\n":
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return
    while True:
        if (m := pattern.match(text, pos)) is not None:
            yield m
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return


def split_disclosure(text: str) -> Split:
    """Remove every disclosure section from canonical ``text``.

    Text without a section comes back unchanged with ``disclosed`` false.
    """
    if not chars.has_ascii_ci(text, _NAMES):
        return Split(text, False)  # every heading form names one of them
    parts: list[str] = []
    pos = 0
    search_from = 0
    disclosed = False
    length = len(text)
    while (m := next(_at_line_starts(DISCLOSURE_HEADING, text, search_from), None)) is not None:
        level = len(m.group(1)) if m.group(1) else 6
        end = length
        for h in _at_line_starts(_MD_HEADING, text, m.end()):
            if len(h.group(1)) <= level:
                end = h.start()
                break
        parts.append(text[pos : m.start()])
        pos = end
        disclosed = True
        if end >= length:
            break
        search_from = end
    parts.append(text[pos:])
    return Split("".join(parts), disclosed)
