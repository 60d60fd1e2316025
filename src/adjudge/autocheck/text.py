"""Normalization and folding: the text as a reader sees it.

Spec 000, *What the check reads*: "Normalizing applies Unicode NFKC, turns curly apostrophes
straight, drops invisible characters, and collapses each run of whitespace to one space."
Forbidden phrases are folded further: "case, accents, Cyrillic and Greek look-alike letters, and
invisible characters are folded away".

Every function keeps the reference checker's order of operations, because the order shows in the
result (folding after NFKC, for instance, is what makes a full-width letter match). This is the
hot path of every check, so each step first asks cheaply whether it has anything to do; the
Unicode classes come from ``_unicode_tables`` (the standard ``re`` has no ``\\p{…}``), at the
Unicode version of the running Python.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from adjudge.autocheck._unicode_tables import (
    CJK,
    CJK_ASTRAL,
    FORMAT,
    FORMAT_ASTRAL,
    MARK,
    MARK_ASTRAL,
)
from adjudge.autocheck.jsvalues import WHITESPACE, from_units, has_astral

_HSPACE = re.escape(WHITESPACE.replace("\n", ""))
_HSPACE_NOT_SPACE = re.escape(WHITESPACE.replace("\n", "").replace(" ", ""))

_NEWLINES = re.compile(r"\r\n?")
_CURLY_APOSTROPHES = re.compile("[\u2018\u2019\u02bc]")
# Format characters (zero-width, soft hyphen, bidi marks), variation selectors, and control
# characters that are not white space.
# Each Unicode class has a fast BMP-only form and a full form for text with astral characters.
# Classes that are removed match one character, not a run: ``re`` scans for a lone class much
# faster than for a repeated one (a run is removed all the same).
_INVISIBLE = re.compile(f"[{FORMAT}\ufe00-\ufe0f\x00-\x08\x0e-\x1f\x7f-\x9f]")
_INVISIBLE_ALL = re.compile(f"{_INVISIBLE.pattern}|[{FORMAT_ASTRAL}]")
# Only the runs that change: two or more spaces, or any white space that is not a plain space.
_HORIZONTAL_WS = re.compile(f"[{_HSPACE}]{{2,}}|[{_HSPACE_NOT_SPACE}]")
_ODD_HSPACE = re.compile(f"[{_HSPACE_NOT_SPACE}]")
_NEWLINE_RUN = re.compile("\n[\n ]*")
_MARKS = re.compile(f"[{MARK}]")
_MARKS_ALL = re.compile(f"[{MARK}]|[{MARK_ASTRAL}]")
# The astral halves of the classes are long lists of ranges, slow to test at every position, so
# they are tested only against the astral characters a text actually has.
_ASTRAL_CHAR = re.compile("[\U00010000-\U0010ffff]")
_FORMAT_ASTRAL = re.compile(f"[{FORMAT_ASTRAL}]")
_MARK_ASTRAL = re.compile(f"[{MARK_ASTRAL}]")
_CJK_ASTRAL = re.compile(f"[{CJK_ASTRAL}]")


# The emoji blocks U+1F201–U+1FAFF hold no character of any table (a test keeps it so): text
# whose only astral characters are emoji never needs the slow classes.
_TABLE_ASTRAL = re.compile("[\U00010000-\U0001f200\U0001fb00-\U0010ffff]")


_CURLY = frozenset("\u2018\u2019\u02bc")

_ODD_HSPACE_CHARS = frozenset(WHITESPACE) - {" ", "\n"}


def has_astral_in(text: str, cls: re.Pattern[str]) -> bool:
    """Whether ``text`` has an astral character in ``cls`` (only its astral ones are tested)."""
    if not has_astral(text) or _TABLE_ASTRAL.search(text) is None:
        return False
    return any(cls.match(c) for c in set(_ASTRAL_CHAR.findall(text)))


# Words, as the reference counts them: each CJK ideograph or kana is a word of its own (no
# spaces between them), otherwise runs of letters and digits joined by ' or -. `[^\W_]` is a
# letter or a digit (\p{L}\p{N}).
_WORD = re.compile(rf"[{CJK}]|[^\W_]+(?:['-][^\W_]+)*")
_WORD_ALL = re.compile(rf"[{CJK}]|[{CJK_ASTRAL}]|[^\W_]+(?:['-][^\W_]+)*")
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
NON_ASCII_ALNUM = re.compile(r"[^\W_\x00-\x7f]")

# Cyrillic and Greek letters that render as Latin ones. Cheap and partial: it stops the
# copy-paste look-alike trick, not a determined adversary.
HOMOGLYPHS = {
    "\u0430": "a",
    "\u0435": "e",
    "\u043e": "o",
    "\u0440": "p",
    "\u0441": "c",
    "\u0445": "x",
    "\u0443": "y",
    "\u0456": "i",
    "\u0455": "s",
    "\u0458": "j",
    "\u051b": "q",
    "\u051d": "w",
    "\u04bb": "h",
    "\u03b1": "a",
    "\u03bf": "o",
    "\u03b9": "i",
    "\u03bd": "v",
    "\u03c1": "p",
    "\u03b5": "e",
    "\u03ba": "k",
    "\u03c4": "t",
    "\u03c5": "u",
}
_HOMOGLYPH = re.compile("[" + "".join(HOMOGLYPHS) + "]")
_HOMOGLYPH_TABLE = str.maketrans(HOMOGLYPHS)
_FOLD_WORK = re.compile(f"[{MARK}{''.join(HOMOGLYPHS)}]")


# Any character that one of the steps after NFKC would change (BMP part; astral format
# characters are looked for separately). Text without one, and without a double space, is done.
_CANONICAL_WORK = re.compile(
    f"[\r\u2018\u2019\u02bc{FORMAT}\ufe00-\ufe0f\x00-\x08\x0e-\x1f\x7f-\x9f{_HSPACE_NOT_SPACE}]"
)


def canonical(text: str) -> str:
    """NFKC, ``\\r\\n`` to ``\\n``, straight apostrophes, no invisibles, horizontal runs collapsed.

    Line structure is kept (the disclosure section is found by its heading line).
    """
    ascii_text = text.isascii()
    if not ascii_text:
        text = unicodedata.normalize("NFKC", text)
    # One pass lists the characters the steps below would touch; each step runs only if needed.
    work = set(_CANONICAL_WORK.findall(text))
    astral_format = not ascii_text and has_astral_in(text, _FORMAT_ASTRAL)
    if not work and not astral_format and "  " not in text:
        return text
    for curly in _CURLY & work:
        text = text.replace(curly, "'")
    if "\r" in work:
        text = _NEWLINES.sub("\n", text)
    if astral_format or any(_INVISIBLE.match(c) for c in work):
        text = (_INVISIBLE_ALL if astral_format else _INVISIBLE).sub("", text)
    if work & _ODD_HSPACE_CHARS or "  " in text:
        text = _HORIZONTAL_WS.sub(" ", text)
    return text


def flatten(text: str) -> str:
    """One line: every white-space run, newlines included, becomes one space; ends trimmed.

    ``text`` must be canonical (or canonical with disclosure sections cut out at line starts):
    there the only white space left is single spaces and newlines, so only the runs around a
    newline change, and a space before a newline can be dropped before they are joined.
    """
    if "\n" not in text:
        return text.strip(" ")
    return _NEWLINE_RUN.sub(" ", text.replace(" \n", "\n")).strip(" ")


def fold(text: str) -> str:
    """Lowercase, accents removed (NFKD without combining marks), look-alike letters to Latin."""
    text = text.lower()
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKD", text)
    if has_astral_in(text, _MARK_ASTRAL):
        text = _MARKS_ALL.sub("", text)
    elif _FOLD_WORK.search(text) is None:
        return text
    else:
        text = _MARKS.sub("", text)
    if _HOMOGLYPH.search(text):
        text = text.translate(_HOMOGLYPH_TABLE)
    return text


def phrase_text(text: str) -> str:
    """A forbidden phrase, or the result it is looked for in, as a reader sees it."""
    return fold(flatten(canonical(text)))


def iter_words(text: str) -> Iterator[str]:
    """The lowercase words of ``text``, lazily (a code-unit view is joined back first)."""
    text = from_units(text).lower()
    return (m.group() for m in _word_pattern(text).finditer(text))


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` (a code-unit view is joined back into characters first)."""
    text = from_units(text).lower()
    return _word_pattern(text).findall(text)


def _word_pattern(text: str) -> re.Pattern[str]:
    # Without a non-ASCII letter or digit (typographic quotes and dashes are neither), the ASCII
    # pattern finds exactly the same words, faster.
    if text.isascii() or NON_ASCII_ALNUM.search(text) is None:
        return _ASCII_WORD
    return _WORD_ALL if has_astral_in(text, _CJK_ASTRAL) else _WORD


def count_words(text: str, enough: int, enough_distinct: int) -> tuple[int, int]:
    """How many words ``text`` has, and how many different ones, counted until both reach the
    bounds given: exact below them, at least them otherwise (a code-unit view is fine).

    Reads a growing prefix instead of lowercasing the whole text: a word the cut may have split
    (the last one, when the cut is not at the end) is left for the next, longer read.
    """
    size = 64
    while True:
        whole = size >= len(text)
        chunk = from_units(text if whole else text[:size]).lower()
        matches = list(_word_pattern(chunk).finditer(chunk))
        if not whole and matches and matches[-1].end() >= len(chunk) - 1:
            matches.pop()
        distinct = len({m.group() for m in matches})
        if whole or (len(matches) >= enough and distinct >= enough_distinct):
            return len(matches), distinct
        size *= 4


def has_distinct_words(text: str, n: int) -> int:
    """How many distinct words ``text`` has, counting no further than ``n``."""
    return min(count_words(text, 0, n)[1], n)
