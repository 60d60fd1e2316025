"""Provider quality: the quality window, the observed failure rate, and penalty proposals.

Only PASS and FAIL under an enforcing policy enter a provider's quality window. The observed
failure rate is FAIL / (PASS + FAIL); no observations means no rate (``None``, never 0). Request
and system errors are counted apart and never enter the rate.

A penalty against stake is only *proposed*, and only when (1) the window holds at least the
sample gate of observations, (2) the observed rate is above the provider's declared failure
rate, and (3) a one-sided exact binomial test rejects "the true rate is at most the declared
rate" at the stated confidence: P(X >= failures | n, declared rate) <= 1 - confidence. The tail
is summed exactly in integers (``math.comb``), so no floating-point rounding decides a penalty,
and summing stops as soon as the decision is certain.

A proposal becomes enforceable after a delay (72 hours by default) and lapses if not enforced
within a grace period after that (7 days by default); it can be withdrawn until it is enforced.
Every time is passed in.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from adjudge.calls.verdicts import CallVerdict
from adjudge.calls.verify import CallResult
from adjudge.errors import CriteriaError, TransitionError

__all__ = [
    "ENFORCEMENT_DELAY",
    "GRACE_PERIOD",
    "MAX_WINDOW",
    "WINDOW_COUNTS",
    "Observation",
    "PenaltyAssessment",
    "PenaltyProposal",
    "ProposalStatus",
    "QualityTerms",
    "QualityWindow",
    "TailTest",
    "assess_penalty",
    "binomial_tail_test",
    "binomial_upper_tail",
    "counted_as",
    "enforce",
    "enters_window",
    "observation_from_record",
    "observation_of",
    "parse_terms",
    "quality_window",
    "withdraw",
]

ENFORCEMENT_DELAY = timedelta(hours=72)
GRACE_PERIOD = timedelta(days=7)


@dataclass(frozen=True)
class Observation:
    """What one call contributes to its provider's record."""

    provider: str
    call_id: str
    at: datetime
    verdict: CallVerdict | None  # None for a request or system error
    enforced: bool  # False under a shadow or withdrawn policy, or with no policy
    error_kind: str | None = None


def observation_of(result: CallResult) -> Observation:
    """The observation a verified call contributes."""
    return Observation(
        provider=result.provider,
        call_id=result.call_id,
        at=result.at,
        verdict=result.verdict,
        enforced=result.effect.enforced,
        error_kind=None if result.error is None else result.error.kind,
    )


#: The longest quality window a provider declares (as a window read is asked for): a window
#: reaching back before year 1 could not be placed on the calendar, and every call the provider
#: answered failed in its commit, its price reserved for good.
MAX_WINDOW = timedelta(days=3650)


@dataclass(frozen=True)
class QualityTerms:
    """A provider's declared quality terms and the test's parameters."""

    declared_failure_rate: Fraction
    sample_gate: int  # minimum PASS + FAIL observations before any proposal
    window: timedelta
    confidence: Fraction = Fraction(95, 100)
    penalty_minor: int = 0  # the stake penalty proposed, in integer minor units

    def __post_init__(self) -> None:
        if not 0 <= self.declared_failure_rate <= 1:
            raise CriteriaError(
                "The declared failure rate must be between 0 and 1.", code="QUALITY_TERMS_INVALID"
            )
        if self.sample_gate < 1:
            raise CriteriaError(
                "The sample gate must be at least 1 observation.", code="QUALITY_TERMS_INVALID"
            )
        if not timedelta(0) < self.window <= MAX_WINDOW:
            raise CriteriaError(
                f"The quality window is a positive duration of at most {MAX_WINDOW.days} days.",
                code="QUALITY_TERMS_INVALID",
            )
        if not 0 < self.confidence < 1:
            raise CriteriaError(
                "The confidence must be strictly between 0 and 1.", code="QUALITY_TERMS_INVALID"
            )
        if self.penalty_minor < 0:
            raise CriteriaError(
                "The penalty must be 0 or more minor units.", code="QUALITY_TERMS_INVALID"
            )


@dataclass(frozen=True)
class QualityWindow:
    """A provider's observations in ``(start, end]``."""

    provider: str
    start: datetime
    end: datetime
    passes: int = 0
    fails: int = 0
    not_counted: int = 0  # other verdicts, and any verdict not under an enforcing policy
    request_errors: int = 0
    system_errors: int = 0

    @property
    def observations(self) -> int:
        """PASS + FAIL: the calls the rate is measured on."""
        return self.passes + self.fails

    @property
    def failure_rate(self) -> Fraction | None:
        """FAIL / (PASS + FAIL); ``None`` when there are no observations (no rate, not 0)."""
        if self.observations == 0:
            return None
        return Fraction(self.fails, self.observations)

    def to_dict(self) -> dict[str, Any]:
        """The window's wire shape; the rate as an exact ratio string, or null."""
        rate = self.failure_rate
        return {
            "provider": self.provider,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "pass": self.passes,
            "fail": self.fails,
            "not_counted": self.not_counted,
            "request_errors": self.request_errors,
            "system_errors": self.system_errors,
            "failure_rate": None if rate is None else f"{rate.numerator}/{rate.denominator}",
        }


def quality_window(
    observations: Iterable[Observation], provider: str, at: datetime, window: timedelta
) -> QualityWindow:
    """Count ``provider``'s observations in the window ending at ``at`` (inclusive)."""
    start = at - window
    counts = dict.fromkeys(WINDOW_COUNTS, 0)
    for obs in observations:
        if obs.provider != provider or not start < obs.at <= at:
            continue
        counts[counted_as(obs.verdict, obs.enforced, obs.error_kind)] += 1
    return QualityWindow(provider, start, at, **counts)


#: The counts a quality window keeps, as :class:`QualityWindow` names them.
WINDOW_COUNTS = ("passes", "fails", "not_counted", "request_errors", "system_errors")


def counted_as(verdict: CallVerdict | str | None, enforced: bool, error_kind: str | None) -> str:
    """Which of :data:`WINDOW_COUNTS` one observation adds to: the one rule both a recount and
    the store's running counts use, so the two cannot drift apart."""
    if error_kind is not None:
        return "request_errors" if error_kind == "request_error" else "system_errors"
    if enforced and verdict == CallVerdict.PASS:
        return "passes"
    if enforced and verdict == CallVerdict.FAIL:
        return "fails"
    return "not_counted"


def enters_window(source: str, caller: str, provider: str) -> bool:
    """Whether a call counts in its provider's quality window: only a call adjudge forwarded
    itself (``source`` ``gateway``; a reported one is a caller's word), and not one its provider
    made of its own tool, whose passes would only dilute the rate it is judged on. The one rule
    the running counts, the daily counts and a recount all apply."""
    return source == "gateway" and caller != provider


def binomial_upper_tail(n: int, k: int, p: Fraction) -> Fraction:
    """P(X >= k) for X ~ Binomial(n, p), exactly.

    With p = a/b the tail is sum_{i>=k} C(n,i) a^i (b-a)^(n-i) / b^n; each term comes from the
    last by an exact integer step, so the sum is an integer and only the final ratio is a fraction.
    """
    if not 0 <= p <= 1 or n < 0:
        raise ValueError("need 0 <= p <= 1 and n >= 0")
    if k <= 0:
        return Fraction(1)
    if k > n:
        return Fraction(0)
    a, b = p.numerator, p.denominator
    c = b - a
    if c == 0:  # p == 1: every trial fails
        return Fraction(1)
    term = math.comb(n, k) * a**k * c ** (n - k)
    total = term
    for i in range(k, n):
        # C(n,i+1) a^(i+1) c^(n-i-1) = C(n,i) a^i c^(n-i) * (n-i) a / ((i+1) c), exactly.
        term = term * (n - i) * a // ((i + 1) * c)
        total += term
        if term == 0:
            break
    return Fraction(total, b**n)


@dataclass(frozen=True)
class TailTest:
    """The one-sided binomial test, decided exactly; the p-value known to lie in [low, high].

    ``rejected`` is True when P(X >= k) <= alpha: the declared rate does not explain the
    failures. The bounds are floats for reading only; the decision never rounds.
    """

    rejected: bool
    p_low: float
    p_high: float


#: Past this many bits in b^n (the exact sum's scale) the tail is first estimated in floating
#: point, and summed exactly only when the estimate cannot tell the decision (see
#: :func:`binomial_tail_test`). Below it the exact sum costs microseconds.
EXACT_BITS = 20_000
#: The estimate's margin in the log of the tail, relative to the size of the logs it adds up
#: (:func:`_log_tail`): 450 times the double's rounding of that size (``math.lgamma`` is off by
#: at most 1.6 units of it against log n! summed exactly, for n up to 200,000).
_LOG_MARGIN = 1e-13
#: The most terms the estimate sums before it leaves the decision to the exact sum.
_MAX_TERMS = 200_000


def binomial_tail_test(n: int, k: int, p: Fraction, alpha: Fraction) -> TailTest:
    """Decide P(X >= k) <= alpha for X ~ Binomial(n, p) exactly, stopping once it is known.

    The terms are summed in integers (as in :func:`binomial_upper_tail`) against alpha * b^n.
    Summing stops as soon as the partial sum exceeds that limit (not rejected), or the partial
    sum plus a bound on the rest is within it (rejected). Past the mode each term is at most the
    ratio r of the previous one, and r only shrinks, so the rest after term T is at most
    T * r / (1 - r). A large window therefore costs a few terms, not one per observation.

    Each integer has about n * log2(b) bits, so a busy provider's window made each term a
    multiplication of megabits: 30-320 ms a test at 100,000 observations, run in the commit of
    each of its calls. Past :data:`EXACT_BITS` the tail's log is first estimated in floating
    point with a margin far wider than its rounding; the estimate decides only when the whole
    margin lies on one side of alpha, and the exact sum decides the rest (a p-value within
    a millionth of alpha's size at 100,000 observations, which the next observation moves
    away from).
    """
    if not 0 <= p <= 1 or n < 0 or not 0 <= alpha <= 1:
        raise ValueError("need 0 <= p <= 1, 0 <= alpha <= 1 and n >= 0")
    if k <= 0 or (p == 1 and k <= n):
        return TailTest(alpha >= 1, 1.0, 1.0)
    if k > n or p == 0:
        return TailTest(True, 0.0, 0.0)
    if alpha > 0 and n * p.denominator.bit_length() > EXACT_BITS:
        estimated = _log_tail(n, k, p)
        if estimated is not None:
            log_tail, margin = estimated
            log_alpha = math.log(alpha.numerator) - math.log(alpha.denominator)
            margin += 1e-12 * (1 + abs(log_alpha))
            if abs(log_tail - log_alpha) > margin:
                low, high = _exp(log_tail - margin), _exp(log_tail + margin)
                return TailTest(log_tail < log_alpha, low, high)
    return _exact_tail_test(n, k, p, alpha)


def _exp(x: float) -> float:
    """e^x as a probability read by a person: at most 1, and 0 where it underflows."""
    return 1.0 if x >= 0 else math.exp(x)


def _log_tail(n: int, k: int, p: Fraction) -> tuple[float, float] | None:
    """ln P(X >= k) in floating point and the margin it is known within; None where the
    estimate does not apply (k before the mode, where the terms first grow) or did not settle
    within :data:`_MAX_TERMS` terms.

    The first term's log is ln C(n, k) + k ln p + (n - k) ln q from ``math.lgamma``: each of
    its five parts is off by a few units in the last place of its own size, so the margin is
    :data:`_LOG_MARGIN` times the sum of their sizes. Each later term is the last times the
    ratio (n - i) p / ((i + 1) q) <= 1, so the sum relative to the first term is between 1 and
    n + 1, its rounding a few units in the last place a term, and the rest after the last term
    summed at most a 1e-16 part of it (bounded geometrically, as in the exact sum).
    """
    pf = p.numerator / p.denominator
    qf = (p.denominator - p.numerator) / p.denominator
    if not 0 < pf < 1 or (n - k) * pf > (k + 1) * qf:  # not yet past the mode
        return None
    # Each log within a few units of its own last place, however near 0 or 1 p is.
    lp = math.log1p(-qf) if pf > 0.5 else math.log(pf)
    lq = math.log1p(-pf) if pf < 0.5 else math.log(qf)
    parts = (
        math.lgamma(n + 1),
        -math.lgamma(k + 1),
        -math.lgamma(n - k + 1),
        k * lp,
        (n - k) * lq,
    )
    first = math.fsum(parts)
    total, term = 1.0, 1.0
    for i in range(k, min(n, k + _MAX_TERMS)):
        ratio = (n - i) * pf / ((i + 1) * qf)
        term *= ratio
        total += term
        if ratio < 1 and term * ratio / (1 - ratio) <= total * 1e-16:
            break
    else:
        if k + _MAX_TERMS < n:
            return None
    size = sum(abs(x) for x in parts) + 1.0
    terms = min(n, k + _MAX_TERMS) - k + 1
    margin = _LOG_MARGIN * size + 1e-13 * terms + 1e-15
    return first + math.log(total), margin


def _exact_tail_test(n: int, k: int, p: Fraction, alpha: Fraction) -> TailTest:
    """:func:`binomial_tail_test` summed in integers (0 < k <= n, 0 < p < 1)."""
    a, b = p.numerator, p.denominator
    c = b - a
    whole = b**n
    limit = alpha.numerator * whole  # total / whole <= alpha  <=>  total * alpha.den <= limit
    term = math.comb(n, k) * a**k * c ** (n - k)
    total = term
    for i in range(k, n):
        if total * alpha.denominator > limit:
            return TailTest(False, total / whole, 1.0)
        r_num, r_den = (n - i) * a, (i + 1) * c
        if r_num < r_den:
            rest = term * r_num // (r_den - r_num) + 1
            if (total + rest) * alpha.denominator <= limit:
                return TailTest(True, total / whole, min(1.0, (total + rest) / whole))
        term = term * r_num // r_den
        total += term
    exact = total / whole
    return TailTest(total * alpha.denominator <= limit, exact, exact)


def _a(status: ProposalStatus) -> str:
    """The status with its article, as a sentence starts: "An enforceable", "A pending"."""
    return ("An " if status.value[0] in "aeiou" else "A ") + status.value


class ProposalStatus(enum.StrEnum):
    """Where a penalty proposal stands at a given time."""

    PENDING = "pending"  # proposed; the delay has not passed (the provider can dispute)
    ENFORCEABLE = "enforceable"  # the delay has passed and the grace period has not
    ENFORCED = "enforced"
    LAPSED = "lapsed"  # not enforced within the grace period
    WITHDRAWN = "withdrawn"


@dataclass(frozen=True)
class PenaltyProposal:
    """A proposal to penalize a provider's stake; only a proposal until enforced."""

    provider: str
    proposed_at: datetime
    enforceable_at: datetime
    lapses_at: datetime
    observations: int
    failures: int
    declared_failure_rate: Fraction
    p_value: float  # an upper bound on P(X >= failures | n, declared rate), for reading
    confidence: Fraction
    penalty_minor: int
    withdrawn_at: datetime | None = None
    enforced_at: datetime | None = None

    def status(self, at: datetime) -> ProposalStatus:
        """The proposal's status at ``at``."""
        if self.withdrawn_at is not None and at >= self.withdrawn_at:
            return ProposalStatus.WITHDRAWN
        if self.enforced_at is not None and at >= self.enforced_at:
            return ProposalStatus.ENFORCED
        if at < self.enforceable_at:
            return ProposalStatus.PENDING
        if at < self.lapses_at:
            return ProposalStatus.ENFORCEABLE
        return ProposalStatus.LAPSED

    def to_dict(self) -> dict[str, Any]:
        """The proposal's wire shape (exact ratios as strings, money in minor units)."""
        return {
            "provider": self.provider,
            "proposed_at": self.proposed_at.isoformat(),
            "enforceable_at": self.enforceable_at.isoformat(),
            "lapses_at": self.lapses_at.isoformat(),
            "observations": self.observations,
            "failures": self.failures,
            "declared_failure_rate": str(self.declared_failure_rate),
            "p_value_at_most": f"{self.p_value:.6g}",
            "confidence": str(self.confidence),
            "penalty_minor": self.penalty_minor,
        }


def withdraw(proposal: PenaltyProposal, at: datetime) -> PenaltyProposal:
    """Withdraw a pending or enforceable proposal; refuse one enforced, lapsed or withdrawn."""
    status = proposal.status(at)
    if status not in (ProposalStatus.PENDING, ProposalStatus.ENFORCEABLE):
        raise TransitionError(
            f"{_a(status)} proposal cannot be withdrawn.", code="PROPOSAL_NOT_WITHDRAWABLE"
        )
    return replace(proposal, withdrawn_at=at)


def enforce(proposal: PenaltyProposal, at: datetime) -> PenaltyProposal:
    """Enforce an enforceable proposal; refuse one still pending, lapsed, withdrawn or enforced."""
    status = proposal.status(at)
    if status is not ProposalStatus.ENFORCEABLE:
        raise TransitionError(
            f"{_a(status)} proposal cannot be enforced.", code="PROPOSAL_NOT_ENFORCEABLE"
        )
    return replace(proposal, enforced_at=at)


@dataclass(frozen=True)
class PenaltyAssessment:
    """Whether a window supports a penalty proposal, and why."""

    window: QualityWindow
    reason: str
    test: TailTest | None = None
    proposal: PenaltyProposal | None = None


def assess_penalty(
    window: QualityWindow,
    terms: QualityTerms,
    at: datetime,
    *,
    delay: timedelta = ENFORCEMENT_DELAY,
    grace: timedelta = GRACE_PERIOD,
) -> PenaltyAssessment:
    """(1) the sample gate, (2) rate above declared, (3) the exact one-sided binomial test."""
    n, k = window.observations, window.fails
    if n < terms.sample_gate:  # (1)
        return PenaltyAssessment(
            window, f"{n} observation(s); the sample gate is {terms.sample_gate}"
        )
    rate = window.failure_rate
    assert rate is not None  # n >= sample_gate >= 1
    if rate <= terms.declared_failure_rate:  # (2)
        return PenaltyAssessment(
            window, f"observed rate {rate} is not above the declared {terms.declared_failure_rate}"
        )
    test = binomial_tail_test(n, k, terms.declared_failure_rate, 1 - terms.confidence)  # (3)
    if not test.rejected:
        return PenaltyAssessment(
            window,
            f"observed rate {rate} is above the declared {terms.declared_failure_rate}, but not "
            f"at {terms.confidence} confidence (p >= {test.p_low:.4g})",
            test,
        )
    proposal = PenaltyProposal(
        provider=window.provider,
        proposed_at=at,
        enforceable_at=at + delay,
        lapses_at=at + delay + grace,
        observations=n,
        failures=k,
        declared_failure_rate=terms.declared_failure_rate,
        p_value=test.p_high,
        confidence=terms.confidence,
        penalty_minor=terms.penalty_minor,
    )
    return PenaltyAssessment(
        window,
        f"observed rate {rate} is above the declared {terms.declared_failure_rate} at "
        f"{terms.confidence} confidence (p <= {test.p_high:.4g})",
        test,
        proposal,
    )


def observation_from_record(record: object) -> Observation:
    """An observation from a call record as ``CallResult.to_dict`` writes it (a log line)."""
    if not isinstance(record, dict):
        raise CriteriaError(
            "A call record must be a JSON object.",
            code="CALL_LOG_INVALID",
        )
    try:
        verdict = record.get("verdict")
        error = record.get("error")
        at = datetime.fromisoformat(record["at"])
        if at.tzinfo is None:
            raise ValueError("no UTC offset")
        return Observation(
            provider=str(record["provider"]),
            call_id=str(record["call_id"]),
            at=at,
            verdict=None if verdict is None else CallVerdict(verdict),
            enforced=bool(record.get("effect", {}).get("enforced", False)),
            error_kind=None if error is None else str(error.get("kind")),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CriteriaError(
            f"A call record is missing or has a bad field: {exc}", code="CALL_LOG_INVALID"
        ) from None


def parse_terms(record: object) -> QualityTerms:
    """A provider's terms from a log line ``{"type": "provider", "provider", …}``.

    Fields: ``declared_failure_rate`` (a ratio or decimal string), ``sample_gate``,
    ``window_days``, and optionally ``confidence`` (default 0.95) and ``penalty_minor``.
    """
    code = "CALL_LOG_INVALID"
    if not isinstance(record, dict):
        raise CriteriaError("A provider record must be a JSON object.", code=code)
    try:
        gate = record["sample_gate"]
        days = record["window_days"]
        penalty = record.get("penalty_minor", 0)
        for value in (gate, days, penalty):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError("sample_gate, window_days and penalty_minor are whole numbers")
        return QualityTerms(
            declared_failure_rate=Fraction(str(record["declared_failure_rate"])),
            sample_gate=gate,
            window=timedelta(days=days),
            confidence=Fraction(str(record.get("confidence", "0.95"))),
            penalty_minor=penalty,
        )
    except (KeyError, ValueError, ZeroDivisionError, OverflowError) as exc:
        raise CriteriaError(f"A provider record has a bad field: {exc}", code=code) from None
