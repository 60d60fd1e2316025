"""The one-pass character classes and tokenizer: the C extension equals its ``re`` twin."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.autocheck import _unicode_tables as tables
from adjudge.autocheck import chars, jsvalues
from adjudge.autocheck.chars import (
    ALNUM_BIT,
    ASTRAL,
    CASE_IGNORABLE_BIT,
    CASED_BIT,
    CJK_BIT,
    CR,
    CURLY,
    HOMOGLYPH,
    INVISIBLE,
    LOWER_DIFFERS_BIT,
    LOWERS_BIT,
    MARK_BIT,
    NUMBER_BIT,
    ODD_SPACE,
    SURROGATE,
    TABLE,
    classes_re,
    find_all_re,
    flatten_re,
    has_ascii_ci_re,
    lower_re,
    lower_tables,
    tokens_re,
)

needs_speedups = pytest.mark.skipif(
    chars.speedups is None,
    reason="the C extension adjudge.autocheck._speedups was not built here (no compiler at "
    "install time); the auto check runs on its re twin, which these tests compare against",
)

# A little of every class, in both planes, and the characters that make word boundaries hard.
_ALPHABET = [
    *"aZz09 \n\t\r.,'-_:!?",
    "\u2019",  # curly apostrophe
    "\u200b",  # zero-width space (format)
    "\x07",  # a control
    "\u00a0",  # no-break space
    "\u0301",  # combining acute
    "\u0430",  # Cyrillic a
    "é",
    "ß",
    "İ",
    "²",  # superscript two: a number, and alnum
    "٣",  # Arabic-Indic three
    "Ⅻ",  # a letter number
    "〇",  # ideographic zero: a number and CJK
    "中",
    "の",
    "😀",
    "\U00020000",  # an astral ideograph
    "\U0001d7d8",  # mathematical double-struck zero: an astral digit
    "\U000e0001",  # language tag: astral format
    "\U0001d167",  # musical combining mark: astral mark
    "\ud800",  # a lone surrogate (a code-unit view)
    "\udc00",
    "\ua7cd",  # Unicode 16: a new small letter (Python 3.11 does not know it)
    "\U00010d70",  # Unicode 16: Garay, an astral letter
    "\U0001e4f5",  # Unicode 16: an astral digit (Nag Mundari)
    "\U00031350",  # Unicode 17: CJK Extension J, an astral ideograph
    "\u1ade",  # Unicode 17: a new combining mark
    "\u0295",  # a letter whose category changed since Unicode 14 (Ll to Lo)
]
texts = st.lists(st.sampled_from(_ALPHABET), max_size=60).map("".join)


def test_speedups_are_built_where_required() -> None:
    """`make test` requires the extension (it is built by `make setup`); elsewhere it may lack."""
    if os.environ.get("ADJUDGE_REQUIRE_SPEEDUPS") == "1":
        assert chars.speedups is not None, "adjudge.autocheck._speedups did not build"
    elif chars.speedups is None:
        pytest.skip("the C extension was not built here and ADJUDGE_REQUIRE_SPEEDUPS is unset")


@needs_speedups
@settings(max_examples=600)
@given(texts)
def test_classes_equal_their_re_twin(text: str) -> None:
    assert chars.speedups is not None
    assert chars.speedups.classes(TABLE, text) == classes_re(text)
    for mask in (CURLY | INVISIBLE << ASTRAL, MARK_BIT, CJK_BIT << ASTRAL, 0):
        assert chars.classes(text, mask) == classes_re(text, mask)


@needs_speedups
@settings(max_examples=600)
@given(texts, st.booleans())
def test_tokens_equal_their_re_twin(text: str, numbers: bool) -> None:
    """On lowercased text, which is what both are given (the ``re`` side's ASCII fast path reads
    only lowercase letters)."""
    assert chars.speedups is not None
    text = text.lower()
    assert chars.speedups.tokens(TABLE, text, numbers) == tokens_re(text, numbers)


@needs_speedups
@settings(max_examples=600)
@given(
    st.lists(st.sampled_from([" ", " ", "\n", "\n", "a", "é", "😀", "\t"]), max_size=40).map(
        "".join
    )
)
def test_flatten_equals_its_re_twin(text: str) -> None:
    assert chars.speedups is not None
    assert chars.speedups.flatten(text) == flatten_re(text)


_NEEDLES = ("not done", "assumptions", "ab")


@needs_speedups
@settings(max_examples=600)
@given(
    st.lists(
        st.sampled_from(
            ["not done", "NoT DoNe", "assumptions", "ASSUMPTİONS", "a", "B", "K", "ſ", " "]
        ),
        max_size=12,
    ).map("".join)
)
def test_has_ascii_ci_equals_its_re_twin(text: str) -> None:
    """Only ASCII letters fold: the Kelvin sign is no "k", a dotted capital I no "i"."""
    assert chars.speedups is not None
    for needles in (_NEEDLES, ("k",), ("i",), ("",)):
        assert chars.speedups.has_ascii_ci(text, needles) == has_ascii_ci_re(text, needles)


@needs_speedups
@settings(max_examples=1000)
@given(st.text(max_size=40), st.booleans())
def test_twins_agree_on_any_text(text: str, numbers: bool) -> None:
    """Any code point of any plane, assigned or not."""
    assert chars.speedups is not None
    assert chars.speedups.classes(TABLE, text) == classes_re(text)
    assert chars.speedups.tokens(TABLE, text.lower(), numbers) == tokens_re(text.lower(), numbers)
    assert chars.speedups.flatten(text) == flatten_re(text)


@needs_speedups
@settings(max_examples=1000)
@given(
    st.lists(
        st.sampled_from(["ab", "ab", "Ab", "12", "1.5", "中", "é", "e\u0301", "😀", "\U00020000"])
        | st.sampled_from(_ALPHABET),
        max_size=40,
    ).map("".join),
    st.booleans(),
)
def test_distinct_tokens_equal_their_twin(text: str, numbers: bool) -> None:
    """The different words in first-appearance order, repeats of every width and plane
    included, as ``dict.fromkeys`` over the ``re`` words gives them."""
    assert chars.speedups is not None
    text = text.lower()
    want = list(dict.fromkeys(tokens_re(text, numbers)))
    assert chars.speedups.distinct_tokens(TABLE, text, numbers) == want
    assert chars.distinct_tokens_re(text, numbers) == want


@needs_speedups
def test_distinct_tokens_grow_past_their_first_table() -> None:
    """Thousands of different words (the set is resized several times), each kept once."""
    assert chars.speedups is not None
    words = [f"w{i}" for i in range(5000)]
    text = " ".join(words + words[::-1])
    assert chars.speedups.distinct_tokens(TABLE, text, False) == words


@needs_speedups
@settings(max_examples=1000)
@given(st.text(max_size=40) | st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join))
def test_to_units_equals_its_re_twin(text: str) -> None:
    """Astral characters become their surrogate pairs; lone surrogates and every BMP character
    stay, in strings of every width."""
    assert jsvalues.to_units_c is not None
    assert jsvalues.to_units_c(text) == jsvalues.to_units_re(text)


# Where lowercasing is hard: the capital sigma (final or not, across case-ignorable
# characters), dotted capital I (two characters), signs that lower into ASCII or Latin-1 (so the
# result is narrower than the text), title case, astral capitals, letters cased only since
# Unicode 8-17, and halves of surrogate pairs.
_CASES = [
    *"aAzZ '.:-",
    "\u03a3",  # capital sigma
    "\u03c3",
    "\u0345",  # combining ypogegrammeni: case-ignorable and cased
    "\u00ad",  # soft hyphen: case-ignorable
    "\u0301",  # combining acute: case-ignorable
    "\u0130",  # dotted capital I: "i" and a combining dot
    "\u212a",  # Kelvin sign: "k"
    "\u212b",  # Angstrom sign: Latin-1 "å"
    "\u2126",  # ohm sign
    "\u00c9",
    "\u00df",
    "\u1e9e",  # capital sharp s
    "\u01c5",  # title case Dž
    "\u0410",  # Cyrillic capital A
    "\u13a0",  # Cherokee capital (lowercase since Unicode 8)
    "\u1c90",  # Georgian Mtavruli (Unicode 11)
    "\ua7cb",  # capital added in Unicode 16
    "\ua7cc",
    "\U00010400",  # Deseret capital
    "\U00010d50",  # Garay capital (Unicode 16)
    "\U0001e900",  # Adlam capital
    "\U0001d400",  # mathematical bold A: no mapping
    "\ud801",  # the halves of U+10400
    "\udc00",
    "\u200b",
    "😀",
    "中",
]


@needs_speedups
@settings(max_examples=1500)
@given(st.lists(st.sampled_from(_CASES), max_size=24).map("".join))
def test_lower_equals_its_twin_and_the_tables(text: str) -> None:
    """The C ``toLowerCase`` equals the interpreter's-or-tables twin and the tables alone, to
    the string's width (a wider string than needed would compare unequal)."""
    assert chars.speedups is not None
    got = chars.speedups.lower(TABLE, chars.LOWER_MAP, text)
    assert got == lower_tables(text) == lower_re(text)


@needs_speedups
@settings(max_examples=600)
@given(st.text(max_size=40))
def test_lower_equals_the_tables_on_any_text(text: str) -> None:
    """Any code point of any plane, assigned or not, in texts of every width."""
    assert chars.speedups is not None
    assert chars.speedups.lower(TABLE, chars.LOWER_MAP, text) == lower_tables(text)


def test_lowercase_mappings_never_widen_a_character() -> None:
    """The C ``lower`` writes into a string of the text's own width: no mapping leaves
    Latin-1 or the BMP."""
    for cp, low in chars.LOWER_MAP.items():
        assert all(
            ord(c) <= (0xFF if cp <= 0xFF else 0xFFFF if cp <= 0xFFFF else 0x10FFFF) for c in low
        )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ΣΑΣ ΟΔΟΣ.", "σας οδος."),  # final sigma before a space and before a full stop
        ("Σ", "σ"),  # nothing cased before it
        ("AΣ'\u00ad", "aς'\u00ad"),  # case-ignorable characters after it are skipped
        ("AΣ'b", "aσ'b"),
        ("\u0130", "i\u0307"),
        ("\u212a", "k"),
        ("\U00010400x", "\U00010428x"),
    ],
)
def test_lower_examples(text: str, expected: str) -> None:
    """JavaScript's ``toLowerCase`` on the hard cases, on both paths."""
    assert chars.lower(text) == expected
    assert lower_re(text) == expected
    assert lower_tables(text) == expected


_LITERALS = ("able to", "i can't", "a", "task", "status", "as an ai", "to", "t", "ai")


@needs_speedups
@settings(max_examples=1500)
@given(
    st.lists(
        st.sampled_from(
            [*_LITERALS, "able t", "i can", "stat", "tas", " ", "A", "é", "’", "😀", "\ud800", "中"]
        ),
        max_size=16,
    ).map("".join),
    st.lists(st.sampled_from(_LITERALS), max_size=9, unique=True).map(tuple),
)
def test_find_all_equals_its_twin(text: str, needles: tuple[str, ...]) -> None:
    """Every needle found exactly where ``in`` finds it: overlapping needles, one-character
    needles, needles ending the text, next to characters beyond ASCII, in texts of any width."""
    assert chars.speedups is not None
    want = sum(1 << k for k, n in enumerate(needles) if n in text)
    assert chars.speedups.find_all(text, needles) == find_all_re(text, needles) == want


@pytest.mark.parametrize("needles", [("",), ("é",), tuple(f"n{i}" for i in range(65))])
def test_find_all_refuses_what_it_cannot_search(needles: tuple[str, ...]) -> None:
    """Empty or non-ASCII needles, or more than 64 of them, are refused on both paths."""
    with pytest.raises(ValueError):
        find_all_re("text", needles)
    if chars.speedups is not None:
        with pytest.raises(ValueError):
            chars.speedups.find_all("text", needles)


@pytest.mark.parametrize(
    ("text", "numbers", "expected"),
    [
        ("it's 1,234.56 and 12.5a", True, ["it's", "1,234.56", "and", "12", "5a"]),
        ("1.2.3a", True, ["1.2", "3a"]),
        ("12-34 rock-n-roll --x", True, ["12-34", "rock-n-roll", "x"]),
        ("12.5", False, ["12", "5"]),
        ("数据显示", False, ["数", "据", "显", "示"]),
        ("snake_case", False, ["snake", "case"]),
        # CJK radicals are words of their own though not letters: no ASCII shortcut past them.
        ("\u2e80\u2e81 x", False, ["\u2e80", "\u2e81", "x"]),
        ("\u2e80 12.5", True, ["\u2e80", "12.5"]),
    ],
)
def test_tokens_examples(text: str, numbers: bool, expected: list[str]) -> None:
    """Numbers stay whole only in answer mode; CJK is a word per character; "_" splits."""
    assert chars.tokens(text, numbers) == expected
    assert tokens_re(text, numbers) == expected


# The classes the normalizing steps ask about (letters' and case classes aside).
_STEPS = CURLY | CR | INVISIBLE | ODD_SPACE | MARK_BIT | HOMOGLYPH | NUMBER_BIT | CJK_BIT
_STEPS |= _STEPS << ASTRAL


def test_classes_report_each_class_and_its_plane() -> None:
    assert chars.classes("plain ascii") == CASED_BIT  # ASCII letters are not ALNUM's concern
    assert chars.classes("it\u2019s\r\n", _STEPS) == CURLY | CR | ODD_SPACE  # \r is odd space too
    assert chars.classes("a\u200bb\u00a0c", _STEPS) == INVISIBLE | ODD_SPACE
    assert chars.classes("e\u0301\u0430", _STEPS) == MARK_BIT | HOMOGLYPH
    assert chars.classes("中\U00020000", _STEPS) == CJK_BIT | CJK_BIT << ASTRAL
    assert chars.classes("x\U0001d167", _STEPS) == MARK_BIT << ASTRAL
    assert chars.classes("😀") == 0  # emoji belong to no class
    assert chars.classes("\ud83d") == SURROGATE
    assert chars.classes("é") == ALNUM_BIT | CASED_BIT
    assert (
        chars.classes("\U00010d50")
        == (ALNUM_BIT | CASED_BIT | LOWER_DIFFERS_BIT | LOWERS_BIT) << ASTRAL
    )
    assert chars.classes("É\u03a3") & LOWERS_BIT  # a mapping, and the capital sigma
    assert chars.classes("\u0301") & CASE_IGNORABLE_BIT


def test_every_number_is_a_letter_or_digit() -> None:
    """The C tokenizer's number rule relies on it: a number run cut short is followed by alnum."""
    members = [cp for cp in range(0x110000) if TABLE[cp] & NUMBER_BIT]
    assert len(members) > 1_000
    assert all(TABLE[cp] & ALNUM_BIT or chr(cp) in "0123456789" for cp in members)


def test_the_ranges_of_each_class_do_not_overlap() -> None:
    """The table is built by flipping a class's bit at each end of its ranges."""
    for _bit, bmp, astral in chars._CLASSES:
        spans = sorted(chars._spans(bmp + astral))
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


def test_table_matches_the_generated_classes() -> None:
    """Spot checks: the table holds the generated ranges at their ends."""
    for bit, cls in [
        (MARK_BIT, tables.MARK + tables.MARK_ASTRAL),
        (NUMBER_BIT, tables.NUMBER + tables.NUMBER_ASTRAL),
        (CJK_BIT, tables.CJK + tables.CJK_ASTRAL),
        (INVISIBLE, tables.FORMAT + tables.FORMAT_ASTRAL),
    ]:
        assert TABLE[ord(cls[0])] & bit
        assert TABLE[ord(cls[-1])] & bit
