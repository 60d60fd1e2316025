"""A receipt's body is kept in its row (PostgreSQL): no compression tried, nothing written to
the table's TOAST table for a body up to a page; only a longer one is moved out."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from adjudge.digests import sha256_digest as content_digest
from adjudge.kernel import Authority, Check, Verdict, determine, oracle
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.store import Store, receipt_log

AT = datetime(2026, 1, 1, tzinfo=UTC)
ISSUER = SignedReceipts(SigningKey.from_seed(bytes(range(32))))


def _issue(evidence: int) -> receipt_log.Issue:
    """A receipt whose check names ``evidence`` digests (about 71 bytes of body each)."""
    record = b"kept whole"
    digests = tuple(content_digest(b"%d" % i) for i in range(evidence))
    checks = [
        oracle.integrity(oracle.Record(record), content_digest(record)),
        Check("auto-check", Verdict.PASS, Authority.DETERMINISTIC, digests),
    ]
    determination = determine(content_digest(record), checks, now=AT)
    return lambda place: ISSUER.sign(determination, place, about="call:kept")


def _moved_out(store: Store) -> int:
    """The rows of the receipts table's TOAST table (its values moved out of their rows)."""
    with store.read() as tx:
        toast = tx.conn.execute(
            text("SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'receipts'")
        ).scalar_one()
        return int(tx.conn.execute(text(f"SELECT count(*) FROM {toast}")).scalar_one())


def _append(store: Store, evidence: int) -> receipt_log.StoredReceipt:
    with store.write() as tx:
        pending = receipt_log.append(tx, _issue(evidence), task_id=None, at=AT)
        receipt_log.flush(tx)
        return receipt_log.signed(tx, pending)


def test_a_receipt_body_is_kept_in_its_row(store: Store) -> None:
    """A body of 2-8 kB (PostgreSQL would compress and move one out past 2 kB) is written
    whole in its row and read back as it was signed; one past a page is moved out."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite keeps every row whole: it has no TOAST table")
    kept = _append(store, 40)
    assert 3000 < len(json.dumps(kept.body)) < 8000
    assert _moved_out(store) == 0
    with store.read() as tx:
        read = receipt_log.receipt(tx, kept.id)
    assert read is not None
    assert (read.digest, read.body) == (kept.digest, kept.body)
    _append(store, 120)
    assert _moved_out(store) > 0
