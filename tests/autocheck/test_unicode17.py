"""Every Unicode property the check reads is Unicode 17.0's, checked code point by code point
against node's own (the reference's engine): case mappings, the final sigma, NFKC and NFKD,
and each class of the generated tables. The interpreter's Unicode version does not show."""

from __future__ import annotations

import json
import subprocess
import unicodedata
from functools import cache
from typing import Any

import pytest
import unicodedata2
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import NODE, requires_node

from adjudge.autocheck import _unicode_tables, chars, text
from adjudge.autocheck.chars import (
    ALNUM_BIT,
    CJK_BIT,
    INVISIBLE,
    LOWER_DIFFERS_BIT,
    MARK_BIT,
    NUMBER_BIT,
    TABLE,
)
from adjudge.autocheck.jsvalues import _UPPER, _canonicalize

CODE_POINTS = range(0x110000)


@cache
def _assigned() -> tuple[list[int], str]:
    """The code points either Unicode version assigns, private use aside, and the others (no
    surrogates) as one string: those have no property at all."""
    assigned, others = [], []
    for cp in CODE_POINTS:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        if unicodedata2.category(c) in ("Cn", "Co") and unicodedata.category(c) in ("Cn", "Co"):
            others.append(c)
        else:
            assigned.append(cp)
    return assigned, "".join(others)


# For each code point JavaScript says something about: [cp, lower, upper, nfkc, nfkd, flags,
# sigma] (null where the value is the character itself; sigma: the three probes below).
_DUMP = r"""
const RE = {
  word: /[\p{L}\p{N}]/u, number: /\p{N}/u, mark: /\p{M}/u,
  invisible: /[\p{Cf}\uFE00-\uFE0F]|[^\P{Cc}\s]/u,
  cjk: /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u,
};
const out = [];
for (let cp = 0; cp <= 0x10FFFF; cp++) {
  if (cp >= 0xD800 && cp <= 0xDFFF) continue;
  const c = String.fromCodePoint(cp);
  const v = [c.toLowerCase(), c.toUpperCase(), c.normalize('NFKC'), c.normalize('NFKD')]
    .map(x => (x === c ? null : x));
  const flags = (RE.word.test(c) ? 1 : 0) | (RE.number.test(c) ? 2 : 0) | (RE.mark.test(c) ? 4 : 0)
    | (RE.invisible.test(c) ? 8 : 0) | (RE.cjk.test(c) ? 16 : 0);
  const sigma = [(c + 'Σ').toLowerCase(), ('A' + c + 'Σ').toLowerCase(), ('AΣ' + c).toLowerCase()];
  const low = c.toLowerCase();
  const plain = sigma[0] === low + 'σ' && sigma[1] === 'a' + low + 'σ' && sigma[2] === 'aς' + low;
  if (v.some(x => x !== null) || flags || !plain) out.push([cp, ...v, flags, plain ? null : sigma]);
}
process.stdout.write(JSON.stringify({unicode: process.versions.unicode, rows: out}));
"""

pytestmark = [pytest.mark.node, requires_node]


@cache
def _node() -> dict[int, list[Any]]:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", _DUMP], capture_output=True, text=True, check=True, timeout=120
    )
    dump = json.loads(done.stdout)
    if dump["unicode"] != "17.0":
        pytest.skip(f"node here knows Unicode {dump['unicode']}, not 17.0")
    return {row[0]: row[1:] for row in dump["rows"]}


def _ours(c: str) -> list[Any]:
    bits = TABLE[ord(c)]
    word = bool(bits & ALNUM_BIT) or (c.isascii() and c.isalnum())
    flags = (
        (1 if word else 0)
        | (2 if bits & NUMBER_BIT else 0)
        | (4 if bits & MARK_BIT else 0)
        | (8 if bits & INVISIBLE else 0)
        | (16 if bits & CJK_BIT else 0)
    )
    upper = _UPPER.get(c, c)
    values = [
        text.lower(c),
        upper,
        text._normalize("NFKC", c),
        text._normalize("NFKD", c),
    ]
    return [None if v == c else v for v in values] + [flags]


def test_the_tables_are_unicode_17() -> None:
    assert _unicode_tables.UNICODE_VERSION == "17.0.0"
    assert unicodedata2.unidata_version == "17.0.0"


def test_every_code_point_matches_node() -> None:
    """Lowercase, uppercase (the ``i`` flag's), NFKC, NFKD, and the word, number, mark,
    invisible and CJK classes, for all 1,112,064 code points."""
    node = _node()
    assigned, others = _assigned()
    assert set(node) <= set(assigned)
    # Unassigned and private-use code points: no class, and every mapping leaves them alone.
    assert not any(TABLE[ord(c)] for c in others)
    assert text.lower(others) == others
    assert text._normalize("NFKC", others) == others == text._normalize("NFKD", others)
    mismatches = []
    for cp in assigned:
        c = chr(cp)
        want = node.get(cp, [None, None, None, None, 0, None])[:5]
        got = _ours(c)
        if cp > 0xFFFF:
            got[1], want[1] = None, None  # the i flag without u sees code units, not these
        if got != want:
            mismatches.append((hex(cp), got, want))
    assert mismatches[:20] == []


def test_the_final_sigma_matches_node() -> None:
    """A capital sigma after and before every code point lowercases as node lowercases it: the
    Cased and Case_Ignorable properties are 17.0's, on the interpreter's path and the tables'."""
    node = _node()
    assigned, _ = _assigned()
    mismatches = []
    for cp in assigned:
        c = chr(cp)
        got = [text.lower(p) for p in (c + "\u03a3", "A" + c + "\u03a3", "A\u03a3" + c)]
        want = node.get(cp, [None] * 6)[5]
        if want is None:
            low = text.lower(c)
            want = [low + "\u03c3", "a" + low + "\u03c3", "a\u03c2" + low]
        if got != want:
            mismatches.append((hex(cp), got, want))
    assert mismatches[:20] == []


def test_canonicalize_uses_the_17_uppercase() -> None:
    """``i`` without ``u``: the new case pairs of Unicode 15-17 match each other."""
    assert _canonicalize("\ua7cd") == "\ua7cc"  # LATIN SMALL LETTER S WITH DIAGONAL STROKE
    assert _canonicalize("\u0264") == "\ua7cb"  # ram's horn, capital added in 16.0
    assert _canonicalize("\u017f") == "\u017f"  # long s: no ASCII upper case without u


_NEW = [
    "\ua7cb",
    "\ua7cc",
    "\ua7cd",
    "\u1c89",
    "\u1c8a",
    "\U00010d50",
    "\U00010d70",
    "\U0001e030",
    "\u0295",
    "\u03a3",
    "\u0301",
    "\u0345",
    "'",
    "a",
    "A",
    "İ",
    " ",
    "\U0001ccf0",
    "\ud800",
]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(_NEW), max_size=12).map("".join))
def test_lowercase_paths_agree(s: str) -> None:
    """The interpreter's ``str.lower`` is used only where it gives Unicode 17.0's answer: on any
    text, ``lower`` equals lowercasing on the tables alone."""
    assert text.lower(s) == chars.lower_tables(s)
    if not any(TABLE[ord(c)] & LOWER_DIFFERS_BIT for c in s):
        assert s.lower() == chars.lower_tables(s)
