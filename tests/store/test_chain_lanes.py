"""The receipt log on lanes in the database: two stores (two engines, as two ``serve`` processes
have) append at once, each transaction on a lane no other holds; the log, cut at a checkpoint
as the export cuts it, verifies against the signing key and ends where the checkpoint says."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from adjudge.app.receipts import ABOUT, checkpoint_of
from adjudge.digests import sha256_digest as content_digest
from adjudge.errors import StorageError
from adjudge.kernel import Authority, Check, Verdict, determine, oracle
from adjudge.receipts import SignedReceipts, SigningKey, canonical_bytes, verify_chain
from adjudge.receipts.checkpoints import named_heads
from adjudge.store import Store, receipt_log
from adjudge.store.database import DEFAULT_PG_LANES, _lanes
from support.audit import audit
from support.plans import sqlite_plans

AT = datetime(2026, 1, 1, tzinfo=UTC)
ISSUER = SignedReceipts(SigningKey.from_seed(bytes(range(32))))


def _issue(text: bytes) -> receipt_log.Issue:
    checks = [
        oracle.integrity(oracle.Record(text), content_digest(text)),
        Check("auto-check", Verdict.PASS, Authority.DETERMINISTIC, (content_digest(text),)),
    ]
    determination = determine(content_digest(text), checks, now=AT)
    return lambda place: ISSUER.sign(determination, place, about=f"call:{text.decode()}")


def _checkpoint(store: Store) -> receipt_log.StoredReceipt:
    with store.write() as tx:
        return receipt_log.checkpoint(
            tx,
            lambda place, heads: ISSUER.sign(checkpoint_of(heads, AT), place, about=ABOUT),
            at=AT,
        )


def test_two_stores_append_at_once_on_lanes_and_the_log_verifies(store: Store) -> None:
    """Writers on two engines hold lanes at the same time (on PostgreSQL: several lanes are
    used); every lane is one chain; the log cut at a checkpoint verifies, pinned to it."""
    other = Store(store.url)
    stores = [store, other]
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(12):
                with stores[n % 2].write() as tx:
                    receipt_log.append(tx, _issue(b"w%d-%d" % (n, i)), task_id=None, at=AT)
                    receipt_log.flush(tx)  # its lane is held from here to the commit
                    time.sleep(0.005)
                    if i == 6:
                        receipt_log.append(tx, _issue(b"w%d-x" % n), task_id=None, at=AT)
                if i % 5 == 4:
                    _checkpoint(stores[n % 2])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    other.dispose()
    assert errors == []
    pin = _checkpoint(store)
    audit(store)
    with store.read() as tx:
        lanes = receipt_log.lanes(tx)
        heads = named_heads(_predicate(pin), _subject(pin))
        assert heads is not None
        bounds = {lane: (seq + 1 if seq is not None else 0) for lane, _, seq in heads}
        bounds[pin.lane] = pin.seq
        stored = receipt_log.receipt(tx, pin.id)  # its position, given as it committed
        assert stored is not None
        cut = receipt_log.chain(tx, through=receipt_log.Cut(bounds, stored.position))
    used = [lane for lane in lanes if lane.count]
    assert len(lanes) == store.lanes == (1 if store.dialect == "sqlite" else 4)
    if store.dialect == "postgresql":
        assert len(used) >= 2, lanes  # writers on two engines did not wait for one another
    lines = [canonical_bytes(dict(r.body["envelope"])) for r in cut]
    report = verify_chain(lines, ISSUER.fingerprint, expected_head=pin.digest)
    assert report.count == len(cut) == sum(lane.count for lane in lanes)
    assert report.head is not None and report.head.receipt_id == pin.digest


def test_a_page_of_a_cut_walks_the_positions_from_its_start(sqlite_store: Store) -> None:
    """A page of the log cut at a checkpoint reads the positions' index from ``after`` up to
    the checkpoint's, sorting nothing (before, SQLite read the lane's receipts from its first
    by the lane's index and sorted them, for every page: an export quadratic in the log), and
    holds the page's receipts."""
    for i in range(6):
        with sqlite_store.write() as tx:
            receipt_log.append(tx, _issue(b"p%d" % i), task_id=None, at=AT)
    pin = _checkpoint(sqlite_store)
    with sqlite_store.read() as tx:
        stored = receipt_log.receipt(tx, pin.id)
    assert stored is not None
    cut = receipt_log.Cut({0: pin.seq}, stored.position)

    def page(tx: object) -> list[receipt_log.StoredReceipt]:
        return receipt_log.chain(tx, after=3, limit=2, through=cut)  # type: ignore[arg-type]

    [(_, [step])] = sqlite_plans(sqlite_store, page)
    assert step.startswith("SEARCH receipts USING INDEX sqlite_autoindex_receipts_"), step
    assert step.endswith("(position>? AND position<?)"), step
    with sqlite_store.read() as tx:
        assert [r.seq for r in page(tx)] == [4, 5]


def test_a_lane_cut_short_in_the_database_is_caught_by_the_checkpoint(store: Store) -> None:
    """Deleting a lane's last receipt under a checkpoint (by hand, in the database) makes the
    exported log fail against the pinned checkpoint."""
    for i in range(3):
        with store.write() as tx:
            receipt_log.append(tx, _issue(b"c%d" % i), task_id=None, at=AT)
    pin = _checkpoint(store)
    with store.read() as tx:
        log = receipt_log.chain(tx)
    lines = [canonical_bytes(dict(r.body["envelope"])) for r in log]
    assert verify_chain(lines, ISSUER.fingerprint, expected_head=pin.digest).count == 4
    with pytest.raises(Exception) as refused:
        verify_chain([*lines[:2], lines[3]], ISSUER.fingerprint, expected_head=pin.digest)
    assert getattr(refused.value, "code", None) == "RECEIPT_CHAIN_BROKEN"


def _predicate(found: receipt_log.StoredReceipt) -> dict[str, object]:
    import base64  # noqa: PLC0415
    import json  # noqa: PLC0415

    statement = json.loads(base64.b64decode(found.body["envelope"]["payload"]))
    predicate = statement["predicate"]
    assert isinstance(predicate, dict)
    return predicate


def _subject(found: receipt_log.StoredReceipt) -> str:
    import base64  # noqa: PLC0415
    import json  # noqa: PLC0415

    statement = json.loads(base64.b64decode(found.body["envelope"]["payload"]))
    return "sha256:" + str(statement["subject"][0]["digest"]["sha256"])


@pytest.mark.parametrize("text", ["4_0", " 4", "4 ", "4.0", "+4", "٤", "four"])
def test_a_lane_count_not_in_digits_is_refused(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ADJUDGE_CHAIN_LANES`` is read as every setting's variable is, digits only: ``4_0`` was
    40 lanes and `` 4`` was 4; each is refused naming the variable."""
    monkeypatch.setenv("ADJUDGE_CHAIN_LANES", text)
    with pytest.raises(StorageError) as refused:
        _lanes("postgresql", None)
    assert "ADJUDGE_CHAIN_LANES is a whole number of lanes in digits" in refused.value.message


@pytest.mark.parametrize(("text", "lanes"), [("", DEFAULT_PG_LANES), ("8", 8), ("08", 8)])
def test_a_lane_count_in_digits_is_read(
    text: str, lanes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Digits are the count; an empty variable is unset (the default)."""
    monkeypatch.setenv("ADJUDGE_CHAIN_LANES", text)
    assert _lanes("postgresql", None) == lanes
