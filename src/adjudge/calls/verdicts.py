"""Call verdicts, the policy's clause fold, and each verdict's payment decision and strike.

The effects are the spec's table, for an active, enforcing policy:

=================  ==========  ======
verdict            payment     strike
=================  ==========  ======
PASS               settle      no
FAIL               refund      yes
EMPTY_CONFIRMED    settle      no
EMPTY_UNVERIFIED   settle      no
MISAPPLIED         void        no
DEGRADED           settle      no
SKIPPED            settle      no
UNVERIFIED         settle      no     (no policy at all: settles without claiming a pass)
=================  ==========  ======

A policy in shadow mode computes and records its verdict but its effect is settle, no strike;
so does an enforcing one that is not its provider's own word (``policy.providers_own``).
A withdrawn policy cannot penalize: its calls are DEGRADED. "Settle" means the call may be
charged and proceed to payment collection, not that the provider has the money.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adjudge.calls.outcomes import DETERMINISTIC, CheckRow, Outcome
from adjudge.calls.policy import Clause, Mode, Policy

__all__ = ["EFFECTS", "CallVerdict", "Effect", "Payment", "apply_clauses", "effect_of"]


class CallVerdict(enum.StrEnum):
    """What a call's verification concluded."""

    PASS = "PASS"  # met the policy
    FAIL = "FAIL"  # evidence shows the provider broke the tool contract
    EMPTY_CONFIRMED = "EMPTY_CONFIRMED"  # empty, corroborated as the right answer
    EMPTY_UNVERIFIED = "EMPTY_UNVERIFIED"  # empty, without independent corroboration
    MISAPPLIED = "MISAPPLIED"  # a check did not fit the response or request: the policy is wrong
    DEGRADED = "DEGRADED"  # a needed check was unavailable, or the policy was withdrawn
    SKIPPED = "SKIPPED"  # the sampled check was not selected
    UNVERIFIED = "UNVERIFIED"  # no decision policy: settles without claiming a pass


class Payment(enum.StrEnum):
    """What happens to the call's reservation."""

    SETTLE = "settle"  # the call may be charged and proceed to payment collection
    REFUND = "refund"  # the reservation goes back to the caller
    VOID = "void"  # no charge and no provider credit


# The spec's table: verdict -> (payment decision, provider strike) under an enforcing policy.
EFFECTS: dict[CallVerdict, tuple[Payment, bool]] = {
    CallVerdict.PASS: (Payment.SETTLE, False),
    CallVerdict.FAIL: (Payment.REFUND, True),
    CallVerdict.EMPTY_CONFIRMED: (Payment.SETTLE, False),
    CallVerdict.EMPTY_UNVERIFIED: (Payment.SETTLE, False),
    CallVerdict.MISAPPLIED: (Payment.VOID, False),
    CallVerdict.DEGRADED: (Payment.SETTLE, False),
    CallVerdict.SKIPPED: (Payment.SETTLE, False),
    CallVerdict.UNVERIFIED: (Payment.SETTLE, False),
}


@dataclass(frozen=True)
class Effect:
    """The payment decision and strike a call's verdict carries.

    ``enforced`` is False for a shadow policy, one acting as shadow, a withdrawn policy and a
    call with no policy: such a call never refunds on its verdict, never strikes, and never
    enters a quality window.
    ``table_payment`` / ``table_strike`` are what the verdict would carry under an enforcing
    policy, recorded so a shadow policy can be evaluated.
    """

    payment: Payment
    strike: bool
    enforced: bool
    table_payment: Payment
    table_strike: bool

    def to_dict(self) -> dict[str, Any]:
        """The effect's wire shape."""
        return {
            "payment": self.payment.value,
            "strike": self.strike,
            "enforced": self.enforced,
            "table_payment": self.table_payment.value,
            "table_strike": self.table_strike,
        }


def effect_of(
    verdict: CallVerdict, policy: Policy | None, *, withdrawn: bool, as_shadow: bool = False
) -> Effect:
    """The effect of ``verdict`` under ``policy`` (``None``: no policy, UNVERIFIED);
    ``as_shadow``: the policy acts as shadow whatever its mode (not its provider's own word)."""
    payment, strike = EFFECTS[verdict]
    if policy is None or withdrawn or as_shadow or policy.mode is Mode.SHADOW:
        # Shadow policies record but never refund or strike; withdrawn ones cannot penalize.
        return Effect(Payment.SETTLE, False, False, payment, strike)
    return Effect(payment, strike, True, payment, strike)


# The stage rows that vote (a rule row can be vetoed by name but votes through its stage).
_VOTING_STAGES = frozenset({"schema", "quality_rules", "meaning"})


def _matches(clause: Clause, rows: Sequence[CheckRow], votes: Sequence[CheckRow]) -> bool:
    failures = sum(1 for r in votes if r.outcome is Outcome.FAIL)
    if clause.match == "veto":
        return any(r.name == clause.check and r.outcome is Outcome.FAIL for r in rows)
    if clause.match == "failures_at_least":
        assert clause.count is not None
        return failures >= clause.count
    if clause.match == "failure_fraction_at_least":
        assert clause.fraction is not None
        # No votes, no fraction: the clause cannot match on nothing.
        return bool(votes) and failures * clause.fraction.denominator >= (
            clause.fraction.numerator * len(votes)
        )
    assert clause.count is not None  # votes_fewer_than
    return len(votes) < clause.count


def apply_clauses(policy: Policy, rows: Sequence[CheckRow]) -> tuple[CallVerdict, str]:
    """Fold the declared checks' votes through the policy's clauses; say what decided.

    (1) Only declared stage rows with a pass or fail vote. (2) The first matching clause gives
    the verdict; if none matches the policy tolerated what it saw, which reads as PASS. (3) A
    PASS then needs at least one deterministic pass vote (a model cannot carry a call to PASS;
    nothing run is not a pass), else DEGRADED. (4) A PASS with a needed check unavailable is
    DEGRADED, as is one whose meaning check is still pending (judged after the answer), and with
    a sampled check not selected is SKIPPED.
    """
    declared = [r for r in rows if r.declared]
    votes = [r for r in declared if r.stage in _VOTING_STAGES and r.outcome.is_vote]  # (1)
    for clause in policy.clauses:  # (2)
        if _matches(clause, declared, votes):
            verdict, decided = CallVerdict(clause.verdict), f"clause: {clause.describe()}"
            break
    else:
        verdict, decided = CallVerdict.PASS, "no clause matched"
    if verdict is not CallVerdict.PASS:
        return verdict, decided
    if not any(r.authority == DETERMINISTIC and r.outcome is Outcome.PASS for r in votes):  # (3)
        return CallVerdict.DEGRADED, f"{decided}; but no deterministic check passed"
    if any(r.outcome is Outcome.UNAVAILABLE for r in declared):  # (4)
        return CallVerdict.DEGRADED, f"{decided}; but a needed check was unavailable"
    if any(r.outcome is Outcome.PENDING for r in declared):
        return CallVerdict.DEGRADED, f"{decided}; but the meaning check is pending"
    if any(r.outcome is Outcome.SKIPPED for r in declared):
        return CallVerdict.SKIPPED, f"{decided}; the sampled check was not selected"
    return CallVerdict.PASS, decided
