"""The call's check rows as kernel checks (spec 002), and the kernel determination of a call.

Every call check is also a kernel check: a :class:`adjudge.kernel.Check` with a kernel verdict,
the authority that decided it (``deterministic`` for the schema and the rules, ``semantic`` for
the meaning check, ``imported`` for an independent source's corroboration) and the evidence it
read (the response digest, plus the quote hashes a cited conflict relied on).

Outcome -> kernel verdict, and why:

- ``pass`` -> PASS and ``fail`` -> FAIL: the check judged the data (a semantic FAIL only
  arises from a cited conflict, the one semantic outcome the kernel routes to FAIL);
- ``misapplied`` -> UNKNOWN: the check ran and could not judge;
- ``no_conflict`` and ``uncited`` -> UNKNOWN: the kernel's routing sends every semantic outcome
  other than a cited conflict to UNKNOWN (a model never says yes);
- ``not_applicable``, ``not_run``, ``skipped``, ``unavailable`` -> NOT_RUN: nothing was judged.

Only ``pass`` maps to PASS, so a check that did not run is never shown as passed; and a
``pass`` from a model is read as UNKNOWN, as the kernel's routing table has no PASS for one.

The two verdicts of a call answer different questions. The kernel's fold over these checks
(with the oracle's integrity check) says what the evidence establishes under the trust rules;
the call's own verdict, decided by its policy's clauses (``verdicts.apply_clauses``), says how
the call is paid. :func:`determine_call` keeps both: the fold is the determination's verdict,
and the policy's verdict and payment are recorded beside it as its policy decision, signed
with it and never folded into it.

One thing the fold does read from the call: whether any decision policy ran. A call with no
policy is UNVERIFIED, and its shape evidence alone must never headline a PASS, so its
determination carries one more check, ``decision_policy``, NOT_RUN: nothing decided the call
passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final, Literal

from adjudge.calls.outcomes import DETERMINISTIC, IMPORTED, SEMANTIC, CheckRow, Outcome
from adjudge.calls.policy import Policy
from adjudge.calls.verdicts import CallVerdict
from adjudge.calls.verify import CallResult
from adjudge.digests import is_digest
from adjudge.errors import CriteriaError
from adjudge.kernel import DEFAULT_POLICY, Authority, Check, Determination, TrustPolicy, Verdict
from adjudge.kernel import determine as kernel_determine
from adjudge.kernel.determination import PolicyValue
from adjudge.kernel.oracle import Record, integrity
from adjudge.kernel.verdicts import format_time

__all__ = [
    "AUTHORITY",
    "KERNEL_VERDICT",
    "NO_POLICY_CHECK",
    "call_decision",
    "determine_call",
    "determine_upheld_report",
    "kernel_check",
    "kernel_checks",
    "kernel_verdict",
]

KERNEL_VERDICT: Final[Mapping[Outcome, Verdict]] = {
    Outcome.PASS: Verdict.PASS,
    Outcome.FAIL: Verdict.FAIL,
    Outcome.MISAPPLIED: Verdict.UNKNOWN,
    Outcome.NO_CONFLICT: Verdict.UNKNOWN,
    Outcome.UNCITED: Verdict.UNKNOWN,
    Outcome.NOT_APPLICABLE: Verdict.NOT_RUN,
    Outcome.NOT_RUN: Verdict.NOT_RUN,
    Outcome.SKIPPED: Verdict.NOT_RUN,
    Outcome.UNAVAILABLE: Verdict.NOT_RUN,
    Outcome.PENDING: Verdict.NOT_RUN,
}

#: A row's authority (the record's string) as the kernel's :class:`Authority`.
AUTHORITY: Final[Mapping[str, Authority]] = {
    DETERMINISTIC: Authority.DETERMINISTIC,
    SEMANTIC: Authority.SEMANTIC,
    IMPORTED: Authority.IMPORTED,
    Authority.HUMAN.value: Authority.HUMAN,
}


def kernel_verdict(outcome: Outcome, authority: Authority) -> Verdict:
    """The kernel verdict of one outcome decided by ``authority``: PASS only for a judged pass.

    A model's pass is UNKNOWN (the kernel's routing table has no PASS for a model). Every other
    authority's PASS stands here; whether it can carry a set is the trust policy's question.
    """
    verdict = KERNEL_VERDICT[outcome]
    if verdict is Verdict.PASS and authority is Authority.SEMANTIC:
        return Verdict.UNKNOWN
    return verdict


def _authority(row: CheckRow) -> Authority:
    try:
        return AUTHORITY[row.authority]
    except KeyError:
        raise CriteriaError(
            f"The check {row.name!r} names the authority {row.authority!r}; a call check is "
            f"decided by one of {', '.join(sorted(AUTHORITY))}.",
            code="CALL_ROW_INVALID",
        ) from None


def _reason(row: CheckRow) -> str:
    where = f" at {row.path}" if row.path and row.path not in row.reason else ""
    text = f"{row.stage} check {row.outcome.value}{where}"
    if row.reason:
        text += f": {row.reason}"
    if row.stage == "judge":
        text += " (one judge's vote, counted through the meaning check's quorum)"
    elif not row.declared:
        text += " (recorded; the call's policy does not count it)"
    return text


def _require_digest(value: str, what: str) -> str:
    if not is_digest(value):
        raise CriteriaError(
            f"The {what} {value!r} is not of the form sha256:<64 lowercase hex>.",
            code="DIGEST_INVALID",
        )
    return value


def kernel_check(row: CheckRow, response_digest: str) -> Check:
    """One call row as a kernel check over the response with ``response_digest``.

    The evidence is the response digest, then the quote hashes a cited conflict relied on.
    Refuses a row whose authority is not a kernel authority (``CALL_ROW_INVALID``) and a digest
    that is not ``sha256:<64 lowercase hex>`` (``DIGEST_INVALID``).
    """
    authority = _authority(row)
    evidence = [_require_digest(response_digest, "response digest")]
    evidence += [_require_digest(q, "cited quote hash") for q in row.cited]
    return Check(
        name=row.name,
        verdict=kernel_verdict(row.outcome, authority),
        authority=authority,
        evidence=tuple(dict.fromkeys(evidence)),
        reason=_reason(row),
    )


#: The name of the check an UNVERIFIED call's determination carries (see the module docstring).
NO_POLICY_CHECK: Final = "decision_policy"


def kernel_checks(result: CallResult) -> tuple[Check, ...]:
    """Every row of a verified call as a kernel check; a request or system error has none.

    An UNVERIFIED call (no decision policy) also gets the ``decision_policy`` check, NOT_RUN,
    so that nothing built from it can fold to PASS.
    """
    if not result.rows:
        return ()
    checks = [kernel_check(row, result.response_digest) for row in result.rows]
    if result.verdict is CallVerdict.UNVERIFIED:
        checks.append(
            Check(
                name=NO_POLICY_CHECK,
                verdict=Verdict.NOT_RUN,
                authority=Authority.DETERMINISTIC,
                evidence=(_require_digest(result.response_digest, "response digest"),),
                reason="no decision policy governs this call, so it is UNVERIFIED: its checks "
                "were recorded, but nothing decided that it passed",
            )
        )
    return tuple(checks)


def call_decision(
    result: CallResult,
    *,
    contract_digest: str | None = None,
    caller: str | None = None,
    payment: Literal["none"] | None = None,
) -> dict[str, PolicyValue]:
    """What the call's policy decided, as the flat record a receipt carries beside the fold.

    The call's identity, its policy (id, version, mode; null for none), the call's verdict and
    the policy's own verdict (they differ when a withdrawal made the call DEGRADED), what
    decided it, the payment decision, strike and whether they were enforced, the price and
    the charge (integer minor units), and the contract's digest when given. ``caller`` is the
    account whose reservation the payment settles, refunds or voids: named where money moves
    on the receipt (a gateway call), so the receipt binds to whom it goes back.

    ``payment="none"``: the receipt's transaction moves no money whatever the verdict says
    (a judgment superseding the receipt of a call whose charge had gone back before it, by an
    upheld report's ruling or by its first receipt): its ``payment`` is ``none`` and its
    ``chargeMinor`` 0, as an upheld ruling that refunds nothing says ``none``.
    """
    policy = result.policy
    decision = _decision(result, policy, contract_digest)
    if payment is not None:
        decision |= {"payment": payment, "chargeMinor": 0}
    if caller is not None:
        decision["caller"] = caller
    found = result.corroboration
    if found is not None and found.call_id:
        # The corroborating call is itself a paid gateway call with its own receipt: named here,
        # so the receipt binds which call the empty answer's verdict read.
        decision |= {
            "corroboratingTool": found.tool,
            "corroboratingProvider": found.source,
            "corroboratingCallId": found.call_id,
            "corroboratingReceiptId": found.receipt_id or None,
            "corroboratingResponseDigest": found.response_digest or None,
        }
    return decision


def _decision(
    result: CallResult, policy: Policy | None, contract_digest: str | None
) -> dict[str, PolicyValue]:
    return {
        "callId": result.call_id,
        "provider": result.provider,
        "tool": result.tool,
        "calledAt": format_time(result.at),
        "policy": None if policy is None else policy.policy_id,
        "policyVersion": None if policy is None else policy.version,
        "mode": None if policy is None else policy.mode.value,
        "contractDigest": contract_digest,
        "verdict": None if result.verdict is None else result.verdict.value,
        "policyVerdict": None if result.policy_verdict is None else result.policy_verdict.value,
        "decidedBy": result.decided_by,
        "payment": result.effect.payment.value,
        "strike": result.effect.strike,
        "enforced": result.effect.enforced,
        "priceMinor": result.price_minor,
        "chargeMinor": result.charge_minor,
        "currency": result.currency,
    }


def determine_call(
    result: CallResult,
    *,
    now: datetime,
    response_bytes: bytes | None = None,
    policy_digest: str | None = None,
    contract_digest: str | None = None,
    caller: str | None = None,
    payment: Literal["none"] | None = None,
    trust: TrustPolicy = DEFAULT_POLICY,
) -> Determination:
    """The kernel determination of a verified call, ready for ``adjudge.receipts.issue``.

    The subject is the response (its digest). The checks are the oracle's evidence-integrity
    check over ``response_bytes`` when the caller holds the bytes the digest covers (PASS with
    the integrity proof when they agree, MISMATCH when they do not), then every call row as a
    kernel check (and, for an UNVERIFIED call, ``decision_policy`` NOT_RUN: never a PASS).
    They are folded under ``trust`` as at ``now`` (the decision time, read by the caller; the
    call's own time is ``result.at``). The call's policy verdict and payment are
    recorded as the determination's policy decision, never folded; ``policy_digest`` is the
    criteria digest; ``caller`` names in it the account the payment settles for or returns to;
    ``payment="none"``, that the receipt moves no money (see :func:`call_decision`).

    Refusals, each a clear code (never a crash): ``CALL_NO_RESPONSE`` for a request or system
    error (there is no response to determine); ``DIGEST_INVALID`` for a digest not of the form
    ``sha256:<64 lowercase hex>``; ``CALL_ROW_INVALID`` for a row the kernel cannot type; and
    the kernel's ``INTEGRITY_PROOF_REQUIRED`` (a ``ReceiptError``) when the checks fold to PASS
    but no response bytes were given to prove the digest.
    """
    if result.error is not None or result.verdict is None:
        kind = "an error" if result.error is None else f"a {result.error.kind}"
        raise CriteriaError(
            f"The call {result.call_id!r} ended in {kind}: there is no response to determine, "
            "so no receipt can be issued. The call record says what happened.",
            code="CALL_NO_RESPONSE",
        )
    subject = _require_digest(result.response_digest, "response digest")
    checks = list(kernel_checks(result))
    if response_bytes is not None:
        checks.insert(0, integrity(Record(bytes(response_bytes)), subject))
    return kernel_determine(
        subject,
        checks,
        now=now,
        policy=trust,
        criteria_digest=None
        if policy_digest is None
        else _require_digest(policy_digest, "policy digest"),
        policy_decision=call_decision(
            result,
            contract_digest=None
            if contract_digest is None
            else _require_digest(contract_digest, "contract digest"),
            caller=caller,
            payment=payment,
        ),
    )


def determine_upheld_report(
    call_id: str,
    response_digest: str,
    *,
    judge: str,
    reasons: tuple[str, ...],
    refund_minor: int,
    currency: str | None,
    now: datetime,
    criteria_digest: str | None = None,
    caller: str | None = None,
) -> Determination:
    """The determination of an admin upholding a caller's report of a bad result: a human
    FAIL about the same response the call's receipt judged, its refund (integer minor units)
    recorded as the policy decision. It has no ``strike``: a report never strikes (spec 003
    counts only verification verdicts toward a provider's quality). ``criteria_digest`` is the
    one the call's own receipt binds (its decision policy's digest), so the ruling names what
    the call was judged under; ``caller``, the account the refund goes back to."""
    subject = _require_digest(response_digest, "response digest")
    check = Check(
        name="report_ruling",
        verdict=Verdict.FAIL,
        authority=Authority.HUMAN,
        evidence=(subject,),
        reason=f"{judge}: report upheld: {'; '.join(reasons)}",
    )
    return kernel_determine(
        subject,
        [check],
        now=now,
        criteria_digest=None
        if criteria_digest is None
        else _require_digest(criteria_digest, "criteria digest"),
        policy_decision={
            "callId": call_id,
            "ruling": "upheld",
            "ruledBy": judge,
            "payment": "refund" if refund_minor > 0 else "none",
            "strike": False,
            "refundMinor": refund_minor,
            "currency": currency,
        }
        | ({} if caller is None else {"caller": caller}),
    )
