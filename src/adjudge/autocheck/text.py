"""Normalization and folding: the text as a reader sees it.

Spec 000, *What the check reads*: "Normalizing applies Unicode NFKC, turns curly apostrophes
straight, drops invisible characters, and collapses each run of whitespace to one space."
Forbidden phrases are folded further: "case, accents, Cyrillic and Greek look-alike letters, and
invisible characters are folded away".

Every function keeps the reference checker's order of operations, because the order shows in the
result (folding after NFKC, for instance, is what makes a full-width letter match). This is the
hot path of every check, so each step first asks cheaply whether it has anything to do. Every
Unicode property is the reference's version, 17.0, whatever the interpreter's: NFKC and NFKD come
from ``unicodedata2``, the classes and case mappings from the generated ``_unicode_tables``.

JavaScript strings are UTF-16 code units, and a removal can bring two halves of a surrogate pair
together: JavaScript then sees one character again (``"un\\ud835\\u2060\\udd52ble"`` folds to
"unable"). Where a step removes characters from a text holding surrogates, the halves it brought
together are joined.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container

import unicodedata2

from adjudge.autocheck import chars
from adjudge.autocheck.chars import (
    ASTRAL,
    CR,
    CURLY,
    HOMOGLYPH,
    HOMOGLYPHS,
    INVISIBLE,
    MARK_BIT,
    ODD_SPACE,
    SURROGATE,
)
from adjudge.autocheck.jsvalues import WHITESPACE, from_units

_HSPACE = re.escape(WHITESPACE.replace("\n", ""))
_HSPACE_NOT_SPACE = re.escape(WHITESPACE.replace("\n", "").replace(" ", ""))

_NEWLINES = re.compile(r"\r\n?")
# Format characters (zero-width, soft hyphen, bidi marks), variation selectors, and control
# characters that are not white space. Each class is removed in two passes, its BMP part and,
# in text with astral characters, its astral part: ``re`` skips quickly to the next member of
# one class, and tests a long astral list or an alternation at every position. A removed class
# matches one character, not a run: a run goes all the same.
_INVISIBLE = chars.member_pattern(INVISIBLE)
_INVISIBLE_ASTRAL = chars.member_pattern(INVISIBLE << ASTRAL)
# Only the runs that change: two or more spaces, or any white space that is not a plain space.
_HORIZONTAL_WS = re.compile(f"[{_HSPACE}]{{2,}}|[{_HSPACE_NOT_SPACE}]")
_MARKS = chars.member_pattern(MARK_BIT)
_MARKS_ASTRAL = chars.member_pattern(MARK_BIT << ASTRAL)
_HOMOGLYPH_TABLE = str.maketrans(HOMOGLYPHS)
_normalize: Callable[[str, str], str] = unicodedata2.normalize  # Unicode 17.0
# The classes each step asks about.
_INVISIBLES = INVISIBLE | INVISIBLE << ASTRAL
_CANONICAL_WORK = CURLY | CR | ODD_SPACE | _INVISIBLES | SURROGATE
_MARKS_ANY = MARK_BIT | MARK_BIT << ASTRAL
_FOLD_WORK = HOMOGLYPH | _MARKS_ANY | SURROGATE


def canonical(text: str) -> str:
    """NFKC, ``\\r\\n`` to ``\\n``, straight apostrophes, no invisibles, horizontal runs collapsed.

    Line structure is kept (the disclosure section is found by its heading line).
    """
    return canonicalize(text)[0]


def canonicalize(text: str) -> tuple[str, bool]:
    """``canonical(text)``, and whether ``text`` holds a surrogate code point.

    Two surrogate code points side by side are one character to JavaScript: such a text is
    read with them joined (``from_units``), from its first step on.
    """
    text_nfkc = text if text.isascii() else _normalize("NFKC", text)
    # One pass tells which of the steps below have work; each runs only if it has.
    work = chars.classes(text_nfkc, _CANONICAL_WORK)
    if work & SURROGATE:
        joined = from_units(text)
        if joined != text:
            return canonicalize(joined)[0], True
    text = text_nfkc
    if work & CURLY:
        text = text.replace("\u2018", "'").replace("\u2019", "'").replace("\u02bc", "'")
    if work & CR:
        text = _NEWLINES.sub("\n", text)
    if work & INVISIBLE:
        text = _INVISIBLE.sub("", text)
    if work & INVISIBLE << ASTRAL:
        text = _INVISIBLE_ASTRAL.sub("", text)
    if work & SURROGATE and work & _INVISIBLES:
        text = from_units(text)  # halves an invisible stood between are one character again
    if work & ODD_SPACE or "  " in text:
        text = _HORIZONTAL_WS.sub(" ", text)
    return text, bool(work & SURROGATE)


def flatten(text: str) -> str:
    """One line: every white-space run, newlines included, becomes one space; ends trimmed.

    ``text`` must be canonical (or canonical with disclosure sections cut out at line starts):
    there the only white space left is single spaces and newlines, so only the runs around a
    newline change, and a space before a newline can be dropped before they are joined.
    """
    if "\n" not in text:
        return text.strip(" ")
    return chars.flatten(text)


def fold(text: str) -> str:
    """Lowercase, accents removed (NFKD without combining marks), look-alike letters to Latin."""
    text = lower(text)
    if text.isascii():
        return text
    text = _normalize("NFKD", text)
    work = chars.classes(text, _FOLD_WORK)
    if work & MARK_BIT:
        text = _MARKS.sub("", text)
    if work & MARK_BIT << ASTRAL:
        text = _MARKS_ASTRAL.sub("", text)
    if work & SURROGATE and work & _MARKS_ANY:
        text = from_units(text)  # halves a mark stood between are one character again
    if work & HOMOGLYPH:
        text = text.translate(_HOMOGLYPH_TABLE)
    return text


def lower(text: str) -> str:
    """``toLowerCase()`` at Unicode 17.0: full mappings, and the final sigma by its context.

    One pass in the C extension (``chars.lower``); without it, the interpreter's ``str.lower``
    where it agrees, else the generated tables alone.
    """
    if text.isascii():
        return text.lower()
    return chars.lower(text)


def phrase_text(text: str) -> str:
    """A forbidden phrase, or the result it is looked for in, as a reader sees it."""
    return fold(flatten(canonical(text)))


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` (a code-unit view is joined back into characters first).

    Words, as the reference counts them: each CJK ideograph or kana is a word of its own (no
    spaces between them), otherwise runs of letters and digits joined by ' or -.
    """
    return chars.tokens(_lower_joined(text), False)


def _lower_joined(text: str) -> str:
    """``lower(from_units(text))``, joining only a text that holds a surrogate code point."""
    if text.isascii():
        return text.lower()
    if chars.classes(text, SURROGATE):
        return chars.lower(from_units(text))
    return chars.lower(text)


def count_words(text: str, enough: int, enough_distinct: int) -> tuple[int, int]:
    """How many words ``text`` has, and how many different ones, counted until both reach the
    bounds given: exact below them, at least them otherwise (a code-unit view is fine).

    Reads a growing prefix instead of the whole text, cut at its last space: no word spans a
    space, and no word before it reads past it, so the prefix holds exactly the text's first words.
    """
    size = 256
    while size < len(text):
        cut = text.rfind(" ", 0, size)
        if cut > 0:
            found = words(text[:cut])
            distinct = len(set(found))
            if len(found) >= enough and distinct >= enough_distinct:
                return len(found), distinct
        size *= 4
    found = words(text)
    return len(found), len(set(found))


def count_words_besides(text: str, excluded: Container[str], enough: int) -> int:
    """How many words of ``text`` are not in ``excluded``: exact below ``enough``, at least
    ``enough`` otherwise (read from growing prefixes, as :func:`count_words` reads them)."""
    size = 256
    while size < len(text):
        cut = text.rfind(" ", 0, size)
        if cut > 0:
            found = sum(1 for w in words(text[:cut]) if w not in excluded)
            if found >= enough:
                return found
        size *= 4
    return sum(1 for w in words(text) if w not in excluded)


def has_distinct_words(text: str, n: int) -> int:
    """How many distinct words ``text`` has, counting no further than ``n``."""
    return min(count_words(text, 0, n)[1], n)
