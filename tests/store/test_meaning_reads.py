"""The judgments after the answer are read in the order they are wanted, by index: a pass takes
the least tried, then the oldest, walking its batch; a key owner's list merges each key's
oldest page. Both are exactly what a model of the queue gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adjudge.store import Store, meaning_queue
from support.plans import sqlite_plans

T0 = datetime(2026, 4, 1, tzinfo=UTC)
KEYS = ("key:a", "key:b", "key:c")


def _queued(store: Store) -> None:
    """Twelve calls, each asking some of the keys, at moments with ties; a few tried, two
    judged."""
    with store.write() as tx:
        for n in range(12):
            meaning_queue.add(
                tx,
                call_id=f"call-{n:02d}",
                provider="sky",
                policy_digest="sha256:" + "1" * 64,
                response_digest="sha256:" + "2" * 64,
                receipt_id=f"r-{n}",
                at=T0 + timedelta(minutes=n // 2),
                key_judges=[k for i, k in enumerate(KEYS) if (n + i) % 3 != 0],
            )
        for n in (1, 4, 4, 7):
            meaning_queue.tried(tx, f"call-{n:02d}")
        for n in (2, 9):
            meaning_queue.judged(tx, f"call-{n:02d}", outcome="pass", receipt_id="r", at=T0)


def test_a_key_owners_list_merges_each_keys_oldest_page(store: Store) -> None:
    """For any set of keys and limit, the list is the pending calls asking any of them, oldest
    first (ties by call, then key), each with the key asked."""
    _queued(store)
    asked = {
        (f"call-{n:02d}", k)
        for n in range(12)
        if n not in (2, 9)
        for i, k in enumerate(KEYS)
        if (n + i) % 3 != 0
    }
    for keys in (KEYS[:1], KEYS[:2], KEYS, ("key:none",)):
        model = sorted(
            ((call, key) for call, key in asked if key in keys),
            key=lambda pair: (int(pair[0][-2:]) // 2, pair[0], pair[1]),
        )
        for limit in (1, 4, 50):
            with store.read() as tx:
                found = meaning_queue.asked_of(tx, keys, limit=limit)
            assert [(q.call_id, key) for q, key in found] == model[:limit], (keys, limit)


def test_a_pass_takes_the_least_tried_then_the_oldest(store: Store) -> None:
    _queued(store)
    with store.read() as tx:
        batch = [q.call_id for q in meaning_queue.pending(tx, limit=5)]
    assert batch == ["call-00", "call-03", "call-05", "call-06", "call-08"]


def test_each_read_walks_an_index_in_its_order(sqlite_store: Store) -> None:
    """SQLite's plans: a pass's batch walks the pending judgments' index and sorts nothing; a
    key owner's list reads each key's asks by the key's index (never the pending judgments of
    every provider)."""
    [(_, batch)] = sqlite_plans(sqlite_store, lambda tx: meaning_queue.pending(tx, limit=5))
    assert batch == ["SEARCH meaning_queue USING INDEX ix_meaning_queue_pending (state=?)"]
    listed = sqlite_plans(sqlite_store, lambda tx: meaning_queue.asked_of(tx, KEYS, limit=5))
    assert len(listed) == len(KEYS)
    for _, plan in listed:
        assert plan[0] == "SEARCH meaning_asks USING INDEX ix_meaning_asks_judge (judge=?)", plan
