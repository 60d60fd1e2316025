"""Advice on a poster's criteria before funding: the holes an agent could game, and the margin.

Spec 000's rules are public, and "a keyword list tells an agent what to include". ``lint``
reads criteria (and, when given, the brief) and returns **findings** — each a stable ``code``,
the ``field`` it concerns and a sentence the poster can act on — and the **gaming margin**: the
shortest of a few cheap synthetic results (the keywords joined, the required fields as headings,
filler up to ``min_length``, a JSON object with the required keys, the brief copied…) that the
real :func:`~adjudge.autocheck.check.auto_check` passes, with its score and length, or none.

Three rules keep it honest:

* every score shown is the auto check's own: a candidate is judged by ``auto_check`` and an item
  by the engine's own scorer (``items.rules_for``), never by a prediction written here; a regex
  is run by the engine's JavaScript matcher (:mod:`~adjudge.autocheck.jsregex`), never ``re``;
* candidates are built only from what an agent sees — the public criteria and the brief — never
  from the hidden ``expected_answer`` (``EXPECTED_ANSWER_UNDER_FLOOR`` covers the answer alone);
* it is advice: nothing here changes a verdict, and a finding never refuses a post (the
  ``posting_refuses`` ones say what posting itself refuses, by the same functions).

Each check below is one function in ``CHECKS`` yielding findings, with the spec sentence it
rests on. Pure: no IO, no clock (a regex that is not provably linear runs in the engine's
time-limited worker, as in every check; ``EngineUnavailable`` propagates when it cannot run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from adjudge.autocheck import jsregex, redos
from adjudge.autocheck.answer import answer_words, is_short
from adjudge.autocheck.check import (
    VerificationResult,
    auto_check,
    content_floor,
    score_rules,
)
from adjudge.autocheck.criteria import Criteria, admissibility, parse, unknown_fields
from adjudge.autocheck.disclosure import split_disclosure
from adjudge.autocheck.falsifiable import unfalsifiable
from adjudge.autocheck.items import DEFAULT_MIN_CONTENT_CHARS, Context, Rule, rules_for
from adjudge.autocheck.jsvalues import includes, trim, utf16_len
from adjudge.autocheck.text import canonical, flatten, lower, phrase_text, words

__all__ = ["CODES", "NO_MARGIN", "Finding", "Lint", "Margin", "lint"]

#: Every finding code, in the order the checks list them (docs/guide/criteria.md explains each).
CODES = (
    "CRITERIA_UNKNOWN_FIELD",
    "AUTO_CRITERIA_REQUIRED",
    "REGEX_PATTERN_UNUSABLE",
    "CRITERIA_UNFALSIFIABLE",
    "LENGTH_ONLY",
    "KEYWORDS_ECHO_PASSES",
    "KEYWORDS_IN_BRIEF",
    "KEYWORD_INSIDE_WORDS",
    "REGEX_MATCHES_EMPTY",
    "LENGTH_BOUNDS_CROSSED",
    "MIN_LENGTH_UNREACHABLE",
    "EXPECTED_ANSWER_UNDER_FLOOR",
    "EXPECTED_ANSWER_GUESSABLE",
    "EXPECTED_ANSWER_NOT_A_GATE",
    "RUBRIC_KEYWORDS_IN_BRIEF",
    "RUBRIC_ITEM_NO_KEYWORDS",
    "RUBRIC_MENTIONS_UNREACHABLE",
    "FORBIDDEN_PHRASE_REQUIRED",
    "SCHEMA_PROPERTIES_UNCHECKED",
    "THRESHOLD_ONE_ITEM_PASSES",
)
#: Said when no candidate passes.
NO_MARGIN = "no cheap result passes"
#: Spec 000, *After a failed verdict*: "It has up to 3 submissions in total".
SUBMISSIONS = 3
#: Keywords this short are looked for inside common words (spec 000: matching "finds the
#: keyword anywhere, including inside longer words (``acc`` matches "according")").
SHORT_KEYWORD = 4


def _wordlist(text: str) -> tuple[str, ...]:
    return tuple(text.split())


#: Items that any cheap, honest-looking text earns: no failure wording, and not empty.
_FREE_ITEMS = ("system_failure_detection", "basic_output")
#: Words a candidate is padded with: no failure wording, no numbers, no yes/no, all distinct.
_FILLER = _wordlist(
    "quiet river stone lamp orchard window ledger harbor violet canyon meadow saddle pencil "
    "garden thunder marble copper lantern feather compass willow basket cobalt prairie tundra "
    "walnut meadowlark granite pebble spruce"
)
#: Answers an agent can guess without reading anything (spec 000: a competing answer is "the
#: opposite of yes, no, true, or false", so a guess must come alone).
_GUESSES = ("yes", "no", "true", "false")
#: Common English words a short keyword may hide in (``art`` in "start", ``the`` in "there").
_COMMON_WORDS = _wordlist(
    "about above according account across action actually address after again against "
    "already also although always among amount another answer anyone anything appear "
    "approach area around article attention available away back based because become before "
    "began behind being believe better between both bring build business called came cannot "
    "care carry case cause certain change children city clear close come common company "
    "consider continue control could country course create current data day decision "
    "describe design detail develop different during each early economic effect either else "
    "end enough entire environment even evening every example experience fact family far "
    "feel field figure final find first follow form former forward found friend from front "
    "full further general give good government great group grow hand happen hard have head "
    "heart help here herself high himself history home hour however human idea important "
    "including increase information interest into issue itself just keep kind know language "
    "large last late later lead learn least leave left less level life light like line list "
    "little local long look lose lot made main major make manage many market matter maybe "
    "mean measure media meeting member method might mind minute model moment money month "
    "more morning most mother move much must nation national nature near need network never "
    "news next night none nothing notice number office often once only open order other "
    "others part particular partner party past pattern people perhaps period person picture "
    "place plan planet plant point policy political popular position possible power present "
    "pressure pretty price private probably problem process produce product program project "
    "provide public purpose question quite rather reach read ready really reason receive "
    "recent record region relate remain remember report research resource response rest "
    "result return right role room rule safe said same school science season second section "
    "separate series serious service several shall share short should show side similar "
    "simple since single situation small social some someone something sometimes source "
    "space special staff stage standard start state statement station still story strategy "
    "street strong structure student study subject success such suggest summer support sure "
    "system table take talk task team technology tell than that their them themselves then "
    "theory there these they thing think those though thought three through throughout time "
    "today together total toward trade training travel treatment true turn type under "
    "understand until upon usually value various very view visit voice wait want watch water "
    "ways weather week well were western what whatever when where whether which while white "
    "whole whom whose wide will window within without woman word work world would write year "
    "young"
)
# A regex_pattern that is a plain literal, perhaps anchored: the literal is cheap material. This
# reads the pattern's source text only; whether a candidate matches is the JavaScript engine's.
_LITERAL = re.compile(r"(\^?)([A-Za-z0-9 _,:;'\"#@%&=<>/-]+)(\$?)")


@dataclass(frozen=True, slots=True)
class Finding:
    """One piece of advice: a stable ``code``, the ``field`` it concerns (``criteria`` for the
    whole), a sentence the poster can act on, and whether posting itself refuses it."""

    code: str
    field: str
    message: str
    posting_refuses: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The finding as the API and ``--json`` print it."""
        return {
            "code": self.code,
            "field": self.field,
            "message": self.message,
            "posting_refuses": self.posting_refuses,
        }


@dataclass(frozen=True, slots=True)
class Margin:
    """The shortest cheap result the auto check passes: the text, its score, its length in
    characters as the check counts them (UTF-16 code units), and how it was built."""

    result: str
    score: int
    length: int
    how: str

    def to_dict(self) -> dict[str, Any]:
        """The margin as the API and ``--json`` print it."""
        return {"result": self.result, "score": self.score, "length": self.length, "how": self.how}


@dataclass(frozen=True, slots=True)
class Lint:
    """The findings, the gaming margin (None: no cheap result passes) and how many candidates
    the auto check judged."""

    findings: tuple[Finding, ...]
    margin: Margin | None
    candidates: int

    @property
    def summary(self) -> str:
        """One sentence on the margin."""
        if self.margin is None:
            return (
                f"{NO_MARGIN.capitalize()}: none of the {self.candidates} results built from "
                "the public criteria and the brief passed the auto check."
            )
        m = self.margin
        return (
            f"A {m.length}-character result ({m.how}) passes with score {m.score}: that is how "
            "little these criteria would pay for."
        )

    def to_dict(self) -> dict[str, Any]:
        """The lint as the API and ``--json`` print it."""
        return {
            "findings": [f.to_dict() for f in self.findings],
            "margin": None if self.margin is None else self.margin.to_dict(),
            "summary": self.summary,
            "candidates": self.candidates,
        }


Check = Callable[..., VerificationResult]


@dataclass(frozen=True)
class _Subject:
    """What every check reads: the criteria as posted and parsed, the brief, the checker."""

    raw: Mapping[str, Any]
    c: Criteria
    brief: str
    check: Check
    longest: int | None = None  # the longest result a service accepts, in characters

    @cached_property
    def regex_usable(self) -> bool:
        """A ``regex_pattern`` that is set, passes the reference's scan and compiles."""
        pattern = self.c.regex_pattern
        if not pattern or not jsregex.is_safe(pattern):
            return False
        try:
            jsregex.compile(pattern)
        except jsregex.JsRegexError:
            return False
        return True

    @cached_property
    def floor(self) -> int:
        """The content floor of these criteria, in characters of the deliverable."""
        return content_floor(self.c, regex_usable=self.regex_usable)

    @cached_property
    def regex_matches_empty(self) -> bool:
        """Whether the usable pattern matches the empty string (the engine's matcher)."""
        return self.regex_usable and _matches(self.c.regex_pattern or "", "")

    @cached_property
    def rules(self) -> list[Rule]:
        """The scored items these criteria make, from the engine's own table."""
        ctx = Context("", "", True if self.regex_usable else None, False)
        return rules_for(self.c, ctx)

    @cached_property
    def phrases(self) -> list[tuple[int, str, str]]:
        """The forbidden phrases that fold to something: (index, as written, folded)."""
        out = []
        for i, phrase in enumerate(self.c.forbidden_phrases or ()):
            folded = lower(phrase_text(phrase))
            if folded:
                out.append((i, phrase, folded))
        return out


def _matches(pattern: str, text: str) -> bool:
    """The engine's ``test``; a pattern it cannot apply (or that times out) matches nothing."""
    try:
        return jsregex.test(pattern, text)
    except jsregex.JsRegexError:
        return False


def _deliverable(text: str) -> str:
    """The text as the floor and ``expected_answer`` read it: canonical, disclosure out, flat."""
    return flatten(split_disclosure(canonical(text)).deliverable)


def _item_scores(c: Criteria, text: str) -> dict[str, float]:
    """Each item's score on ``text`` by the engine's own scorers, the hard failures of step 1
    left out (the question is what the item itself accepts). A scorer that breaks scores 0."""
    ctx = Context(text, _deliverable(text), None, False)
    scores = {}
    for rule in rules_for(c, ctx):
        try:
            scores[rule.name] = rule.score(lambda _note: None)
        except Exception:  # as in the check: a scorer that breaks never passes
            scores[rule.name] = 0.0
    return scores


def _constant(value: float) -> Callable[[Callable[[str], None]], float]:
    return lambda _note: value


def _fold_with(
    rules: list[Rule], scores: Callable[[Rule], float], threshold: float
) -> VerificationResult:
    """The real fold (``score_rules``) of ``rules`` had each item scored ``scores(rule)``."""
    fixed = [replace(r, score=_constant(scores(r))) for r in rules]
    return score_rules(fixed, threshold)


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _are(values: list[str]) -> str:
    return "is" if len(values) == 1 else "are"


def _quoted(values: list[str], limit: int = 3) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


# --- what posting refuses -------------------------------------------------------------------


def _unknown(s: _Subject) -> Iterator[Finding]:
    """Spec 000: "A misspelled field is dropped without an error, so check spelling:
    ``min_lenght`` sets nothing." Posting here refuses it (``CRITERIA_UNKNOWN_FIELD``)."""
    for path, sentence in unknown_fields(s.raw):
        yield Finding("CRITERIA_UNKNOWN_FIELD", path, sentence, posting_refuses=True)


def _admissible(s: _Subject) -> Iterator[Finding]:
    """Spec 000: "The API refuses ``auto`` with ``400 AUTO_CRITERIA_REQUIRED`` unless you set
    one of …" and "refuses a pattern with nested quantifiers … (``400 REGEX_PATTERN_UNUSABLE``)"."""
    for refusal in admissibility(s.raw, "auto"):
        where = "regex_pattern" if refusal.code.startswith("REGEX") else "criteria"
        yield Finding(refusal.code, where, refusal.message, posting_refuses=True)
    pattern = s.c.regex_pattern
    if pattern and s.regex_usable:
        why = redos.ambiguous_repeat(pattern)
        if why is not None:  # the service's own screen beyond the reference's scan
            yield Finding(
                "REGEX_PATTERN_UNUSABLE",
                "regex_pattern",
                f"regex_pattern {pattern!r} can take exponential time: {why} under a "
                "repetition. Rewrite it so the alternatives cannot overlap.",
                posting_refuses=True,
            )


def _unfalsifiable(s: _Subject) -> Iterator[Finding]:
    """Spec 002's rail: "An obligation that cannot fail is refused" — a gate no witness fails
    checks nothing (``CRITERIA_UNFALSIFIABLE`` at posting)."""
    for name, sentence in unfalsifiable(s.raw, s.check):
        yield Finding("CRITERIA_UNFALSIFIABLE", name, f"{sentence}.", posting_refuses=True)


# --- gaming holes ---------------------------------------------------------------------------


def _length_only(s: _Subject) -> Iterator[Finding]:
    """Spec 000, example 1: "With no rule beyond length, any non-refusal of 20 characters and 3
    words passes." ``forbidden_phrases`` does not read content: "a wrong answer avoids the
    phrases". Said only when filler up to the floor really passes the check."""
    c = s.c
    reads_content = bool(
        any(trim(k) for k in c.contains_keywords or ())
        or any(trim(f) for f in c.required_fields or ())
        or c.expected_schema is not None
        or s.regex_usable
        or (c.expected_answer is not None and trim(c.expected_answer))
        or any(item.keywords for item in c.rubric or ())
    )
    if reads_content or (s.longest is not None and s.floor > s.longest):
        return  # something reads the content, or MIN_LENGTH_UNREACHABLE says more
    if s.check(_padded("", s.floor, list(_FILLER), at_least=3), s.raw).passed:
        yield Finding(
            "LENGTH_ONLY",
            "criteria",
            f"Nothing here reads what the result says: any text of {s.floor} characters with 3 "
            "different words that is not a refusal passes, the right answer and a wrong one "
            "alike. Pin the answer with expected_answer, regex_pattern, required_fields or "
            "expected_schema, or use agent review.",
        )


def _keyword_echo(s: _Subject) -> Iterator[Finding]:
    """Spec 000: "When ``min_length`` is unset or under 20, the result also needs at least 30
    words that aren't keywords … That stops a result that only echoes the keywords." At 20 or
    more nothing stops it: the keywords repeated up to the floor are judged by the real check.
    Not said when ``expected_answer`` or a usable ``regex_pattern`` pins the answer."""
    keywords = [k for k in s.c.contains_keywords or () if trim(k)]
    if not keywords or s.regex_usable or (s.c.expected_answer and trim(s.c.expected_answer)):
        return  # the answer is pinned by another rule: the echo is not what is paid for
    alone: dict[str, Any] = {"contains_keywords": list(keywords)}
    if s.c.min_length is not None:
        # The keyword scorer reads min_length only as "under 20 or not": 20 stands for any
        # larger value and keeps the echo short.
        alone["min_length"] = min(s.c.min_length, DEFAULT_MIN_CONTENT_CHARS)
    echo = _repeat(" ".join(keywords), DEFAULT_MIN_CONTENT_CHARS)
    verdict = s.check(echo, alone)
    item = next((i for i in verdict.breakdown if i.name == "contains_keywords"), None)
    if item is not None and item.score >= 1:
        yield Finding(
            "KEYWORDS_ECHO_PASSES",
            "contains_keywords",
            f"A result that is only the keywords ({_clip(echo)!r}) meets "
            f"contains_keywords: with min_length at 20 or more (here {s.c.min_length}) the "
            "check no longer asks for 30 words besides them. The gate proves the words are "
            "there, not that the work was done: pin what the answer must say (expected_answer "
            "or regex_pattern) or add rubric items the keywords alone miss.",
        )


def _keywords_in_brief(s: _Subject) -> Iterator[Finding]:
    """Spec 000: keywords match "anywhere" in the result, and nothing stops a result from
    quoting the brief: if the brief meets the gate, so does a copy of it."""
    keywords = [k for k in s.c.contains_keywords or () if trim(k)]
    if not keywords or not trim(s.brief):
        return
    only = Criteria(contains_keywords=tuple(keywords), min_length=s.c.min_length)
    if _item_scores(only, s.brief).get("contains_keywords", 0) >= 1:
        yield Finding(
            "KEYWORDS_IN_BRIEF",
            "contains_keywords",
            "Every keyword is in the brief itself, so a result that pastes the brief back "
            "meets contains_keywords without doing the work. Choose keywords the work must "
            "produce (a finding, a name, a figure), not words of the question.",
        )


def _rubric_in_brief(s: _Subject) -> Iterator[Finding]:
    """Spec 000, ``rubric``: "Score: the number of different listed keywords found, divided by
    ``min_mentions``" — found in the result, which may be the brief copied."""
    if not trim(s.brief):
        return
    text = lower(s.brief)
    for i, item in enumerate(s.c.rubric or ()):
        if not item.keywords:
            continue
        name = f"rubric_{item.criterion}"
        if _item_scores(Criteria(rubric=(item,)), s.brief).get(name, 0) >= 1:
            found = [k for k in item.keywords if includes(text, lower(k))]
            yield Finding(
                "RUBRIC_KEYWORDS_IN_BRIEF",
                f"rubric[{i}]",
                f"Rubric item {item.criterion!r}: {_quoted(found)} {_are(found)} in the brief "
                "itself, "
                "so a result that copies the brief scores this item fully. Choose keywords the "
                "work must produce, not words of the question.",
            )


def _short_keywords(s: _Subject) -> Iterator[Finding]:
    """Spec 000: matching "finds the keyword anywhere, including inside longer words (``acc``
    matches "according")" — so a short keyword is met by ordinary words."""
    listed = [(f"contains_keywords[{i}]", k) for i, k in enumerate(s.c.contains_keywords or ())]
    for i, item in enumerate(s.c.rubric or ()):
        listed += [(f"rubric[{i}].keywords[{j}]", k) for j, k in enumerate(item.keywords or ())]
    for where, keyword in listed:
        needle = lower(trim(keyword))
        if not needle or len(needle) > SHORT_KEYWORD or " " in needle:
            continue
        inside = [w for w in _COMMON_WORDS if w != needle and includes(w, needle)]
        if inside:
            yield Finding(
                "KEYWORD_INSIDE_WORDS",
                where,
                f"The keyword {keyword!r} is found inside ordinary words ({_quoted(inside)}): "
                "matching finds it anywhere, so text about something else meets it. Use a "
                "longer, more specific keyword.",
            )


def _regex_empty(s: _Subject) -> Iterator[Finding]:
    """Spec 000, ``regex_pattern``: "A JavaScript regular expression the result must match" — a
    pattern that matches the empty string is met by nothing at all, at the start of any text."""
    if not s.regex_matches_empty:
        return
    pattern = s.c.regex_pattern or ""
    witnesses = ["\n", "0", "x", " ".join(_FILLER), "-" * 40, "The quick brown fox."]
    if all(_matches(pattern, w) for w in witnesses):
        consequence = (
            "so it matches at the start of any text: the gate passes whatever the result says"
        )
    else:
        consequence = "so part of what it asks for is optional"
    yield Finding(
        "REGEX_MATCHES_EMPTY",
        "regex_pattern",
        f"regex_pattern {pattern!r} matches the empty string, {consequence}. Make the part "
        "the result must contain non-optional (`\\d+` rather than `\\d*`, no empty "
        "alternative).",
    )


def _length_bounds(s: _Subject) -> Iterator[Finding]:
    """Spec 000: the floor is "the larger of your ``min_length`` and 20 characters", and
    ``max_length`` scores "1 up to the cap, then falls linearly to 0 at twice the cap"."""
    low, cap = s.c.min_length, s.c.max_length
    if low is None or cap is None or low <= cap:
        return
    if low >= 2 * cap:
        effect = (
            f"max_length scores 0 for every result that meets the floor (it reaches 0 at "
            f"{2 * cap:,}): it checks nothing and costs every result its weight"
        )
    else:
        effect = (
            "every result long enough to be checked is over the cap and loses part of max_length"
        )
    yield Finding(
        "LENGTH_BOUNDS_CROSSED",
        "min_length",
        f"min_length {low:,} is above max_length {cap:,}: {effect}. Set min_length at or below "
        "max_length.",
    )


def _floor_unreachable(s: _Subject) -> Iterator[Finding]:
    """Spec 000: the floor is "a positive whole number, up to 1,000,000", but a service bounds
    the result it accepts; a floor above that bound is met by no text a person would write (a
    floor counts UTF-16 units, so only characters JavaScript counts twice, such as emoji, could
    reach it)."""
    if s.longest is not None and s.floor > s.longest:
        yield Finding(
            "MIN_LENGTH_UNREACHABLE",
            "min_length",
            f"min_length {s.floor:,} is above the longest result this service accepts "
            f"({s.longest:,} characters): no ordinary text reaches the floor, so no real result "
            f"can pass. Lower min_length to {s.longest:,} or less.",
        )


def _answer_under_floor(s: _Subject) -> Iterator[Finding]:
    """Spec 000: "The content floor is the larger of your ``min_length`` and 20 characters. The
    20-character part is waived when your rules can pin down a short answer: any
    ``expected_answer``" — but ``min_length`` itself still applies to it."""
    answer = s.c.expected_answer
    if answer is None or not trim(answer):
        return
    length = utf16_len(_deliverable(answer))
    if length < s.floor:
        yield Finding(
            "EXPECTED_ANSWER_UNDER_FLOOR",
            "expected_answer",
            f"The expected answer is {length} characters, under the content floor of "
            f"{s.floor} (min_length): the right answer on its own fails 'Output too short', "
            "so an agent must pad it, and padding a short answer risks the buried-answer "
            f"rule. Lower min_length to {length} or less, or drop it (an expected answer "
            "waives the 20-character floor).",
        )


def _answer_guessable(s: _Subject) -> Iterator[Finding]:
    """Spec 000: a short answer fails beside "the opposite of yes, no, true, or false", but "it
    has up to 3 submissions in total": a two-valued answer is guessed by the second."""
    answer = s.c.expected_answer
    if answer is None:
        return
    tokens = answer_words(flatten(canonical(answer)))
    if len(tokens) == 1 and tokens[0] in _GUESSES:
        yield Finding(
            "EXPECTED_ANSWER_GUESSABLE",
            "expected_answer",
            f"The expected answer is {tokens[0]!r}, one of two: an agent that does no work "
            f"answers one and, on a fail, the other — with {SUBMISSIONS} submissions a guess "
            "is paid by the second. Ask for something that cannot be guessed (a value, a "
            "name, a reason), or use agent review.",
        )


def _answer_not_gate(s: _Subject) -> Iterator[Finding]:
    """Spec 000: a longer ``expected_answer`` is "scored. The share of expected words present.
    It's not a gate." The real fold decides whether a result without it still passes."""
    answer = s.c.expected_answer
    if answer is None or not trim(answer) or is_short(answer):
        return
    others = {r.name for r in _deciding(s)} - {"expected_answer"}
    verdict = _cheap_fold(s, others)
    if verdict.passed:
        yield Finding(
            "EXPECTED_ANSWER_NOT_A_GATE",
            "expected_answer",
            f"The expected answer has {len(answer_words(answer))} words, so it is scored, not "
            f"a gate: a result with none of its words still scores {verdict.score} and passes "
            f"pass_threshold {s.c.threshold:g}. Keep a pinned answer to 3 words or fewer, or "
            f"raise pass_threshold above {verdict.score}.",
        )


def _deciding(s: _Subject) -> list[Rule]:
    """The items a result earns only by doing something: non-gates that read the content (a
    rubric item with keywords, a long ``expected_answer``)."""
    return [
        r
        for r in s.rules
        if not r.gate
        and r.name not in _FREE_ITEMS
        and r.name != "max_length"
        and not _flat_rubric(s.c, r.name)
    ]


def _cheap_fold(s: _Subject, met: set[str]) -> VerificationResult:
    """The real fold of a result that meets every gate and the deciding items in ``met``, and
    earns what any cheap text earns: no failure wording, ``max_length`` unless ``min_length``
    is above it, 0.5 for a rubric item without keywords."""
    c = s.c
    crossed = c.min_length is not None and c.max_length is not None and c.min_length > c.max_length

    def earned(r: Rule) -> float:
        if r.gate or r.name in _FREE_ITEMS:
            return 1.0
        if r.name == "max_length":
            return 0.0 if crossed else 1.0
        if _flat_rubric(c, r.name):
            return 0.5
        return 1.0 if r.name in met else 0.0

    return _fold_with(s.rules, earned, c.threshold)


def _threshold(s: _Subject) -> Iterator[Finding]:
    """Spec 000: "Because gates decide most verdicts, the threshold only matters when you use
    items that aren't gates". The deciding items scored 0 (or one of them 1) in the real fold,
    everything else at what a cheap result earns (:func:`_cheap_fold`)."""
    deciding = _deciding(s)
    threshold = s.c.threshold
    none = _cheap_fold(s, set())
    # A long expected_answer alone is EXPECTED_ANSWER_NOT_A_GATE's to say.
    if deciding and none.passed and [r.name for r in deciding] != ["expected_answer"]:
        yield Finding(
            "THRESHOLD_ONE_ITEM_PASSES",
            "pass_threshold",
            f"pass_threshold {threshold:g}: a result that meets the gates and none of the "
            f"scored items ({_quoted([r.name for r in deciding])}) still scores {none.score} "
            f"and passes, so those items never decide. Raise pass_threshold above "
            f"{none.score}, or make what matters a gate.",
        )
        return
    if len(deciding) < 2 or none.passed:
        return
    heaviest = max(deciding, key=lambda r: r.weight)
    one = _cheap_fold(s, {heaviest.name})
    if one.passed:
        yield Finding(
            "THRESHOLD_ONE_ITEM_PASSES",
            "pass_threshold",
            f"pass_threshold {threshold:g}: a result that meets the gates and only one of "
            f"the {len(deciding)} scored items ({heaviest.name}) scores {one.score} and "
            f"passes, so the others never decide. Raise pass_threshold above {one.score}.",
        )


def _flat_rubric(c: Criteria, name: str) -> bool:
    return any(f"rubric_{i.criterion}" == name and not i.keywords for i in c.rubric or ())


def _forbidden_required(s: _Subject) -> Iterator[Finding]:
    """Spec 000: ``forbidden_phrases`` are "Phrases that fail the result. **Gate.**" A phrase
    inside what the result must contain fails every result that does what is asked. The
    engine's own forbidden-phrase scorer judges each such text."""
    c = s.c
    needles: list[tuple[str, str, str]] = [
        (k, f"the keyword {k!r}", "no result can meet both gates, so nothing passes")
        for k in c.contains_keywords or ()
    ]
    for item in c.rubric or ():
        earned_only = f"rubric item {item.criterion!r} is earned only by failing"
        needles += [(k, f"the rubric keyword {k!r}", earned_only) for k in item.keywords or ()]
    schema_keys = c.expected_schema.required or () if c.expected_schema else ()
    names = [*(c.required_fields or ()), *schema_keys]
    needles += [
        (f, f"the required field {f!r}", "a result that names the field fails") for f in names
    ]
    if c.expected_answer:
        needles.append(
            (c.expected_answer, "the expected answer", "the right answer fails the check")
        )
    folded_needles = [(lower(phrase_text(n)), n, what, why) for n, what, why in needles if trim(n)]
    for index, phrase, folded in s.phrases:
        only = Criteria(forbidden_phrases=(phrase,))
        for folded_needle, needle, what, consequence in folded_needles:
            if not includes(folded_needle, folded):
                continue
            if _item_scores(only, needle).get("forbidden_phrases", 1) >= 1:
                continue
            yield Finding(
                "FORBIDDEN_PHRASE_REQUIRED",
                f"forbidden_phrases[{index}]",
                f"The forbidden phrase {phrase!r} is inside {what}: {consequence}. Remove the "
                "phrase or the requirement.",
            )


def _schema_properties(s: _Subject) -> Iterator[Finding]:
    """Spec 000, ``expected_schema``: "``properties`` types aren't checked by the scorer" —
    only ``required`` keys are."""
    schema = s.c.expected_schema
    if schema is None or not schema.properties:
        return
    required = set(schema.required or ())
    loose = [k for k in schema.properties if k not in required]
    if loose:
        yield Finding(
            "SCHEMA_PROPERTIES_UNCHECKED",
            "expected_schema.properties",
            f"{_quoted(loose)} {_are(loose)} in properties but not in required: the scorer "
            "checks only "
            "required keys (never properties or their types), so a result without them "
            "passes. List the keys the result must have in required.",
        )


def _rubric_items(s: _Subject) -> Iterator[Finding]:
    """Spec 000, ``rubric``: "An item with no keywords scores a flat 0.5", and an item's score is
    keywords found "divided by ``min_mentions`` (default 1), capped at 1"."""
    for i, item in enumerate(s.c.rubric or ()):
        if not item.keywords:
            yield Finding(
                "RUBRIC_ITEM_NO_KEYWORDS",
                f"rubric[{i}]",
                f"Rubric item {item.criterion!r} has no keywords: it scores 0.5 for every "
                "result, so it checks nothing and only pulls every score toward the middle. "
                "Give it keywords or remove it.",
            )
        elif (item.min_mentions or 1) > len(item.keywords):
            best = len(item.keywords) / (item.min_mentions or 1)
            yield Finding(
                "RUBRIC_MENTIONS_UNREACHABLE",
                f"rubric[{i}]",
                f"Rubric item {item.criterion!r} asks for {item.min_mentions} different "
                f"keywords but lists {len(item.keywords)}: no result scores it above "
                f"{round(best * 100)}%. Lower min_mentions or add keywords.",
            )


#: The checks, in the order their findings are listed: what posting refuses first.
CHECKS: tuple[Callable[[_Subject], Iterator[Finding]], ...] = (
    _unknown,
    _admissible,
    _unfalsifiable,
    _length_only,
    _keyword_echo,
    _keywords_in_brief,
    _short_keywords,
    _regex_empty,
    _length_bounds,
    _floor_unreachable,
    _answer_under_floor,
    _answer_guessable,
    _answer_not_gate,
    _rubric_in_brief,
    _rubric_items,
    _forbidden_required,
    _schema_properties,
    _threshold,
)


# --- the gaming margin ----------------------------------------------------------------------


@dataclass
class _Filler:
    """Filler words that avoid every forbidden phrase and keyword, handed out in turn."""

    words: list[str]
    at: int = field(default=0)

    def take(self, n: int) -> list[str]:
        out = [self.words[(self.at + i) % len(self.words)] for i in range(n)]
        self.at += n
        return out


def _filler_for(s: _Subject) -> list[str]:
    """Filler words holding no forbidden phrase and none of the keywords' words (they must
    count as words "besides the keywords")."""
    phrases = [p for _i, _p, p in s.phrases]
    keyword_words = {w for k in s.c.contains_keywords or () for w in words(k)}
    kept = [
        w for w in _FILLER if w not in keyword_words and not any(includes(w, p) for p in phrases)
    ]
    return kept or list(_FILLER)


def _repeat(text: str, floor: int) -> str:
    """``text`` repeated (space-joined) until its deliverable reaches ``floor`` characters."""
    flat = _deliverable(text)
    if not flat:
        return text
    times = max(1, -(-(floor + 1) // (len(flat) + 1)))
    return " ".join([text] * times)


def _padded(text: str, floor: int, filler: list[str], *, at_least: int = 0) -> str:
    """``text`` and filler words after it: at least ``at_least`` of them and enough to reach
    ``floor`` characters of deliverable (filler words are ASCII: lengths add up exactly).

    Whole rounds of the filler are counted, not appended word by word: a floor of 1,000,000
    characters costs one join."""
    have = utf16_len(_deliverable(text))
    round_chars = sum(len(w) + 1 for w in filler)  # each word and the space before it
    if not text:
        have -= 1  # the first word of an empty text has no space before it
    rounds = max(0, (floor - have) // round_chars - 1)
    added = filler * rounds
    have += rounds * round_chars
    i = 0
    while len(added) < at_least or max(have, 0) < floor:
        word = filler[i % len(filler)]
        have += len(word) + 1
        added.append(word)
        i += 1
    if not added:
        return text
    return f"{text} {' '.join(added)}" if text else " ".join(added)


def _candidates(s: _Subject) -> list[tuple[str, str]]:
    """Cheap results built from the public criteria and the brief: (how, text), deduplicated."""
    c = s.c
    filler = _filler_for(s)
    floor = max(s.floor, 1)
    keywords = [k for k in c.contains_keywords or () if trim(k)]
    rubric = [k for item in c.rubric or () for k in item.keywords or () if trim(k)]
    schema_keys = list(c.expected_schema.required or ()) if c.expected_schema else []
    fields = list(dict.fromkeys(f for f in [*(c.required_fields or ()), *schema_keys] if trim(f)))
    literal = _regex_literal(c.regex_pattern) if s.regex_usable else None
    material = " ".join([*keywords, *rubric, *([literal] if literal else [])])

    out: list[tuple[str, str]] = [
        ("filler words up to the content floor", _padded("", floor, filler, at_least=3)),
    ]
    out += [(f"the guess {g!r} alone", g) for g in _GUESSES]
    if literal is not None:
        out.append(("the regex_pattern's literal text alone", literal))

    def padded(how: str, text: str) -> None:
        # Three widths: just the floor; 3 distinct words (step 1's rule); 30 words besides the
        # keywords (the contains_keywords rule under a min_length of 20).
        exact = _padded(text, floor, filler)
        out.append((how if exact == text else f"{how}, padded to the content floor", exact))
        for n in (3, 30):
            padding = _padded(text, floor, filler, at_least=n)
            out.append((f"{how} and {n} filler words (up to the floor)", padding))

    if keywords:
        joined = " ".join(keywords)
        echo = _repeat(joined, floor)
        out.append(("the keywords alone" if echo == joined else "the keywords, repeated", echo))
        padded("the keywords", joined)
    if material and material != " ".join(keywords):
        padded("every keyword", material)
    if fields:
        pick = _Filler(filler)
        headings = "\n\n".join(f"## {f}\n{' '.join(pick.take(3))}" for f in fields)
        labels = "\n".join(f"{f}: {' '.join(pick.take(3))}" for f in fields)
        for how, body in (
            ("the required fields as headings", headings),
            ("the required fields as labels", labels),
        ):
            padded(how, f"{body}\n\n{material}" if material else body)
    if fields or c.expected_schema is not None:
        how = "a JSON object with the required keys"
        out.append((how, _json(fields, material, floor, filler, 0)))
        out.append((f"{how} and 30 filler words", _json(fields, material, floor, filler, 30)))
    if trim(s.brief):
        out.append(("the brief, copied", s.brief))
        if material:
            out.append(("the brief copied, then every keyword", f"{s.brief}\n\n{material}"))
    seen: set[str] = set()
    unique = []
    for how, text in out:
        if text not in seen:
            seen.add(text)
            unique.append((how, text))
    return unique


def _json(fields: list[str], material: str, floor: int, filler: list[str], at_least: int) -> str:
    """A JSON object with each required key holding filler, the keywords in a ``notes`` key,
    padded in place until the whole reaches the floor."""
    pick = _Filler(filler)
    obj: dict[str, str] = {f: " ".join(pick.take(2)) for f in fields}
    notes_key = "notes" if "notes" not in obj else "notes_"
    obj[notes_key] = material
    text = json.dumps(obj, ensure_ascii=False)
    extra = max(0, floor - utf16_len(_deliverable(text)))
    obj[notes_key] = _padded(material, len(material) + extra, filler, at_least=at_least)
    return json.dumps(obj, ensure_ascii=False)


def _regex_literal(pattern: str | None) -> str | None:
    """The text a plain-literal pattern asks for (``^INV-2026$`` → ``INV-2026``), or None."""
    m = _LITERAL.fullmatch(pattern or "")
    return m.group(2) if m is not None and m.group(2) else None


def _margin(s: _Subject) -> tuple[Margin | None, int]:
    """Every candidate judged by the real check; the shortest that passes (first built wins
    a tie). A candidate longer than the service accepts is not one an agent could submit."""
    best: Margin | None = None
    candidates = [
        (how, text) for how, text in _candidates(s) if s.longest is None or len(text) <= s.longest
    ]
    for how, text in candidates:
        verdict = s.check(text, s.raw)
        if not verdict.passed:
            continue
        length = utf16_len(text)
        if best is None or length < best.length:
            best = Margin(text, verdict.score, length, how)
    return best, len(candidates)


def lint(
    criteria: Mapping[str, Any],
    *,
    brief: str | None = None,
    longest_result: int | None = None,
    check: Check = auto_check,
) -> Lint:
    """Findings and the gaming margin for ``criteria`` as a poster would post them.

    ``brief`` (optional) lets the lint see what an agent could copy. ``longest_result`` is the
    longest result the service accepts, in characters (None: no bound); candidates longer are
    not judged. ``check`` is the auto check (a test may wrap it).

    Raises :class:`~adjudge.errors.CriteriaError` only for criteria that do not parse
    (``CRITERIA_INVALID`` / ``CRITERIA_OVER_LIMIT``); for any criteria that do, it returns — no
    findings and a margin of None are both ordinary answers.
    """
    parsed = parse(criteria)
    s = _Subject(criteria, parsed, brief or "", check, longest_result)
    findings = tuple(f for run in CHECKS for f in run(s))
    margin, tried = _margin(s)
    return Lint(findings, margin, tried)
