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

from adjudge.autocheck import chars
from adjudge.autocheck.jsvalues import to_units
from adjudge.autocheck.text import count_words, words

_GAP = r"[^.!?]{0,80}?"


@dataclass(frozen=True, slots=True)
class Phrase:
    """One failure pattern, and the literals it cannot match without (a cheap exact screen)."""

    pattern: re.Pattern[str]
    any_of: tuple[str, ...]  # the text must contain at least one of these…
    all_of: tuple[str, ...] = ()  # …and every one of these
    source: str = ""  # the pattern as the reference writes it


def _word_start(literal: str) -> str:
    """``\\b`` + ``literal`` (a word character first), written so ``re`` searches the literal.

    ``\\b`` before a word character means "the character before is not a word character"; a
    look-behind placed after the literal says the same thing, and a pattern that starts with a
    literal is found by searching for that literal instead of being tried at every position.
    """
    lit = re.escape(literal)
    return f"{lit}(?<!\\w{lit})"


_LEADING_LITERAL = re.compile(r"\\b([a-z' ]+)(?![?*+{])")
_LEADING_ALTERNATION = re.compile(r"\\b\(\?:((?:[a-z' ]+\|)+[a-z' ]+)\)")


def fast_form(source: str) -> str:
    """The same pattern with its leading ``\\b`` moved behind the literal that follows it.

    Only plain leading literals (or an alternation of them) are rewritten; anything else is
    returned as it is. The matches are the same (``tests/autocheck/test_failure.py``).
    """
    if m := _LEADING_ALTERNATION.match(source):
        alternatives = "|".join(_word_start(a) for a in m.group(1).split("|"))
        return f"(?:{alternatives}){source[m.end() :]}"
    if m := _LEADING_LITERAL.match(source):
        return _word_start(m.group(1)) + source[m.end() :]
    return source


def _phrase(source: str, any_of: str, all_of: str = "") -> Phrase:
    return Phrase(
        re.compile(fast_form(source), re.ASCII),
        tuple(any_of.split("|")),
        tuple(all_of.split("|")) if all_of else (),
        source,
    )


_I_MODALS = "i cannot|i can't|i can not|i couldn't|i could not|i won't|i will not"
REFUSAL_PATTERNS: tuple[Phrase, ...] = (
    _phrase(
        r"\bi(?:'m| am| was| have been|'ve been)? (?:\w+ )?(?:unable|not able) to\b", "able to"
    ),
    _phrase(
        r"\bi (?:wasn't|was not|am not|'m not|won't be|will not be|haven't been|have not been)"
        r" able to\b",
        "able to",
    ),
    _phrase(r"\bi'm not able to\b", "i'm not able to"),
    _phrase(
        r"\bi (?:cannot|can't|can not|couldn't|could not|won't|will not) (?:\w+ )?"
        r"(?:complete|finish|fulfil|fulfill|deliver|help|assist|do|provide|perform|comply|proceed"
        r"|continue|access|browse|generate|produce|accomplish)\b",
        _I_MODALS,
    ),
    _phrase(r"\bas an ai\b", "as an ai"),
    _phrase(
        r"\bi (?:do not|don't|did not|didn't) have (?:the )?"
        r"(?:access|ability|tools?|capabilit(?:y|ies)|means|permissions?)\b",
        "i do not have|i don't have|i did not have|i didn't have",
    ),
    _phrase(
        rf"\b(?:sorry|apologi[sz]e|apologies|regret|unfortunately)\b{_GAP}"
        r"(?:\bunable\b|\bcannot\b|\bcan't\b|\bcan not\b|\bcouldn't\b|\bcould not\b|n't able\b"
        r"|\bnot able\b|\bnot possible\b)",
        "sorry|apologi|regret|unfortunately",
    ),
    _phrase(
        r"\b(?:unable|not able|failed|impossible) to (?:complete|finish|fulfil|fulfill|deliver|do"
        r"|perform) (?:the|this|your|that) (?:task|request|job|assignment|work)\b",
        "able to|failed to|impossible to",
    ),
    _phrase(
        r"\bcan(?:'t|not| not) (?:help|assist) (?:you )?with\b",
        "can't help|can't assist|cannot help|cannot assist|can not help|can not assist",
    ),
    _phrase(r"\b(?:outside|beyond|not(?: with)?in|not) my control\b", "my control"),
)

NEUTRAL_PATTERNS: tuple[Phrase, ...] = (
    _phrase(
        r"\b(?:unable to|could not|couldn't|failed to) (?:complete|fulfil|fulfill|deliver)\b",
        "to complete|to fulfil|to deliver|not complete|not fulfil|not deliver"
        "|n't complete|n't fulfil|n't deliver",
    ),
    _phrase(r"\b(?:was|were) (?:unable|not able) to\b", "able to"),
    _phrase(
        r"\bservice (?:unavailable|is currently|appears to be)\b",
        "service unavailable|service is currently|service appears to be",
    ),
    _phrase(r"\bexperiencing technical difficulties\b", "experiencing technical difficulties"),
    _phrase(rf"\bincomplete\b{_GAP}\btask\b", "incomplete", "task"),
    _phrase(rf"\b(?:task|status)\b{_GAP}\bincomplete\b", "incomplete"),
    _phrase(rf"\bstatus\b{_GAP}\bfailed\b", "status", "failed"),
)

# What a worker writes when its own model call throws; looked for near the start.
ERROR_MARKER = re.compile(
    r"\berror during llm execution\b|\bllm execution (?:failed|error)\b", re.ASCII
)
ERROR_MARKER_WINDOW = 200


def llm_error(folded: str) -> bool:
    """Whether the folded deliverable starts like a model-call error (its first 200 code units).

    Both forms of the marker contain "llm execution": text without it is not searched.
    """
    head = folded[:ERROR_MARKER_WINDOW]  # 200 characters hold at least 200 code units
    if "llm execution" not in head:
        return False
    return ERROR_MARKER.search(to_units(head)[:ERROR_MARKER_WINDOW]) is not None


# How far either side of a failure phrase its sentence may extend (unpunctuated lists).
SPAN_RADIUS = 160
_ENDS = ".!?"
_END_MARK = re.compile("[.!?]")


# The hard gate (spec 000): a refusal needs 40 words outside failure sentences and refusals at
# most half of all words; neutral wording needs 15 words outside or 25 distinct words.
MIN_WORDS_BESIDE_REFUSAL = 40
MAX_REFUSAL_SHARE = 0.5
MIN_SUBSTANTIVE_WORDS = 15
MIN_DISTINCT_WORDS = 25


@dataclass(frozen=True, slots=True)
class FailureLanguage:
    """What the scan found, and the word counts the hard gate compares.

    ``total_words`` and ``distinct_words`` are counted only as far as the gate needs: exact
    when the gate could turn on them, a lower bound past that (a long report is not read to
    its end to learn that it is long).
    """

    refusal: bool
    neutral: bool
    total_words: int
    distinct_words: int
    refusal_words: int  # words in sentences carrying a refusal
    substantive_words: int  # words in sentences carrying no failure phrase at all

    @property
    def excuse(self) -> bool:
        """Step 1's hard gate: a refusal, or a bare failure message, with too little besides."""
        if self.refusal and (
            self.substantive_words < MIN_WORDS_BESIDE_REFUSAL
            or self.refusal_words > MAX_REFUSAL_SHARE * self.total_words
        ):
            return True
        return (
            self.neutral
            and self.substantive_words < MIN_SUBSTANTIVE_WORDS
            and self.distinct_words < MIN_DISTINCT_WORDS
        )


def _sentence_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence around a phrase hit, at most SPAN_RADIUS either side.

    It starts after the last ". ", "! " or "? " before the hit, and ends after the first ".",
    "!" or "?" from the hit's last character on.
    """
    lo = max(0, start - SPAN_RADIUS)
    mark = max(text.rfind(f"{end_mark} ", max(0, lo - 1), start) for end_mark in _ENDS)
    s = mark + 2 if mark >= 0 else lo
    hi = min(len(text), end + SPAN_RADIUS)
    m = _END_MARK.search(text, end - 1, hi)
    return s, (m.end() if m is not None else max(hi, end))


# Every screen literal, found in one pass over the text (``chars.find_all``): bit k of what it
# returns says LITERALS[k] occurs.
LITERALS = tuple(
    sorted({lit for p in REFUSAL_PATTERNS + NEUTRAL_PATTERNS for lit in p.any_of + p.all_of})
)


def _screen(phrases: tuple[Phrase, ...]) -> tuple[tuple[Phrase, int, int], ...]:
    """Each phrase with the bits of its ``any_of`` and of its ``all_of`` literals."""

    def bits(literals: tuple[str, ...]) -> int:
        return sum(1 << LITERALS.index(lit) for lit in literals)

    return tuple((p, bits(p.any_of), bits(p.all_of)) for p in phrases)


_REFUSAL_SCREEN = _screen(REFUSAL_PATTERNS)
_NEUTRAL_SCREEN = _screen(NEUTRAL_PATTERNS)


def _collect(
    text: str, phrases: tuple[tuple[Phrase, int, int], ...], present: int
) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for phrase, any_of, all_of in phrases:
        if not present & any_of or present & all_of != all_of:
            continue
        pattern = phrase.pattern
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
    """Scan folded ``text`` for failure language, as JavaScript would over its code units."""
    present = chars.find_all(text, LITERALS)
    if not present:
        return FailureLanguage(False, False, 0, 0, 0, 0)
    # Indices, the sentence radius and the bounded gaps count UTF-16 code units.
    text = to_units(text)
    refusal_spans = _collect(text, _REFUSAL_SCREEN, present)
    neutral_spans = _collect(text, _NEUTRAL_SCREEN, present)
    if not refusal_spans and not neutral_spans:
        # Nothing found: the word counts are not read (the gates need failure language).
        return FailureLanguage(False, False, 0, 0, 0, 0)
    refusal_words = _words_in_spans(text, refusal_spans)
    failure_words = _words_in_spans(text, refusal_spans + neutral_spans)
    # Enough words to decide "40 besides the failure sentences" and "refusals at most half".
    enough = max(failure_words + MIN_WORDS_BESIDE_REFUSAL, 2 * refusal_words)
    total, distinct = count_words(text, enough, MIN_DISTINCT_WORDS)
    return FailureLanguage(
        refusal=bool(refusal_spans),
        neutral=bool(neutral_spans),
        total_words=total,
        distinct_words=distinct,
        refusal_words=refusal_words,
        substantive_words=total - failure_words,
    )
