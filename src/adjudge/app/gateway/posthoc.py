"""Meaning judgments after the answer: the calls a policy judges with ``meaning.when:
after_answer``, judged by the upkeep once they were answered and settled.

Such a call is answered at once; its first receipt says the meaning check is ``pending`` (a
non-vote: the call is at best DEGRADED, never PASS, until judged), its charge settles into the
provider's hold, and its judgment is queued in the same transaction
(:mod:`adjudge.store.meaning_queue`). While the judgment is pending, the hold does not mature,
whatever the report deadline says. A pass of :func:`judge_pending` takes a bounded batch of
queued calls; for each, it asks the policy's judges (each bounded by the gateway's judge
time-out) outside any transaction, verifies the stored response bytes again with their
judgments (the pure verifier: grounded, cited, k of n, never a PASS from a model), and in one
transaction signs a receipt that supersedes the first and acts on it:

- a quorum of cited conflicts that fails the call refunds its charge from the provider's hold;
- a split opens a report in the human review queue, the charge kept in the hold;
- no conflict, or no judge available: the call stays charged (DEGRADED as when judged before
  settling), and its hold matures as usual;
- whatever the verdict, a charge that went back before the judgment (an upheld report's ruling
  refunded the hold) moves no more, and the receipt says so: ``payment`` ``none``.

The queue row is marked judged in that same transaction by a conditional update, so two workers
judging one call (or a worker that died after asking its judges) commit one receipt and one
refund at most: the second's transaction finds the row judged and writes nothing.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from adjudge.app.calls import emit_call_event, requalify
from adjudge.app.gateway.parsed import parsed_policy, parsed_tool
from adjudge.app.gateway.spending import give_back
from adjudge.app.gateway.views import money_view
from adjudge.app.isolation import JudgingFailed
from adjudge.app.meaning import MeaningAsk, ask_judges
from adjudge.app.unit import Answer, Idempotency
from adjudge.app.wiring import call_subject
from adjudge.calls import CallRequest, Contract, Policy, Tool, determine_call
from adjudge.calls.judging import JudgingJob
from adjudge.calls.meaning import is_key_judge, judgment_payload
from adjudge.calls.policy import providers_own
from adjudge.calls.verify import (
    CallResult,
    Citation,
    Judgment,
    digest_of,
    judged_here,
    judging_weight,
    parse_corroboration,
    received_response,
    to_wire,
)
from adjudge.errors import Conflict, NotAllowed, NotFound, StateError, VerificationFailed
from adjudge.json_text import dumps_utf8
from adjudge.receipts import VerifyingKey, canonical_bytes
from adjudge.store import (
    Account,
    ConcurrentUpdate,
    Transaction,
    call_reports,
    holds,
    meaning_queue,
    receipt_log,
    records,
)
from adjudge.store import calls as calls_db
from adjudge.store import gateway as db
from adjudge.webhooks import events

if TYPE_CHECKING:
    from adjudge.app.gateway.calls import Gateway

__all__ = ["judge_pending", "key_pending", "submit_key_judgment"]

log = logging.getLogger("adjudge.gateway")

#: The most pending judgments a key's owner is shown at once.
KEY_PAGE = 100


class _AlreadyJudged(Exception):
    """Another worker judged the call first: this transaction writes nothing."""


class _SignedMeanwhile(Exception):
    """A key's judgment was kept after the call was read: this transaction writes nothing, and
    the next pass judges the call with it."""


@dataclass(frozen=True)
class _Case:
    """What a queued call is judged from: the call, its tool and policy as they judged it, and
    the bytes the provider answered."""

    call: db.GatewayCall
    tool: Tool
    contract: Contract
    policy: Policy
    request: CallRequest
    body: bytes
    verified_at: datetime
    corroboration: Any
    #: The key judges' stored judgments, by judge name (``key:<fingerprint>``).
    signed: dict[str, Judgment]
    #: The policy's registered document (sent with an answer judged apart).
    policy_document: Mapping[str, Any]
    #: The account that registered the policy: unless it is the provider
    #: (:func:`adjudge.calls.policy.providers_own`), the policy acts as shadow and its key
    #: judges are neither waited for nor read.
    registered_by: str

    @property
    def keys_heeded(self) -> bool:
        """Whether the policy's key judges are asked and heeded (its provider's own word)."""
        return providers_own(self.registered_by, self.call.provider)

    @property
    def deadline(self) -> datetime:
        """Until when key judges may sign: the call's report deadline (its hold waits)."""
        return self.verified_at + self.policy.report_window

    def missing(self) -> list[str]:
        """The policy's key judges that have not signed yet (none waited for when unheeded)."""
        if not self.keys_heeded:
            return []
        return [j for j in self.policy.judges if is_key_judge(j) and j not in self.signed]


def judge_pending(gateway: Gateway, *, batch: int) -> int:
    """Judge up to ``batch`` queued calls (the least tried, oldest first); how many were judged
    by this pass (a call another worker judged first is not counted)."""
    rows = gateway.unit.read(lambda tx: meaning_queue.pending(tx, limit=batch))
    judged = 0
    for row in rows:
        try:
            judged += judge_one(gateway, row)
        except Exception:  # logged, counted as tried (so others come first), the rest judged
            log.exception("the queued judgment of the call %s failed", row.call_id)
            gateway.unit.write(partial(meaning_queue.tried, call_id=row.call_id))
    return judged


def judge_one(gateway: Gateway, row: meaning_queue.QueuedJudgment) -> bool:
    """Ask one queued call's judges and write its superseding receipt; False when it cannot be
    judged now (its attempt counted) or another worker judged it first."""
    case = gateway.unit.read(lambda tx: _case(tx, row))
    if case is None or (case.missing() and gateway.unit.now() < case.deadline):
        # Not now: its keys have not all signed and may still (tried, so others come first).
        gateway.unit.write(lambda tx: meaning_queue.tried(tx, row.call_id))
        return False
    ask = MeaningAsk(
        row.call_id,
        row.response_digest,
        case.call.tool,
        case.tool.description,
        dict(case.request.arguments),
        _judged(gateway, case, ())[1],
    )
    models = [j for j in case.policy.judges if not is_key_judge(j)]
    asked = (
        asyncio.run(ask_judges(gateway.judges, models, ask, timeout=gateway.judge_timeout))
        if models
        else []
    )
    by_judge = {j.judge: j for j in asked} | case.signed
    late = (
        "the key signed no judgment before the call's report deadline"
        if case.keys_heeded
        else "the policy naming the key was not registered by the tool's provider, so the "
        "key's word is not asked"
    )
    judgments = [
        by_judge.get(key)
        or Judgment(row.call_id, row.response_digest, False, reason=late, judge=key)
        for key in case.policy.judges
    ]
    result, _output = _judged(gateway, case, judgments)
    try:
        gateway.unit.write(lambda tx: _supersede(gateway, tx, row, case, result, judgments))
    except (_AlreadyJudged, _SignedMeanwhile):
        return False
    return True


def _judged(gateway: Gateway, case: _Case, judgments: Sequence[Judgment]) -> tuple[CallResult, Any]:
    """The queued call verified again with ``judgments``, and its mapped output: in a worker
    process when its judging has no bound on its work (``adjudge.app.isolation``), as when it
    was answered. Raises :class:`JudgingFailed` when it cannot be judged within its bounds."""
    response = received_response(case.body)
    size = len(case.body) + len(dumps_utf8(case.request.arguments))  # conditions read both
    weight = judging_weight(case.contract, case.policy)
    job = JudgingJob(
        case.tool.contract_document,
        case.policy_document,
        case.request,
        response,
        case.verified_at,
        corroboration=case.corroboration,
        judgments=tuple(judgments),
        registered_by=case.registered_by,
    )
    here = judged_here(weight, case.contract, response.body, size)
    result, shape = gateway.isolation.judge_blocking(
        case.call.provider, job, case.contract, case.policy, here=here
    )
    return result, None if shape is None else shape.output


def _case(tx: Transaction, row: meaning_queue.QueuedJudgment) -> _Case | None:
    """The queued call as it was judged when answered; None when it cannot be rebuilt (its
    tool or policy version gone, its bytes not kept)."""
    call = db.call(tx, row.call_id)
    record = calls_db.call(tx, row.call_id)
    if call is None or record is None or call.state != "done":
        return None
    stored = db.tool(tx, call.tool, call.tool_version)
    evidence = record.evidence or {}
    if stored is None or "response_bytes" not in evidence:
        return None
    tool = parsed_tool(stored)
    # The version the call recorded, not the one a lookup by its start finds now: a version
    # stamped at or before the start but committed after the call read its policy (the same
    # instant, a process whose clock is behind) would be found instead, and the call, never
    # rebuilt, would keep its hold for good.
    judged_by = record.record.get("policy")
    if not isinstance(judged_by, dict):
        return None
    found = calls_db.policy(tx, call.tool, str(judged_by["policy"]), int(judged_by["version"]))
    if found is None or found.digest != row.policy_digest:
        return None
    policy = parsed_policy(found.digest, stored.digest, found.document, tool.contract)
    arguments = dict(record.request.get("arguments") or {})
    seed = record.request.get("sample_seed")
    request = CallRequest(
        call.id,
        call.provider,
        call.tool,
        arguments,
        call.price_minor,
        call.currency,
        call.started_at,
        sample_seed=seed if isinstance(seed, str) else None,
    )
    corroboration = evidence.get("corroboration")
    heeded = providers_own(found.registered_by, call.provider)
    signed = {
        str(k["judge"]): Judgment(
            row.call_id,
            row.response_digest,
            True,
            bool(k["conflict"]),
            tuple(Citation(c["pointer"], c["quote_sha256"]) for c in k["citations"]),
            str(k["reason"]),
            judge=str(k["judge"]),
        )
        for k in meaning_queue.key_judgments(tx, row.call_id)
        if heeded
    }
    return _Case(
        call,
        tool,
        tool.contract,
        policy,
        request,
        base64.b64decode(str(evidence["response_bytes"])),
        datetime.fromisoformat(str(record.record["at"])),
        None if corroboration is None else parse_corroboration(corroboration),
        signed,
        found.document,
        found.registered_by,
    )


def _supersede(
    gateway: Gateway,
    tx: Transaction,
    row: meaning_queue.QueuedJudgment,
    case: _Case,
    result: CallResult,
    judgments: list[Judgment],
) -> None:
    """In one transaction: the superseding receipt, the money it decides, the queue row judged
    (``_AlreadyJudged``, so nothing is written, when another worker judged it first)."""
    from adjudge.app import settlement  # noqa: PLC0415
    from adjudge.app.gateway.calls import _to_review  # noqa: PLC0415

    # The call's row held first: an upheld ruling at once waits for this judgment, or this
    # one for it, and each reads the receipt in force (and the hold) as the other left them.
    db.call_held(tx, row.call_id)
    found = meaning_queue.get(tx, row.call_id)
    if found is None or found.state != meaning_queue.PENDING:
        raise _AlreadyJudged(row.call_id)
    now = gateway.unit.now()
    call = case.call
    status = call.status or "settled"
    payment = result.effect.payment.value
    refunds, stands = _money(tx, call.id, status, payment)
    # The receipt says the money its own transaction moves: none when the call's charge went
    # back before it (an upheld report's ruling refunded the hold, or the first receipt never
    # charged). Said as the verdict's payment, it stated a refund no ledger line made.
    moved_nothing = not (refunds or stands)
    determination = determine_call(
        result,
        now=now,
        response_bytes=case.body,
        policy_digest=row.policy_digest,
        contract_digest=digest_of(dict(case.tool.contract_document)),
        caller=call.caller,
        payment="none" if moved_nothing else None,
    )
    in_force = _in_force(tx, call, row)
    replaced = receipt_log.receipt(tx, in_force)
    envelope = None if replaced is None else replaced.body.get("envelope")
    issuer = gateway.issuer
    receipt = receipt_log.append(
        tx,
        lambda previous: issuer.sign(
            determination, previous, about=call_subject(call.id), supersedes=envelope
        ),
        task_id=None,
        at=now,
    )
    moved = 0
    if refunds:
        moved = settlement.refund_judged_call(
            tx,
            call_id=call.id,
            provider=call.provider,
            payer=call.caller,
            receipt_id=receipt.id,
            at=now,
        )
        if not moved:  # the hold ended since it was read: the unit of work is run again
            raise ConcurrentUpdate(f"The hold of the call {call.id} changed while it was judged.")
        give_back(tx, call.api_key_id, call.price_minor, call.started_at)
        status = "refunded"
    elif status == "settled" and result.needs_review:
        _to_review(tx, call.id, call.tool, call.provider, call.caller, result, now)
    meaning = next(r for r in result.rows if r.stage == "meaning")
    # What the superseding receipt was derived from, so its replay bundle can re-derive it.
    verification: dict[str, Any] = {
        "record": result.to_dict(),
        "judgments": [to_wire(j) for j in judgments],
    }
    if moved_nothing:  # what the receipt says beside the verdict, for its replay bundle
        verification["payment"] = "none"
    if not meaning_queue.judged(
        tx,
        row.call_id,
        outcome=meaning.outcome.value,
        receipt_id=receipt.id,
        at=now,
        verification=verification,
    ):
        raise _AlreadyJudged(row.call_id)
    # Read with the row taken (a key's judgment takes it too: meaning_queue.claim_pending): one
    # kept in time after the call was read is judged by the next pass, never as silence.
    signed = {str(k["judge"]) for k in meaning_queue.key_judgments(tx, row.call_id)}
    if signed != set(case.signed):
        raise _SignedMeanwhile(row.call_id)
    final = None if result.verdict is None else result.verdict.value
    db.rejudged(tx, call, status=status, verdict=final, receipt_id=receipt.id)
    requalify(tx, call.id, final, now)  # the provider's window counts the final verdict
    held = holds.get(tx, call.id)
    rejudged = events.call_rejudged(
        result.to_dict(),
        caller=call.caller,
        money_state=money_view(replace(call, status=status), held)["state"],
        refund_minor=moved,
        receipt_id=receipt.id,
        supersedes=in_force,  # as the receipt says: a ruling's, when one came before
    )
    emit_call_event(tx, call.caller, call.provider, rejudged, now)


def _in_force(tx: Transaction, call: db.GatewayCall, row: meaning_queue.QueuedJudgment) -> str:
    """The id of the call's receipt in force, which its judgment supersedes: an upheld report's
    ruling given since the call was answered, or the call's own. A receipt is superseded once:
    the judgment superseding the call's first receipt after a ruling had, the log no longer
    verified as a chain."""
    report = call_reports.by_call(tx, call.id)
    if report is not None and report.receipt_id is not None:
        return report.receipt_id
    return call.receipt_id or row.receipt_id


def _money(tx: Transaction, call_id: str, status: str, payment: str) -> tuple[bool, bool]:
    """What a judgment of a call ending with ``payment`` does with its charge, read in the
    judgment's transaction: whether it refunds it (the call settled and its charge still in
    the provider's hold, held or claimed by an open report), and whether the charge stands as
    the first receipt made it (settled, its hold not refunded: held, reported or paid). When
    neither, the charge went back before the judgment (an upheld report's ruling, or a first
    receipt that refunded or voided the call), and the judgment moves no money."""
    if status != "settled":
        return False, False
    held = holds.get(tx, call_id)
    if payment == "settle":
        return False, held is None or held.state != holds.REFUNDED
    return held is not None and held.state in (holds.HELD, holds.REPORTED), False


def _party(viewer: Account, case: _Case) -> bool:
    """Whether the viewer called the call or provides its tool: its key, named by the policy,
    judges others' calls, never its own (a caller's cited conflict took its own charge back,
    as a provider's word would keep it)."""
    return viewer.id in (case.call.caller, case.call.provider)


def _named_keys(tx: Transaction, viewer: Account) -> set[str]:
    """The judge names of the viewer's active verifier keys (``key:<fingerprint>``)."""
    return {
        f"key:{k.fingerprint}" for k in records.verifier_keys(tx, viewer.id) if k.revoked_at is None
    }


def key_pending(gateway: Gateway, viewer: Account) -> dict[str, Any]:
    """The pending judgments whose policy names one of the viewer's verifier keys, each with
    what the key's owner judges (the tool, the arguments, the mapped output) and what it signs
    over (the call id and response digest), until when it may."""

    def run(tx: Transaction) -> list[tuple[meaning_queue.QueuedJudgment, str, _Case]]:
        mine = _named_keys(tx, viewer)
        if not mine:
            return []
        found = []
        for row, key in meaning_queue.asked_of(tx, mine, limit=KEY_PAGE):
            case = _case(tx, row)
            if (
                case is not None
                and case.keys_heeded
                and key in case.policy.judges
                and not _party(viewer, case)
            ):
                found.append((row, key, case))
        return found

    out: list[dict[str, Any]] = []
    for row, key, case in gateway.unit.read(run):  # mapped outside the read: it may wait
        try:
            output = _judged(gateway, case, ())[1]
        except JudgingFailed:  # shown without its output, as one that cannot be mapped
            output = None
        out.append(
            {
                "call_id": row.call_id,
                "response_digest": row.response_digest,
                "judge_key": key,
                "tool": case.call.tool,
                "description": case.tool.description,
                "arguments": dict(case.request.arguments),
                "output": output,
                "due_at": case.deadline.isoformat(),
            }
        )
    return {"judgments": out}


def submit_key_judgment(
    gateway: Gateway,
    viewer: Account,
    call_id: str,
    body: dict[str, Any],
    *,
    key: str | None = None,
) -> Answer[dict[str, Any]]:
    """Keep a verifier key's signed judgment of a queued call. The service rebuilds the payload
    from the body and checks, in order: a pending judgment of the call that names the key
    (``MEANING_JUDGMENT_NOT_FOUND``), the key the viewer's own and active
    (``MEANING_JUDGMENT_KEY_INVALID``), the viewer neither the call's caller nor its provider
    (``CONFLICT_OF_INTEREST``), the response digest the call's
    (``MEANING_JUDGMENT_DIGEST_MISMATCH``), the window (``MEANING_JUDGMENT_LATE``), the signature
    (``MEANING_JUDGMENT_SIGNATURE_INVALID``), and one judgment per key and call
    (``MEANING_JUDGMENT_REPLAYED``). A judgment sent again with its Idempotency-Key (its answer
    was lost) is answered as it was the first time, and kept once."""
    judge = str(body.get("judge_key", ""))
    idem = Idempotency.of(key, "meaning.key_judgment", {"call": call_id, "judgment": body})
    now = gateway.unit.now()

    def run(tx: Transaction) -> dict[str, Any]:
        row = meaning_queue.get(tx, call_id)
        case = None if row is None else _case(tx, row)
        if row is None or case is None or judge not in case.policy.judges or not case.keys_heeded:
            raise NotFound(
                f"No meaning judgment of the call {call_id} names the key {judge!r}; list yours "
                "with GET /meaning/judgments.",
                code="MEANING_JUDGMENT_NOT_FOUND",
            )
        if judge not in _named_keys(tx, viewer):
            raise VerificationFailed(
                f"The key {judge} is not an active verifier key of your account; sign with the "
                "key you registered.",
                code="MEANING_JUDGMENT_KEY_INVALID",
            )
        if _party(viewer, case):
            raise NotAllowed(
                f"The call {call_id} is yours (you called it or provide its tool): a party's "
                "word about its own call is no judgment of it; nothing was kept.",
                code="CONFLICT_OF_INTEREST",
            )
        if body.get("response_digest") != row.response_digest:
            raise Conflict(
                f"The judgment names the response digest {body.get('response_digest')!r}; the "
                f"call's is {row.response_digest}. Judge the response you were shown.",
                code="MEANING_JUDGMENT_DIGEST_MISMATCH",
            )
        if (
            row.state != meaning_queue.PENDING
            or now >= case.deadline
            or not meaning_queue.claim_pending(tx, call_id)  # judged since it was read
        ):
            raise StateError(
                f"The call {call_id}'s meaning judgment was given already or its window closed "
                f"({case.deadline.isoformat()}); nothing was kept.",
                code="MEANING_JUDGMENT_LATE",
            )
        citations = [
            {"pointer": str(c.get("pointer", "")), "quote_sha256": str(c.get("quote_sha256", ""))}
            for c in body.get("citations") or []
            if isinstance(c, dict)
        ]
        payload = judgment_payload(
            call_id=call_id,
            response_digest=row.response_digest,
            judge_key=judge,
            conflict=body.get("conflict") is True,
            reason=str(body.get("reason", ""))[:2000],
            citations=citations,
        )
        _check_signature(payload, judge, body)
        if not meaning_queue.add_key_judgment(
            tx,
            call_id=call_id,
            judge=judge,
            conflict=payload["conflict"],
            reason=payload["reason"],
            citations=payload["citations"],
            signature=str(body["signature"]),
            public_key=str(body["public_key"]),
            at=now,
        ):
            raise Conflict(
                f"The key {judge} already judged the call {call_id}; a judgment is given once.",
                code="MEANING_JUDGMENT_REPLAYED",
            )
        return {"call_id": call_id, "judge_key": judge, "payload": payload, "kept": True}

    return gateway.unit.once(viewer.id, idem, run)


def _check_signature(payload: dict[str, Any], judge: str, body: dict[str, Any]) -> None:
    """The body's Ed25519 signature over the payload's canonical JSON, by the named key."""

    def invalid(why: str) -> VerificationFailed:
        return VerificationFailed(
            f"{why} Sign the canonical JSON of the judgment payload with the key you name.",
            code="MEANING_JUDGMENT_SIGNATURE_INVALID",
        )

    try:
        key = VerifyingKey.from_base64(str(body.get("public_key", "")))
        raw = base64.b64decode(str(body.get("signature", "")), validate=True)
    except Exception as exc:  # any undecodable key or signature is an invalid one
        raise invalid("The signature and public key must be standard base64.") from exc
    if f"key:{key.keyid}" != judge:
        raise VerificationFailed(
            f"The judgment is signed by key:{key.keyid}, not by {judge}.",
            code="MEANING_JUDGMENT_KEY_INVALID",
        )
    if not key.verify(raw, canonical_bytes(payload)):
        raise invalid("The signature does not verify for this call, response and vote.")
