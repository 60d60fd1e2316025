"""One pass over a text for each question the auto check asks of every result.

Normalizing and folding first ask which of their steps have work (a curly apostrophe, an
invisible character, a combining mark…), and several rules split a text into words. With ``re``
each class is a scan of its own, about 10 µs per 4 KB each, several times per result. Here every
code point has 16 bits of classes, at Unicode 17.0 (the reference's version, from the generated
``_unicode_tables``), and these functions read a text once:

- ``classes(text, mask)``: the OR of the bits of the text's BMP characters, and above them
  (shifted by ``ASTRAL``) of its astral ones, which ``re`` removes in a pass of their own, for
  the classes in ``mask`` (the ``re`` twin then searches for those only);
- ``tokens(text, numbers)``: its words, as the reference's word patterns find them (and
  ``distinct_tokens``: the different ones, without a string made for each repeat);
- ``flatten(text)``: the text on one line;
- ``has_ascii_ci(text, needles)``: whether a needle occurs, ASCII letters in either case;
- ``lower(text)``: JavaScript's ``toLowerCase()`` at Unicode 17.0 (the interpreter's
  ``str.lower`` reads its own Unicode version's data, and a table lookup per character);
- ``find_all(text, needles)``: which of up to 64 ASCII literals occur (the failure screen).

They run in a small C extension, ``_speedups``, where it was built (``pip install`` compiles it;
no library answers "which of these classes occur" in one pass), and otherwise in ``re``, with
the same results: ``tests/autocheck/test_chars.py`` compares the two on random text.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from functools import cache, lru_cache
from types import ModuleType
from typing import cast

import ahocorasick

from adjudge.autocheck._unicode_tables import (
    ALNUM,
    ALNUM_ASTRAL,
    BASE_UNICODE_VERSION,
    CASE_IGNORABLE,
    CASE_IGNORABLE_ASTRAL,
    CASED,
    CASED_ASTRAL,
    CJK,
    CJK_ASTRAL,
    FORMAT,
    FORMAT_ASTRAL,
    LOWER,
    LOWER_DIFFERS,
    LOWER_DIFFERS_ASTRAL,
    MARK,
    MARK_ASTRAL,
    NUMBER,
    NUMBER_ASTRAL,
)
from adjudge.autocheck.jsvalues import WHITESPACE, has_astral

speedups: ModuleType | None
try:
    from adjudge.autocheck import _speedups as speedups
except ImportError:  # not built (no compiler where it was installed): ``re`` does the work
    speedups = None
_FUNCTIONS = (
    "classes",
    "tokens",
    "distinct_tokens",
    "flatten",
    "has_ascii_ci",
    "lower",
    "find_all",
)
if speedups is not None and not all(hasattr(speedups, name) for name in _FUNCTIONS):
    speedups = None  # built from an older _speedups.c (rebuild: make setup): the twins do the work

CURLY = 0x01  # ‘ ’ ʼ, straightened to '
CR = 0x02  # \r, of \r\n and lone \r line ends
INVISIBLE = 0x04  # format characters, variation selectors, controls that are not white space
ODD_SPACE = 0x08  # white space other than " " and "\n"
MARK_BIT = 0x10  # combining marks (accents, once decomposed)
HOMOGLYPH = 0x20  # Cyrillic and Greek letters that look Latin
NUMBER_BIT = 0x40  # \p{N}
CJK_BIT = 0x80  # one word per character: ideographs, kana
ALNUM_BIT = 0x100  # \p{L} or \p{N} beyond ASCII: a word character
LOWER_DIFFERS_BIT = 0x200  # str.lower() of a text holding it may not be Unicode 17.0's
SURROGATE = 0x400  # a surrogate code point: half of a pair, in a code-unit view or alone
CASED_BIT = 0x800  # Cased (a final sigma follows one)
CASE_IGNORABLE_BIT = 0x1000  # Case_Ignorable (skipped when looking for one)
LOWERS_BIT = 0x2000  # toLowerCase() changes it: a full mapping, or the capital sigma
#: ``classes`` reports the bits of astral characters shifted left by this much.
ASTRAL = 16

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

_SIGMA = "\u03a3"
#: Unicode 17.0's full lowercase mappings (code point → its lowercase), the capital sigma aside
#: (its context decides it).
LOWER_MAP = {ord(entry[0]): entry[1:] for entry in LOWER.split(" ") if entry[0] != _SIGMA}


def _ranges(code_points: list[int]) -> str:
    """Sorted code points written as class source: characters, and ``a-b`` ranges."""
    out: list[str] = []
    i = 0
    while i < len(code_points):
        j = i
        while j + 1 < len(code_points) and code_points[j + 1] == code_points[j] + 1:
            j += 1
        lo, hi = chr(code_points[i]), chr(code_points[j])
        out.append(lo if i == j else f"{lo}-{hi}")
        i = j + 1
    return "".join(out)


_LOWERS = sorted([*LOWER_MAP, ord(_SIGMA)])
_CONTROLS = "\x00-\x08\x0e-\x1f\x7f-\x9f"
# Each class: its bit, its BMP members and its astral members, as ``re`` class source.
_CLASSES: tuple[tuple[int, str, str], ...] = (
    (CURLY, "\u2018\u2019\u02bc", ""),
    (CR, "\r", ""),
    (INVISIBLE, f"{FORMAT}\ufe00-\ufe0f{_CONTROLS}", FORMAT_ASTRAL),
    (ODD_SPACE, WHITESPACE.replace("\n", "").replace(" ", ""), ""),
    (MARK_BIT, MARK, MARK_ASTRAL),
    (HOMOGLYPH, "".join(HOMOGLYPHS), ""),
    (NUMBER_BIT, NUMBER, NUMBER_ASTRAL),
    (CJK_BIT, CJK, CJK_ASTRAL),
    (ALNUM_BIT, ALNUM, ALNUM_ASTRAL),
    (LOWER_DIFFERS_BIT, LOWER_DIFFERS, LOWER_DIFFERS_ASTRAL),
    (SURROGATE, "\ud800-\udfff", ""),
    (CASED_BIT, CASED, CASED_ASTRAL),
    (CASE_IGNORABLE_BIT, CASE_IGNORABLE, CASE_IGNORABLE_ASTRAL),
    (
        LOWERS_BIT,
        _ranges([cp for cp in _LOWERS if cp <= 0xFFFF]),
        _ranges([cp for cp in _LOWERS if cp > 0xFFFF]),
    ),
)


def _spans(cls: str) -> list[tuple[int, int]]:
    """The ranges of a class written as ``re`` source: characters, and ``a-b`` ranges."""
    spans = []
    i = 0
    while i < len(cls):
        if i + 2 < len(cls) and cls[i + 1] == "-":
            spans.append((ord(cls[i]), ord(cls[i + 2])))
            i += 3
        else:
            spans.append((ord(cls[i]), ord(cls[i])))
            i += 1
    return spans


def _table() -> array[int]:
    """16 bits of classes per code point (2.2 MB, built in milliseconds).

    One sweep over the classes' range ends: between two ends every code point has the same bits.
    """
    events: list[tuple[int, int]] = []  # (where a range starts or ends, the bit it flips)
    for bit, bmp, astral in _CLASSES:
        for lo, hi in _spans(bmp + astral):
            events += [(lo, bit), (hi + 1, bit)]
    events.sort()
    table = array("H", bytes(2 * 0x110000))
    value = at = 0
    for where, bit in events:
        if where != at and value:
            table[at:where] = array("H", [value]) * (where - at)
        at = where
        value ^= bit  # the ranges of one class never overlap
    return table


TABLE = _table()

# The same in ``re``: the BMP members of the classes asked about in one class, and astral
# characters looked up in the table (``re`` tests a long list of astral ranges slowly).
_ASTRAL_CHAR = re.compile("[\U00010000-\U0010ffff]")
EVERY = 0xFFFFFFFF  # every class, in both planes


@lru_cache(maxsize=32)
def _members(mask: int) -> re.Pattern[str]:
    """One character of the BMP members of the classes in ``mask`` (BMP bits only)."""
    bmp = "".join(cls for bit, cls, _ in _CLASSES if bit & mask)
    return re.compile(f"[{bmp}]" if bmp else "(?!)")


ASCII_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_ASCII_ANSWER_WORD = re.compile(rf"[0-9]+(?:[.,][0-9]+)+(?![a-z0-9])|{ASCII_WORD.pattern}")


@cache
def _word_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The reference's word and answer-token patterns beyond ASCII: any plane, and the BMP only.

    Compiled when first needed (their classes are large, and the C tokenizer needs none).
    """
    num = f"(?:[{NUMBER}]|[{NUMBER_ASTRAL}])"
    # A word character: \p{L} or \p{N} (at Unicode 17.0), in the BMP and beyond it.
    w = f"[0-9A-Za-z{ALNUM}]"
    w_any = f"(?:{w}|[{ALNUM_ASTRAL}])"
    word = rf"[{CJK}]|[{CJK_ASTRAL}]|{w_any}+(?:['-]{w_any}+)*"
    word_bmp = rf"[{CJK}]|{w}+(?:['-]{w}+)*"
    return (
        re.compile(word),
        re.compile(word_bmp),
        re.compile(rf"{num}+(?:[.,]{num}+)+(?!{w_any})|{word}"),
        re.compile(rf"[{NUMBER}]+(?:[.,][{NUMBER}]+)+(?!{w})|{word_bmp}"),
    )


# What decides the pattern: a word character or CJK beyond ASCII, and whether any is astral.
_WORDY = ALNUM_BIT | CJK_BIT
_WORDY_ASTRAL = (ALNUM_BIT | CJK_BIT | NUMBER_BIT) << ASTRAL


# Classes of thousands of characters, often most of a text: one search each tells they occur.
_SEARCHED = (ALNUM_BIT, CASED_BIT, CASE_IGNORABLE_BIT)
_SEARCHED_MASK = ALNUM_BIT | CASED_BIT | CASE_IGNORABLE_BIT


def classes_re(text: str, mask: int = EVERY) -> int:
    """``classes`` in ``re``: the bits of each distinct member found of the classes asked about
    (and, for the largest classes, whether one member is found)."""
    bits = 0
    listed = mask & 0xFFFF & ~_SEARCHED_MASK
    if listed:
        for c in set(_members(listed).findall(text)):
            bits |= TABLE[ord(c)]
    for bit in _SEARCHED:
        if mask & bit and not bits & bit and _members(bit).search(text) is not None:
            bits |= bit
    if mask >> ASTRAL and has_astral(text):
        for c in set(_ASTRAL_CHAR.findall(text)):
            bits |= TABLE[ord(c)] << ASTRAL
    return bits & mask


def word_pattern(text: str, numbers: bool) -> re.Pattern[str]:
    """The ``re`` pattern that finds ``text``'s words, the fastest of those that find the same.

    Without a letter or digit beyond ASCII and without a CJK character (a radical is CJK but no
    letter), the ASCII patterns do; without an astral word character, the BMP ones.
    """
    if text.isascii():
        return _ASCII_ANSWER_WORD if numbers else ASCII_WORD
    bits = classes(text, _WORDY | _WORDY_ASTRAL)
    if not bits:
        return _ASCII_ANSWER_WORD if numbers else ASCII_WORD
    word, word_bmp, answer, answer_bmp = _word_patterns()
    if bits & _WORDY_ASTRAL:
        return answer if numbers else word
    return answer_bmp if numbers else word_bmp


_ASCII_ALNUM = re.compile("[0-9A-Za-z]")


def has_letter_or_digit(text: str) -> bool:
    """Whether ``text`` holds ``[\\p{L}\\p{N}]`` (Unicode 17.0), in any plane."""
    if _ASCII_ALNUM.search(text) is not None:
        return True
    return not text.isascii() and bool(classes(text, ALNUM_BIT | ALNUM_BIT << ASTRAL))


def tokens_re(text: str, numbers: bool) -> list[str]:
    """``tokens`` in ``re``."""
    return word_pattern(text, numbers).findall(text)


def member_pattern(bit: int) -> re.Pattern[str]:
    """One character of a class: its BMP members for ``bit``, its astral ones for
    ``bit << ASTRAL`` (a class is removed one plane at a time: see ``text.canonical``)."""
    astral = bit >> ASTRAL
    source = next(a if astral else b for flag, b, a in _CLASSES if flag == (astral or bit))
    return re.compile(f"[{source}]")


_NEWLINE_RUN = re.compile("\n[\n ]*")


def flatten_re(text: str) -> str:
    """``flatten`` in ``re``: a space before a line break dropped, each run from a line break on
    made one space, spaces stripped from both ends."""
    return _NEWLINE_RUN.sub(" ", text.replace(" \n", "\n")).strip(" ")


@lru_cache(maxsize=16)
def _needles_re(needles: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, needles)), re.IGNORECASE | re.ASCII)


def has_ascii_ci_re(text: str, needles: tuple[str, ...]) -> bool:
    """``has_ascii_ci`` in ``re``."""
    return _needles_re(needles).search(text) is not None


# The interpreter's str.lower() is Unicode 17.0's on a text without a LOWER_DIFFERS character
# only where the tables were computed against the interpreter's own version.
_LOWER_FAST = unicodedata.unidata_version == BASE_UNICODE_VERSION
_LOWER_DIFFERS_ANY = LOWER_DIFFERS_BIT | LOWER_DIFFERS_BIT << ASTRAL


def lower_re(text: str) -> str:
    """``lower`` without the extension: the interpreter's ``str.lower`` where it agrees (every
    text without a character added to Unicode since its version, or changed since); otherwise
    the generated tables alone."""
    if text.isascii() or (_LOWER_FAST and not classes(text, _LOWER_DIFFERS_ANY)):
        return text.lower()
    return lower_tables(text)


def lower_tables(text: str) -> str:
    """``toLowerCase()`` from the generated tables alone (a dictionary lookup per character)."""
    pieces = text.split(_SIGMA)
    out = [pieces[0].translate(LOWER_MAP)]
    at = len(pieces[0])
    for piece in pieces[1:]:
        out.append("\u03c2" if _final_sigma(text, at) else "\u03c3")
        out.append(piece.translate(LOWER_MAP))
        at += 1 + len(piece)
    return "".join(out)


def _final_sigma(text: str, i: int) -> bool:
    """Unicode's Final_Sigma for the capital sigma at ``text[i]``: a cased letter before it and
    none after it, case-ignorable characters skipped on both sides."""
    j = i - 1
    while j >= 0 and TABLE[ord(text[j])] & CASE_IGNORABLE_BIT:
        j -= 1
    if j < 0 or not TABLE[ord(text[j])] & CASED_BIT:
        return False
    k = i + 1
    while k < len(text) and TABLE[ord(text[k])] & CASE_IGNORABLE_BIT:
        k += 1
    return k == len(text) or not TABLE[ord(text[k])] & CASED_BIT


@lru_cache(maxsize=16)
def _automaton(needles: tuple[str, ...]) -> ahocorasick.Automaton:
    if len(needles) > 64 or not all(n and n.isascii() for n in needles):
        raise ValueError("at most 64 needles, each non-empty ASCII str")
    finder = ahocorasick.Automaton()
    for k, needle in enumerate(needles):
        bit = finder.get(needle, 0) | 1 << k
        finder.add_word(needle, bit)
    finder.make_automaton()
    return finder


def find_all_re(text: str, needles: tuple[str, ...]) -> int:
    """``find_all`` without the extension: bit ``k`` set where ``needles[k]`` occurs in
    ``text``, every needle found in one Aho-Corasick pass (pyahocorasick)."""
    finder = _automaton(needles)
    found = 0
    if needles and text:
        for _, bits in finder.iter(text):
            found |= bits
    return found


def _classes_c(text: str, mask: int = EVERY) -> int:
    assert speedups is not None
    return cast(int, speedups.classes(TABLE, text)) & mask


def _tokens_c(text: str, numbers: bool) -> list[str]:
    assert speedups is not None
    return cast(list[str], speedups.tokens(TABLE, text, numbers))


def distinct_tokens_re(text: str, numbers: bool) -> list[str]:
    """``distinct_tokens`` in ``re``: the different words, in the order they first appear."""
    return list(dict.fromkeys(tokens(text, numbers)))


def _distinct_tokens_c(text: str, numbers: bool) -> list[str]:
    assert speedups is not None
    return cast(list[str], speedups.distinct_tokens(TABLE, text, numbers))


def _lower_c(text: str) -> str:
    assert speedups is not None
    return cast(str, speedups.lower(TABLE, LOWER_MAP, text))


# The C functions where the extension was built, else their twins.
classes = _classes_c if speedups is not None else classes_re
tokens = _tokens_c if speedups is not None else tokens_re
distinct_tokens = _distinct_tokens_c if speedups is not None else distinct_tokens_re
flatten = speedups.flatten if speedups is not None else flatten_re
has_ascii_ci = speedups.has_ascii_ci if speedups is not None else has_ascii_ci_re
lower = _lower_c if speedups is not None else lower_re
find_all = speedups.find_all if speedups is not None else find_all_re
