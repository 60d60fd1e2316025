"""The checker and the receipt issuer the service uses unless it is given others.

The checker is the auto check of spec 000 (``adjudge.autocheck``); receipts are the kernel's
determinations signed by ``adjudge.receipts``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adjudge.autocheck import admissibility, auto_check
from adjudge.errors import Error
from adjudge.kernel import DEFAULT_POLICY, Authority, Check, Determination, Verdict, determine
from adjudge.kernel.adapters import auto_check_check
from adjudge.kernel.oracle import Record, integrity
from adjudge.market import Checker, CheckOutcome, ReceiptIssuer, VerdictReached
from adjudge.receipts import Head, SigningKey, issue
from adjudge.service.signed_verdicts import DETAIL_KEY, check_signature, verdict_payload


class AutoCheck:
    """The market's :class:`~adjudge.market.Checker` over ``adjudge.autocheck``."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """The auto check's post-time refusals."""
        return admissibility(criteria, mode)

    def check(self, result: str, criteria: Mapping[str, Any]) -> CheckOutcome:
        """Run the auto check and keep its full ``verificationResult``."""
        r = auto_check(result, criteria)
        return CheckOutcome(r.passed, r.score, tuple(r.reasons), r.to_dict())


@dataclass(frozen=True)
class _Outcome:
    passed: bool
    score: int
    reasons: tuple[str, ...]


class SignedReceipts:
    """Every verdict as a kernel determination, signed into a receipt (DSSE, Ed25519).

    The determination holds two checks: the kernel oracle's evidence-integrity check of the
    stored result against the digest recorded at submission, and the judgment itself, as the
    authority that made it: the auto check (``deterministic``), the poster's review or an
    admin's ruling (``human``), or the named verifier agent (``semantic``, carrying its key,
    which the task's trust policy names). The kernel must fold them to the market's verdict,
    or nothing is signed and nothing is written (``VERDICT_UNPROVABLE``).
    """

    def __init__(self, signer: SigningKey) -> None:
        self.signer = signer

    @property
    def fingerprint(self) -> str:
        """The key fingerprint a receipt is verified against."""
        return self.signer.keyid

    def issue(
        self, verdict: VerdictReached, result: str | None, previous: tuple[str, int] | None
    ) -> Mapping[str, Any]:
        """The signed receipt of ``verdict``, chained after ``previous``."""
        subject = verdict.result_digest
        if subject is None or result is None:
            raise Error(
                "A verdict on no stored result cannot be proven.", code="VERDICT_UNPROVABLE"
            )
        wanted = Verdict.PASS if verdict.passed else Verdict.FAIL
        reason = "; ".join(verdict.reasons) or ("approved" if verdict.passed else "rejected")
        checks = [integrity(Record(result.encode("utf-8")), subject)]
        policy = DEFAULT_POLICY
        if verdict.authority == "deterministic":
            outcome = _Outcome(verdict.passed, verdict.score or 0, tuple(verdict.reasons))
            checks.append(auto_check_check(outcome, subject))
        elif verdict.authority == "verifier":
            if not verdict.verifier_key:
                raise Error("The verifier has no key to name.", code="VERDICT_UNPROVABLE")
            policy = DEFAULT_POLICY.with_verifier(verdict.verifier_key)
            signed = _verifier_signature(verdict, subject)
            checks.append(
                Check(
                    name="agent-review",
                    verdict=wanted,
                    authority=Authority.SEMANTIC,
                    evidence=(subject, signed),
                    reason=f"verifier {verdict.judge}: {reason}",
                    verifier_key=verdict.verifier_key,
                )
            )
        else:
            name = "admin-ruling" if verdict.detail.get("ruling") else "manual-review"
            checks.append(
                Check(
                    name=name,
                    verdict=wanted,
                    authority=Authority.HUMAN,
                    evidence=(subject,),
                    reason=f"{verdict.judge}: {reason}",
                )
            )
        determination = determine(subject, checks, now=verdict.at, policy=policy)
        if determination.verdict is not wanted:
            raise Error(
                f"The kernel folds this verdict to {determination.verdict}, not {wanted}.",
                code="VERDICT_UNPROVABLE",
            )
        head = Head(previous[0], previous[1]) if previous else None
        receipt = issue(determination, self.signer, head)
        return {
            "digest": receipt.receipt_id,
            "sequence": receipt.sequence,
            "verdict": receipt.verdict.value,
            "keyid": receipt.keyid,
            "envelope": receipt.to_dict(),
        }

    def issue_call(
        self, determination: Determination, previous: tuple[str, int] | None
    ) -> Mapping[str, Any]:
        """The signed receipt of a verified paid call's determination, chained after
        ``previous`` (the same receipt shape as a verdict's)."""
        head = Head(previous[0], previous[1]) if previous else None
        receipt = issue(determination, self.signer, head)
        return {
            "digest": receipt.receipt_id,
            "sequence": receipt.sequence,
            "verdict": receipt.verdict.value,
            "keyid": receipt.keyid,
            "envelope": receipt.to_dict(),
        }


def _verifier_signature(verdict: VerdictReached, subject: str) -> str:
    """The digest of the verifier's signed verdict payload, re-verified against the named key.

    The kernel does not authenticate a check's ``verifier_key``; this does, so no agent-review
    check is built for a verdict its verifier did not sign.
    """
    record = verdict.detail.get(DETAIL_KEY)
    if not isinstance(record, Mapping):
        raise Error(
            "A verifier's verdict must carry its signature.", code="VERDICT_SIGNATURE_REQUIRED"
        )
    payload = verdict_payload(
        task_id=verdict.task_id,
        attempt=verdict.attempt,
        result_digest=subject,
        passed=verdict.passed,
        reasons=verdict.reasons,
        verifier_key=str(verdict.verifier_key),
    )
    checked = check_signature(payload, record.get("signature"), record.get("public_key"))
    return str(checked["digest"])


def default_checker() -> Checker:
    """The auto check."""
    return AutoCheck()


def default_issuer() -> ReceiptIssuer:
    """Signed receipts under a fresh key (``adjudge serve`` passes its persistent one)."""
    return SignedReceipts(SigningKey.generate())
