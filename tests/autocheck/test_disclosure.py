"""The disclosure section: headings tried at line starts only find what ``re.search`` finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.autocheck.disclosure import (
    _MD_HEADING,
    DISCLOSURE_HEADING,
    Split,
    split_disclosure,
)


def _split_by_search(text: str) -> Split:
    """The section cut as ``re`` finds headings anywhere (the plain form of the same rule)."""
    parts: list[str] = []
    pos = search_from = 0
    disclosed = False
    while (m := DISCLOSURE_HEADING.search(text, search_from)) is not None:
        level = len(m.group(1)) if m.group(1) else 6
        end = len(text)
        for h in _MD_HEADING.finditer(text, m.end()):
            if len(h.group(1)) <= level:
                end = h.start()
                break
        parts.append(text[pos : m.start()])
        pos = end
        disclosed = True
        if end >= len(text):
            break
        search_from = end
    parts.append(text[pos:])
    return Split("".join(parts), disclosed)


_PIECES = [
    "\n",
    "\n",
    " ",
    "## Not done",
    "# Not done / assumptions:",
    "Assumptions:",
    "**not done**",
    "- assumptions",
    "1. Not done and assumptions made",
    "NOT DONE:",
    "## Summary",
    "# Risks",
    "### x",
    "#",
    "##",
    "text",
    "é",
    "😀",
    ":",
]


@settings(max_examples=1500)
@given(st.lists(st.sampled_from(_PIECES), max_size=24).map("".join))
def test_headings_at_line_starts_equal_search(text: str) -> None:
    """Every section, nested headings and sections back to back included, is cut exactly where
    a search over every position cuts it."""
    assert split_disclosure(text) == _split_by_search(text)


def test_a_section_runs_to_the_next_heading_of_its_level() -> None:
    """A ``##`` section ends at the next ``##`` or ``#``, not at a ``###`` inside it."""
    text = "Intro.\n## Not done\nA.\n### Detail\nB.\n## Next\nC."
    assert split_disclosure(text) == Split("Intro.\n## Next\nC.", True)
