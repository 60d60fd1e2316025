"""Step 2: one scored item per rule, with the spec's weights and gates.

Spec 000, *Step 2: each rule gets a score*. The rules form a table from the criteria field to a
function that builds the item; a failed rule is an item scoring 0 with a note, never an exception.
Items are listed in the reference checker's order, which is also the order of ``breakdown`` and of
``reasons``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

from adjudge.autocheck.answer import is_short, score_expected_answer
from adjudge.autocheck.criteria import Criteria
from adjudge.autocheck.jsonscan import extract_json_object, has_fields, json_schema
from adjudge.autocheck.jsvalues import includes, trim, utf16_len
from adjudge.autocheck.text import count_words_besides, lower, phrase_text, words

DEFAULT_MIN_CONTENT_CHARS = 20
MIN_KEYWORD_CONTEXT_WORDS = 30


@dataclass(frozen=True)
class Context:
    """What the items read besides the criteria: the full result and the deliverable."""

    output: str  # the full result text; most rules read this
    visible: str  # the deliverable: canonical, disclosure removed, one line
    regex_matched: bool | None  # the regex_pattern outcome, already run in step 1
    failure_language: bool  # any refusal or neutral failure wording in the deliverable
    #: ``phrase_text(output)`` when the pipeline already has it (no disclosure section and no
    #: scan window, so the folded deliverable is the folded result), else None.
    folded_output: str | None = None

    @cached_property
    def lower_output(self) -> str:
        """The full result lowercased, as keyword and rubric matching read it."""
        return lower(self.output)

    @cached_property
    def phrase_output(self) -> str:
        """The full result as forbidden phrases are looked for in it."""
        return self.folded_output if self.folded_output is not None else phrase_text(self.output)

    @cached_property
    def json_object(self) -> dict[str, Any] | None:
        """The JSON object in the result, which the JSON rules and their notes all read."""
        return extract_json_object(self.output)


Note = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Rule:
    """A scored item before it is run: its name, weight, whether it gates, and its scorer."""

    name: str
    weight: float
    gate: bool
    score: Callable[[Note], float]


def _required_fields(c: Criteria, ctx: Context) -> list[Rule]:
    if not c.required_fields:
        return []
    scorer = _has_fields(c.required_fields)
    return [Rule("required_fields", 2, True, lambda _note: scorer(ctx.output, ctx.json_object))]


def _contains_keywords(c: Criteria, ctx: Context) -> list[Rule]:
    keywords = c.contains_keywords
    if not keywords:
        return []

    def score(note: Note) -> float:
        # Without a real min_length the result needs 30 words besides the keywords, so that
        # echoing the keywords back does not score.
        if (c.min_length or 0) < DEFAULT_MIN_CONTENT_CHARS:
            keyword_words = {w for k in keywords for w in words(k)}
            context = count_words_besides(ctx.output, keyword_words, MIN_KEYWORD_CONTEXT_WORDS)
            if context < MIN_KEYWORD_CONTEXT_WORDS:
                note(
                    f"only {context} words besides the keywords (need {MIN_KEYWORD_CONTEXT_WORDS})"
                )
                return 0.0
        text = ctx.lower_output
        return sum(1 for k in _lowered(keywords) if includes(text, k)) / len(keywords)

    return [Rule("contains_keywords", 1.5, True, score)]


def _max_length(c: Criteria, ctx: Context) -> list[Rule]:
    cap = c.max_length
    if not cap:
        return []

    def score(_note: Note) -> float:
        ratio = utf16_len(ctx.output) / cap
        return 1.0 if ratio <= 1 else max(0.0, 1 - (ratio - 1))

    return [Rule("max_length", 0.5, False, score)]


def _forbidden_phrases(c: Criteria, ctx: Context) -> list[Rule]:
    phrases = _folded_phrases(c.forbidden_phrases or ())
    if not phrases:
        return []

    def score(_note: Note) -> float:
        folded = lower(ctx.phrase_output)
        return 0.0 if any(includes(folded, p) for p in phrases) else 1.0

    return [Rule("forbidden_phrases", 2, True, score)]


def _regex_pattern(c: Criteria, ctx: Context) -> list[Rule]:
    if ctx.regex_matched is None:
        return []
    matched = 1.0 if ctx.regex_matched else 0.0
    return [Rule("regex_pattern", 1.5, True, lambda _note: matched)]


def _expected_schema(c: Criteria, ctx: Context) -> list[Rule]:
    if c.expected_schema is None:
        return []
    scorer = json_schema(c.expected_schema.as_dict())

    def score(note: Note) -> float:
        value = scorer(ctx.output, ctx.json_object)
        if value == 0 and ctx.json_object is None:
            note("output is not JSON")
        return value

    return [Rule("expected_schema", 2, True, score)]


def _expected_answer(c: Criteria, ctx: Context) -> list[Rule]:
    expected = c.expected_answer
    if expected is None or not trim(expected):
        return []
    return [
        Rule(
            "expected_answer",
            1.5,
            is_short(expected),
            lambda note: score_expected_answer(expected, ctx.visible, note),
        )
    ]


def _rubric(c: Criteria, ctx: Context) -> list[Rule]:
    rules = []
    for item in c.rubric or ():

        def score(
            _note: Note,
            keywords: tuple[str, ...] | None = item.keywords,
            min_mentions: int | None = item.min_mentions,
        ) -> float:
            if not keywords:
                return 0.5  # an item with no keywords scores a flat 0.5
            text = ctx.lower_output
            hits = sum(1 for k in _lowered(keywords) if includes(text, k))
            return min(1.0, hits / max(1, min_mentions or 1))

        weight = 1 if item.weight is None else item.weight
        rules.append(Rule(f"rubric_{item.criterion}", weight, False, score))
    return rules


# Criteria repeat across checks (a task's rules, a batch's few rule sets): build each scorer once.
_has_fields = lru_cache(maxsize=256)(has_fields)


@lru_cache(maxsize=256)
def _folded_phrases(raw: tuple[str, ...]) -> tuple[str, ...]:
    """The phrases as they are looked for: folded, the empty ones dropped, then lowercased."""
    return tuple(lower(p) for p in map(phrase_text, raw) if p)


@lru_cache(maxsize=1024)
def _lowered(needles: tuple[str, ...]) -> tuple[str, ...]:
    """Keywords and phrases lowercased as the reference lowercases them (criteria repeat)."""
    return tuple(map(lower, needles))


# The table: criteria field → the items it adds, in the reference's order.
RULES: tuple[Callable[[Criteria, Context], list[Rule]], ...] = (
    _required_fields,
    _contains_keywords,
    _max_length,
    _forbidden_phrases,
    _regex_pattern,
    _expected_schema,
    _expected_answer,
    _rubric,
)


def rules_for(criteria: Criteria, ctx: Context) -> list[Rule]:
    """Every scored item for these criteria, plus basic output and failure-language detection.

    Basic output is added only when no rule above applies; failure-language detection always.
    """
    rules = [rule for build in RULES for rule in build(criteria, ctx)]
    if not rules:
        rules.append(Rule("basic_output", 1, False, lambda _note: 1.0 if ctx.output else 0.0))
    failed = ctx.failure_language
    rules.append(Rule("system_failure_detection", 0.5, False, lambda _note: 0.0 if failed else 1.0))
    return rules
