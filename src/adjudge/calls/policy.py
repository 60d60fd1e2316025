"""Versioned decision policies: declared checks, quality rules, sampling and ordered clauses.

A policy is registered once against the contract of the tool it governs; a malformed policy is
refused there with a stable code (``POLICY_INVALID``, ``POLICY_RULE_INVALID``,
``POLICY_CLAUSE_INVALID``), never discovered at call time.

The clauses are tried in order and the first one that matches decides the verdict:

- ``{"match": "veto", "check": NAME, "verdict": V}`` — the named check (a declared stage or one
  rule) failed;
- ``{"match": "failures_at_least", "count": N, "verdict": V}`` — at least N declared checks
  voted fail;
- ``{"match": "failure_fraction_at_least", "fraction": F, "verdict": V}`` — failed votes over
  all votes reach F (no votes: no fraction, so the clause does not match);
- ``{"match": "votes_fewer_than", "count": N, "verdict": V}`` — fewer than N declared checks
  cast a vote (too few checks ran).

Only checks the policy declares in ``checks`` vote, and only a ``pass`` or ``fail`` is a vote: an
unavailable, skipped, inapplicable or moot check casts none.

A bad result despite the checks can be reported by the caller until the filing deadline: the
call's time plus the policy's ``report_window_hours`` (default :data:`DEFAULT_REPORT_WINDOW`,
72 hours; at most :data:`MAX_REPORT_WINDOW`, a year). This package only says when the window
closes; the report action itself belongs to the service.
"""

from __future__ import annotations

import enum
import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from functools import cached_property
from typing import Final

from adjudge.calls.bounds import rules_cost
from adjudge.calls.contract import Contract, Expression, compile_expression
from adjudge.calls.rules import Rule, parse_rules
from adjudge.errors import CriteriaError

__all__ = [
    "CHECKS",
    "CORROBORATION_PAYERS",
    "DEFAULT_REPORT_WINDOW",
    "MAX_REPORT_WINDOW",
    "POLICY_ID",
    "Clause",
    "Corroborator",
    "EmptyResultRule",
    "Mode",
    "Policy",
    "providers_own",
    "register_policy",
    "sampled",
]

_CODE = "POLICY_INVALID"
_CLAUSE = "POLICY_CLAUSE_INVALID"

# The checks a policy can declare, in the order they run.
CHECKS = ("schema", "quality_rules", "meaning")
# A clause may only decide these; MISAPPLIED, the empty verdicts and SKIPPED are not a policy's
# to choose (they follow from what the checks found).
_CLAUSE_VERDICTS = ("PASS", "FAIL", "DEGRADED")
_MATCHES = ("veto", "failures_at_least", "failure_fraction_at_least", "votes_fewer_than")
#: How long after a call its caller may report a bad result, when the policy does not say.
DEFAULT_REPORT_WINDOW: Final = timedelta(hours=72)
#: The longest report window a policy may set.
MAX_REPORT_WINDOW: Final = timedelta(days=365)
#: A policy id a provider registers: the form of a provider id (letters, digits and ``._:-``,
#: 1 to 128), so the id a verifier prints is the id registered (one holding a control character
#: or a right-to-left mark printed escaped, yet named the policy). Checked at registration only:
#: a policy stored under another id is still read.
POLICY_ID: Final = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class Mode(enum.StrEnum):
    """Whether a policy's verdicts have effects."""

    ENFORCE = "enforce"  # verdicts settle, refund, void and strike
    SHADOW = "shadow"  # verdicts are computed and recorded; nothing is refunded or struck


@dataclass(frozen=True)
class Clause:
    """One ordered clause of a policy."""

    match: str
    verdict: str
    count: int | None = None
    fraction: Fraction | None = None
    check: str | None = None

    def describe(self) -> str:
        """The clause as a short sentence for the record."""
        if self.match == "veto":
            return f"veto by {self.check!r} -> {self.verdict}"
        if self.match == "failures_at_least":
            return f"at least {self.count} failure(s) -> {self.verdict}"
        if self.match == "failure_fraction_at_least":
            return f"failure fraction at least {self.fraction} -> {self.verdict}"
        return f"fewer than {self.count} vote(s) -> {self.verdict}"


#: Who may pay for a declared corroborating call. Only the policy's provider: it declared the
#: corroboration, and a caller is never charged more than the listed price it agreed to.
CORROBORATION_PAYERS: Final = ("provider",)


@dataclass(frozen=True)
class Corroborator:
    """The source a policy names to corroborate an empty answer: another provider's tool asked
    the same question through the gateway, paid by ``paid_by`` (the policy's provider), at most
    ``max_price_minor`` a call.

    ``path`` names the result list in the corroborating tool's mapped output (absent: the
    empty-result rule's own path); ``arguments`` is a JMESPath expression over the call's
    arguments giving the corroborating call's (absent: the same arguments).
    """

    tool: str
    max_price_minor: int
    paid_by: str
    path: Expression | None = None
    arguments: Expression | None = None

    def to_dict(self) -> dict[str, object]:
        """The declaration as the policy's views show it to a caller before paying."""
        return {
            "tool": self.tool,
            "paid_by": self.paid_by,
            "max_price_minor": self.max_price_minor,
            "path": None if self.path is None else self.path.source,
            "arguments": None if self.arguments is None else self.arguments.source,
        }


@dataclass(frozen=True)
class EmptyResultRule:
    """The policy's own rule for an empty result.

    ``path`` names the result list in the mapped output. ``on_empty`` is ``"accept"`` (an honest
    empty answer is not a failure: EMPTY_CONFIRMED with independent corroboration, else
    EMPTY_UNVERIFIED) or ``"judge"`` (an empty list gets no special treatment; the rules decide).
    ``corroborator``: the source the policy declares for corroboration (see
    :class:`Corroborator`); with one, an empty answer it contradicts is a FAIL and one it could
    not check is DEGRADED.
    """

    path: Expression
    on_empty: str
    corroborator: Corroborator | None = None


@dataclass(frozen=True, repr=False)
class Policy:
    """A registered, versioned decision policy. Build one with :func:`register_policy`."""

    policy_id: str
    version: int
    tool: str
    mode: Mode
    withdrawn_at: datetime | None
    checks: frozenset[str]
    threshold: Fraction
    rules: tuple[Rule, ...]
    empty_result: EmptyResultRule | None
    meaning_rate: Fraction | None
    clauses: tuple[Clause, ...]
    report_window: timedelta = DEFAULT_REPORT_WINDOW
    #: The named judges of the meaning check (keys the service resolves to a model or a
    #: verifier), and how many must cite a conflict for it to fail (k of n). Empty: the
    #: judgment is handed in whole.
    judges: tuple[str, ...] = ()
    quorum: int = 1
    #: When the named judges are asked: ``before_settling`` (the call waits for them) or
    #: ``after_answer`` (the call is answered and settled into the provider's hold at once; a
    #: worker judges it later and a superseding receipt gives the final verdict).
    meaning_when: str = "before_settling"

    def sampled(self, call_id: str, seed: str | None = None) -> bool:
        """Whether the meaning check runs for ``call_id`` (declared, and selected)."""
        rate = self.meaning_rate
        return rate is not None and sampled(call_id, self.policy_id, self.version, rate, seed)

    def __repr__(self) -> str:
        return f"<Policy {self.policy_id} v{self.version} ({self.mode.value})>"

    @cached_property  # read on every call: its rules never change
    def rules_cost(self) -> int | None:
        """The steps the policy's rules and paths take per value of the output, or None when
        one of its expressions has no bound (:mod:`adjudge.calls.bounds`)."""
        expressions = [e for rule in self.rules for e in (rule.path, rule.when) if e is not None]
        empty = self.empty_result
        if empty is not None:
            expressions.append(empty.path)
            if empty.corroborator is not None:
                seen = (empty.corroborator.path, empty.corroborator.arguments)
                expressions += [e for e in seen if e is not None]
        return rules_cost([e.cost for e in expressions], [rule.kind for rule in self.rules])

    def withdrawn(self, at: datetime) -> bool:
        """True when the policy had been withdrawn by the call's time."""
        return self.withdrawn_at is not None and at >= self.withdrawn_at

    def report_deadline(self, called_at: datetime) -> datetime:
        """The last moment a caller may report a bad result of a call made at ``called_at``."""
        return called_at + self.report_window

    def reportable(self, called_at: datetime, at: datetime) -> bool:
        """True when a report filed at ``at`` is within the window: after the call, by the
        deadline (inclusive)."""
        return called_at <= at <= self.report_deadline(called_at)


def providers_own(registered_by: str | None, provider: str) -> bool:
    """Whether a policy ``registered_by`` registered over ``provider``'s tool is the provider's
    own word: only then does it move the provider's money or record. An enforcing policy then
    refunds failing calls and strikes, a declared corroborator is paid from the provider's
    wallet, and named verifier keys are asked. Registration refuses all three to anyone else;
    one stored before those refusals acts as shadow (its verdicts recorded, nothing refunded or
    struck), corroborates nothing and asks no key. A registrant not known (None) is not the
    provider's word."""
    return registered_by == provider


def sampled(
    call_id: str, policy_id: str, version: int, rate: Fraction, seed: str | None = None
) -> bool:
    """Whether a call is selected for a sampled check, reproducibly from its identity and its
    ``seed``.

    The first 8 bytes of sha256(seed, call id, policy id, version) read as a number in [0, 1)
    are compared with the rate: the same call under the same policy version and seed is always
    selected the same way, and about ``rate`` of calls are selected. Rate 0 selects none, rate
    1 selects all. The seed is drawn by the verifying side once the provider has answered, and
    kept with the call's record (so a replay draws the same): from the call id alone, which
    the provider is sent, a provider knew before answering which calls the meaning check would
    see, and answered honestly on those only. A call recorded without one (before seeds, or
    a request given whole) is drawn from its identity alone, as it was.
    """
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    named = f"{call_id}\x00{policy_id}\x00{version}"
    if seed is not None:
        named = f"{seed}\x00{named}"
    digest = hashlib.sha256(named.encode()).digest()
    draw = int.from_bytes(digest[:8], "big")
    # draw / 2**64 < num / den, in integers so no rounding can move the boundary.
    return draw * rate.denominator < rate.numerator * (1 << 64)


def parse_fraction(value: object, what: str, code: str) -> Fraction:
    """A number in [0, 1] from a decimal string ("0.05"), a ratio ("1/20") or a JSON number."""
    try:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError
        # str(float) first, so 0.1 means one tenth rather than the nearest binary fraction.
        result = Fraction(value if isinstance(value, str) else str(value))
    except (ValueError, ZeroDivisionError):
        raise CriteriaError(f"{what} must be a number between 0 and 1.", code=code) from None
    if not 0 <= result <= 1:
        raise CriteriaError(f"{what} must be between 0 and 1; got {value!r}.", code=code)
    return result


def parse_time(value: object, what: str, code: str) -> datetime:
    """An ISO 8601 timestamp with a UTC offset."""
    if not isinstance(value, str):
        raise CriteriaError(f"{what} must be an ISO 8601 timestamp.", code=code)
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise CriteriaError(f"{what} is not an ISO 8601 timestamp: {value!r}.", code=code) from None
    if stamp.tzinfo is None:
        raise CriteriaError(f"{what} needs a UTC offset (for example Z).", code=code)
    return stamp


_FIELDS = {
    "policy", "version", "tool", "mode", "withdrawn_at", "checks", "threshold", "rules",
    "empty_result", "meaning", "clauses", "description", "report_window_hours",
}  # fmt: skip


def register_policy(data: object, contract: Contract) -> Policy:
    """Parse and check a policy document against the contract it governs.

    Refuses (with ``CriteriaError``) a policy for another tool, a declared check that cannot run
    (rules without rules, meaning without a sample rate), a veto naming an undeclared check, and
    any malformed field. Declaring ``schema`` for a contract without an output schema is allowed:
    the stage then judges only the mapping boundary and otherwise does not apply.
    """
    if not isinstance(data, Mapping):
        raise CriteriaError("A policy must be a JSON object.", code=_CODE)
    unknown = set(data) - _FIELDS
    if unknown:
        raise CriteriaError(
            f"A policy has unknown fields: {', '.join(sorted(unknown))}.", code=_CODE
        )
    policy_id, version, tool = data.get("policy"), data.get("version"), data.get("tool")
    if not isinstance(policy_id, str) or not policy_id:
        raise CriteriaError("A policy needs a non-empty string `policy` (its id).", code=_CODE)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CriteriaError("A policy needs a whole-number `version`, at least 1.", code=_CODE)
    if tool != contract.tool:
        raise CriteriaError(
            f"The policy governs tool {tool!r}, but the contract is for {contract.tool!r}.",
            code=_CODE,
        )
    try:
        mode = Mode(data.get("mode", "enforce"))
    except ValueError:
        raise CriteriaError("`mode` must be `enforce` or `shadow`.", code=_CODE) from None
    withdrawn = data.get("withdrawn_at")
    withdrawn_at = None if withdrawn is None else parse_time(withdrawn, "`withdrawn_at`", _CODE)

    checks = data.get("checks")
    if not isinstance(checks, list) or not checks or not all(c in CHECKS for c in checks):
        raise CriteriaError(
            f"`checks` must list the declared checks, from {', '.join(CHECKS)}.", code=_CODE
        )
    declared = frozenset(checks)
    rules = parse_rules(data.get("rules", []))
    if ("quality_rules" in declared) != bool(rules):
        raise CriteriaError(
            "Declare `quality_rules` in `checks` exactly when the policy has `rules`.", code=_CODE
        )
    threshold = parse_fraction(data.get("threshold", 1), "`threshold`", _CODE)
    if threshold == 0:
        raise CriteriaError("`threshold` must be above 0, or every score would pass.", code=_CODE)

    meaning = data.get("meaning")
    meaning_rate: Fraction | None = None
    if ("meaning" in declared) != (meaning is not None):
        raise CriteriaError(
            "Declare `meaning` in `checks` exactly when the policy configures `meaning`.",
            code=_CODE,
        )
    judges: tuple[str, ...] = ()
    quorum = 1
    when = "before_settling"
    if meaning is not None:
        if (
            not isinstance(meaning, Mapping)
            or "sample_rate" not in meaning
            or set(meaning) - {"sample_rate", "judges", "quorum", "when"}
        ):
            raise CriteriaError(
                '`meaning` must be {"sample_rate": RATE, "judges"?: [KEY, …], "quorum"?: K, '
                '"when"?: "before_settling" | "after_answer"}.',
                code=_CODE,
            )
        meaning_rate = parse_fraction(meaning["sample_rate"], "`meaning.sample_rate`", _CODE)
        judges, quorum = _judges(meaning)
        when = _when(meaning, judges)

    hours = data.get("report_window_hours", DEFAULT_REPORT_WINDOW // timedelta(hours=1))
    if (
        isinstance(hours, bool)
        or not isinstance(hours, int)
        or hours < 1
        or hours > MAX_REPORT_WINDOW // timedelta(hours=1)
    ):
        raise CriteriaError(
            "`report_window_hours` (how long a caller may report a bad result) must be a "
            f"whole number of hours from 1 to {MAX_REPORT_WINDOW // timedelta(hours=1)}.",
            code=_CODE,
        )

    return Policy(
        policy_id=policy_id,
        version=version,
        tool=tool,
        mode=mode,
        withdrawn_at=withdrawn_at,
        checks=declared,
        threshold=threshold,
        rules=rules,
        empty_result=_empty_result(data.get("empty_result"), tool),
        meaning_rate=meaning_rate,
        clauses=_clauses(data.get("clauses"), declared, rules),
        report_window=timedelta(hours=hours),
        judges=judges,
        quorum=quorum,
        meaning_when=when,
    )


def _when(meaning: Mapping[str, object], judges: tuple[str, ...]) -> str:
    """When the named judges are asked; judging after the answer needs named judges (a worker
    asks them: there is no judgment handed in whole after the call)."""
    when = meaning.get("when", "before_settling")
    if when not in ("before_settling", "after_answer"):
        raise CriteriaError(
            "`meaning.when` must be `before_settling` (the call waits for its judges) or "
            "`after_answer` (the call is answered at once and judged later).",
            code=_CODE,
        )
    if when == "before_settling" and any(j.startswith("key:") for j in judges):
        raise CriteriaError(
            "A verifier key (`key:<fingerprint>`) cannot judge a call before it settles: its "
            'owner signs a judgment later. Set `meaning.when` to "after_answer".',
            code="MEANING_KEY_JUDGE_NEEDS_AFTER_ANSWER",
        )
    if when == "after_answer" and not judges:
        raise CriteriaError(
            "`meaning.when: after_answer` needs `meaning.judges`: a worker asks the named "
            "judges after the call is answered.",
            code=_CODE,
        )
    return str(when)


def _judges(meaning: Mapping[str, object]) -> tuple[tuple[str, ...], int]:
    """The meaning check's named judges (distinct keys) and its quorum, 1 ≤ k ≤ n."""
    raw = meaning.get("judges", [])
    if (
        not isinstance(raw, list)
        or not all(isinstance(k, str) and 0 < len(k) <= 128 for k in raw)
        or len(set(raw)) != len(raw)
        or len(raw) > 9
    ):
        raise CriteriaError(
            "`meaning.judges` must list at most 9 distinct judge keys (each a model or a "
            "verifier the service knows by that name).",
            code=_CODE,
        )
    judges = tuple(str(k) for k in raw)
    quorum = meaning.get("quorum", 1 if judges else None)
    if quorum is None:
        return judges, 1
    if isinstance(quorum, bool) or not isinstance(quorum, int) or not 1 <= quorum <= len(judges):
        raise CriteriaError(
            "`meaning.quorum` (how many judges must cite a conflict) must be a whole number "
            "from 1 to the number of judges.",
            code=_CODE,
        )
    return judges, quorum


def _empty_result(raw: object, tool: str) -> EmptyResultRule | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) - {"path", "on_empty", "corroboration"}:
        raise CriteriaError(
            '`empty_result` must be {"path": …, "on_empty": …, "corroboration"?: …}.', code=_CODE
        )
    on_empty = raw.get("on_empty", "accept")
    if on_empty not in ("accept", "judge"):
        raise CriteriaError("`empty_result.on_empty` must be `accept` or `judge`.", code=_CODE)
    path = compile_expression(raw.get("path"), what="`empty_result.path`", code=_CODE)
    corroborator = _corroborator(raw.get("corroboration"), tool)
    if corroborator is not None and on_empty != "accept":
        raise CriteriaError(
            "`empty_result.corroboration` needs `on_empty: accept`: under `judge` an empty "
            "answer is judged by the rules and never corroborated.",
            code=_CODE,
        )
    return EmptyResultRule(path=path, on_empty=on_empty, corroborator=corroborator)


_CORROBORATION_FIELDS = {"tool", "paid_by", "max_price_minor", "path", "arguments"}


def _corroborator(raw: object, tool: str) -> Corroborator | None:
    """The declared corroboration source: another tool, who pays and the most a call costs."""
    if raw is None:
        return None
    shape = (
        '`empty_result.corroboration` must be {"tool": NAME, "paid_by": "provider", '
        '"max_price_minor": N, "path"?: EXPR, "arguments"?: EXPR}'
    )
    if not isinstance(raw, Mapping) or set(raw) - _CORROBORATION_FIELDS:
        raise CriteriaError(shape + ".", code=_CODE)
    other = raw.get("tool")
    if not isinstance(other, str) or not other:
        raise CriteriaError(shape + ": `tool` names the corroborating tool.", code=_CODE)
    if other == tool:
        raise CriteriaError(
            "`empty_result.corroboration.tool` must be another tool: a tool cannot corroborate "
            "itself.",
            code=_CODE,
        )
    paid_by = raw.get("paid_by")
    if paid_by not in CORROBORATION_PAYERS:
        raise CriteriaError(
            "`empty_result.corroboration.paid_by` must be `provider`: the policy's provider pays "
            "for the corroborating call, so a caller is never charged beyond the listed price.",
            code=_CODE,
        )
    bound = raw.get("max_price_minor")
    if isinstance(bound, bool) or not isinstance(bound, int) or not 0 <= bound < 2**53:
        raise CriteriaError(
            "`empty_result.corroboration.max_price_minor` (the most one corroborating call may "
            "cost its payer) must be a whole number of minor units, 0 or more.",
            code=_CODE,
        )
    where = raw.get("path")
    arguments = raw.get("arguments")
    return Corroborator(
        tool=other,
        max_price_minor=bound,
        paid_by=str(paid_by),
        path=None
        if where is None
        else compile_expression(where, what="`empty_result.corroboration.path`", code=_CODE),
        arguments=None
        if arguments is None
        else compile_expression(
            arguments, what="`empty_result.corroboration.arguments`", code=_CODE
        ),
    )


def _clauses(raw: object, declared: frozenset[str], rules: tuple[Rule, ...]) -> tuple[Clause, ...]:
    if not isinstance(raw, list) or not raw:
        # Like an empty AllOf: a policy with no clauses would decide nothing, so it is refused.
        raise CriteriaError("`clauses` must be a non-empty list.", code=_CLAUSE)
    names = set(declared) | ({r.name for r in rules} if "quality_rules" in declared else set())
    out = []
    for i, item in enumerate(raw):
        label = f"clause {i}"
        if not isinstance(item, Mapping):
            raise CriteriaError(f"{label} must be a JSON object.", code=_CLAUSE)
        match, verdict = item.get("match"), item.get("verdict")
        if match not in _MATCHES:
            raise CriteriaError(
                f"{label}: `match` must be one of {', '.join(_MATCHES)}.", code=_CLAUSE
            )
        if verdict not in _CLAUSE_VERDICTS:
            raise CriteriaError(
                f"{label}: `verdict` must be one of {', '.join(_CLAUSE_VERDICTS)}.", code=_CLAUSE
            )
        allowed = {"match", "verdict"} | {
            "veto": {"check"},
            "failures_at_least": {"count"},
            "failure_fraction_at_least": {"fraction"},
            "votes_fewer_than": {"count"},
        }[match]
        if set(item) - allowed:
            raise CriteriaError(
                f"{label}: unknown fields {', '.join(sorted(set(item) - allowed))}.", code=_CLAUSE
            )
        clause = Clause(match=match, verdict=verdict)
        if match == "veto":
            check = item.get("check")
            if not isinstance(check, str) or check not in names:
                raise CriteriaError(
                    f"{label}: a veto must name a declared check or rule; {check!r} is neither.",
                    code=_CLAUSE,
                )
            clause = Clause(match=match, verdict=verdict, check=check)
        elif match == "failure_fraction_at_least":
            fraction = parse_fraction(item.get("fraction"), f"{label}: `fraction`", _CLAUSE)
            if fraction == 0:
                raise CriteriaError(f"{label}: `fraction` must be above 0.", code=_CLAUSE)
            clause = Clause(match=match, verdict=verdict, fraction=fraction)
        else:
            count = item.get("count")
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise CriteriaError(
                    f"{label}: `count` must be a whole number, at least 1.", code=_CLAUSE
                )
            clause = Clause(match=match, verdict=verdict, count=count)
        out.append(clause)
    return tuple(out)
