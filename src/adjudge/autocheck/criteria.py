"""A poster's verification criteria: parsed once, validated to the reference's limits.

Spec 000, *The rules*: every rule is a field of ``verificationCriteria``; "a misspelled field is
dropped without an error" (adjudge drops it too, and records it in ``Criteria.dropped`` so the CLI
can warn). *Size limits*: "Lists hold at most 50 entries of 200 characters each. ``rubric`` holds
at most 20 items with 20 keywords each, and ``expected_schema.properties`` at most 50 entries."

Two kinds of refusal, told apart by code: ``CRITERIA_INVALID`` (a field of the wrong JSON type) and
``CRITERIA_OVER_LIMIT`` (a value outside its bounds). The reference checker turns both into the
hard failure "Verification criteria exceed the supported size"; :func:`auto_check` does the same.
Lengths are JavaScript lengths (UTF-16 code units), as the reference measures them, and two
surrogate code points side by side in a string are the one character JavaScript reads there.

The reference validates with zod, whose record type drops a ``__proto__`` key from what it
returns: ``expected_schema.properties`` may hold 50 entries besides a ``__proto__`` one (whose
value is still validated), as the reference counts them.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from adjudge.autocheck import jsregex
from adjudge.autocheck.jsvalues import from_units, trim, utf16_len
from adjudge.errors import CriteriaError, Error

LIST_ITEMS = 50
ITEM_CHARS = 200
RUBRIC_ITEMS = 20
RUBRIC_KEYWORDS = 20
EXPECTED_ANSWER_CHARS = 2000
SCHEMA_PROPERTIES = 50
LENGTH_BOUND = 1_000_000
ACCEPTANCE_CHARS = 4000
DEFAULT_PASS_THRESHOLD = 60

FIELDS = (
    "required_fields",
    "min_length",
    "contains_keywords",
    "max_length",
    "expected_answer",
    "forbidden_phrases",
    "regex_pattern",
    "expected_schema",
    "rubric",
    "pass_threshold",
    "acceptance",
)
MODES = ("auto", "agent", "manual")
#: Known fields inside a rubric item and inside ``expected_schema``.
RUBRIC_FIELDS = ("criterion", "keywords", "min_mentions", "weight")
SCHEMA_FIELDS = ("type", "required", "properties")


@dataclass(frozen=True, slots=True)
class RubricItem:
    """One scored rubric item: ``{criterion, keywords?, min_mentions?, weight?}``."""

    criterion: str
    keywords: tuple[str, ...] | None = None
    min_mentions: int | None = None
    weight: float | None = None


@dataclass(frozen=True, slots=True)
class Schema:
    """``expected_schema``: ``{type?, required?, properties?}`` (properties are guidance only)."""

    type: str | None = None
    required: tuple[str, ...] | None = None
    properties: Mapping[str, Mapping[str, str]] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The schema as the scorer reads it."""
        out: dict[str, Any] = {}
        if self.type is not None:
            out["type"] = self.type
        if self.required is not None:
            out["required"] = list(self.required)
        return out


@dataclass(frozen=True, slots=True)
class Criteria:
    """Validated criteria. ``None`` means the field was not set."""

    required_fields: tuple[str, ...] | None = None
    min_length: int | None = None
    contains_keywords: tuple[str, ...] | None = None
    max_length: int | None = None
    expected_answer: str | None = None
    forbidden_phrases: tuple[str, ...] | None = None
    regex_pattern: str | None = None
    expected_schema: Schema | None = None
    rubric: tuple[RubricItem, ...] | None = None
    pass_threshold: float | None = None
    acceptance: str | None = None
    dropped: tuple[str, ...] = field(default=())

    @property
    def threshold(self) -> float:
        """The lowest passing score (default 60)."""
        return DEFAULT_PASS_THRESHOLD if self.pass_threshold is None else self.pass_threshold


def _invalid(path: str, expected: str) -> CriteriaError:
    return CriteriaError(
        f"{path} must be {expected}; fix or remove it.",
        code="CRITERIA_INVALID",
    )


def _over(path: str, limit: str) -> CriteriaError:
    return CriteriaError(f"{path} {limit}.", code="CRITERIA_OVER_LIMIT")


def _string(value: Any, path: str, max_chars: int) -> str:
    if not isinstance(value, str):
        raise _invalid(path, "a string")
    if utf16_len(value) > max_chars:
        raise _over(path, f"is longer than {max_chars:,} characters")
    return from_units(value)


def _string_list(value: Any, path: str, max_items: int = LIST_ITEMS) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise _invalid(path, "a list of strings")
    items = tuple(_string(v, f"{path}[{i}]", ITEM_CHARS) for i, v in enumerate(value))
    if len(items) > max_items:
        raise _over(path, f"holds {len(items)} entries; at most {max_items} are allowed")
    return items


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(path, "a number")
    if isinstance(value, float) and math.isnan(value):
        raise _invalid(path, "a number")
    return value


def _positive_int(value: Any, path: str, maximum: int) -> int:
    number = _number(value, path)
    if isinstance(number, float) and not number.is_integer():
        raise _invalid(path, "a whole number")
    if not 0 < number <= maximum:
        raise _over(path, f"must be a whole number from 1 to {maximum:,}")
    return int(number)


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _invalid(path, "an object")
    return value


def _rubric_item(value: Any, path: str) -> RubricItem:
    raw = _object(value, path)
    if "criterion" not in raw:
        raise _invalid(f"{path}.criterion", "a string")
    criterion = _string(raw["criterion"], f"{path}.criterion", ITEM_CHARS)
    keywords = None
    if "keywords" in raw:
        keywords = _string_list(raw["keywords"], f"{path}.keywords", RUBRIC_KEYWORDS)
    min_mentions = None
    if "min_mentions" in raw:
        min_mentions = _positive_int(raw["min_mentions"], f"{path}.min_mentions", RUBRIC_KEYWORDS)
    weight = None
    if "weight" in raw:
        weight = _number(raw["weight"], f"{path}.weight")
        if not 0 < weight <= 100:
            raise _over(f"{path}.weight", "must be above 0 and at most 100")
    return RubricItem(criterion, keywords, min_mentions, weight)


def _schema(value: Any) -> Schema:
    raw = _object(value, "expected_schema")
    type_ = None
    if "type" in raw:
        type_ = _string(raw["type"], "expected_schema.type", 50)
    required = None
    if "required" in raw:
        required = _string_list(raw["required"], "expected_schema.required")
    properties = None
    if "properties" in raw:
        props = _object(raw["properties"], "expected_schema.properties")
        parsed: dict[str, Mapping[str, str]] = {}
        for key, spec in props.items():
            path = f"expected_schema.properties.{key}"
            _string(key, f"a key of expected_schema.properties ({key[:40]!r})", ITEM_CHARS)
            prop = _object(spec, path)
            parsed[key] = (
                {"type": _string(prop["type"], f"{path}.type", 50)} if "type" in prop else {}
            )
        # zod's record drops a __proto__ key from its output before the limit counts it.
        counted = len(parsed) - ("__proto__" in parsed)
        if counted > SCHEMA_PROPERTIES:
            raise _over(
                "expected_schema.properties",
                f"holds {counted} entries; at most {SCHEMA_PROPERTIES} are allowed",
            )
        properties = parsed
    return Schema(type_, required, properties)


def parse(raw: Mapping[str, Any] | Criteria) -> Criteria:
    """Validate ``raw`` criteria; unknown fields are dropped and listed in ``dropped``.

    Raises CriteriaError (``CRITERIA_INVALID`` or ``CRITERIA_OVER_LIMIT``) naming the field.
    """
    if isinstance(raw, Criteria):
        return raw
    if not isinstance(raw, Mapping):
        raise _invalid("verification criteria", "a JSON object")
    values: dict[str, Any] = {}
    for name in ("required_fields", "contains_keywords", "forbidden_phrases"):
        if name in raw:
            values[name] = _string_list(raw[name], name)
    for name in ("min_length", "max_length"):
        if name in raw:
            values[name] = _positive_int(raw[name], name, LENGTH_BOUND)
    if "expected_answer" in raw:
        values["expected_answer"] = _string(
            raw["expected_answer"], "expected_answer", EXPECTED_ANSWER_CHARS
        )
    if "regex_pattern" in raw:
        values["regex_pattern"] = _string(
            raw["regex_pattern"], "regex_pattern", jsregex.MAX_PATTERN_LENGTH
        )
    if "expected_schema" in raw:
        values["expected_schema"] = _schema(raw["expected_schema"])
    if "rubric" in raw:
        rubric = raw["rubric"]
        if not isinstance(rubric, list | tuple):
            raise _invalid("rubric", "a list of objects")
        items = tuple(_rubric_item(v, f"rubric[{i}]") for i, v in enumerate(rubric))
        if len(items) > RUBRIC_ITEMS:
            raise _over("rubric", f"holds {len(items)} items; at most {RUBRIC_ITEMS} are allowed")
        values["rubric"] = items
    if "pass_threshold" in raw:
        threshold = _number(raw["pass_threshold"], "pass_threshold")
        if not 0 <= threshold <= 100:
            raise _over("pass_threshold", "must be from 0 to 100")
        values["pass_threshold"] = threshold
    if "acceptance" in raw:
        values["acceptance"] = _string(raw["acceptance"], "acceptance", ACCEPTANCE_CHARS)
    dropped = tuple(str(k) for k in raw if k not in FIELDS)
    return Criteria(**values, dropped=dropped)


def admissibility(raw: Mapping[str, Any] | Criteria, mode: str = "auto") -> list[Error]:
    """The refusals a service makes when a task is posted with these criteria and mode.

    Empty when the task may be posted. Codes: ``VERIFICATION_MODE_UNSUPPORTED`` (``oracle`` or an
    unknown mode), ``CRITERIA_INVALID`` / ``CRITERIA_OVER_LIMIT``, ``REGEX_PATTERN_UNUSABLE``
    (nested quantifiers, too long, or not compiling), ``AUTO_CRITERIA_REQUIRED`` (auto with no
    real check: forbidden phrases alone are not one).
    """
    refusals: list[Error] = []
    if mode not in MODES:
        refusals.append(
            Error(
                f"Verification mode {mode!r} is not supported; use auto, agent or manual.",
                code="VERIFICATION_MODE_UNSUPPORTED",
            )
        )
    try:
        criteria = parse(raw)
    except CriteriaError as exc:
        return [*refusals, exc]
    pattern = criteria.regex_pattern
    regex_usable = False
    if pattern:
        if not jsregex.is_safe(pattern):
            refusals.append(
                Error(
                    "regex_pattern has nested quantifiers such as (a+)+ or is over 200 "
                    "characters; rewrite it without a quantifier on a quantified group.",
                    code="REGEX_PATTERN_UNUSABLE",
                )
            )
        else:
            try:
                jsregex.compile(pattern)
                regex_usable = True
            except jsregex.InvalidPattern as exc:
                refusals.append(
                    Error(
                        "regex_pattern is not a valid JavaScript regular expression "
                        f"({exc.message}).",
                        code="REGEX_PATTERN_UNUSABLE",
                    )
                )
    if mode == "auto" and not _has_real_check(criteria, regex_usable):
        refusals.append(
            Error(
                "An auto task needs at least one real check: min_length above 0, "
                "contains_keywords, required_fields, expected_schema with type object or "
                "required, a rubric item with keywords, a compiling regex_pattern, or "
                "expected_answer. forbidden_phrases alone is not enough.",
                code="AUTO_CRITERIA_REQUIRED",
            )
        )
    return refusals


def _has_real_check(c: Criteria, regex_usable: bool) -> bool:
    schema = c.expected_schema
    return bool(
        (c.min_length or 0) > 0
        or c.contains_keywords
        or c.required_fields
        or (schema is not None and (schema.type == "object" or schema.required))
        or any(item.keywords for item in c.rubric or ())
        or regex_usable
        or (c.expected_answer is not None and trim(c.expected_answer))
    )


def unknown_fields(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The fields of ``raw`` the auto check does not know — top level, inside rubric items and
    inside ``expected_schema`` — each as ``(path, sentence)``, the sentence naming the closest
    known field. The reference drops such a field without a word ("``min_lenght`` sets
    nothing"); posting refuses it, and the criteria lint reports it."""
    found: list[tuple[str, str]] = []

    def unknown(where: str, name: str, known: Sequence[str]) -> None:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"Did you mean `{close[0]}`?" if close else f"Known: {', '.join(known)}."
        found.append(
            (
                f"{where}{name}",
                f"The criteria field `{where}{name}` is not one the auto check knows, so it "
                f"would check nothing. {hint}",
            )
        )

    for name in raw:
        if name not in FIELDS:
            unknown("", name, FIELDS)
    rubric = raw.get("rubric")
    if isinstance(rubric, list):
        for i, item in enumerate(rubric):
            if isinstance(item, Mapping):
                for name in item:
                    if name not in RUBRIC_FIELDS:
                        unknown(f"rubric[{i}].", name, RUBRIC_FIELDS)
    schema = raw.get("expected_schema")
    if isinstance(schema, Mapping):
        for name in schema:
            if name not in SCHEMA_FIELDS:
                unknown("expected_schema.", name, SCHEMA_FIELDS)
    return found
