"""Normalization and folding: the text as a reader sees it.

Spec 000, *What the check reads*: "Normalizing applies Unicode NFKC, turns curly apostrophes
straight, drops invisible characters, and collapses each run of whitespace to one space."
Forbidden phrases are folded further: "case, accents, Cyrillic and Greek look-alike letters, and
invisible characters are folded away".

Every function keeps the reference checker's order of operations, because the order shows in the
result (folding after NFKC, for instance, is what makes a full-width letter match).
"""

from __future__ import annotations

import unicodedata

import regex

from adjudge.autocheck.jsvalues import WHITESPACE, from_units

_WS = "[" + regex.escape(WHITESPACE) + "]"
_WS_BUT_NEWLINE = "[" + regex.escape(WHITESPACE.replace("\n", "")) + "]+"

_NEWLINES = regex.compile(r"\r\n?")
_CURLY_APOSTROPHES = regex.compile("[\u2018\u2019\u02bc]")
# Format characters (zero-width, soft hyphen, bidi marks), variation selectors, and control
# characters that are not white space.
_INVISIBLE = regex.compile(r"[\p{Cf}\uFE00-\uFE0F\x00-\x08\x0e-\x1f\x7f-\x9f]+")
_HORIZONTAL_WS = regex.compile(_WS_BUT_NEWLINE)
_ANY_WS = regex.compile(_WS + "+")
_MARKS = regex.compile(r"\p{M}+")

# Words, as the reference counts them: each CJK ideograph or kana is a word of its own (no
# spaces between them), otherwise runs of letters and digits joined by ' or -.
WORD_PATTERN = (
    r"[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]"
    r"|[\p{L}\p{N}]+(?:['-][\p{L}\p{N}]+)*"
)
_WORD = regex.compile(WORD_PATTERN)

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
_HOMOGLYPH_TABLE = str.maketrans(HOMOGLYPHS)


def canonical(text: str) -> str:
    """NFKC, ``\\r\\n`` to ``\\n``, straight apostrophes, no invisibles, horizontal runs collapsed.

    Line structure is kept (the disclosure section is found by its heading line).
    """
    if text.isascii():
        if "\r" in text:
            text = _NEWLINES.sub("\n", text)
        text = _INVISIBLE.sub("", text)
        return _HORIZONTAL_WS.sub(" ", text)
    text = unicodedata.normalize("NFKC", text)
    text = _NEWLINES.sub("\n", text)
    text = _CURLY_APOSTROPHES.sub("'", text)
    text = _INVISIBLE.sub("", text)
    return _HORIZONTAL_WS.sub(" ", text)


def flatten(text: str) -> str:
    """One line: every white-space run, newlines included, becomes one space; ends trimmed."""
    return _ANY_WS.sub(" ", text).strip(WHITESPACE)


def fold(text: str) -> str:
    """Lowercase, accents removed (NFKD without combining marks), look-alike letters to Latin."""
    text = text.lower()
    if text.isascii():
        return text
    text = _MARKS.sub("", unicodedata.normalize("NFKD", text))
    return text.translate(_HOMOGLYPH_TABLE)


def phrase_text(text: str) -> str:
    """A forbidden phrase, or the result it is looked for in, as a reader sees it."""
    return fold(flatten(canonical(text)))


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` (a code-unit view is joined back into characters first)."""
    return _WORD.findall(from_units(text).lower())
