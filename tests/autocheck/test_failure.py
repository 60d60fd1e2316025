"""Failure-language detection: the fast forms match exactly what the reference patterns match."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.autocheck import failure, jsvalues
from adjudge.autocheck import text as text_module
from adjudge.autocheck.disclosure import split_disclosure
from adjudge.autocheck.failure import NEUTRAL_PATTERNS, REFUSAL_PATTERNS, fast_form, scan

FRAGMENTS = [
    "i",
    "i ",
    "xi ",
    "_i ",
    "i'm not able to",
    "unable to",
    "not able to",
    "was",
    "were",
    " ",
    "able to",
    "as an ai",
    "as an aix",
    "cannot",
    "can't",
    "help",
    "with",
    "service",
    "unavailable",
    "status",
    "failed",
    "incomplete",
    "task",
    "my control",
    "sorry",
    "complete",
    "do not have",
    "access",
    ". ",
    "!",
    "?",
    "a",
    "1",
    "é",
    "😀",
    "\n",
    "experiencing technical difficulties",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
def test_fast_forms_find_the_same_matches(text: str) -> None:
    """Every rewritten pattern finds the same matches, at the same places, as the original."""
    for phrase in REFUSAL_PATTERNS + NEUTRAL_PATTERNS:
        original = re.compile(phrase.source, re.ASCII)
        assert [m.span() for m in phrase.pattern.finditer(text)] == [
            m.span() for m in original.finditer(text)
        ], phrase.source


def test_fast_form_rewrites_only_plain_leading_literals() -> None:
    """A leading literal or alternation of literals is rewritten; other shapes are kept."""
    assert fast_form(r"\bas an ai\b") == r"as\ an\ ai(?<!\was\ an\ ai)\b"
    assert fast_form(r"\b(?:was|were) x") == r"(?:was(?<!\wwas)|were(?<!\wwere)) x"
    kept = r"\b(?:sorry|apologi[sz]e)\b"
    assert fast_form(kept) == kept
    assert fast_form(r"\bab?c") == r"a(?<!\wa)b?c"


def test_screens_never_hide_a_match() -> None:
    """Each pattern's screen literals are necessary: the reference phrases are all still found."""
    samples = {
        "i was unable to reach it": (True, True),
        "i'm not able to do that": (True, False),
        "as an ai, i have limits": (True, False),
        "i don't have access to the file": (True, False),
        "sorry, this is not possible today": (True, False),
        "the service unavailable banner": (False, True),
        "status of the run: failed": (False, True),
        "the task is incomplete": (False, True),
        "users were not able to log in": (False, True),
    }
    for text, (refusal, neutral) in samples.items():
        found = scan(text)
        assert (found.refusal, found.neutral) == (refusal, neutral), text


_JS_WHITESPACE_RUN = re.compile(f"[{re.escape(jsvalues.WHITESPACE)}]+")


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "a",
                "b",
                " ",
                "  ",
                "\n",
                " \n ",
                "\r\n",
                "\t",
                "\u2028",
                "\xa0",
                "\u200b",
                "## Not done",
                "## Next",
                "\n## Assumptions:\n",
                "é",
                "😀",
            ]
        ),
        max_size=30,
    ).map("".join)
)
def test_flatten_is_javascripts_flatten_on_canonical_text(raw: str) -> None:
    """On canonical text (and its deliverable), flatten equals /\\s+/ → " " and trim."""
    canonical_text = text_module.canonical(raw)
    for text in (canonical_text, split_disclosure(canonical_text).deliverable):
        expected = _JS_WHITESPACE_RUN.sub(" ", text).strip(jsvalues.WHITESPACE)
        assert text_module.flatten(text) == expected


def _sentence_span_by_steps(text: str, start: int, end: int) -> tuple[int, int]:
    """The span as the reference walks it, one character at a time."""
    s = start
    min_s = max(0, start - failure.SPAN_RADIUS)
    while s > min_s and not (text[s - 1] == " " and s >= 2 and text[s - 2] in ".!?"):
        s -= 1
    e = end
    max_e = min(len(text), end + failure.SPAN_RADIUS)
    while e < max_e and text[e - 1] not in ".!?":
        e += 1
    return s, e


@settings(max_examples=500)
@given(
    st.lists(st.sampled_from(["a", " ", ". ", "!", "? ", "x" * 40]), max_size=80).map("".join),
    st.data(),
)
def test_sentence_span_equals_the_walk(text: str, data: st.DataObject) -> None:
    if not text:
        return
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    assert failure._sentence_span(text, start, end) == _sentence_span_by_steps(text, start, end)
