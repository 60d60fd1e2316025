"""Reading the receipt log and the ledger: who may see which receipt, and the admin's books.

A task's receipts are public on a public task and for its parties on a private one; a paid
call's receipt is for the call's parties (its submitter and its provider) and admins; the
chain's head and the ledger's sums prove the whole without showing any one record.
"""

from __future__ import annotations

from typing import Any

from adjudge.app.accounts import need_role
from adjudge.app.unit import UnitOfWork
from adjudge.app.views import is_party, receipt_view
from adjudge.errors import Error
from adjudge.store import Account, StoredReceipt, Transaction, calls, ledger, receipt_log, records


class Receipts:
    """Read use cases over the receipt log and the ledger."""

    def __init__(self, unit: UnitOfWork, fingerprint: str | None) -> None:
        self.unit = unit
        #: The fingerprint of the key receipts are signed with (None for an unsigned issuer).
        self.fingerprint = fingerprint

    def head(self) -> dict[str, Any]:
        """The log's length, the digest of its last receipt, and the signing key."""
        seq, digest = self.unit.read(receipt_log.head)
        return {"seq": seq, "digest": digest, "key": self.fingerprint}

    def get(self, viewer: Account, receipt_id: str) -> dict[str, Any]:
        """One receipt with its place in the chain (``RECEIPT_NOT_FOUND``, ``NOT_A_PARTY``)."""
        return receipt_view(self.unit.read(lambda tx: _visible(tx, viewer, receipt_id)))

    def envelope(self, viewer: Account, receipt_id: str) -> dict[str, Any]:
        """The signed envelope alone, to save and check with ``adjudge receipt verify``."""
        found = self.unit.read(lambda tx: _visible(tx, viewer, receipt_id))
        envelope = found.body.get("envelope")
        if not isinstance(envelope, dict):
            raise Error("This receipt is not signed.", code="RECEIPT_NOT_FOUND")
        return envelope

    def of_task(self, viewer: Account, task_id: str) -> dict[str, Any]:
        """A task's receipts in chain order."""

        def run(tx: Transaction) -> dict[str, Any]:
            _may_see_task(tx, viewer, task_id)
            return {"receipts": [receipt_view(r) for r in receipt_log.receipts(tx, task_id)]}

        return self.unit.read(run)

    def export(self, viewer: Account, *, after: int = 0, limit: int = 100) -> dict[str, Any]:
        """The log in chain order from sequence ``after + 1``, a page at a time (admins):
        what ``adjudge receipt verify-chain`` checks."""
        need_role(viewer, "admin")

        def run(tx: Transaction) -> dict[str, Any]:
            page = receipt_log.chain(tx, after=after, limit=limit + 1)
            more = len(page) > limit
            page = page[:limit]
            return {
                "receipts": [receipt_view(r) for r in page],
                "next_after": page[-1].seq if more and page else None,
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


def _may_see_task(tx: Transaction, viewer: Account, task_id: str) -> None:
    stored = records.task(tx, task_id)
    if stored is None:
        raise Error(f"No task {task_id}.", code="TASK_NOT_FOUND")
    if stored.task.private and not is_party(stored, viewer):
        raise Error("A private task's receipts are for its parties.", code="NOT_A_PARTY")


def _visible(tx: Transaction, viewer: Account, receipt_id: str) -> StoredReceipt:
    found = receipt_log.receipt(tx, receipt_id)
    if found is None:
        raise Error(f"No receipt {receipt_id}.", code="RECEIPT_NOT_FOUND")
    if found.task_id:
        _may_see_task(tx, viewer, found.task_id)
        return found
    call = calls.call_by_receipt(tx, receipt_id)
    parties = (call.submitted_by, call.provider) if call is not None else ()
    if call is not None and "admin" not in viewer.roles and viewer.id not in parties:
        raise Error("A call's receipt is for the call's parties.", code="NOT_A_PARTY")
    return found
