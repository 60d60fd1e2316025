"""The spans of the check's matches: each keyword and forbidden phrase found where the check
finds it, carried back to the result's own text as UTF-16 offsets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.autocheck.jsvalues import includes
from adjudge.autocheck.spans import matched_spans
from adjudge.autocheck.text import lower, phrase_text


def _sliced(text: str, start: int, end: int) -> str:
    return text.encode("utf-16-le")[2 * start : 2 * end].decode("utf-16-le")


def test_spans_follow_the_checks_folding_not_a_browsers() -> None:
    """ "ΟΔΟΣ" is "οδος" to the check (final sigma): the keyword "οδοσ" is not found; "İ" is two
    code units lowercased, found by "i̇stanbul" and not by "istanbul"; "ﬁnal" and "café" hold
    the forbidden "final" and "cafe"; an emoji counts two UTF-16 units before a match."""
    text = "😀 ΟΔΟΣ, İstanbul: the ﬁnal café"
    criteria = {
        "contains_keywords": ["οδοσ", "οδος", "istanbul", "i̇stanbul"],
        "forbidden_phrases": ["final", "cafe"],
    }
    found = matched_spans(text, criteria)
    assert found is not None
    assert [(_sliced(text, s.start, s.end), s.kind, s.needle) for s in found] == [
        ("ΟΔΟΣ", "keyword", "οδος"),
        ("İstanbul", "keyword", "i̇stanbul"),
        ("ﬁnal", "forbidden", "final"),
        ("café", "forbidden", "cafe"),
    ]
    assert found[0].start == 3  # after "😀 ": two code units and a space


def test_no_spans_where_none_can_be_carried_back() -> None:
    """Criteria that do not parse, or a lone surrogate, give no spans (None), not a guess;
    criteria with nothing to look for give an empty list."""
    assert matched_spans("text", {"contains_keywords": "escrow"}) is None
    assert matched_spans("a \ud800 b", {"contains_keywords": ["a"]}) is None
    assert matched_spans("text", {"min_length": 2}) == []


_ALPHABET = st.sampled_from([*"aeiks oΣσςΟİıKé\u0301ﬁ\u200b\n\t", "fi", "ΟΔΟΣ", "cafe", "İs", "  "])
_TEXT = st.lists(_ALPHABET, max_size=30).map("".join)
_NEEDLE = st.lists(_ALPHABET, min_size=1, max_size=3).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, keywords=st.lists(_NEEDLE, max_size=3), phrases=st.lists(_NEEDLE, max_size=3))
def test_a_needle_has_a_span_exactly_when_the_check_finds_it(
    text: str, keywords: list[str], phrases: list[str]
) -> None:
    """Whenever spans are given, a keyword (or phrase) has one exactly when the check's own test
    finds it, and each span is a non-empty run of the text."""
    criteria = {"contains_keywords": keywords, "forbidden_phrases": phrases}
    found = matched_spans(text, criteria)
    if found is None:
        return
    width = len(text.encode("utf-16-le")) // 2
    assert all(0 <= s.start < s.end <= width for s in found)
    lowered, folded = lower(text), lower(phrase_text(text))
    for k in keywords:
        wanted = bool(lower(k)) and includes(lowered, lower(k))
        assert any(s.kind == "keyword" and s.needle == k for s in found) == wanted, k
    for p in phrases:
        needle = lower(phrase_text(p))
        wanted = bool(needle) and includes(folded, needle)
        assert any(s.kind == "forbidden" and s.needle == p for s in found) == wanted, p
