"""Reading the receipt log and the ledger: who may see which receipt, and the admin's books.

A task's receipts are public on a public task and for its parties on a private one; a paid
call's receipt is for the call's parties (its submitter and its provider) and admins; the
chain's head and the ledger's sums prove the whole without showing any one record.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

from adjudge.app.accounts import need_role
from adjudge.app.unit import UnitOfWork
from adjudge.app.views import is_party, receipt_view
from adjudge.errors import BadInput, CriteriaError, NotAllowed, NotFound, ReceiptError
from adjudge.kernel import Verdict, fold
from adjudge.kernel.authority import Authority, TrustPolicy
from adjudge.kernel.determination import effective
from adjudge.kernel.verdicts import format_time, parse_time
from adjudge.market.money import provider_hold_account, wallet_account
from adjudge.receipts.envelope import Envelope
from adjudge.store import (
    Account,
    StoredReceipt,
    Transaction,
    call_reports,
    calls,
    ledger,
    receipt_log,
    records,
)

#: The kinds of ledger line (each transfer's memo): money deposited, a task's reward funded,
#: paid out with its fee or refunded; a paid call's price reserved, charged (into the
#: provider's hold), voided or refunded; a held charge released to the provider; a charge
#: given back after an upheld report.
LEDGER_KINDS = (
    "deposit",
    "fund",
    "payout",
    "fee",
    "refund",
    "reserve",
    "charge",
    "void",
    "release",
    "report refund",
)

#: The largest ``after`` the export takes: the store numbers rows from 1, so it reads
#: ``seq > after + 1``, and PostgreSQL's integer ends at 2**31 - 1.
MAX_AFTER = 2**31 - 2


def _successor(tx: Transaction, receipt_id: str) -> str | None:
    """The receipt that supersedes this one, or None: a paid call's receipt is superseded by
    the ruling on its upheld report (the one supersession the service issues). Two indexed
    reads, whatever the log's length."""
    call = calls.call_by_receipt(tx, receipt_id)
    if call is None:
        return None
    report = call_reports.by_call(tx, call.id)
    if report is None or report.receipt_id in (None, receipt_id):
        return None
    return report.receipt_id


class Receipts:
    """Read use cases over the receipt log and the ledger."""

    def __init__(self, unit: UnitOfWork, fingerprint: str | None) -> None:
        self.unit = unit
        #: The fingerprint of the key receipts are signed with (None for an unsigned issuer).
        self.fingerprint = fingerprint

    def head(self) -> dict[str, Any]:
        """The log's length (``count``), the ``sequence`` and id (``digest``) of its last
        receipt (None when empty; the first receipt is sequence 0), and the signing key."""
        count, digest = self.unit.read(receipt_log.head)
        return {
            "count": count,
            "sequence": count - 1 if count else None,
            "digest": digest,
            "key": self.fingerprint,
        }

    def get(self, viewer: Account, receipt_id: str) -> dict[str, Any]:
        """One receipt with its place in the chain, its signed statement decoded, and what it
        reads as now (``as_of``: a PENDING check past its deadline reads as its expiry verdict)
        (``RECEIPT_NOT_FOUND``, ``NOT_A_PARTY``)."""
        found, successor = self.unit.read(
            lambda tx: (_visible(tx, viewer, receipt_id), _successor(tx, receipt_id))
        )
        view = receipt_view(found)
        statement = _statement(found)
        replaced = (statement or {}).get("predicate", {}).get("supersedesReceiptId")
        # Both ends of a supersession by the ids this API names receipts by.
        view["supersedes"] = (
            None
            if not isinstance(replaced, str)
            else self.unit.read(lambda tx: receipt_log.id_of_digest(tx, replaced))
        )
        view["superseded_by"] = successor
        view["statement"] = statement
        view["as_of"] = reading(statement, self.unit.now()) if statement else None
        return view

    def envelope(self, viewer: Account, receipt_id: str) -> dict[str, Any]:
        """The signed envelope alone, to save and check with ``adjudge receipt verify``."""
        found = self.unit.read(lambda tx: _visible(tx, viewer, receipt_id))
        envelope = found.body.get("envelope")
        if not isinstance(envelope, dict):
            raise NotFound("This receipt is not signed.", code="RECEIPT_NOT_FOUND")
        return envelope

    def of_task(self, viewer: Account, task_id: str) -> dict[str, Any]:
        """A task's receipts in chain order."""

        def run(tx: Transaction) -> dict[str, Any]:
            _may_see_task(tx, viewer, task_id)
            return {"receipts": [receipt_view(r) for r in receipt_log.receipts(tx, task_id)]}

        return self.unit.read(run)

    def export(
        self, viewer: Account, *, after: int | None = None, limit: int = 100
    ) -> dict[str, Any]:
        """The log in chain order, a page at a time (admins): the receipts whose ``sequence``
        is above ``after`` (from the first, sequence 0, when None). ``next_after`` is the last
        sequence of the page when more follow. What ``adjudge receipt export`` writes and
        ``adjudge receipt verify-chain`` checks."""
        need_role(viewer, "admin")
        if after is not None and not 0 <= after <= MAX_AFTER:
            raise BadInput(f"after is a sequence from 0 to {MAX_AFTER}.", code="INVALID_REQUEST")
        # The store numbers rows from 1: sequence n is row n + 1.
        rows_after = 0 if after is None else after + 1

        def run(tx: Transaction) -> dict[str, Any]:
            page = receipt_log.chain(tx, after=rows_after, limit=limit + 1)
            more = len(page) > limit
            page = page[:limit]
            return {
                "receipts": [receipt_view(r) for r in page],
                "next_after": page[-1].seq - 1 if more and page else None,
            }

        return self.unit.read(run)

    def ledger(self, viewer: Account) -> dict[str, Any]:
        """Every balance and the two sums that prove the ledger whole (admins)."""
        need_role(viewer, "admin")

        def run(tx: Transaction) -> dict[str, Any]:
            balances, entries = ledger.total(tx)
            return {
                "balances": {k: str(v) for k, v in sorted(ledger.balances(tx).items())},
                "sum_of_balances": str(balances),
                "sum_of_entries": str(entries),
                "deposits": str(ledger.deposits(tx)),
            }

        return self.unit.read(run)

    def ledger_lines(
        self,
        viewer: Account,
        *,
        account: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        totals: bool = False,
    ) -> dict[str, Any]:
        """Ledger lines, newest first, a page at a time: each movement of money with the
        account on its other side and the receipt that released it (legs out of a holding
        account name one). An admin reads every account; anyone else only its own (its wallet
        and, for a provider, its hold), and naming another account is ``NOT_YOUR_ACCOUNT``.

        ``kind`` is a transfer's memo (:data:`LEDGER_KINDS`); ``since`` and ``until`` are ISO
        dates or times (UTC when no offset is given), ``until`` exclusive — a bare date means
        through the end of that day. ``totals`` adds the filter's count, credits, debits and
        net: one SUM over the whole filtered range (it grows with the range, not the page).
        """
        own = (wallet_account(viewer.id), provider_hold_account(viewer.id))
        admin = "admin" in viewer.roles
        if account is not None and not admin and account not in own:
            raise NotAllowed(
                "Only an admin reads another account's ledger lines; yours are "
                f"{own[0]} and {own[1]}.",
                code="NOT_YOUR_ACCOUNT",
            )
        if kind is not None and kind not in LEDGER_KINDS:
            raise BadInput(
                f"No ledger kind {kind!r}; use one of {', '.join(LEDGER_KINDS)}.",
                code="INVALID_REQUEST",
            )
        accounts = (account,) if account is not None else (None if admin else own)
        which = ledger.Movements(
            accounts=accounts,
            kind=kind,
            since=moment(since, "since", end_of_day=False),
            until=moment(until, "until", end_of_day=True),
        )

        def run(tx: Transaction) -> dict[str, Any]:
            lines, following = ledger.movements(tx, which, limit=limit, cursor=cursor)
            page: dict[str, Any] = {
                "lines": [{**line, "amount": str(line["amount"])} for line in lines],
                "next_cursor": following,
                "accounts": None if admin else list(own),
            }
            if totals:
                page["totals"] = {k: str(v) for k, v in ledger.movement_totals(tx, which).items()}
            return page

        return self.unit.read(run)


def _may_see_task(tx: Transaction, viewer: Account, task_id: str) -> None:
    stored = records.task(tx, task_id)
    if stored is None:
        raise NotFound(f"No task {task_id}.", code="TASK_NOT_FOUND")
    if stored.task.private and not is_party(stored, viewer):
        raise NotAllowed("A private task's receipts are for its parties.", code="NOT_A_PARTY")


def _visible(tx: Transaction, viewer: Account, receipt_id: str) -> StoredReceipt:
    found = receipt_log.receipt(tx, receipt_id)
    if found is None:
        raise NotFound(f"No receipt {receipt_id}.", code="RECEIPT_NOT_FOUND")
    if found.task_id:
        _may_see_task(tx, viewer, found.task_id)
        return found
    call = calls.call_by_receipt(tx, receipt_id)
    parties = (call.submitted_by, call.provider) if call is not None else ()
    if call is not None and "admin" not in viewer.roles and viewer.id not in parties:
        raise NotAllowed("A call's receipt is for the call's parties.", code="NOT_A_PARTY")
    return found


def moment(text: str | None, name: str, *, end_of_day: bool) -> datetime | None:
    """An ISO date or time as a UTC moment (None for none); a bare date is its first moment,
    or with ``end_of_day`` the first moment of the next day. ``INVALID_REQUEST`` otherwise."""
    if text is None or not text.strip():
        return None
    source = text.strip()
    try:
        if len(source) == 10:
            day = date.fromisoformat(source)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start + timedelta(days=1) if end_of_day else start
        at = datetime.fromisoformat(source)
    except ValueError as exc:
        raise BadInput(
            f"{name} {source!r} is not an ISO date or time (2026-12-04, 2026-12-04T10:00Z).",
            code="INVALID_REQUEST",
        ) from exc
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _statement(found: StoredReceipt) -> dict[str, Any] | None:
    """The signed statement of a stored receipt, decoded (None for an unsigned one)."""
    raw = found.body.get("envelope")
    if not isinstance(raw, dict):
        return None
    try:
        value = json.loads(Envelope.from_dict(raw).payload)
    except (ReceiptError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def reading(statement: dict[str, Any], now: datetime) -> dict[str, Any] | None:
    """What a receipt's statement reads as at ``now``, by the kernel's own rules: each check
    resolved (a PENDING past its deadline reads as its expiry verdict), what it contributes
    under the receipt's trust policy (an untrusted PASS counts as UNKNOWN), and their fold.

    Nothing is re-signed: the receipt's recorded verdict stays what it says; this is the reading
    a person needs beside it. None when the statement is not one this version can read.
    """
    try:
        predicate = statement["predicate"]
        policy = TrustPolicy.from_dict(predicate["trustPolicy"])
        checks = []
        for c in predicate["checks"]:
            recorded = Verdict(c["verdict"])
            current = recorded
            pending = c.get("pending")
            if recorded is Verdict.PENDING and isinstance(pending, dict):
                deadline = parse_time(pending["deadline"], "deadline")
                if now >= deadline:
                    current = Verdict(pending["expiresTo"])
            counts = effective(current, Authority(c["authority"]), c.get("verifierKey"), policy)
            checks.append(
                {
                    "name": c["name"],
                    "recorded": recorded.value,
                    "now": current.value,
                    "counts_as": counts.value,
                }
            )
    except (KeyError, TypeError, ValueError, CriteriaError):
        return None
    return {
        "at": format_time(now),
        "verdict": fold(Verdict(c["counts_as"]) for c in checks).value,
        "checks": checks,
    }
