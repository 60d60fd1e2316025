"""Quality rules: what each rule checks, its condition, its outcome, and the stage score.

The rules form a table from ``kind`` to one judging function with one signature. A rule judges
the *mapped* output (the tool's shape, not the provider's raw JSON). Each rule has a positive
whole-number ``weight`` and an optional condition ``when`` (a JMESPath expression over
``{"request": …, "output": …}``; a falsy result means the rule does not apply).

A rule's outcome is one of:

- ``pass`` / ``fail`` — it judged the data;
- ``not_applicable`` — its condition excluded it, or its path held nothing to judge (an empty
  list); it contributes no weight;
- ``misapplied`` — it was pointed at data it cannot judge (a range rule on a string, a path the
  output does not have): the policy is wrong, not the provider.

The stage score is the passed weight over the weight of the rules that applied (passed + failed),
compared with the policy's threshold.

A row's ``path`` is the RFC 6901 JSON Pointer of the value that decided it (``/days/1/temp``).
A rule whose ``path`` is a plain location (fields and indexes, such as ``days`` or
``pages[0].items``) has one; a rule path that selects (a projection, a filter, a function)
names no single place, so its rows carry no pointer and their reasons name the expression and
the item instead.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any, NamedTuple

from adjudge.calls._jmes import is_false
from adjudge.calls.contract import Expression, ExpressionError, compile_expression
from adjudge.calls.formats import parse_date_time
from adjudge.calls.outcomes import DETERMINISTIC, CheckRow, Outcome
from adjudge.calls.pointers import pointer
from adjudge.errors import CriteriaError
from adjudge.receipts.canonical import canonical_json

__all__ = [
    "DEFAULT_FUTURE_SKEW_SECONDS",
    "RULE_KINDS",
    "Rule",
    "RulesStage",
    "evaluate_rules",
    "is_valid_url",
    "judge_rule",
    "parse_rule",
    "parse_rules",
]

_CODE = "POLICY_RULE_INVALID"
#: How far past the call's time a freshness timestamp may lie (clocks disagree a little); a
#: rule sets its own with ``max_future_skew_seconds``.
DEFAULT_FUTURE_SKEW_SECONDS = 300

# One judged value: its index in the list at the rule's path (-1: not in a list), and the value.
_Located = tuple[int, Any]
# A judging function returns (outcome, path that decided it, reason).
_Judgment = tuple[Outcome, str, str]


class _Misapplied(Exception):
    """Raised inside a judging function when the data is not something the rule can judge."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class Rule:
    """A parsed quality rule. Build one with :func:`parse_rule`."""

    name: str
    kind: str
    weight: int
    path: Expression | None
    field: str | None
    when: Expression | None
    params: Mapping[str, Any]

    def __repr__(self) -> str:
        return f"<Rule {self.name} ({self.kind}, weight {self.weight})>"

    @property
    def base(self) -> tuple[str | int, ...] | None:
        """The place the rule's path names, as pointer tokens; None when it names no one place."""
        return () if self.path is None else self.path.location


class _Place(NamedTuple):
    """Where a judged value sits: its JSON Pointer ("" when none is known) and how to say it."""

    pointer: str
    shown: str


def _place(rule: Rule, index: int = -1, member: str | None = None) -> _Place:
    """The place of the rule's target, of item ``index`` in it, and of ``member`` of that."""
    base = rule.base
    if base is not None:
        parts = [*base, *([index] if index >= 0 else []), *([member] if member else [])]
        where = pointer(parts)
        return _Place(where, where or "the output")
    assert rule.path is not None
    shown = f"`{rule.path.source}`" if index < 0 else f"item {index} of `{rule.path.source}`"
    return _Place("", shown if member is None else f"{shown}, member {member!r},")


@dataclass(frozen=True)
class RulesStage:
    """The quality-rule stage: one row per rule, the weights, and the stage outcome."""

    rows: tuple[CheckRow, ...]
    passed_weight: int
    applied_weight: int
    threshold: Fraction
    outcome: Outcome

    @property
    def score(self) -> Fraction | None:
        """Passed weight over applied weight; ``None`` when no rule applied (no score, not 0)."""
        if self.applied_weight == 0:
            return None
        return Fraction(self.passed_weight, self.applied_weight)


# ----------------------------------------------------------------------------- locating values


def _resolve(rule: Rule, output: Any) -> Any:
    """The value at the rule's path; ``None`` path means the whole output."""
    if rule.path is None:
        return output
    try:
        return rule.path.search(output)
    except ExpressionError as exc:
        where = _place(rule).pointer
        raise _Misapplied(where, f"the rule's path cannot be evaluated here: {exc}") from None


def _values(rule: Rule, output: Any) -> list[_Located]:
    """The values a per-value rule judges, each with its index (-1: not in a list).

    The path must exist (else the rule is misapplied). A list is judged item by item; with a
    ``field`` each item (or the single object) must be an object and its field is judged. A
    missing optional field is skipped, not failed: the schema decides what is required. Paths
    are only spelled out for the value that decides, so a passing rule builds no strings.
    """
    base = _resolve(rule, output)
    if base is None:
        where = _place(rule)
        raise _Misapplied(where.pointer, f"the output has nothing at {where.shown}")
    items = list(enumerate(base)) if isinstance(base, list) else [(-1, base)]
    field = rule.field
    if field is None:
        return [(i, v) for i, v in items if v is not None]
    out: list[_Located] = []
    for i, item in items:
        if not isinstance(item, dict):
            where = _place(rule, i)
            raise _Misapplied(
                where.pointer, f"{where.shown} is not an object, so it has no field {field!r}"
            )
        value = item.get(field)
        if value is not None:
            out.append((i, value))
    return out


def _list_at(rule: Rule, output: Any) -> list[Any]:
    base = _resolve(rule, output)
    if not isinstance(base, list):
        kind = "nothing" if base is None else type(base).__name__
        where = _place(rule)
        raise _Misapplied(where.pointer, f"{rule.kind} needs a list at {where.shown}; found {kind}")
    return base


def _kind_of(value: Any) -> str:
    return {bool: "a boolean", str: "a string", dict: "an object", list: "a list"}.get(
        type(value), type(value).__name__
    )


class _Unjudgeable(Exception):
    """Raised by a per-value check for a value it cannot judge (the rule is misapplied)."""


def _judge_each(
    rule: Rule, values: list[_Located], check: Callable[[Any], str | None]
) -> _Judgment:
    """Apply ``check`` to every value; the first failure decides. No values: nothing to judge.

    ``check`` returns why the value fails (a phrase the value's path is put before) or ``None``,
    and raises ``_Unjudgeable`` for a value of the wrong kind.
    """
    if not values:
        return Outcome.NOT_APPLICABLE, "", "there was nothing to judge"
    for index, value in values:
        try:
            failure = check(value)
        except _Unjudgeable as exc:
            where = _place(rule, index, rule.field)
            raise _Misapplied(where.pointer, f"{where.shown} {exc}") from None
        if failure is not None:
            where = _place(rule, index, rule.field)
            return Outcome.FAIL, where.pointer, f"{where.shown} {failure}"
    return Outcome.PASS, "", f"{len(values)} value(s) met the rule"


# ----------------------------------------------------------------------------- the rules


def _min_results(rule: Rule, output: Any, request: Any, at: datetime) -> _Judgment:
    found = len(_list_at(rule, output))
    least = rule.params["min"]
    if found < least:
        where = _place(rule).pointer
        return Outcome.FAIL, where, f"{found} result(s); the policy requires at least {least}"
    return Outcome.PASS, "", f"{found} result(s), at least {least}"


def _required_values(rule: Rule, output: Any, request: Any, at: datetime) -> _Judgment:
    base = _resolve(rule, output)
    if base is None:
        where = _place(rule)
        raise _Misapplied(where.pointer, f"the output has nothing at {where.shown}")
    items = list(enumerate(base)) if isinstance(base, list) else [(-1, base)]
    if not items:
        return Outcome.NOT_APPLICABLE, "", "there was nothing to judge"
    for index, item in items:
        if not isinstance(item, dict):
            where = _place(rule, index)
            raise _Misapplied(
                where.pointer, f"{where.shown} is {_kind_of(item)}, not an object with fields"
            )
        for name in rule.params["fields"]:
            value = item.get(name)
            # "Required" means present and carrying something: null, "", [] and {} carry
            # nothing, nor does a string of only whitespace.
            if value is None or value in ("", [], {}) or (type(value) is str and value.isspace()):
                where = _place(rule, index, name)
                return Outcome.FAIL, where.pointer, f"{where.shown} is missing or empty"
    return Outcome.PASS, "", f"{len(items)} item(s) carry every required value"


def _freshness(rule: Rule, output: Any, request: Any, at: datetime) -> _Judgment:
    max_age = rule.params["max_age_seconds"]
    skew = rule.params["max_future_skew_seconds"]

    def check(value: Any) -> str | None:
        age = (at - _timestamp(value)).total_seconds()
        if age > max_age:
            return f"is {int(age)} s old at the call's time; the limit is {max_age} s"
        if -age > skew:
            # A timestamp from the future is not fresh: it is wrong (or its clock is).
            return (
                f"is dated {int(-age)} s after the call's time; at most {skew} s of clock "
                "skew is allowed"
            )
        return None

    return _judge_each(rule, _values(rule, output), check)


def _timestamp(value: Any) -> datetime:
    """An ISO 8601 timestamp with an offset (RFC 3339 included); else it cannot be judged.

    Python's parser reads the common forms fast; what it refuses is read as RFC 3339, which it
    does not fully cover (a leap second, ``23:59:60Z``).
    """
    if not isinstance(value, str):
        raise _Unjudgeable(f"is {_kind_of(value)}, not a timestamp")
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        rfc3339 = parse_date_time(value)
        if rfc3339 is None:
            raise _Unjudgeable(f"is not an ISO 8601 timestamp: {value[:40]!r}") from None
        return rfc3339
    if stamp.tzinfo is None:
        raise _Unjudgeable("has no UTC offset, so its age cannot be known")
    return stamp


# A tuple, not ``int | float``: the union would be built anew for every value judged.
_NUMBERS = (int, float)


def _numeric_range(rule: Rule, output: Any, request: Any, at: datetime) -> _Judgment:
    low, high = rule.params.get("min"), rule.params.get("max")

    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, _NUMBERS):
            raise _Unjudgeable(f"is {_kind_of(value)}, not a number")
        if not math.isfinite(value):
            return "is not a finite number"
        if low is not None and value < low:
            return f"is {value}, below the minimum {low}"
        if high is not None and value > high:
            return f"is {value}, above the maximum {high}"
        return None

    return _judge_each(rule, _values(rule, output), check)


# RFC 3986, by syntax: scheme "://" [userinfo "@"] host [":" port] [path / query / fragment],
# where the host is DNS labels (1-63 characters, no leading or trailing hyphen) or a bracketed
# IPv6 literal, and every character is one a URI may contain (unreserved, reserved, "%" escape).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
_URL = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://"
    r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:%]*@)?"
    rf"(?:\[[0-9A-Fa-f:.]+:[0-9A-Fa-f:.]*\]|(?:{_LABEL}\.)*{_LABEL}\.?)"
    r"(?::(?P<port>[0-9]{0,5}))?"
    r"(?:[/?#][A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*)?\Z"
)
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def is_valid_url(text: str, schemes: Sequence[str] = ("http", "https")) -> bool:
    """True when ``text`` is an absolute URL with a host, by syntax alone (nothing is fetched).

    RFC 3986 characters only (an internationalized address must be percent-encoded or punycode),
    a scheme from ``schemes``, a host of DNS labels or a bracketed IPv6 literal, a port of at
    most 65535, and every ``%`` starting a two-digit hexadecimal escape.
    """
    match = _URL.match(text)
    if match is None or match["scheme"].lower() not in schemes:
        return False
    port = match["port"]
    if port and int(port) > 65535:
        return False
    return "%" not in text or _BAD_ESCAPE.search(text) is None


def _valid_url(rule: Rule, output: Any, request: Any, at: datetime) -> _Judgment:
    schemes = rule.params["schemes"]

    def check(value: Any) -> str | None:
        if not isinstance(value, str):
            raise _Unjudgeable(f"is {_kind_of(value)}, not a URL string")
        if not is_valid_url(value, schemes):
            return f"is not a valid {'/'.join(schemes)} URL: {value[:80]!r}"
        return None

    return _judge_each(rule, _values(rule, output), check)


def _token(value: Any) -> object:
    """A hashable stand-in for a JSON value: equal JSON values, equal tokens; true is not 1.

    A string stands for itself; anything else for its canonical bytes (bytes, so no string can
    pass for a list or a number), which make objects and lists comparable, keep 1 and true
    apart, and write 1 and 1.0 alike, as JSON numbers are equal."""
    if isinstance(value, str):
        return value
    return canonical_json(value)


def _no_duplicates(rule: Rule, output: Any, request: Any, at: datetime) -> _Judgment:
    items = _list_at(rule, output)
    key = rule.params.get("key")
    seen: dict[object, int] = {}
    judged = 0
    for i, item in enumerate(items):
        if key is not None:
            if not isinstance(item, dict):
                where = _place(rule, i)
                raise _Misapplied(
                    where.pointer, f"{where.shown} is {_kind_of(item)}, so it has no key {key!r}"
                )
            value = item.get(key)
            if value is None:
                continue  # an item without the key cannot duplicate another by that key
        else:
            value = item
        token = _token(value)
        judged += 1
        if token in seen:
            where = _place(rule, i, key)
            earlier = _place(rule, seen[token], key).shown
            return Outcome.FAIL, where.pointer, f"{where.shown} duplicates {earlier}"
        seen[token] = i
    if judged == 0:
        return Outcome.NOT_APPLICABLE, "", "there was nothing to judge"
    return Outcome.PASS, "", f"{judged} item(s), no duplicates"


# The rule table: kind -> judging function.
_JUDGES: dict[str, Callable[[Rule, Any, Any, datetime], _Judgment]] = {
    "min_results": _min_results,
    "required_values": _required_values,
    "freshness": _freshness,
    "numeric_range": _numeric_range,
    "valid_url": _valid_url,
    "no_duplicates": _no_duplicates,
}
RULE_KINDS = tuple(_JUDGES)


# ----------------------------------------------------------------------------- evaluation


def _applies(rule: Rule, output: Any, request: Any) -> bool:
    if rule.when is None:
        return True
    try:
        value = rule.when.search({"request": request, "output": output})
    except ExpressionError as exc:
        raise _Misapplied("", f"the rule's condition cannot be evaluated: {exc}") from None
    return not is_false(value)  # JMESPath truthiness: 0 is true; null, false, "", [], {} are not


def judge_rule(rule: Rule, output: Any, request: Any, at: datetime) -> CheckRow:
    """Judge one rule against a mapped output; never raises for bad *data*."""
    try:
        if not _applies(rule, output, request):
            outcome, path, reason = Outcome.NOT_APPLICABLE, "", "its condition excluded it"
        else:
            outcome, path, reason = _JUDGES[rule.kind](rule, output, request, at)
    except _Misapplied as exc:
        outcome, path, reason = Outcome.MISAPPLIED, exc.path, exc.reason
    return CheckRow(
        name=rule.name,
        stage="rule",
        authority=DETERMINISTIC,
        outcome=outcome,
        reason=reason,
        path=path,
        weight=rule.weight,
    )


def evaluate_rules(
    rules: Sequence[Rule], output: Any, request: Any, at: datetime, threshold: Fraction
) -> RulesStage:
    """Run every rule and score the stage.

    The stage outcome: ``misapplied`` if any rule was misapplied (the policy is wrong, so the
    stage can blame no one); ``not_applicable`` if no rule applied (no weight, no score);
    otherwise ``pass`` when passed weight / applied weight reaches the threshold, else ``fail``.
    """
    rows = tuple(judge_rule(rule, output, request, at) for rule in rules)
    passed = sum(r.weight or 0 for r in rows if r.outcome is Outcome.PASS)
    applied = passed + sum(r.weight or 0 for r in rows if r.outcome is Outcome.FAIL)
    if any(r.outcome is Outcome.MISAPPLIED for r in rows):
        outcome = Outcome.MISAPPLIED
    elif applied == 0:
        outcome = Outcome.NOT_APPLICABLE
    elif passed * threshold.denominator >= threshold.numerator * applied:  # score >= threshold
        outcome = Outcome.PASS
    else:
        outcome = Outcome.FAIL
    return RulesStage(rows, passed, applied, threshold, outcome)


# ----------------------------------------------------------------------------- parsing


def _positive_int(value: object, what: str, *, zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        least = "zero or more" if zero else "at least 1"
        raise CriteriaError(f"{what} must be a whole number, {least}.", code=_CODE)
    return value


def _number(value: object, what: str) -> int | float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CriteriaError(f"{what} must be a finite number.", code=_CODE)
    return value


def _params(kind: str, data: Mapping[str, Any], label: str) -> dict[str, Any]:
    if kind == "min_results":
        return {"min": _positive_int(data.get("min", 1), f"{label}: `min`", zero=True)}
    if kind == "required_values":
        fields = data.get("fields")
        if (
            not isinstance(fields, list)
            or not fields
            or not all(isinstance(f, str) and f for f in fields)
        ):
            raise CriteriaError(f"{label}: `fields` must be a list of field names.", code=_CODE)
        return {"fields": tuple(fields)}
    if kind == "freshness":
        return {
            "max_age_seconds": _positive_int(
                data.get("max_age_seconds"), f"{label}: `max_age_seconds`"
            ),
            "max_future_skew_seconds": _positive_int(
                data.get("max_future_skew_seconds", DEFAULT_FUTURE_SKEW_SECONDS),
                f"{label}: `max_future_skew_seconds`",
                zero=True,
            ),
        }
    if kind == "numeric_range":
        low = _number(data.get("min"), f"{label}: `min`")
        high = _number(data.get("max"), f"{label}: `max`")
        if low is None and high is None:
            raise CriteriaError(f"{label}: give `min`, `max` or both.", code=_CODE)
        if low is not None and high is not None and low > high:
            raise CriteriaError(f"{label}: `min` is above `max`.", code=_CODE)
        return {"min": low, "max": high}
    if kind == "valid_url":
        schemes = data.get("schemes", ["http", "https"])
        if (
            not isinstance(schemes, list)
            or not schemes
            or not all(
                isinstance(s, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]*", s) for s in schemes
            )
        ):
            raise CriteriaError(f"{label}: `schemes` must be a list of URL schemes.", code=_CODE)
        return {"schemes": tuple(s.lower() for s in schemes)}
    # no_duplicates
    key = data.get("key")
    if key is not None and (not isinstance(key, str) or not key):
        raise CriteriaError(f"{label}: `key` must be a field name.", code=_CODE)
    return {"key": key}


_COMMON = {"kind", "name", "weight", "path", "when"}
# Per kind: its own parameters (``field`` only where one value per item is judged).
_EXTRA = {
    "min_results": {"min"},
    "required_values": {"fields"},
    "freshness": {"max_age_seconds", "max_future_skew_seconds", "field"},
    "numeric_range": {"min", "max", "field"},
    "valid_url": {"schemes", "field"},
    "no_duplicates": {"key"},
}


def parse_rule(data: object, index: int = 0) -> Rule:
    """Parse one rule; refuse a malformed one with ``POLICY_RULE_INVALID``."""
    label = f"rule {index}"
    if not isinstance(data, Mapping):
        raise CriteriaError(f"{label} must be a JSON object.", code=_CODE)
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in _JUDGES:
        raise CriteriaError(
            f"{label}: `kind` must be one of {', '.join(RULE_KINDS)}; got {kind!r}.", code=_CODE
        )
    unknown = set(data) - _COMMON - _EXTRA[kind]
    if unknown:
        raise CriteriaError(f"{label}: unknown fields {', '.join(sorted(unknown))}.", code=_CODE)
    name = data.get("name", kind)
    if not isinstance(name, str) or not name:
        raise CriteriaError(f"{label}: `name` must be a non-empty string.", code=_CODE)
    label = f"rule {name!r}"
    path = data.get("path")
    field = data.get("field")
    if field is not None and (not isinstance(field, str) or not field):
        raise CriteriaError(f"{label}: `field` must be a field name.", code=_CODE)
    if kind in ("min_results", "no_duplicates") and path is None:
        raise CriteriaError(f"{label}: `path` must name the list to judge.", code=_CODE)
    when = data.get("when")
    return Rule(
        name=name,
        kind=kind,
        weight=_positive_int(data.get("weight", 1), f"{label}: `weight`"),
        path=None
        if path is None
        else compile_expression(path, what=f"{label}: `path`", code=_CODE),
        field=field,
        when=None
        if when is None
        else compile_expression(when, what=f"{label}: `when`", code=_CODE),
        params=_params(kind, data, label),
    )


def parse_rules(data: object) -> tuple[Rule, ...]:
    """Parse a list of rules; names must be unique (a veto names one)."""
    if not isinstance(data, list):
        raise CriteriaError("`rules` must be a list of rules.", code=_CODE)
    rules = tuple(parse_rule(item, i) for i, item in enumerate(data))
    names = [r.name for r in rules]
    duplicated = sorted(n for n, seen in Counter(names).items() if seen > 1)
    if duplicated:
        raise CriteriaError(
            f"Rule names must be unique; give each a `name` ({', '.join(duplicated)}).", code=_CODE
        )
    return rules
