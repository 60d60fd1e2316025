"""Each task verdict's kernel determination: the one decision a task's money follows.

The lifecycle (:mod:`adjudge.market.lifecycle`) asks this module for the determination of every
judgment and pays on its verdict; the service only signs what it gets (one issuer port,
:mod:`adjudge.receipts.issuer`). A determination holds, about the judged result:

- the oracle's evidence-integrity check of the server's stored copy against the digest recorded
  at submission (:func:`adjudge.kernel.oracle.integrity`): PASS with the proof a PASS needs, or
  MISMATCH, which no money follows;
- the judgment as a kernel check, by the authority that made it: the auto check is
  ``deterministic``; the poster's review and an admin's ruling are ``human``; the named
  verifier agent's review is ``semantic``, carrying its key, its grounding in the brief and the
  result (:func:`adjudge.kernel.semantic.ground_review`) and the digest of the verdict it signed;
- the task's trust policy: the kernel's default (``deterministic`` and ``human``), plus the one
  verifier key an agent-review task named at posting — so a model's PASS counts only through
  that key, and never without it;
- the digest of the task's criteria as posted (RFC 8785 JSON), which every task receipt binds —
  for a sealed task, with the revealed ones, beside the oracle's check of the reveal against
  the commitment made at posting (:func:`sealed`);
- the policy decision: what the market released (the settlement), or where it sent the work.

Pure: the stored copy is read by the caller from its store and passed in; nothing here reads a
file, the clock or a database.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from adjudge.digests import sha256_digest
from adjudge.errors import BadInput, TransitionError, VerificationFailed
from adjudge.kernel import DEFAULT_POLICY, Authority, Check, Determination, TrustPolicy, Verdict
from adjudge.kernel import determine as kernel_determine
from adjudge.kernel.adapters import VerificationResultLike, auto_check_check
from adjudge.kernel.determination import PolicyValue
from adjudge.kernel.oracle import Record, integrity
from adjudge.kernel.semantic import Grounding
from adjudge.market.seal import SYMBOL as SEAL_SYMBOL
from adjudge.market.seal import judged_criteria
from adjudge.market.signed_verdicts import check_signature, verdict_payload
from adjudge.market.tasks import Mode, Task
from adjudge.receipts.canonical import canonical_bytes, canonical_json, digest

#: The names of a human judgment's check: the poster's review, an admin's ruling.
REVIEW_CHECK = "manual-review"
RULING_CHECK = "admin-ruling"
#: The check of a settlement no judgment decided (never PASS).
ENDING_CHECK = "judgment"
#: The policy decision of an agent review that decided nothing (the poster decides instead).
ROUTING_TYPE = "adjudge.task.routing/v1"

__all__ = [
    "ENDING_CHECK",
    "REVIEW_CHECK",
    "ROUTING_TYPE",
    "RULING_CHECK",
    "auto_check",
    "bound_criteria",
    "criteria_digest",
    "ending",
    "hiding_salt",
    "human",
    "judged",
    "record_digest",
    "round_of",
    "routing",
    "sealed",
    "settled",
    "signed_digest",
    "trust_policy",
    "verifier",
]


def round_of(task_id: str, attempt: int) -> str:
    """The ``about`` name of a task's round: what its verdicts and settlements answer."""
    return f"task:{task_id}/round:{attempt}"


def criteria_digest(criteria: Mapping[str, Any], salt: str | None = None) -> str:
    """The digest a task receipt binds the task's criteria by: ``sha256:`` of their RFC 8785
    JSON, as contracts and policies are digested, so anyone holding the criteria as posted can
    recompute it. Criteria holding a hidden answer are digested with a secret (``salt``) as
    ``{"criteria": …, "salt": …}``: every party may read a task's receipts, and the plain
    digest of a short answer would be a test of guesses ("42", "43", …) until one matched.

    Criteria may hold numbers written with a point (a ``pass_threshold`` of 60.5, a rubric
    item's weight of 0.5), which RFC 8785 writes as ECMAScript does: only the digest is signed,
    never the criteria, so they need not be signable themselves."""
    document = dict(criteria) if salt is None else {"criteria": dict(criteria), "salt": salt}
    return sha256_digest(canonical_json(document))


def signed_digest(criteria: Mapping[str, Any], salt: str | None, signed: object) -> str:
    """The digest of ``criteria`` that a receipt binding ``signed`` is checked against: salted
    with ``salt``, or, for a receipt signed before a hidden answer's criteria were salted, the
    plain digest when that is what it binds (the same criteria either way)."""
    salted = criteria_digest(criteria, salt)
    if salt is not None and salted != signed and criteria_digest(criteria) == signed:
        return criteria_digest(criteria)
    return salted


def hiding_salt(task: Task) -> str | None:
    """The salt the task's judged criteria are digested with: a sealed task's reveal's (secret
    with the answer until both are shown), the one drawn at posting for an answer in the public
    criteria, none for criteria that hide nothing (or a task posted before digests were
    salted)."""
    if task.reveal is not None:
        return str(task.reveal["salt"])
    if "expected_answer" in task.criteria:
        return task.criteria_salt
    return None


def bound_criteria(task: Task) -> str:
    """The criteria digest a receipt about ``task`` binds: its judged criteria, salted when
    they hide an answer."""
    return criteria_digest(judged_criteria(task), hiding_salt(task))


def trust_policy(task: Task) -> TrustPolicy:
    """The task's trust policy: the kernel's default, plus the one verifier key an
    agent-review task named at posting (seed 000's agent review; never an authority class), or
    the keys of its panel of verifiers."""
    if task.mode is Mode.AGENT and task.panel:
        return DEFAULT_POLICY.with_panel(seat.key for seat in task.panel if seat.key)
    if task.mode is Mode.AGENT and task.verifier_key:
        return DEFAULT_POLICY.with_verifier(task.verifier_key)
    return DEFAULT_POLICY


def record_digest(task: Task) -> str:
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


# --- the judgment, as a kernel check ------------------------------------------------------------


def auto_check(outcome: VerificationResultLike, subject: str) -> Check:
    """The auto check's outcome as a ``deterministic`` check over the result ``subject``."""
    return auto_check_check(outcome, subject)


def human(
    passed: bool, reasons: tuple[str, ...], judge: str, subject: str, *, ruling: bool = False
) -> Check:
    """A person's judgment (the poster's review, or an admin's ruling) as a ``human`` check."""
    reason = "; ".join(reasons) or ("approved" if passed else "rejected")
    return Check(
        name=RULING_CHECK if ruling else REVIEW_CHECK,
        verdict=Verdict.PASS if passed else Verdict.FAIL,
        authority=Authority.HUMAN,
        evidence=(subject,),
        reason=f"{judge}: {reason}",
    )


def verifier(
    task: Task,
    *,
    passed: bool,
    reasons: tuple[str, ...],
    judge: str,
    grounding: Grounding | None,
    signed: Mapping[str, Any] | None,
    verifier_key: str | None = None,
) -> Check:
    """The named verifier's review as a ``semantic`` check, carrying its key.

    The check is the kernel's grounding of the review (PASS only for a grounded pass), with the
    digest of the verdict the verifier signed added to its evidence. The signature is re-verified
    here against the key the task's trust policy names, and its payload must be about this very
    verdict (the task, the submission judged, its digest, ``passed`` and ``reasons``), so no
    review check exists for a verdict its verifier did not sign (``VERDICT_SIGNATURE_REQUIRED``,
    ``VERDICT_SIGNATURE_INVALID``). A review with no grounding is UNKNOWN: it decides nothing.
    """
    key = verifier_key or task.verifier_key
    subject = _subject(task)
    signature = _signed_digest(task, passed, reasons, signed, key)
    reason = "; ".join(reasons) or ("approved" if passed else "rejected")
    # A panel's rows are named by key, as a paid call's judges are (``meaning:<key>``).
    name = f"{VOTE_CHECK}:{key}" if task.panel else VOTE_CHECK
    if grounding is None:
        return Check(
            name=name,
            verdict=Verdict.UNKNOWN,
            authority=Authority.SEMANTIC,
            evidence=(subject, signature),
            reason=f"verifier {judge}: {reason} (not grounded in the brief and the result)",
            verifier_key=key,
        )
    grounded = grounding.check
    if task.panel and grounded.verifier_key != key:
        raise VerificationFailed(
            "The review is grounded under another verifier's key.",
            code="VERDICT_SIGNATURE_INVALID",
        )
    return Check(
        name=name if task.panel else grounded.name,
        verdict=grounded.verdict,
        authority=grounded.authority,
        evidence=(*grounded.evidence, signature),
        reason=f"verifier {judge}: {reason} ({grounded.reason})",
        verifier_key=grounded.verifier_key,
    )


# --- determinations -----------------------------------------------------------------------------


def judged(
    task: Task,
    stored_result: str,
    judgment: Check | tuple[Check, ...],
    *,
    at: datetime,
    decision: Mapping[str, PolicyValue] | None = None,
) -> Determination:
    """The determination of one judgment of the task's latest submission, as at ``at``.

    ``stored_result`` is the server's own stored copy of that submission: the oracle checks it
    against the digest recorded at submission, so a copy that changed since is a MISMATCH. The
    checks fold under the task's trust policy, and the task's criteria digest is bound.
    """
    subject = _subject(task)
    judgments = judgment if isinstance(judgment, tuple) else (judgment,)
    if task.panel and isinstance(judgment, tuple):
        # A panel's votes: the quorum and every verifier's vote are signed with them.
        decision = {**quorum_decision(task), **(decision or {})}
    checks = (integrity(Record(stored_result.encode("utf-8")), subject), *sealed(task), *judgments)
    return kernel_determine(
        subject,
        checks,
        now=at,
        policy=trust_policy(task),
        criteria_digest=bound_criteria(task),
        policy_decision=decision,
    )


def sealed(task: Task) -> tuple[Check, ...]:
    """A sealed task's binding (:mod:`adjudge.market.seal`), once its seal is open: the
    oracle's check of the reveal the task holds against the commitment made at posting,
    ``(= sealed-criteria "<commitment>")`` over the reveal's RFC 8785 bytes — PASS when they
    agree; a MISMATCH otherwise, which no money follows. None for a task that is not sealed,
    or whose seal was never opened (its judgments are then an admin's rulings)."""
    if task.seal is None or task.reveal is None:
        return ()
    opened = Record(canonical_bytes(dict(task.reveal)), SEAL_SYMBOL)
    return (integrity(opened, task.seal),)


def settled(determination: Determination, decision: Mapping[str, PolicyValue]) -> Determination:
    """``determination`` with the money it releases as its policy decision (never folded)."""
    return replace(determination, policy_decision=decision)


def routing(
    task: Task,
    stored_result: str,
    judgment: Check | tuple[Check, ...],
    *,
    at: datetime,
    reason: str,
    to: str = "poster",
) -> Determination:
    """The determination of an agent review that decides nothing (ungrounded, or a PASS the
    task's trust policy does not carry): its policy decision sends the work to the poster — or,
    for a panel's split, to an admin (``to``), with the quorum's count."""
    decision: dict[str, PolicyValue] = {
        "type": ROUTING_TYPE,
        "task": task.id,
        "attempt": task.attempts,
        "routedTo": to,
        "reason": reason,
    }
    if task.panel:
        decision.update(quorum_decision(task))
    return judged(task, stored_result, judgment, at=at, decision=decision)


# --- a panel of verifiers (k of n) --------------------------------------------------------------

#: The name of a verifier's check (a panel's are ``agent-review:<key>``).
VOTE_CHECK = "agent-review"
#: What :func:`tally` says when the votes can no longer reach a decision.
SPLIT = "split"


def tally(task: Task) -> str | None:
    """What the panel's votes on the latest submission decide: ``"PASS"``, ``"FAIL"``,
    :data:`SPLIT`, or None while the votes still to come could decide.

    k grounded PASS votes decide PASS only while every vote cast is a PASS: the kernel lets any
    vote move a set down, so a dissent (a FAIL, or a vote that decides nothing: ungrounded)
    sinks a PASS. k FAIL votes decide FAIL. A split is neither being reachable any more.
    """
    k, n = task.quorum, len(task.panel)
    verdicts = [vote.verdict for vote in task.votes]
    passes = verdicts.count(Verdict.PASS.value)
    fails = verdicts.count(Verdict.FAIL.value)
    waiting = n - len(verdicts)
    if fails >= k:
        return Verdict.FAIL.value
    if passes == len(verdicts) and passes >= k:
        return Verdict.PASS.value
    can_pass = passes == len(verdicts) and passes + waiting >= k
    can_fail = fails + waiting >= k
    return None if can_pass or can_fail else SPLIT


def vote_checks(task: Task) -> tuple[Check, ...]:
    """Every vote cast on the latest submission as its kernel check, in the panel's order: the
    receipt's one row per verifier who voted, each with its key."""
    order = {seat.verifier: i for i, seat in enumerate(task.panel)}
    votes = sorted(task.votes, key=lambda vote: order.get(vote.verifier, len(order)))
    return tuple(_vote_check(vote.check) for vote in votes)


def quorum_decision(task: Task) -> dict[str, PolicyValue]:
    """The quorum as a policy decision's entries: k, n, and each verifier's vote by key
    (``PASS``, ``FAIL``, ``UNKNOWN``, or ``none`` for a verifier who has not voted)."""
    cast = {vote.key: vote.verdict for vote in task.votes}
    out: dict[str, PolicyValue] = {"quorum": task.quorum, "verifiers": len(task.panel)}
    for seat in task.panel:
        out[f"vote:{seat.key}"] = cast.get(str(seat.key), "none")
    return out


def quorum_detail(task: Task) -> dict[str, Any]:
    """The quorum as a verdict record's detail: k, and each named verifier's vote."""
    cast = {vote.verifier: vote for vote in task.votes}
    return {
        "k": task.quorum,
        "n": len(task.panel),
        "votes": [
            {
                "verifier": seat.verifier,
                "key": seat.key,
                "vote": cast[seat.verifier].verdict if seat.verifier in cast else None,
            }
            for seat in task.panel
        ],
    }


def split_reason(task: Task) -> str:
    """Why a panel's votes decide nothing, in words."""
    verdicts = [vote.verdict for vote in task.votes]
    passes = verdicts.count(Verdict.PASS.value)
    fails = verdicts.count(Verdict.FAIL.value)
    other = len(verdicts) - passes - fails
    return (
        f"split: {passes} PASS, {fails} FAIL and {other} undecided of {len(task.panel)} "
        f"verifiers; a quorum of {task.quorum} can no longer agree: sent to an admin"
    )


def _vote_check(data: Mapping[str, Any]) -> Check:
    """A vote's check from its wire form (a semantic check: never the oracle's)."""
    return Check(
        name=str(data["name"]),
        verdict=Verdict(data["verdict"]),
        authority=Authority(data["authority"]),
        evidence=tuple(data.get("evidence") or ()),
        reason=str(data.get("reason", "")),
        verifier_key=data.get("verifierKey"),
    )


def ending(
    task: Task,
    stored_result: str | None,
    decision: Mapping[str, PolicyValue],
    *,
    result_digest: str | None,
    at: datetime,
) -> Determination:
    """The determination of an ending no judgment decided (a refund, a payout after escalation).

    NOT_RUN: no judgment happens at settlement. Over delivered work (``result_digest``, with the
    server's ``stored_result``) it holds the oracle's integrity check and a ``judgment`` check
    that did not run, so it can never fold to PASS; over work never delivered it holds no check
    and its subject is the task's own record. ``decision`` is the ending and every amount it
    releases.
    """
    if result_digest is not None and stored_result is not None:
        subject = result_digest
        checks: tuple[Check, ...] = (
            integrity(Record(stored_result.encode("utf-8")), subject),
            Check(
                name=ENDING_CHECK,
                verdict=Verdict.NOT_RUN,
                authority=Authority.DETERMINISTIC,
                evidence=(subject,),
                reason=f"settled as {decision.get('ending')}: no judgment decided it",
            ),
        )
    else:
        subject, checks = record_digest(task), ()
    return kernel_determine(
        subject,
        checks,
        now=at,
        policy=trust_policy(task),
        criteria_digest=bound_criteria(task),
        policy_decision=decision,
    )


def _subject(task: Task) -> str:
    if task.result_digest is None:  # the lifecycle judges only delivered work
        raise TransitionError("A task with no delivered result has nothing to judge.")
    return task.result_digest


def _signed_digest(
    task: Task,
    passed: bool,
    reasons: tuple[str, ...],
    signed: Mapping[str, Any] | None,
    key: str | None,
) -> str:
    """The digest of the verifier's signed verdict payload, re-verified against the task's key."""
    payload = signed.get("payload") if isinstance(signed, Mapping) else None
    if not isinstance(signed, Mapping) or not isinstance(payload, Mapping):
        raise BadInput(
            "A verifier's verdict must carry its signature.", code="VERDICT_SIGNATURE_REQUIRED"
        )
    expected = verdict_payload(
        task_id=task.id,
        attempt=task.attempts,
        result_digest=_subject(task),
        brief_digest=payload.get("brief_digest"),
        passed=passed,
        reasons=reasons,
        quotes=payload.get("quotes") or (),
        verifier_key=str(key),
    )
    if dict(payload) != expected:
        raise VerificationFailed(
            "The signed payload is not about this verdict.", code="VERDICT_SIGNATURE_INVALID"
        )
    checked = check_signature(expected, signed.get("signature"), signed.get("public_key"))
    return str(checked["digest"])
