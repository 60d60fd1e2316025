"""The auto check: hard failures, scored items, gates, the score and the pass rule.

Spec 000, *Auto check*. The procedure, as the reference checker runs it:

1. read the text: a string ``output`` field, else the whole result as JSON;
2. criteria over the size limits (or malformed) → hard fail;
3. empty or white-space result → hard fail;
4. normalize, take out the disclosure section, flatten: the deliverable;
5. an LLM execution error in the first 200 characters → hard fail;
6. ``regex_pattern``: unsafe, invalid or timed out → hard fail; else remember whether it matched;
7. the content floor and the 3-distinct-words rule → hard fail;
8. refusals and bare failure wording → hard fail;
9. score every rule, weighted average, gates, threshold → the verdict and its reasons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from adjudge.autocheck import jsregex
from adjudge.autocheck.criteria import Criteria, parse
from adjudge.autocheck.disclosure import split_disclosure
from adjudge.autocheck.failure import llm_error, scan
from adjudge.autocheck.items import DEFAULT_MIN_CONTENT_CHARS, Context, Rule, rules_for
from adjudge.autocheck.jsvalues import (
    from_units,
    js_round,
    stringify,
    to_fixed0,
    to_units,
    trim,
    utf16_len,
)
from adjudge.autocheck.text import canonicalize, flatten, fold, has_distinct_words
from adjudge.errors import CriteriaError

MIN_DISTINCT_TOKENS = 3
SCAN_WINDOW = 64_000

PASSED_REASON = "All verification criteria met"
REASON_OVER_LIMITS = (
    "Verification criteria exceed the supported size — cannot auto-verify against them"
)
REASON_EMPTY = "Empty output"
REASON_LLM_ERROR = "Worker reported an LLM execution error instead of output"
REASON_REGEX_UNSAFE = (
    "regex_pattern was not applied (nested quantifiers or too long) — cannot auto-verify against it"
)
REASON_REGEX_TIMEOUT = "regex_pattern timed out on this output — cannot auto-verify against it"
REASON_REGEX_INVALID = (
    "regex_pattern is not a valid regular expression — cannot auto-verify against it"
)
REASON_EXCUSE = "Output is a failure excuse, not a deliverable"


@dataclass(frozen=True, slots=True)
class Item:
    """One scored item of the breakdown: a score in 0..1 and its weight."""

    name: str
    score: float
    weight: float
    gate: bool = False
    reason: str = ""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The reference's breakdown entry: ``{name, score, weight, reason[, error]}``."""
        out: dict[str, Any] = {
            "name": self.name,
            "score": _number(self.score),
            "weight": _number(self.weight),
            "reason": self.reason,
        }
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True, slots=True)
class VerificationResult:
    """The verdict of one auto check, shaped as spec 000's ``verificationResult``."""

    passed: bool
    score: int
    reasons: tuple[str, ...]
    breakdown: tuple[Item, ...] = ()
    errors: Mapping[str, str] = field(default_factory=dict)
    #: The unrounded weighted score in 0..1 (the pass rule compares this, not ``score``).
    exact_score: float = 0.0

    @property
    def hard_failure(self) -> bool:
        """A step-1 failure: one reason, an empty breakdown, score 0."""
        return not self.breakdown

    def to_dict(self) -> dict[str, Any]:
        """Exactly the ``verificationResult`` object of spec 000."""
        return {
            "passed": self.passed,
            "score": self.score,
            "reasons": list(self.reasons),
            "breakdown": [item.to_dict() for item in self.breakdown],
            "errors": dict(self.errors),
        }

    def to_json(self) -> str:
        """``to_dict`` as JavaScript's ``JSON.stringify`` writes it: the reference's bytes."""
        return stringify(self.to_dict())


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _hard_fail(reason: str) -> VerificationResult:
    return VerificationResult(passed=False, score=0, reasons=(reason,))


def result_text(result: object, *, json_value: bool = False) -> str:
    """The text the check reads: a string ``output`` field, else the whole result as JSON.

    A plain ``str`` is taken as the text itself (the common case for callers), unless
    ``json_value`` says ``result`` is the agent's result as decoded JSON, as the reference
    receives it: then a string, like any value but an object with a string ``output``, is read
    as its JSON text (``""`` is the two characters ``""``). ``None`` (JSON ``null``, on which the
    reference throws) is no result at all: the empty text.
    """
    if isinstance(result, str) and not json_value:
        return result
    if result is None:
        return ""
    if isinstance(result, Mapping):
        output = result.get("output")
        if isinstance(output, str):
            return output
    return stringify(result)


def auto_check(
    result: object,
    criteria: Mapping[str, Any] | Criteria,
    *,
    json_value: bool = False,
    withhold: frozenset[str] = frozenset(),
) -> VerificationResult:
    """Score ``result`` against ``criteria``: spec 000's auto check, as the reference runs it.

    ``result`` is the text, or the agent's JSON result (an object with a string ``output``, or
    any value, read as its JSON text); with ``json_value`` a string is a JSON value too (see
    :func:`result_text`). Never raises on any text, JSON value or criteria: malformed criteria
    are a hard failure, as the reference treats them. Use
    :func:`adjudge.autocheck.criteria.parse` to refuse them with a code instead.

    ``withhold`` names criteria fields whose scored items are left out (a dry run's hidden
    rules): the hard failures still read every field as set — so the content floor a short
    expected answer waives stays waived — but the withheld items are neither scored nor shown.
    """
    output = result_text(result, json_value=json_value)  # (1)
    try:
        c = parse(criteria)  # (2)
    except CriteriaError:
        return _hard_fail(REASON_OVER_LIMITS)
    if not trim(output):  # (3)
        return _hard_fail(REASON_EMPTY)

    canon, has_surrogates = canonicalize(output)  # (4)
    if has_surrogates:
        output = from_units(output)  # halves side by side are one character to JavaScript
    split = split_disclosure(canon)
    visible = flatten(split.deliverable)
    scan_text = _fold_for_scan(visible)

    if llm_error(scan_text):  # (5)
        return _hard_fail(REASON_LLM_ERROR)

    regex_matched: bool | None = None  # (6)
    if c.regex_pattern:
        try:
            regex_matched = jsregex.test(c.regex_pattern, output)
        except jsregex.UnsafePattern:
            return _hard_fail(REASON_REGEX_UNSAFE)
        except jsregex.PatternTimeout:
            return _hard_fail(REASON_REGEX_TIMEOUT)
        except jsregex.JsRegexError:
            return _hard_fail(REASON_REGEX_INVALID)

    pins_short_answer = pins_short(c, regex_usable=regex_matched is not None)  # (7)
    floor = max(c.min_length or 0, 0 if pins_short_answer else DEFAULT_MIN_CONTENT_CHARS)
    # A length in UTF-16 code units is at least the length in characters and at most twice it:
    # it is counted only where the floor or the scan window could turn on the difference.
    visible_length = len(visible)
    if visible_length < floor or 2 * visible_length > SCAN_WINDOW:
        visible_length = utf16_len(visible)
    if visible_length < floor:
        where = ' outside the "Not done / assumptions" section' if split.disclosed else ""
        return _hard_fail(f"Output too short: {visible_length} characters{where}, minimum {floor}")
    if not pins_short_answer:
        head = visible if visible_length <= SCAN_WINDOW else _head16(visible)
        distinct = has_distinct_words(head, MIN_DISTINCT_TOKENS)
        if distinct < MIN_DISTINCT_TOKENS:
            return _hard_fail(
                f"Output has no real content: {distinct} distinct words, "
                f"minimum {MIN_DISTINCT_TOKENS}"
            )

    lang = scan(scan_text)  # (8)
    if lang.excuse:
        return _hard_fail(REASON_EXCUSE)

    # Without a disclosure section or a scan window, the folded deliverable is the folded result.
    folded = scan_text if not split.disclosed and len(visible) <= SCAN_WINDOW else None
    ctx = Context(output, visible, regex_matched, lang.refusal or lang.neutral, folded)  # (9)
    rules = rules_for(c, ctx)
    if withhold:
        rules = [r for r in rules if r.name not in withhold]
    return score_rules(rules, c.threshold)


def pins_short(c: Criteria, *, regex_usable: bool) -> bool:
    """Whether the rules can pin down a short answer, which waives the 20-character floor.

    Spec 000: "The 20-character part is waived when your rules can pin down a short answer: any
    ``expected_answer``, any usable ``regex_pattern`` (whether it matches is checked later),
    ``required_fields``, or ``expected_schema.required``." ``regex_usable``: the pattern is set,
    safe, compiles and finished in time.
    """
    return bool(
        (c.expected_answer is not None and trim(c.expected_answer))
        or regex_usable
        or (c.expected_schema and any(trim(k) for k in c.expected_schema.required or ()))
        or any(trim(f) for f in c.required_fields or ())
    )


def content_floor(c: Criteria, *, regex_usable: bool) -> int:
    """The content floor in characters of the deliverable: "the larger of your ``min_length``
    and 20 characters", the 20 waived when the rules pin a short answer (:func:`pins_short`)."""
    pinned = pins_short(c, regex_usable=regex_usable)
    return max(c.min_length or 0, 0 if pinned else DEFAULT_MIN_CONTENT_CHARS)


def score_rules(rules: list[Rule], threshold: float) -> VerificationResult:
    """Steps 2 and 3: run each item's scorer, fold the weighted average, apply the pass rule.

    A scorer that raises scores 0 with its error (it never passes); no rules score 0.
    """
    notes: dict[str, str] = {}
    breakdown: list[Item] = []
    errors: dict[str, str] = {}
    weighted_sum = 0.0
    total_weight = 0.0
    for rule in rules:

        def note(text: str, name: str = rule.name) -> None:
            notes[name] = text

        try:
            value = min(1.0, max(0.0, rule.score(note)))
            item = Item(rule.name, value, rule.weight, rule.gate)
        except Exception as exc:  # a scorer that breaks scores 0 and says so; it never passes
            errors[rule.name] = f"{rule.name}: {exc}"
            item = Item(rule.name, 0.0, rule.weight, rule.gate, "CRASHED", errors[rule.name])
        breakdown.append(item)
        weighted_sum += item.score * item.weight
        total_weight += item.weight

    exact = weighted_sum / total_weight if total_weight > 0 else 0.0
    gate_missed = any(i.gate and (i.error is not None or i.score < 1) for i in breakdown)
    passed = exact >= threshold / 100 and not gate_missed
    reasons = [
        f"[CRASHED] {i.error}"
        if i.error is not None
        else f"{i.name}: {notes[i.name] if i.name in notes else to_fixed0(i.score * 100) + '%'}"
        for i in breakdown
        if i.error is not None or i.score < 0.5 or (i.gate and i.score < 1)
    ]
    if passed:
        reasons.insert(0, PASSED_REASON)
    # The reference rounds to three decimals first, then to a whole percent.
    rounded = js_round(exact * 1000) / 1000
    return VerificationResult(
        passed=passed,
        score=js_round(rounded * 100),
        reasons=tuple(reasons),
        breakdown=tuple(breakdown),
        errors=errors,
        exact_score=exact,
    )


def _head16(text: str) -> str:
    return to_units(text)[:SCAN_WINDOW]


def _fold_for_scan(flat: str) -> str:
    """The deliverable as the failure patterns read it: folded and bounded to both ends.

    "The checker reads failure language in the first and last 64,000 characters of the
    deliverable only." The window is cut in UTF-16 code units, as the reference cuts it; the
    result is in characters (``scan`` takes the code-unit view only when it has work to do).
    """
    if len(flat) > SCAN_WINDOW and utf16_len(flat) > 2 * SCAN_WINDOW:
        flat_units = to_units(flat)
        flat = from_units(f"{flat_units[:SCAN_WINDOW]} … {flat_units[-SCAN_WINDOW:]}")
    return fold(flat)
