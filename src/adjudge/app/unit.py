"""The unit of work every use case runs in: one transaction, the clock, retries, idempotency.

A state change runs as:

1. open a write transaction; if the caller's Idempotency-Key was seen, answer what was stored
   (the same key for another request is ``IDEMPOTENCY_KEY_REUSED``);
2. run the use case, which reads, asks the pure core, and writes its effects;
3. store the answer under the key and commit: the answer and the effects land together or not
   at all.

A lost race (:class:`adjudge.store.ConcurrentUpdate`) re-runs the whole thing from step 1, so the
loser sees the winner's state. Refusals are not stored: nothing happened, so a retry is decided
again.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import os
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from adjudge.app.clock import Clock
from adjudge.digests import sha256_digest
from adjudge.errors import BadInput, Conflict, Error
from adjudge.receipts.canonical import canonical_json
from adjudge.store import ConcurrentUpdate, Store, Transaction, idempotency, receipt_log

T = TypeVar("T")

#: How often a use case that lost a race is re-run before giving up with CONCURRENT_UPDATE.
RETRIES = 8
#: How long the group commit's thread waits idle before it ends (the next write starts it).
GROUP_IDLE = 5.0
#: Group-commit threads on PostgreSQL. One spent most of a batch waiting on round trips while
#: the process had CPU to spare; two took a finalize 144 -> 182/s here, four 172/s (the
#: threads then contend for the interpreter). Each takes a receipt-log lane of its own.
POSTGRES_COMMITTERS = 2
#: The longest Idempotency-Key (printable ASCII).
MAX_KEY = 255


@dataclass(frozen=True)
class Idempotency:
    """An Idempotency-Key and the fingerprint of the operation that carried it."""

    key: str
    fingerprint: str

    @staticmethod
    def of(key: str | None, operation: str, inputs: Any) -> Idempotency | None:
        """The key with a fingerprint of the operation and its canonical inputs; None without.

        Refused (``INVALID_IDEMPOTENCY_KEY``) unless 1-255 printable ASCII characters.
        """
        if key is None:
            return None
        if not 0 < len(key) <= MAX_KEY or not all(" " < c <= "~" for c in key):
            raise BadInput(
                f"An Idempotency-Key is 1-{MAX_KEY} printable ASCII characters without spaces.",
                code="INVALID_IDEMPOTENCY_KEY",
            )
        return Idempotency(key, sha256_digest(canonical_json([operation, inputs])))


@dataclass(frozen=True)
class Answer(Generic[T]):
    """What a state change answered, and whether this is a replay of a stored answer."""

    value: T
    replayed: bool = False


class UnitOfWork:
    """Runs use cases against one store with one clock."""

    def __init__(self, store: Store, clock: Clock, *, group: bool = True) -> None:
        self.store = store
        self.clock = clock
        #: Writes committed several to a transaction (:class:`GroupCommit`); None: one each.
        self.commits = GroupCommit(store) if group else None

    def now(self) -> datetime:
        """The current time, from the injected clock."""
        return self.clock.now()

    def read(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` in a read-only transaction."""
        with self.store.read() as tx:
            return fn(tx)

    def write(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` in a write transaction, again from the start after a lost race: with
        group commit, in the next commit of the group (the calling thread waits for it)."""
        if self.commits is not None:
            return self.commits.submit(fn).result()
        return written(self.store, fn)

    async def write_async(self, fn: Callable[[Transaction], T]) -> T:
        """:meth:`write`, awaited on the running event loop instead of holding a thread."""
        if self.commits is not None:
            return await self.commits.run(fn)
        return await asyncio.get_running_loop().run_in_executor(None, self.write, fn)

    def close(self) -> None:
        """End the group commit's thread (after what is queued)."""
        if self.commits is not None:
            self.commits.close()

    def once(
        self,
        account_id: str,
        idem: Idempotency | None,
        fn: Callable[[Transaction], T],
        *,
        seal: bool = False,
    ) -> Answer[T]:
        """Run a state change at most once per Idempotency-Key (the module's steps).

        ``fn``'s answer must be JSON data: it is stored as it is. With ``seal`` the stored
        answer is encrypted under a key derived from the Idempotency-Key, which the store never
        holds (it keeps only the key's digest): only the caller who sent the key can replay an
        answer that carries a secret.
        """

        def attempt(tx: Transaction) -> Answer[T]:
            if idem is not None:  # (1)
                seen = idempotency.recalled(tx, account_id, idem.key)
                if seen is not None:
                    return _replay(seen, idem, account_id)
            value = fn(tx)  # (2)
            if idem is not None:  # (3)
                stored: Any = _seal(value, idem.key, account_id) if seal else value
                idempotency.remember(
                    tx,
                    account_id=account_id,
                    key=idem.key,
                    fingerprint=idem.fingerprint,
                    answer={"sealed": seal, "answer": stored},
                    at=self.clock.now(),
                )
            return Answer(value)

        try:
            return self.write(attempt)
        except Error:
            # Under READ COMMITTED a duplicate can miss the key (read before the first request
            # committed) yet see the state it changed, and be refused. If the key is stored
            # now, the request did happen: answer as a replay.
            if idem is not None:
                seen = self.read(lambda tx: idempotency.recalled(tx, account_id, idem.key))
                if seen is not None and seen[0] == idem.fingerprint:
                    return _replay(seen, idem, account_id)
            raise


def retry(fn: Callable[[], T]) -> T:
    """``fn()``, run again with a short random back-off after each lost race."""
    for attempt in range(RETRIES):
        try:
            return fn()
        except ConcurrentUpdate:
            if attempt == RETRIES - 1:
                raise
            time.sleep(random.uniform(0, 0.002 * 2**attempt))
    raise AssertionError("unreachable")


def written(store: Store, fn: Callable[[Transaction], T]) -> T:
    """``fn(tx)`` in a write transaction of its own, committed; run again after a lost race."""

    def once() -> T:
        with store.write() as tx:
            return fn(tx)

    return retry(once)


def _replay(seen: tuple[str, Any], idem: Idempotency, account_id: str) -> Answer[Any]:
    fingerprint, stored = seen
    if fingerprint != idem.fingerprint:
        raise Conflict(
            "This Idempotency-Key was used for a different request; send a new key.",
            code="IDEMPOTENCY_KEY_REUSED",
        )
    answer = stored["answer"]
    if stored.get("sealed"):
        answer = _unseal(answer, idem.key, account_id)
    return Answer(answer, replayed=True)


def _cipher(key: str, account_id: str) -> AESGCM:
    hkdf = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=account_id.encode("utf-8"),
        info=b"adjudge idempotent answer v1",
    )
    return AESGCM(hkdf.derive(key.encode("utf-8")))


def _seal(value: Any, key: str, account_id: str) -> str:
    nonce = os.urandom(12)
    data = json.dumps(value, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(nonce + _cipher(key, account_id).encrypt(nonce, data, None)).decode()


def _unseal(sealed: str, key: str, account_id: str) -> Any:
    raw = base64.b64decode(sealed)
    return json.loads(_cipher(key, account_id).decrypt(raw[:12], raw[12:], None))


#: Put on a group commit's queue by :meth:`GroupCommit.close`: wakes its thread to end.
_WAKE: Any = object()


class GroupCommit:
    """Several units of work written in one transaction and one commit, by a thread of its own
    (on PostgreSQL, :data:`POSTGRES_COMMITTERS` threads, each committing its own batches).

    A commit is the costly part of a small write (a round trip and a flush on PostgreSQL; the
    write lock, BEGIN and COMMIT on SQLite), so when several paid calls end at once their writes
    share one: :meth:`run` queues ``fn``; the thread takes every unit queued by then (at most
    ``max_batch``) and runs each in a savepoint of one write transaction — a unit that raises is
    rolled back alone, the others go on — then commits, and only then answers each unit. So no
    unit is answered before what it wrote is committed, none waits for a batch to fill (a lone
    unit runs at once: batches form only while an earlier commit is running), and a failed
    commit fails none for good: a lost race (:class:`ConcurrentUpdate`) runs the batch again, up
    to :data:`RETRIES` times, as :meth:`UnitOfWork.write` would each unit.
    """

    def __init__(
        self,
        store: Store,
        *,
        max_batch: int = 32,
        name: str = "adjudge-commits",
        threads: int | None = None,
    ) -> None:
        self.store = store
        self.max_batch = max_batch
        self.name = name
        #: Committing threads: one on SQLite (one writer at a time anyway); on PostgreSQL
        #: :data:`POSTGRES_COMMITTERS`, so one batch's round trips overlap another's.
        self.threads = threads or (1 if store.dialect == "sqlite" else POSTGRES_COMMITTERS)
        self._queue: queue.SimpleQueue[_Unit[Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._stopping = False

    def here(self) -> bool:
        """Whether the calling thread is one committing (a unit of work must not wait
        for another unit of work: that one would wait for it)."""
        return threading.current_thread() in self._threads

    def submit(self, fn: Callable[[Transaction], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn``; its future is answered once the transaction that ran it committed."""
        if self.here():
            raise RuntimeError("a unit of work waited for another unit of work")
        unit: _Unit[T] = _Unit(fn, concurrent.futures.Future())
        with self._lock:
            self._queue.put(unit)
            if len(self._threads) < self.threads:
                thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._threads.add(thread)
                thread.start()
        return unit.future

    async def run(self, fn: Callable[[Transaction], T]) -> T:
        """:meth:`submit`, awaited on the running event loop."""
        return await asyncio.wrap_future(self.submit(fn))

    def close(self) -> None:
        """Run what is queued, then end the threads (a later unit starts others)."""
        with self._lock:
            self._stopping = True
            threads = list(self._threads)
            if threads:
                self._queue.put(_WAKE)  # after every unit queued: each thread passes it on
        for thread in threads:
            thread.join(timeout=30)
        with self._lock:
            self._stopping = False

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                first = self._queue.get(timeout=GROUP_IDLE)
            except queue.Empty:
                first = _WAKE
            if first is _WAKE:
                with self._lock:
                    if self._stopping:  # closing: every unit before the wake was taken
                        self._threads.discard(me)
                        self._queue.put(_WAKE)  # for the next thread waiting
                        return
                    if self._queue.empty():  # nothing for a while: end (a unit starts one)
                        self._threads.discard(me)
                        return
                continue
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    unit = self._queue.get_nowait()
                except queue.Empty:
                    break
                if unit is _WAKE:  # another thread's: leave it for them
                    self._queue.put(_WAKE)
                    break
                batch.append(unit)
            self._commit(batch)

    def _commit(self, batch: list[_Unit[Any]]) -> None:
        if len(batch) == 1:
            self._commit_one(batch[0])
            return
        for attempt in range(RETRIES):
            outcomes: list[tuple[bool, Any]] = []
            try:
                with self.store.write() as tx:
                    for i, unit in enumerate(batch):
                        mark = f"unit_{i}"
                        tx.savepoint(mark)
                        appended, hooks = set(tx.appended), len(tx.committed)
                        held, credits = dict(tx.held_moves), dict(tx.credits_due)
                        try:
                            value = unit.fn(tx)
                            receipt_log.flush(tx)  # its receipts chained before the next unit's
                        except Exception as exc:  # this unit's own refusal: undo it alone
                            tx.rollback_to(mark)
                            tx.receipts_due.clear()
                            tx.appended &= appended
                            del tx.committed[hooks:]
                            tx.held_moves = held
                            tx.credits_due = credits
                            outcomes.append((False, exc))
                        else:
                            tx.release(mark)
                            outcomes.append((True, value))
            except ConcurrentUpdate:
                if attempt == RETRIES - 1:
                    for unit in batch:
                        unit.future.set_exception(ConcurrentUpdate("Too many lost races."))
                    return
                time.sleep(random.uniform(0, 0.002 * 2**attempt))
                continue
            except Exception as exc:  # the transaction itself failed: nothing was written
                for unit in batch:
                    unit.future.set_exception(exc)
                return
            again = []
            for unit, (ok, value) in zip(batch, outcomes, strict=True):
                if ok:
                    unit.future.set_result(value)
                elif isinstance(value, ConcurrentUpdate) and unit.tries < RETRIES - 1:
                    unit.tries += 1
                    again.append(unit)  # it lost a race on its own rows: run it again
                else:
                    unit.future.set_exception(value)
            if again:
                time.sleep(random.uniform(0, 0.002))
                self._commit(again)
            return

    def _commit_one(self, unit: _Unit[Any]) -> None:
        """A unit alone in its batch (each one, when calls come one at a time) needs no
        savepoint: its refusal rolls back a transaction that holds nothing else, and a lost
        race runs it again, as :meth:`UnitOfWork.write` would. Two statements fewer a unit."""
        try:
            value = written(self.store, unit.fn)
        except Exception as exc:  # the unit's own outcome, handed to its caller
            unit.future.set_exception(exc)
        else:
            unit.future.set_result(value)


@dataclass
class _Unit(Generic[T]):
    fn: Callable[[Transaction], T]
    future: concurrent.futures.Future[T]
    tries: int = 0
