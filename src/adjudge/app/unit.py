"""The unit of work every use case runs in: one transaction, the clock, retries, idempotency.

A state change runs as:

1. open a write transaction; if the caller's Idempotency-Key was seen, answer what was stored
   (the same key for another request is ``IDEMPOTENCY_KEY_REUSED``);
2. run the use case, which reads, asks the pure core, and writes its effects;
3. store the answer under the key and commit: the answer and the effects land together or not
   at all. Each answer stored is counted in its account's hour: past the deployment's
   ``idempotency_keys_per_hour`` the change is refused (``IDEMPOTENCY_KEYS_QUOTA_EXCEEDED``)
   and rolled back, so one account's requests, each with a new key, grow the table at a
   bounded rate (an answer is kept 30 days).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Generic, TypeVar

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from adjudge.app.clock import Clock
from adjudge.digests import sha256_digest
from adjudge.errors import BadInput, Conflict, Error, RateLimited
from adjudge.receipts.canonical import canonical_json
from adjudge.store import (
    ConcurrentUpdate,
    Store,
    Transaction,
    hot_rows,
    idempotency,
    quotas,
    receipt_log,
    store_error,
)

T = TypeVar("T")

#: How often a use case that lost a race is re-run before giving up with CONCURRENT_UPDATE.
RETRIES = 8
#: How long the group commit's thread waits idle before it ends (the next write starts it).
GROUP_IDLE = 5.0
#: How often an event loop tries to commit a unit on a local store another writer holds, a
#: moment apart (:data:`LOOP_RETRY` seconds), before it leaves the unit to the commit thread.
LOOP_TRIES = 50
LOOP_RETRY = 0.001
#: The longest Idempotency-Key (printable ASCII).
MAX_KEY = 255
#: The window an account's stored answers are counted over (``idempotency_keys_per_hour``).
KEYS_WINDOW = timedelta(hours=1)


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

    def __init__(
        self, store: Store, clock: Clock, *, keys_per_hour: int, group: bool = True
    ) -> None:
        self.store = store
        self.clock = clock
        #: The answers one account may store under new Idempotency-Keys in an hour.
        self.keys_per_hour = keys_per_hour
        #: Writes committed several to a transaction (:class:`GroupCommit`); None: one each.
        self.commits = GroupCommit(store) if group else None

    def now(self) -> datetime:
        """The current time, from the injected clock."""
        return self.clock.now()

    def read(self, fn: Callable[[Transaction], T], *, one_moment: bool = False) -> T:
        """Run ``fn`` as a read (:meth:`Store.read`; ``one_moment``: all it reads from one
        snapshot, on PostgreSQL too)."""
        with self.store.read(one_moment=one_moment) as tx:
            return fn(tx)

    def write(self, fn: Callable[[Transaction], T], *, hot: tuple[hot_rows.Row, ...] = ()) -> T:
        """Run ``fn`` in a write transaction, again from the start after a lost race: with
        group commit, in the next commit of the group (the calling thread waits for it;
        ``hot``: as :meth:`write_async`'s)."""
        if self.commits is not None:
            return self.commits.submit(fn, hot=hot).result()
        return written(self.store, fn)

    def write_each(self, fns: Sequence[Callable[[Transaction], T]]) -> list[T | Exception]:
        """Run each of ``fns`` as :meth:`write` runs one, all queued at once, so that a sweep's
        many small steps share the group commit's transactions instead of waiting for a commit
        each; each one's answer, or what it raised: an :class:`Error` that refused it, or a
        fault of its row's (the others go on either way, each rolled back alone)."""
        if self.commits is None:
            pending: list[Callable[[], T]] = [partial(written, self.store, fn) for fn in fns]
        else:
            pending = [self.commits.submit(fn).result for fn in fns]
        out: list[T | Exception] = []
        for answer in pending:
            try:
                out.append(answer())
            except Exception as exc:  # this unit's alone: the sweep logs it and puts it back
                out.append(exc)
        return out

    async def write_async(
        self,
        fn: Callable[[Transaction], T],
        *,
        on_loop: bool = True,
        hot: tuple[hot_rows.Row, ...] = (),
    ) -> T:
        """:meth:`write`, awaited on the running event loop instead of holding a thread
        (``on_loop``: see :meth:`GroupCommit.run`; ``hot``: the rows of many transactions
        ``fn`` will change, which a batch of several units locks first, in one order)."""
        if self.commits is not None:
            return await self.commits.run(fn, on_loop=on_loop, hot=hot)
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
        hot: tuple[hot_rows.Row, ...] = (),
        refused: Callable[[Transaction], None] | None = None,
        kept: Callable[[T], bool] | None = None,
    ) -> Answer[T]:
        """Run a state change at most once per Idempotency-Key (the module's steps; ``hot``:
        the rows of many transactions ``fn`` changes, as :meth:`write_async`'s).

        ``fn``'s answer must be JSON data: it is stored as it is. With ``seal`` the stored
        answer is encrypted under a key derived from the Idempotency-Key, which the store never
        holds (it keeps only the key's digest): only the caller who sent the key can replay an
        answer that carries a secret. ``refused``, when given, first reads whether the change
        would be refused, raising its refusal, in a read transaction on the caller's thread:
        a refusal then never takes its turn among the writes (a key's stored answer is replayed
        all the same); what it lets through, the write decides again. ``kept``, when given,
        says whether an answer is stored under the key: one it declines changed nothing (a
        review claim that leased nothing), and is decided anew when sent again, as a refusal is.
        """
        try:
            if refused is not None:
                self.read(refused)
            return self.write(self._attempt_once(account_id, idem, fn, seal, kept), hot=hot)
        except Error:
            replay = self._replayed_after_refusal(account_id, idem)
            if replay is None:
                raise
            return replay

    async def once_async(
        self,
        account_id: str,
        idem: Idempotency | None,
        fn: Callable[[Transaction], T],
        *,
        seal: bool = False,
        hot: tuple[hot_rows.Row, ...] = (),
    ) -> Answer[T]:
        """:meth:`once`, awaited on the running event loop (a local store's unit is written on
        the loop itself: :class:`GroupCommit`)."""
        try:
            return await self.write_async(self._attempt_once(account_id, idem, fn, seal), hot=hot)
        except Error:
            if idem is None:
                raise
            if self.store.local:
                replay = self._replayed_after_refusal(account_id, idem)
            else:  # a round trip: on a thread, not on the loop
                replay = await asyncio.to_thread(self._replayed_after_refusal, account_id, idem)
            if replay is None:
                raise
            return replay

    def _attempt_once(
        self,
        account_id: str,
        idem: Idempotency | None,
        fn: Callable[[Transaction], T],
        seal: bool,
        kept: Callable[[T], bool] | None = None,
    ) -> Callable[[Transaction], Answer[T]]:
        def attempt(tx: Transaction) -> Answer[T]:
            if idem is not None:  # (1)
                seen = idempotency.recalled(tx, account_id, idem.key)
                if seen is not None:
                    return _replay(seen, idem, account_id)
            value = fn(tx)  # (2)
            if idem is not None and (kept is None or kept(value)):  # (3)
                self._count_key(tx, account_id)
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

        return attempt

    def _count_key(self, tx: Transaction, account_id: str) -> None:
        """Count an answer stored under a new key in its account's hour, as the transaction
        that stores it commits (a refused change counts nothing); past :attr:`keys_per_hour`
        the refusal rolls the change back with the count."""
        start, wait = quotas.window(self.clock.now(), KEYS_WINDOW)
        scope = f"idempotency:{account_id}"
        if quotas.count_at_commit(tx, scope, start) >= self.keys_per_hour:
            raise RateLimited(
                f"An account may make {self.keys_per_hour} state changes with a new "
                f"Idempotency-Key an hour; nothing was changed. Try again in {wait} s (a "
                "request sent again with a key already answered is answered as before).",
                retry_after=wait,
                code="IDEMPOTENCY_KEYS_QUOTA_EXCEEDED",
            )

    def _replayed_after_refusal(
        self, account_id: str, idem: Idempotency | None
    ) -> Answer[Any] | None:
        """Under READ COMMITTED a duplicate can miss the key (read before the first request
        committed) yet see the state it changed, and be refused. If the key is stored now, the
        request did happen: its answer, as a replay."""
        if idem is None:
            return None
        seen = self.read(lambda tx: idempotency.recalled(tx, account_id, idem.key))
        if seen is not None and seen[0] == idem.fingerprint:
            return _replay(seen, idem, account_id)
        return None


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
    """Several units of work written in one transaction and one commit, by a thread of its own.

    A commit is the costly part of a small write (a round trip and a flush on PostgreSQL; the
    write lock, BEGIN and COMMIT on SQLite), so when several paid calls end at once their writes
    share one: :meth:`run` queues ``fn``; the thread takes every unit queued by then (at most
    ``max_batch``) and runs each in a savepoint of one write transaction — a unit that raises is
    rolled back alone, the others go on — then commits, and only then answers each unit. So no
    unit is answered before what it wrote is committed, none waits for a batch to fill (a lone
    unit runs at once: batches form only while an earlier commit is running), and a failed
    commit fails none for good: a lost race (:class:`ConcurrentUpdate`) runs the batch again, up
    to :data:`RETRIES` times, as :meth:`UnitOfWork.write` would each unit.

    On a :attr:`Store.local` store (SQLite) a unit awaited on an event loop is committed on
    that loop instead (:meth:`run`): the units queued during one turn of the loop form a
    batch, run as soon as the turn ends. Handing each write to a thread and back cost more
    than the write: the thread waited for the interpreter lock at each statement while the
    loop held it, so the one committing thread was busy all the time at 40% of its CPU, and
    it was what bounded a process's paid calls. A batch the loop cannot write at once
    (another writer holds the store) goes to the thread as before: the loop never waits.

    A unit whose caller gave up (a cancelled task) before the unit began is not run; one that
    began is committed and its answer dropped: a caller gone never stops the commits of the
    others.
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
        #: Committing threads: one, on either database. On SQLite one writer writes at a time
        #: anyway. On PostgreSQL two batches at once deadlocked on the rows their units share
        #: (a caller's wallet, a provider's quality window) until batches locked those first,
        #: in one order (:mod:`adjudge.store.hot_rows`); since then two threads no longer
        #: deadlock but ran no more paid calls a second than one (docs/service.md, *One
        #: committing thread again*, *Shared rows locked first*).
        self.threads = threads or 1
        self._queue: queue.SimpleQueue[_Unit[Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._stopping = False
        #: The units each event loop queued this turn (:meth:`run` on a local store).
        self._turns: dict[asyncio.AbstractEventLoop, list[_Unit[Any]]] = {}
        #: Set on a thread while its loop commits a turn (see :meth:`here`): several loops,
        #: each on a thread of its own, may commit turns at once.
        self._on_loop = threading.local()

    def here(self) -> bool:
        """Whether the calling thread is one committing (a unit of work must not wait
        for another unit of work: that one would wait for it)."""
        return threading.current_thread() in self._threads or getattr(
            self._on_loop, "committing", False
        )

    def submit(
        self, fn: Callable[[Transaction], T], *, hot: tuple[hot_rows.Row, ...] = ()
    ) -> concurrent.futures.Future[T]:
        """Queue ``fn``; its future is answered once the transaction that ran it committed.
        ``hot``: the rows of many transactions it will change (:mod:`adjudge.store.hot_rows`),
        which a batch of several units locks first, in one order."""
        if self.here():
            raise RuntimeError("a unit of work waited for another unit of work")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            self._queue.put(_Unit(fn, future, hot))
            if len(self._threads) < self.threads:
                thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._threads.add(thread)
                thread.start()
        return future

    async def run(
        self,
        fn: Callable[[Transaction], T],
        *,
        on_loop: bool = True,
        hot: tuple[hot_rows.Row, ...] = (),
    ) -> T:
        """:meth:`submit`, awaited on the running event loop; on a local store, committed on
        the loop itself when the store's writer is free as this turn of the loop ends.

        ``on_loop=False`` is for a unit whose own work is heavy (a large answer to encode and
        store): the thread commits it, and between its statements the loop goes on serving,
        where on the loop it would stop every other request for as long as it runs."""
        if on_loop and self.store.local:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[T] = loop.create_future()
            turn = self._turns.get(loop)
            if turn is None:
                turn = self._turns[loop] = []
                loop.call_soon(self._commit_turn, loop)
            turn.append(_Unit(fn, future, hot))
            try:
                return await future
            except _WriterBusy:
                pass  # another writer held the store: the thread waits for it instead
        return await asyncio.wrap_future(self.submit(fn, hot=hot))

    def _commit_turn(self, loop: asyncio.AbstractEventLoop) -> None:
        """Commit the units ``loop`` queued this turn, on the loop, without waiting for the
        store. Units a batch could not write (another writer held the store; nothing was
        written) are tried again a moment later, on a later turn: handing them to the thread at
        once made it the store's holder the next batch found, and so on, until every write went
        through the thread. A store held past :data:`LOOP_TRIES` tries is left to the thread,
        which waits for it (``_WriterBusy``)."""
        units = [u for u in self._turns.pop(loop, []) if not u.future.cancelled()]
        busy: list[_Unit[Any]] = []
        self._on_loop.committing = True
        try:
            for i in range(0, len(units), self.max_batch):
                batch = units[i : i + self.max_batch]
                try:
                    outcomes = self._attempt(batch, wait=False)
                except ConcurrentUpdate:  # the store was held: nothing was written
                    busy += batch
                    continue
                except Exception as exc:  # the transaction itself failed: nothing was written
                    outcomes = [(False, exc)] * len(batch)
                for unit, (ok, value) in zip(batch, outcomes, strict=True):
                    if not ok and isinstance(value, ConcurrentUpdate):
                        busy.append(unit)  # its own lost race: run again, as the thread would
                    else:
                        _answer(unit.future, ok, value)
        except BaseException as exc:  # never leave a caller waiting
            for unit in units:
                _answer(unit.future, False, exc)
            raise
        finally:
            self._on_loop.committing = False
        again = []
        for unit in busy:
            unit.tries += 1
            if unit.tries < LOOP_TRIES:
                again.append(unit)
            else:
                _answer(unit.future, False, _WriterBusy())
        if again:
            self._turns[loop] = again  # units queued meanwhile join them
            loop.call_later(LOOP_RETRY, self._commit_turn, loop)

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
            # A unit's caller that gave up before it began is not run; once running, its
            # future can no longer be cancelled, so answering it cannot fail.
            batch = [u for u in batch if _begun(u.future)]
            if batch:
                self._commit(batch)

    def _commit(self, batch: list[_Unit[Any]]) -> None:
        if len(batch) == 1:
            self._commit_one(batch[0])
            return
        for attempt in range(RETRIES):
            try:
                outcomes = self._attempt(batch)
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
                if not ok and isinstance(value, ConcurrentUpdate) and unit.tries < RETRIES - 1:
                    unit.tries += 1
                    again.append(unit)  # it lost a race on its own rows: run it again
                else:
                    _answer(unit.future, ok, value)
            if again:
                time.sleep(random.uniform(0, 0.002))
                self._commit(again)
            return

    def _attempt(self, batch: list[_Unit[Any]], *, wait: bool = True) -> list[tuple[bool, Any]]:
        """Run the batch's units in one write transaction and commit it: each unit's outcome
        (ok, its value or exception). A unit alone needs no savepoint: its refusal rolls back
        a transaction that holds nothing else (two statements fewer a unit). Raises what
        failed the transaction itself (:class:`ConcurrentUpdate` for a race a retry resolves):
        then nothing was written."""
        if len(batch) == 1:
            try:
                with self.store.write(wait=wait) as tx:
                    value = batch[0].fn(tx)
            except ConcurrentUpdate:
                raise
            except Exception as exc:  # the unit's own refusal, or a failed commit
                return [(False, exc)]
            return [(True, value)]
        outcomes: list[tuple[bool, Any]] = []
        with self.store.write(wait=wait) as tx:
            # The rows its units share with other transactions, locked first in one order
            # unless its units take them in that order anyway: a batch holds what its units
            # lock until it commits, and two batches (two processes) taking them in other
            # orders would wait on each other.
            hot_rows.take(tx, [unit.hot for unit in batch])
            kept = None  # the savepoint of the unit before, done with as the next one's is set
            for i, unit in enumerate(batch):
                mark = f"unit_{i}"
                tx.savepoint(mark, done_with=kept)
                try:
                    value = unit.fn(tx)
                    receipt_log.flush(tx)  # its receipts chained before the next unit's
                    tx.confirm()  # its held writes' checks, raised as its own
                except Exception as exc:  # this unit's own refusal: undo it alone
                    tx.rollback_to(mark)
                    # A driver's error as the store's: a deadlock with another process's
                    # batch (batches take rows in no common order) is a lost race, and the
                    # unit runs again; any other, a storage error.
                    outcomes.append((False, store_error(exc)))
                    kept = None
                else:
                    outcomes.append((True, value))
                    kept = mark  # the last one's is kept by the commit
        return outcomes

    def _commit_one(self, unit: _Unit[Any]) -> None:
        """A unit alone in its batch (each one, when calls come one at a time) needs no
        savepoint: its refusal rolls back a transaction that holds nothing else, and a lost
        race runs it again, as :meth:`UnitOfWork.write` would. Two statements fewer a unit."""
        try:
            value = written(self.store, unit.fn)
        except Exception as exc:  # the unit's own outcome, handed to its caller
            _answer(unit.future, False, exc)
        else:
            _answer(unit.future, True, value)


def _begun(future: concurrent.futures.Future[Any] | asyncio.Future[Any]) -> bool:
    """Mark a thread's unit running (so it can no longer be cancelled); False if it was."""
    return not isinstance(future, concurrent.futures.Future) or (
        future.set_running_or_notify_cancel()
    )


class _WriterBusy(Exception):
    """Another writer held the store as a loop's batch began: the thread runs the unit."""


def _answer(
    future: concurrent.futures.Future[Any] | asyncio.Future[Any], ok: bool, value: Any
) -> None:
    """Answer a unit's caller, unless it gave up meanwhile (what the unit wrote stays) or was
    answered already."""
    if future.done():
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


@dataclass
class _Unit(Generic[T]):
    fn: Callable[[Transaction], T]
    future: concurrent.futures.Future[T] | asyncio.Future[T]
    #: The rows of many transactions it will change (:mod:`adjudge.store.hot_rows`).
    hot: tuple[hot_rows.Row, ...] = ()
    tries: int = 0
