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
  settling), and its hold matures as usual.

The queue row is marked judged in that same transaction by a conditional update, so two workers
judging one call (or a worker that died after asking its judges) commit one receipt and one
refund at most: the second's transaction finds the row judged and writes nothing.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from adjudge.app.gateway.parsed import judging_policy, parsed_policy, parsed_tool
from adjudge.app.gateway.spending import give_back
from adjudge.app.meaning import MeaningAsk, ask_judges
from adjudge.app.wiring import call_subject
from adjudge.calls import CallRequest, Contract, Policy, Tool, determine_call, verify_call
from adjudge.calls.contract import map_response
from adjudge.calls.verify import (
    CallResult,
    Judgment,
    digest_of,
    parse_corroboration,
    received_response,
)
from adjudge.store import Transaction, meaning_queue, receipt_log
from adjudge.store import calls as calls_db
from adjudge.store import gateway as db

if TYPE_CHECKING:
    from adjudge.app.gateway.calls import Gateway

__all__ = ["judge_pending"]


class _AlreadyJudged(Exception):
    """Another worker judged the call first: this transaction writes nothing."""


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


def judge_pending(gateway: Gateway, *, batch: int) -> int:
    """Judge up to ``batch`` queued calls (the least tried, oldest first); how many were judged
    by this pass (a call another worker judged first is not counted)."""
    rows = gateway.unit.read(lambda tx: meaning_queue.pending(tx, limit=batch))
    judged = 0
    for row in rows:
        if judge_one(gateway, row):
            judged += 1
    return judged


def judge_one(gateway: Gateway, row: meaning_queue.QueuedJudgment) -> bool:
    """Ask one queued call's judges and write its superseding receipt; False when it cannot be
    judged now (its attempt counted) or another worker judged it first."""
    case = gateway.unit.read(lambda tx: _case(tx, row))
    if case is None:
        gateway.unit.write(lambda tx: meaning_queue.tried(tx, row.call_id))
        return False
    mapped = map_response(case.contract, received_response(case.body).body)
    ask = MeaningAsk(
        row.call_id,
        row.response_digest,
        case.call.tool,
        case.tool.description,
        dict(case.request.arguments),
        mapped.output,
    )
    judgments = asyncio.run(
        ask_judges(gateway.judges, case.policy.judges, ask, timeout=gateway.judge_timeout)
    )
    result = verify_call(
        case.contract,
        case.policy,
        case.request,
        received_response(case.body),
        case.verified_at,
        corroboration=case.corroboration,
        judgments=judgments,
    )
    try:
        gateway.unit.write(lambda tx: _supersede(gateway, tx, row, case, result, judgments))
    except _AlreadyJudged:
        return False
    return True


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
    found = judging_policy(tx, stored, tool, call.started_at)
    if found is None or found.digest != row.policy_digest:
        return None
    policy = parsed_policy(found.digest, stored.digest, found.document, tool.contract)
    arguments = dict(record.request.get("arguments") or {})
    request = CallRequest(
        call.id,
        call.provider,
        call.tool,
        arguments,
        call.price_minor,
        call.currency,
        call.started_at,
    )
    corroboration = evidence.get("corroboration")
    return _Case(
        call,
        tool,
        tool.contract,
        policy,
        request,
        base64.b64decode(str(evidence["response_bytes"])),
        datetime.fromisoformat(str(record.record["at"])),
        None if corroboration is None else parse_corroboration(corroboration),
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

    found = meaning_queue.get(tx, row.call_id)
    if found is None or found.state != meaning_queue.PENDING:
        raise _AlreadyJudged(row.call_id)
    now = gateway.unit.now()
    call = case.call
    determination = determine_call(
        result,
        now=now,
        response_bytes=case.body,
        policy_digest=row.policy_digest,
        contract_digest=digest_of(dict(case.tool.contract_document)),
    )
    replaced = receipt_log.receipt(tx, call.receipt_id or row.receipt_id)
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
    status = call.status or "settled"
    payment = result.effect.payment.value
    if status == "settled" and payment != "settle":
        moved = settlement.refund_judged_call(
            tx,
            call_id=call.id,
            provider=call.provider,
            payer=call.caller,
            receipt_id=receipt.id,
            at=now,
        )
        if moved:
            give_back(tx, call.api_key_id, call.price_minor, call.started_at)
            status = "refunded"
    elif status == "settled" and result.needs_review:
        _to_review(tx, call.id, call.provider, call.caller, result, now)
    meaning = next(r for r in result.rows if r.stage == "meaning")
    if not meaning_queue.judged(
        tx, row.call_id, outcome=meaning.outcome.value, receipt_id=receipt.id, at=now
    ):
        raise _AlreadyJudged(row.call_id)
    db.rejudged(
        tx,
        call.id,
        status=status,
        verdict=None if result.verdict is None else result.verdict.value,
        receipt_id=receipt.id,
    )
    del judgments  # kept on the receipt's checks, one row per judge
