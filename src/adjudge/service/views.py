"""What each caller sees of a task: everything for its parties, less for everyone else.

Spec 000: "Everyone else sees the full result on a public task. On a private task they see only
``passed`` and ``score``, because the reasons can quote the brief and the result." Agents never
see ``expected_answer`` ("Hosted agents receive your criteria as instructions, apart from
``expected_answer``").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from adjudge.market import Status
from adjudge.market.lifecycle import MAX_ATTEMPTS
from adjudge.store import Account, StoredReceipt, StoredTask, StoredVerdict, Transaction


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def is_party(task: StoredTask, viewer: Account) -> bool:
    """The poster, the agent, the named verifier and admins see a task whole."""
    t = task.task
    return viewer.id in (t.poster, t.agent, t.verifier) or "admin" in viewer.roles


def verdict_view(v: StoredVerdict, *, full: bool) -> dict[str, Any]:
    """A verdict; without ``full`` only ``passed`` and ``score``."""
    if not full:
        return {"attempt": v.attempt, "kind": v.kind, "passed": v.passed, "score": v.score}
    return {
        "attempt": v.attempt,
        "kind": v.kind,
        "passed": v.passed,
        "score": v.score,
        "reasons": list(v.reasons),
        "authority": v.authority,
        "judge": v.judge,
        "at": v.at.isoformat(),
        "receipt_id": v.receipt_id,
        "verification_result": dict(v.detail) or None,
    }


def task_view(tx: Transaction, stored: StoredTask, viewer: Account) -> dict[str, Any]:
    """The task as ``viewer`` may see it."""
    t = stored.task
    party = is_party(stored, viewer)
    public = not t.private
    sees_brief = party or public or (t.status is Status.FUNDED and "agent" in viewer.roles)
    criteria = dict(t.criteria)
    if viewer.id != t.poster and "admin" not in viewer.roles:
        criteria.pop("expected_answer", None)
    verdicts = tx.verdicts(t.id)
    view: dict[str, Any] = {
        "id": t.id,
        "title": stored.title,
        "mode": t.mode.value,
        "status": t.status.value,
        "reward": str(t.reward),
        "poster": t.poster,
        "agent": t.agent,
        "verifier": t.verifier,
        "private": t.private,
        "posted_at": t.posted_at.isoformat(),
        "deadline": t.deadline.isoformat(),
        "attempts": t.attempts,
        "max_attempts": MAX_ATTEMPTS,
        "failed_at": _iso(t.failed_at),
        "escalated_at": _iso(t.escalated_at),
        "disputed_by": t.disputed_by,
        "ending": t.ending.value if t.ending else None,
        "closed_at": _iso(t.closed_at),
        "brief": stored.brief if sees_brief else None,
        "criteria": criteria if sees_brief else None,
        "verdicts": [verdict_view(v, full=party or public) for v in verdicts],
        "verification_result": (
            verdict_view(verdicts[-1], full=party or public) if verdicts else None
        ),
    }
    if party:
        view["result_digest"] = t.result_digest
        view["submissions"] = [
            {
                "attempt": s.attempt,
                "digest": s.digest,
                "submitted_at": s.submitted_at.isoformat(),
                "result": s.result,
            }
            for s in tx.submissions(t.id)
        ]
        view["ledger"] = tx.entries(t.id)
        view["receipts"] = tx.receipt_ids(t.id)
    return view


def receipt_view(r: StoredReceipt) -> dict[str, Any]:
    """A receipt with its place in the chain."""
    return {
        "id": r.id,
        "seq": r.seq,
        "task_id": r.task_id,
        "digest": r.digest,
        "previous": r.previous,
        "at": r.at.isoformat(),
        "receipt": dict(r.body),
    }


def account_view(a: Account, tx: Transaction | None = None) -> dict[str, Any]:
    """An account's public record, with its balance when a transaction is given."""
    view: dict[str, Any] = {
        "id": a.id,
        "roles": sorted(a.roles),
        "verifier_opt_in": a.verifier_opt_in,
        "verifier_key": a.verifier_key,
        "reputation": a.record.reputation,
        "disputes": a.record.disputes,
    }
    if tx is not None:
        view["balance"] = str(tx.balance(f"wallet:{a.id}"))
    return view
