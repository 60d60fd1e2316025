"""The checker and the receipt issuer adjudge uses unless it is given others.

The checker is the auto check of spec 000 (``adjudge.autocheck``); receipts are the kernel's
determinations signed by ``adjudge.receipts``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from adjudge.app.signed_verdicts import DETAIL_KEY, check_signature, verdict_payload
from adjudge.autocheck import admissibility, auto_check, falsifiable, redos
from adjudge.calls.verify import digest_of
from adjudge.errors import BadInput, CriteriaError, Error, StateError, VerificationFailed
from adjudge.kernel import DEFAULT_POLICY, Authority, Check, Determination, Verdict, determine
from adjudge.kernel.adapters import auto_check_check
from adjudge.kernel.oracle import Record, integrity
from adjudge.market import (
    Checker,
    CheckOutcome,
    Place,
    ReceiptIssuer,
    Routed,
    Settlement,
    Task,
    VerdictReached,
)
from adjudge.receipts import (
    Envelope,
    Head,
    SigningKey,
    VerifyingKey,
    checkpoints,
    digest,
    issue,
    verify,
)
from adjudge.receipts.checkpoints import NamedHead


class AutoCheck:
    """The market's :class:`~adjudge.market.Checker` over ``adjudge.autocheck``."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """The auto check's post-time refusals, and two more the reference's scan cannot see
        (:mod:`adjudge.autocheck.redos`): a ``regex_pattern`` whose repeated alternatives can
        match the same text (exponential time), or that holds a run of repeats that can match
        the same characters (polynomial time past the square of the text's length). The
        verdict keeps the reference's scan alone."""
        refusals = list(admissibility(criteria, mode))
        if not refusals and mode == "auto":
            for _field, reason in falsifiable.unfalsifiable(criteria):
                refusals.append(CriteriaError(f"{reason}.", code="CRITERIA_UNFALSIFIABLE"))
        pattern = criteria.get("regex_pattern")
        if not refusals and isinstance(pattern, str):
            why = redos.ambiguous_repeat(pattern)
            if why is not None:
                refusals.append(
                    CriteriaError(
                        f"regex_pattern {pattern!r} can take exponential time: {why} under a "
                        "repetition. Rewrite it so the alternatives cannot overlap (for "
                        "example (a|aa)+ as a+, (http|https)+ as (https?)+).",
                        code="REGEX_PATTERN_UNUSABLE",
                    )
                )
            slow = None if refusals else redos.slow_run(pattern)
            if slow is not None:
                anchor = ", or anchor it with ^" if slow.degree > slow.repeats else ""
                refusals.append(
                    CriteriaError(
                        f"regex_pattern `{pattern}` can take polynomial time: {slow.reason}. "
                        "Rewrite it so repeats next to each other cannot match the same "
                        f"characters (for example .*.*x as .*x, \\d+\\d*x as \\d+x){anchor}.",
                        code="REGEX_PATTERN_UNUSABLE",
                    )
                )
        return refusals

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        """Run the auto check and keep its full ``verificationResult`` and the criteria's
        digest (:func:`criteria_digest`; none for a dry run, which signs nothing)."""
        r = auto_check(result, criteria, withhold=withhold)
        digest = None if withhold else criteria_digest(criteria)
        return CheckOutcome(r.passed, r.score, tuple(r.reasons), r.to_dict(), digest)


@dataclass(frozen=True)
class _Outcome:
    passed: bool
    score: int
    reasons: tuple[str, ...]


def criteria_digest(criteria: Mapping[str, Any]) -> str:
    """The digest an auto check's receipt binds its criteria by: ``sha256:`` of their RFC 8785
    JSON, as contracts and policies are digested (:func:`adjudge.calls.verify.digest_of`), so
    anyone holding the criteria as posted can recompute it."""
    return digest_of(criteria)


def round_of(task_id: str, attempt: int) -> str:
    """The ``about`` name of a task's round: what its verdicts and settlements answer."""
    return f"task:{task_id}/round:{attempt}"


def call_subject(call_id: str) -> str:
    """The ``about`` name of a paid call: what its receipt and a ruling on its report answer."""
    return f"call:{call_id}"


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

    @property
    def public_key(self) -> VerifyingKey:
        """The public key a receipt is verified against (a replay bundle carries it)."""
        return self.signer.public_key

    def issue(
        self,
        verdict: VerdictReached,
        result: str | None,
        previous: Place | None,
        settlement: Settlement | None = None,
    ) -> Mapping[str, Any]:
        """The signed receipt of ``verdict``, chained after ``previous``; the money it releases
        (``settlement``) is its signed policy decision."""
        subject = verdict.result_digest
        if subject is None or result is None:
            raise StateError(
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
            if not verdict.verifier_key or verdict.grounding is None:
                raise StateError(
                    "An agent review decides only when its verifier named a key and it is "
                    "grounded in the brief and the result.",
                    code="VERDICT_UNPROVABLE",
                )
            policy = DEFAULT_POLICY.with_verifier(verdict.verifier_key)
            signed = _verifier_signature(verdict, subject)
            grounded = verdict.grounding.check
            checks.append(
                Check(
                    name=grounded.name,
                    verdict=grounded.verdict,
                    authority=grounded.authority,
                    evidence=(*grounded.evidence, signed),
                    reason=f"verifier {verdict.judge}: {reason} ({grounded.reason})",
                    verifier_key=grounded.verifier_key,
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
        determination = determine(
            subject,
            checks,
            now=verdict.at,
            policy=policy,
            criteria_digest=verdict.criteria_digest,
            policy_decision=settlement.decision() if settlement else None,
        )
        if determination.verdict is not wanted:
            raise StateError(
                f"The kernel folds this verdict to {determination.verdict}, not {wanted}.",
                code="VERDICT_UNPROVABLE",
            )
        return self.issue_call(
            determination, previous, about=round_of(verdict.task_id, verdict.attempt)
        )

    def issue_routing(
        self, routed: Routed, result: str | None, previous: Place | None
    ) -> Mapping[str, Any]:
        """The signed receipt of an agent review that could not be grounded: the oracle's
        integrity check and the review's UNKNOWN check fold to UNKNOWN; no money moves."""
        subject = routed.result_digest
        if subject is None or result is None or routed.grounding is None:
            raise StateError(
                "A review of no stored result cannot be proven.", code="VERDICT_UNPROVABLE"
            )
        checks = [integrity(Record(result.encode("utf-8")), subject), routed.grounding.check]
        decision: dict[str, str | int | None] = {
            "type": "adjudge.task.routing/v1",
            "task": routed.task_id,
            "attempt": routed.attempt,
            "routedTo": "poster",
            "reason": routed.reason,
        }
        determination = determine(subject, checks, now=routed.at, policy_decision=decision)
        return self.issue_call(
            determination, previous, about=round_of(routed.task_id, routed.attempt)
        )

    def issue_settlement(
        self,
        settlement: Settlement,
        task: Task,
        result: str | None,
        basis: str | None,
        previous: Place | None,
    ) -> Mapping[str, Any]:
        """The signed receipt of an ending no judgment decided.

        Its determination is NOT_RUN: no judgment happens at settlement. Over delivered work it
        holds the oracle's integrity check of the stored result and a ``judgment`` check that
        did not run (so it can never fold to PASS); over work never delivered it holds no check
        and its subject is the task's own record. The ending and every amount it releases are
        its signed policy decision, with ``basis``, the receipt of the task's last verdict.
        """
        decision = dict(settlement.decision())
        decision["basis"] = basis
        if settlement.result_digest is not None and result is not None:
            subject = settlement.result_digest
            checks = [
                integrity(Record(result.encode("utf-8")), subject),
                Check(
                    name="judgment",
                    verdict=Verdict.NOT_RUN,
                    authority=Authority.DETERMINISTIC,
                    evidence=(subject,),
                    reason=f"settled as {settlement.ending.value}: no judgment decided it",
                ),
            ]
        else:
            subject = task_record_digest(task)
            checks = []
        determination = determine(subject, checks, now=settlement.at, policy_decision=decision)
        return self.issue_call(
            determination, previous, about=round_of(settlement.task_id, settlement.attempt)
        )

    def issue_checkpoint(
        self, previous: Place, heads: Sequence[NamedHead], at: datetime
    ) -> Mapping[str, Any]:
        """The signed checkpoint at ``previous`` naming ``heads``, every lane's head
        (:mod:`adjudge.receipts.checkpoints`): it judges nothing (NOT_RUN), its subject is the
        digest of the heads, and the heads are its signed policy decision."""
        determination = determine(
            checkpoints.heads_subject(heads),
            [],
            now=at,
            policy_decision=checkpoints.decision(heads),
        )
        return self.issue_call(determination, previous, about=checkpoints.CHECKPOINT_ABOUT)

    def issue_call(
        self,
        determination: Determination,
        previous: Place | None,
        *,
        about: str | None = None,
        supersedes: Mapping[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        """The signed receipt of a determination (a verified paid call's, or any other),
        chained after ``previous``; ``about`` names its subject (``call:<id>``,
        ``task:<id>/round:<n>``), and ``supersedes`` is the envelope of an earlier receipt of
        this service about the same subject that it replaces."""
        lane, found = previous or Place(0, None)  # None: a log's first receipt
        head = Head(found[0], found[1], lane) if found else None
        replaced = None
        if supersedes is not None:
            replaced = verify(Envelope.from_dict(supersedes), self.signer.public_key)
        receipt = issue(
            determination, self.signer, head, about=about, supersedes=replaced, lane=lane
        )
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
    check is built for a verdict its verifier did not sign, nor for a signed payload about
    another task, submission, outcome or reasons.
    """
    record = verdict.detail.get(DETAIL_KEY)
    payload = record.get("payload") if isinstance(record, Mapping) else None
    if not isinstance(record, Mapping) or not isinstance(payload, Mapping):
        raise BadInput(
            "A verifier's verdict must carry its signature.", code="VERDICT_SIGNATURE_REQUIRED"
        )
    expected = verdict_payload(
        task_id=verdict.task_id,
        attempt=verdict.attempt,
        result_digest=subject,
        brief_digest=payload.get("brief_digest"),
        passed=verdict.passed,
        reasons=verdict.reasons,
        quotes=payload.get("quotes") or (),
        verifier_key=str(verdict.verifier_key),
    )
    if dict(payload) != expected:
        raise VerificationFailed(
            "The signed payload is not about this verdict.", code="VERDICT_SIGNATURE_INVALID"
        )
    checked = check_signature(expected, record.get("signature"), record.get("public_key"))
    return str(checked["digest"])


def task_record_digest(task: Task) -> str:
    """The subject of a receipt about a task that holds no delivered result: its posting."""
    return digest(
        {
            "type": "adjudge.task/v1",
            "id": task.id,
            "poster": task.poster,
            "reward": str(task.reward),
            "postedAt": task.posted_at.isoformat(),
            "deadline": task.deadline.isoformat(),
        }
    )


def default_checker() -> Checker:
    """The auto check."""
    return AutoCheck()


def default_issuer() -> ReceiptIssuer:
    """Signed receipts under a fresh key (``adjudge serve`` passes its persistent one)."""
    return SignedReceipts(SigningKey.generate())
