"""Failure language: refusals and neutral failure wording, and the words around them.

Spec 000, *Refusals and the disclosure section*. Two kinds: **refusals**, where the agent talks
about itself ("I was unable to…", "As an AI…"), and **neutral** failure wording with no speaker
("service unavailable", "status: failed"), which an incident report is made of. The hard gate
and the soft penalty both read the counts computed here.

The patterns are the reference checker's, on folded text, matched the way JavaScript matches a
regular expression without the ``u`` flag: ASCII ``\\b`` and ``\\w``, over UTF-16 code units
(callers pass the code-unit view). Every pattern is linear: gaps are bounded and stay inside one
sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adjudge.autocheck.text import words

_GAP = r"[^.!?]{0,80}?"

REFUSAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.ASCII)
    for p in (
        r"\bi(?:'m| am| was| have been|'ve been)? (?:\w+ )?(?:unable|not able) to\b",
        r"\bi (?:wasn't|was not|am not|'m not|won't be|will not be|haven't been|have not been)"
        r" able to\b",
        r"\bi'm not able to\b",
        r"\bi (?:cannot|can't|can not|couldn't|could not|won't|will not) (?:\w+ )?"
        r"(?:complete|finish|fulfil|fulfill|deliver|help|assist|do|provide|perform|comply|proceed"
        r"|continue|access|browse|generate|produce|accomplish)\b",
        r"\bas an ai\b",
        r"\bi (?:do not|don't|did not|didn't) have (?:the )?"
        r"(?:access|ability|tools?|capabilit(?:y|ies)|means|permissions?)\b",
        rf"\b(?:sorry|apologi[sz]e|apologies|regret|unfortunately)\b{_GAP}"
        r"(?:\bunable\b|\bcannot\b|\bcan't\b|\bcan not\b|\bcouldn't\b|\bcould not\b|n't able\b"
        r"|\bnot able\b|\bnot possible\b)",
        r"\b(?:unable|not able|failed|impossible) to (?:complete|finish|fulfil|fulfill|deliver|do"
        r"|perform) (?:the|this|your|that) (?:task|request|job|assignment|work)\b",
        r"\bcan(?:'t|not| not) (?:help|assist) (?:you )?with\b",
        r"\b(?:outside|beyond|not(?: with)?in|not) my control\b",
    )
)

NEUTRAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.ASCII)
    for p in (
        r"\b(?:unable to|could not|couldn't|failed to) (?:complete|fulfil|fulfill|deliver)\b",
        r"\b(?:was|were) (?:unable|not able) to\b",
        r"\bservice (?:unavailable|is currently|appears to be)\b",
        r"\bexperiencing technical difficulties\b",
        rf"\bincomplete\b{_GAP}\btask\b",
        rf"\b(?:task|status)\b{_GAP}\bincomplete\b",
        rf"\bstatus\b{_GAP}\bfailed\b",
    )
)

# What a worker writes when its own model call throws; looked for near the start.
ERROR_MARKER = re.compile(r"\berror during llm execution\b|\bllm execution (?:failed|error)\b")
ERROR_MARKER_WINDOW = 200

# A cheap screen: every pattern above needs one of these words. Text without any of them has no
# failure language, and skips seventeen scans.
_SCREEN = re.compile(
    r"unable|able to|cannot|can't|can not|couldn't|could not|won't|will not|as an ai|have"
    r"|sorry|apologi|regret|unfortunately|impossible|control|service|difficulties|incomplete"
    r"|failed"
)

# How far either side of a failure phrase its sentence may extend (unpunctuated lists).
SPAN_RADIUS = 160
_ENDS = ".!?"


@dataclass(frozen=True, slots=True)
class FailureLanguage:
    """What the scan found, and the word counts the hard gate compares."""

    refusal: bool
    neutral: bool
    total_words: int
    distinct_words: int
    refusal_words: int  # words in sentences carrying a refusal
    substantive_words: int  # words in sentences carrying no failure phrase at all


def _sentence_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence around a phrase hit, at most SPAN_RADIUS either side."""
    s = start
    min_s = max(0, start - SPAN_RADIUS)
    while s > min_s and not (text[s - 1] == " " and s >= 2 and text[s - 2] in _ENDS):
        s -= 1
    e = end
    max_e = min(len(text), end + SPAN_RADIUS)
    while e < max_e and text[e - 1] not in _ENDS:
        e += 1
    return s, e


def _collect(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for pattern in patterns:
        pos = 0
        while (m := pattern.search(text, pos)) is not None:
            span = _sentence_span(text, m.start(), m.end())
            spans.append(span)
            # The rest of this sentence is already counted: skip it.
            pos = max(m.end(), span[1])
    return spans


def _words_in_spans(text: str, spans: list[tuple[int, int]]) -> int:
    """Merge ``[start, end)`` spans (touching ones too) and count the words inside them."""
    spans = sorted(spans, key=lambda span: span[0])
    count = 0
    lo = hi = -1
    for s, e in spans:
        if s > hi:
            if hi > lo:
                count += len(words(text[lo:hi]))
            lo, hi = s, e
        elif e > hi:
            hi = e
    if hi > lo:
        count += len(words(text[lo:hi]))
    return count


def scan(text: str) -> FailureLanguage:
    """Scan folded ``text`` (in its code-unit view) for failure language."""
    all_words = words(text)
    if _SCREEN.search(text) is None:
        return FailureLanguage(False, False, len(all_words), len(set(all_words)), 0, len(all_words))
    refusal_spans = _collect(text, REFUSAL_PATTERNS)
    neutral_spans = _collect(text, NEUTRAL_PATTERNS)
    refusal_words = _words_in_spans(text, refusal_spans)
    failure_words = _words_in_spans(text, refusal_spans + neutral_spans)
    return FailureLanguage(
        refusal=bool(refusal_spans),
        neutral=bool(neutral_spans),
        total_words=len(all_words),
        distinct_words=len(set(all_words)),
        refusal_words=refusal_words,
        substantive_words=len(all_words) - failure_words,
    )
