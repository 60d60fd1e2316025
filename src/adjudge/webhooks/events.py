"""The events a marketplace can subscribe to, and what each carries.

An event is ``{"type", "timestamp", "data"}`` (the Standard Webhooks payload shape). ``data``
carries ids, kinds, amounts as decimal strings of minor units and the receipt id that proves
the change — never a secret, and never free text a party wrote (a brief, a result, a reason):
an event goes to every party's endpoints, and what a party may read is the task's own view
(``GET /tasks/{id}``), which the receiver fetches with its own key. The builders are pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from adjudge.errors import BadInput
from adjudge.market import DisputeFiled, RevealRequested, Settlement, Task, VerdictReached

#: Every event type and what it means (docs/webhooks.md has the table of fields).
EVENT_TYPES: dict[str, str] = {
    "task.verdict": "a submission was judged (auto check, poster, or the named verifier)",
    "task.ruling": "an admin ruled on a disputed or escalated task",
    "task.payout": "a task's escrow paid the agent and the platform fee",
    "task.refund": "a task's escrow went back to the poster",
    "task.dispute": "the poster or the agent disputed a task",
    "task.escalated": (
        "delivered work never judged was escalated: the poster's reclaim, or a sealed task's "
        "reveal that did not match or did not come in time"
    ),
    "task.reveal_due": "a sealed task's agent asked for the check: the poster must reveal",
    "call.settled": "a paid call was verified and its payment decided (settle, refund, void)",
    "call.reported": (
        "a call's caller reported a bad result, or its meaning judges split on it: a review is open"
    ),
    "call.rejudged": (
        "a call judged after its answer was judged: its new receipt supersedes the first, and "
        "may give the charge back"
    ),
    "call.report_ruled": "an admin ruled on a call's report (upheld gives a charge back)",
    "webhook.test": "a test event an endpoint's owner asked for",
}


def event_types(wanted: Iterable[str] | None) -> list[str] | None:
    """A subscription's event types, checked (``WEBHOOK_EVENT_TYPE_UNKNOWN``); None is all."""
    if wanted is None:
        return None
    chosen = sorted(set(wanted))
    unknown = [t for t in chosen if t not in EVENT_TYPES]
    if unknown:
        raise BadInput(
            f"No event type {unknown[0]!r}; use some of {', '.join(EVENT_TYPES)}.",
            code="WEBHOOK_EVENT_TYPE_UNKNOWN",
        )
    if not chosen:
        raise BadInput(
            "Subscribe to at least one event type, or send none for all of them.",
            code="WEBHOOK_EVENT_TYPE_UNKNOWN",
        )
    return chosen


def payload(event_type: str, data: dict[str, Any], at: datetime) -> dict[str, Any]:
    """The body of one event: its type, when it happened (ISO 8601 UTC), and its data."""
    return {"type": event_type, "timestamp": at.isoformat(), "data": data}


def task_parties(task: Task) -> list[str]:
    """Who an event about ``task`` goes to: its poster, its agent and its named verifier."""
    return [p for p in (task.poster, task.agent, *task.verifiers) if p]


def verdict(effect: VerdictReached, task: Task, receipt_id: str) -> tuple[str, dict[str, Any]]:
    """``task.verdict`` (or ``task.ruling``, for an admin's) of a determination."""
    ruling = bool(effect.detail.get("ruling"))
    data: dict[str, Any] = {
        "task_id": effect.task_id,
        "attempt": effect.attempt,
        "passed": effect.passed,
        "score": effect.score,
        "authority": effect.authority,
        "judge": effect.judge,
        "result_digest": effect.result_digest,
        "status": task.status.value,
        "receipt_id": receipt_id,
    }
    return ("task.ruling" if ruling else "task.verdict"), data


def settlement(effect: Settlement, task: Task, receipt_id: str) -> tuple[str, dict[str, Any]]:
    """``task.payout`` or ``task.refund`` of a settlement, with every amount it moved."""
    amounts = {t.memo or "transfer": str(t.amount) for t in effect.transfers}
    paid = effect.ending.value.startswith("paid")
    data: dict[str, Any] = {
        "task_id": effect.task_id,
        "attempt": effect.attempt,
        "ending": effect.ending.value,
        "reward": str(task.reward),
        "receipt_id": receipt_id,
    }
    if paid:
        data["agent"] = task.agent
        data["payout"] = amounts.get("payout", "0")
        data["fee"] = amounts.get("fee", "0")
    else:
        data["poster"] = task.poster
        data["refund"] = str(sum(t.amount for t in effect.transfers))
    return ("task.payout" if paid else "task.refund"), data


def dispute(effect: DisputeFiled, task: Task) -> tuple[str, dict[str, Any]]:
    """``task.dispute``: who disputed which round (the reason is on the task, for its parties)."""
    return "task.dispute", {
        "task_id": effect.task_id,
        "attempt": effect.attempt,
        "by": effect.by,
        "status": task.status.value,
    }


def reveal_due(effect: RevealRequested, task: Task) -> tuple[str, dict[str, Any]]:
    """``task.reveal_due``: the agent asked for the check of a sealed task; the poster must
    reveal its sealed criteria by ``due_at`` or the task escalates."""
    return "task.reveal_due", {
        "task_id": effect.task_id,
        "attempt": effect.attempt,
        "due_at": effect.due.isoformat(),
        "status": task.status.value,
    }


def escalated(task: Task) -> tuple[str, dict[str, Any]]:
    """``task.escalated``: delivered work that was never judged went to an admin (the poster
    reclaimed it, or a sealed task's reveal did not match or did not come in time)."""
    return "task.escalated", {
        "task_id": task.id,
        "attempt": task.attempts,
        "escalated_at": task.escalated_at.isoformat() if task.escalated_at else None,
        "status": task.status.value,
    }


def call_settled(
    record: Mapping[str, Any], *, submitted_by: str, source: str, receipt_id: str | None
) -> tuple[str, dict[str, Any]]:
    """``call.settled`` of a verified call's record (``CallResult.to_dict()``)."""
    price = record.get("price") or {}
    error = record.get("error")
    return "call.settled", {
        "call_id": record.get("call_id"),
        "tool": record.get("tool"),
        "provider": record.get("provider"),
        "caller": submitted_by,
        "source": source,
        "verdict": record.get("verdict"),
        "payment": record.get("payment"),
        "strike": record.get("strike"),
        "price": str(price.get("amount_minor", 0)),
        "currency": price.get("currency"),
        "charge": str(record.get("charge_minor", 0)),
        "error_kind": error.get("kind") if isinstance(error, dict) else None,
        "receipt_id": receipt_id,
    }


def call_reported(
    call_id: str,
    *,
    tool: str,
    provider: str,
    caller: str,
    filed_at: datetime,
    opened_by: str = "caller",
) -> tuple[str, dict[str, Any]]:
    """``call.reported``: which call was reported, when, and whether by its caller or by its
    meaning judges' split (the reason stays on the report)."""
    return "call.reported", {
        "call_id": call_id,
        "tool": tool,
        "provider": provider,
        "caller": caller,
        "filed_at": filed_at.isoformat(),
        "opened_by": opened_by,
    }


def call_rejudged(
    record: Mapping[str, Any],
    *,
    caller: str,
    money_state: str,
    refund_minor: int,
    receipt_id: str,
    supersedes: str | None,
) -> tuple[str, dict[str, Any]]:
    """``call.rejudged``: a call judged after its answer, from the superseding receipt's record
    (``CallResult.to_dict()``): its final verdict and payment, where its charge is now
    (``money_state``, as the call's view says it: a report's ruling may have given it back
    before the judgment), and what went back to the caller with it (a receiver that booked
    the first ``call.settled`` corrects it from this)."""
    return "call.rejudged", {
        "call_id": record.get("call_id"),
        "tool": record.get("tool"),
        "provider": record.get("provider"),
        "caller": caller,
        "verdict": record.get("verdict"),
        "payment": record.get("payment"),
        "strike": record.get("strike"),
        "money_state": money_state,
        "refund": str(refund_minor),
        "receipt_id": receipt_id,
        "supersedes": supersedes,
    }


def report_ruled(
    call_id: str,
    *,
    provider: str,
    caller: str,
    upheld: bool,
    refund_minor: int | None,
    receipt_id: str | None,
) -> tuple[str, dict[str, Any]]:
    """``call.report_ruled``: the ruling and what it gave back (the reasons stay on it)."""
    return "call.report_ruled", {
        "call_id": call_id,
        "provider": provider,
        "caller": caller,
        "ruling": "upheld" if upheld else "dismissed",
        "refund": str(refund_minor or 0),
        "receipt_id": receipt_id,
    }


def call_parties(submitted_by: str, provider: str) -> Sequence[str]:
    """Who an event about a call goes to: its caller (submitter) and its provider."""
    return [submitted_by, provider]
