"""What each caller may see of a task, an account, a receipt: the answers use cases give.

Spec 000: "Everyone else sees the full result on a public task. On a private task they see only
``passed`` and ``score``, because the reasons can quote the brief and the result." Agents never
see ``expected_answer`` ("Hosted agents receive your criteria as instructions, apart from
``expected_answer``").

These are plain JSON data: the HTTP service sends them as they are, the CLI prints them. A view
is built from what one transaction read, so it is one consistent moment of the task.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from adjudge.errors import InternalError
from adjudge.market import Status, Task, lapses_at, provider_hold_account, wallet_account
from adjudge.market.lifecycle import MAX_ATTEMPTS
from adjudge.market.seal import SEALABLE, disclosed
from adjudge.store import (
    Account,
    StoredDispute,
    StoredLapse,
    StoredReceipt,
    StoredTask,
    StoredVerdict,
    Submission,
    Transaction,
    VerifierKey,
    ledger,
    receipt_log,
    records,
)

log = logging.getLogger("adjudge.views")
T = TypeVar("T")
V = TypeVar("V")


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def is_party(task: StoredTask, viewer: Account) -> bool:
    """The poster, the agent, the named verifier and admins see a task whole."""
    t = task.task
    return viewer.id in (t.poster, t.agent, *t.verifiers) or "admin" in viewer.roles


def sees_brief(task: StoredTask, viewer: Account) -> bool:
    """Whether ``viewer`` may read the brief and criteria: a party, anyone on a public task, and
    any agent while a private task is open for taking."""
    t = task.task
    return (
        is_party(task, viewer)
        or not t.private
        or (t.status is Status.FUNDED and "agent" in viewer.roles)
    )


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


def dispute_view(d: StoredDispute) -> dict[str, Any]:
    """A dispute as filed."""
    return {"attempt": d.attempt, "by": d.by, "reason": d.reason, "at": d.at.isoformat()}


def lapse_view(lapse: StoredLapse) -> dict[str, Any]:
    """A lapsed take: who held the task, since when, and when its window ended."""
    return {
        "agent": lapse.agent,
        "taken_at": lapse.taken_at.isoformat(),
        "at": lapse.at.isoformat(),
    }


def criteria_for(task: StoredTask, viewer: Account) -> dict[str, Any]:
    """The criteria as ``viewer`` may read them: ``expected_answer`` only for the poster and
    admins (everyone else sees ``has_expected_answer``). A sealed task's criteria are the public
    ones, with ``has_expected_answer`` (the sealed answer is in ``seal``, once it may be read)."""
    criteria = dict(task.task.criteria)
    hidden = viewer.id != task.task.poster and "admin" not in viewer.roles
    if hidden and criteria.pop("expected_answer", None) is not None:
        criteria["has_expected_answer"] = True
    if task.task.seal is not None:
        criteria["has_expected_answer"] = True
    return criteria


def seal_view(task: StoredTask, viewer: Account, now: datetime) -> dict[str, Any] | None:
    """A sealed task's seal: the commitment made at posting (public), which fields it seals,
    whether it was revealed, when a reveal is due, and why it broke. The reveal itself
    (criteria and salt) is for the poster and admins, and for everyone who reads the criteria
    once no further submission can be judged against it (:func:`adjudge.market.seal.disclosed`),
    so an agent can check its verdict against the commitment."""
    t = task.task
    if t.seal is None:
        return None
    sees_all = viewer.id == t.poster or "admin" in viewer.roles
    shown_reveal = t.reveal is not None and (
        sees_all or (sees_brief(task, viewer) and disclosed(t, now))
    )
    return {
        "commitment": t.seal,
        "fields": list(SEALABLE),
        "revealed": t.reveal is not None,
        "reveal_due_at": _iso(t.reveal_due_at),
        "broken": t.seal_broken,
        "reveal": dict(t.reveal) if shown_reveal and t.reveal is not None else None,
    }


def task_summary(stored: StoredTask) -> dict[str, Any]:
    """What a listing shows of a task: no brief, no criteria, no results."""
    t = stored.task
    return {
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
        "ending": t.ending.value if t.ending else None,
        "take_window_hours": t.take_window_hours,
        "take_lapses_at": _iso(lapses_at(t)),
        "sealed": t.seal is not None,
    }


def panel_view(t: Task) -> dict[str, Any]:
    """A panel of verifiers as anyone reads it: the quorum k of n, and each verifier's key and
    its vote on the latest submission (PASS, FAIL, UNKNOWN — it decided nothing — or None)."""
    cast = {vote.verifier: vote.verdict for vote in t.votes}
    return {
        "quorum": t.quorum,
        "verifiers": [
            {"verifier": seat.verifier, "key": seat.key, "vote": cast.get(seat.verifier)}
            for seat in t.panel
        ],
    }


def task_view(
    tx: Transaction, stored: StoredTask, viewer: Account, now: datetime
) -> dict[str, Any]:
    """The task as ``viewer`` may see it at ``now`` (what a sealed task discloses depends on
    it). Its histories are read together (on PostgreSQL one round trip, not four)."""
    t = stored.task
    party = is_party(stored, viewer)
    reads = [records.verdicts_read(t.id)]
    known = records.known_submissions(tx, t.id, t.attempts) if party else None
    if party:
        reads += [ledger.entries_read(t.id), receipt_log.receipt_ids_read(t.id)]
        if known is None:
            reads.append(records.submissions_read(t.id))
    with tx.ahead(reads):
        return _task_view(tx, stored, viewer, now, party, known)


def _task_view(
    tx: Transaction,
    stored: StoredTask,
    viewer: Account,
    now: datetime,
    party: bool,
    known: list[Submission] | None,
) -> dict[str, Any]:
    t = stored.task
    brief = sees_brief(stored, viewer)
    verdicts = records.verdicts(tx, t.id)
    view = task_summary(stored)
    if t.panel:  # a task of one verifier reads as it always did
        view["panel"] = panel_view(t)
    view.update(
        {
            "accepted_at": _iso(t.accepted_at),
            "failed_at": _iso(t.failed_at),
            "escalated_at": _iso(t.escalated_at),
            "disputed_by": t.disputed_by,
            # An agent review that decided nothing sent the latest submission to the poster's
            # review (POST /tasks/{id}/review), as a manual task's.
            "routed": t.routed,
            "closed_at": _iso(t.closed_at),
            "brief": stored.brief if brief else None,
            "criteria": criteria_for(stored, viewer) if brief else None,
            # With the answer it salts (the poster's and admins'), so they can recompute the
            # criteria digest its receipts bind.
            "criteria_salt": (
                t.criteria_salt if viewer.id == t.poster or "admin" in viewer.roles else None
            ),
            "verdicts": [verdict_view(v, full=party or not t.private) for v in verdicts],
            "verification_result": (
                verdict_view(verdicts[-1], full=party or not t.private) if verdicts else None
            ),
            # Read only for a task that has lapsed: most never do, and a view is on hot paths.
            "lapses": [lapse_view(x) for x in records.lapses(tx, t.id)] if t.lapsed else [],
            "seal": seal_view(stored, viewer, now),
        }
    )
    if party:
        view["result_digest"] = t.result_digest
        view["submissions"] = [
            {
                "attempt": s.attempt,
                "digest": s.digest,
                "submitted_at": s.submitted_at.isoformat(),
                "result": s.result,
            }
            for s in (records.submissions(tx, t.id) if known is None else known)
        ]
        # Read only for a task once disputed (every dispute sets ``disputed_by``, and nothing
        # clears it): most never are, and a view is on hot paths.
        disputes = records.disputes(tx, t.id) if t.disputed_by is not None else []
        view["disputes"] = [dispute_view(d) for d in disputes]
        view["ledger"] = ledger.entries(tx, t.id)
        view["receipts"] = receipt_log.receipt_ids(tx, t.id)
        view["released"] = list(t.released)
    return view


def receipt_view(r: StoredReceipt) -> dict[str, Any]:
    """A receipt with its place on the log: ``lane`` and ``sequence`` are the signed
    statement's own, counted from 0 (the store numbers its rows from 1; the API and the CLI say
    only the signed numbers, so ``adjudge receipt verify-chain`` and the API name a receipt
    alike); ``position`` is its place in the order the log was written, from 0 (the export's
    ``after``)."""
    return {
        "id": r.id,
        "lane": r.lane,
        "sequence": r.seq - 1,
        "position": r.position - 1,
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
        # ``balance`` is what the account can spend; ``held`` a provider's settled charges
        # waiting out their calls' report deadlines (paid to ``balance`` as each passes).
        view["balance"] = str(ledger.balance(tx, wallet_account(a.id)))
        view["held"] = str(ledger.balance(tx, provider_hold_account(a.id)))
    return view


def key_view(k: VerifierKey) -> dict[str, Any]:
    """A verifier key on record."""
    return {
        "fingerprint": k.fingerprint,
        "public_key": k.public_key,
        "added_at": k.added_at.isoformat(),
        "revoked_at": _iso(k.revoked_at),
    }


def shown(view: dict[str, Any]) -> dict[str, Any]:
    """``view``, refused (``RECORD_UNREADABLE``) when a stored value cannot go on the wire
    (NaN, a lone surrogate: written before the edge refused them)."""
    try:
        json.dumps(view, allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:
        log.error("a record could not be shown: %s", exc)
        raise InternalError(
            "This record holds a value that cannot be shown (it predates the strict input "
            "checks); an operator must repair it.",
            code="RECORD_UNREADABLE",
        ) from None
    return view


def rendered(items: Iterable[T], render: Callable[[T], V], what: str) -> list[V]:
    """Each item rendered; one that cannot be is left out and logged, never a failed listing.

    A row written by an older version, or damaged by hand, must not take a listing down for
    everyone: the listing is still the truth about every other row.
    """
    out = []
    for item in items:
        try:
            view = render(item)
            # What the wire cannot carry (NaN, a lone surrogate) fails here, not in the reply.
            json.dumps(view, allow_nan=False).encode("utf-8")
        except Exception:  # a bad row is skipped, whatever is wrong with it
            log.exception("skipped a %s that could not be shown", what)
            continue
        out.append(view)
    return out
