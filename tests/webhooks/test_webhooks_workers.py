"""Several delivery workers share the outbox: each delivery is leased by one worker at a time,
so no event is sent twice at once; a worker that dies holding a lease delays its deliveries
only until the lease runs out (at least once, never concurrently duplicated)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from adjudge.app import Account, App, DeliveryWorker, Settings
from adjudge.errors import Error
from adjudge.gateway.sealed import SecretBox
from adjudge.store import Store, outbox
from adjudge.webhooks import Sender
from adjudge.webhooks.sender import Attempt
from support.fakes import FakeClock, FakeIssuer
from support.receiver import Receiver

#: Test events are the events these tests queue, 40 at once on one endpoint: past the limit.
SETTINGS = Settings(webhooks_allow_private=True, webhooks_test_events=100)


def _apps(store: Store, n: int) -> tuple[list[App], FakeClock]:
    """``n`` services on one database (as separate processes would be: each its own
    connection pool), sharing the clock and the server key."""
    clock = FakeClock()
    box = SecretBox([SecretBox.generate_key()])
    apps = [App(Store(store.url), clock=clock, issuer=FakeIssuer(), secrets=box, settings=SETTINGS)]
    apps += [
        App(Store(store.url), clock=clock, issuer=FakeIssuer(), secrets=box, settings=SETTINGS)
        for _ in range(n - 1)
    ]
    return apps, clock


def test_two_workers_never_deliver_one_event_twice(store: Store) -> None:
    """Two workers on two connection pools drain 40 events together: every event reaches the
    receiver exactly once, and both workers took part (SQLite and PostgreSQL)."""
    (a, b), _ = _apps(store, 2)
    receiver = Receiver(delay=0.03).up()
    try:
        pat = a.accounts.create(None, "pat", ["poster"]).value
        account = a.accounts.authenticate(pat["api_key"])
        made = a.webhooks.create_endpoint(account, receiver.url("pat")).value
        receiver.secrets["/pat"] = made["secret"]
        for _ in range(40):
            a.webhooks.test_endpoint(account, made["id"])
        start = threading.Barrier(2)
        sent: Counter[str] = Counter()

        def work(app: App, name: str) -> None:
            with Sender(allow_private=True) as sender:
                start.wait()
                while n := app.webhooks.deliver_due(sender, limit=4):
                    sent[name] += n

        threads = [
            threading.Thread(target=work, args=(app, name)) for app, name in ((a, "a"), (b, "b"))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        ids = Counter(r.msg_id for r in receiver.received)
        assert len(ids) == 40 and set(ids.values()) == {1}, ids.most_common(3)
        assert all(r.verified for r in receiver.received)
        assert sent["a"] > 0 and sent["b"] > 0 and sent["a"] + sent["b"] == 40
        assert a.webhooks.counts() == {"delivered": 40}
    finally:
        receiver.down()
        for app in (a, b):
            app.close()


def test_a_dead_workers_lease_runs_out_and_another_delivers(sqlite_store: Store) -> None:
    """A worker claims a delivery and dies: nobody sends it while the lease holds; after it,
    another worker delivers it once, and the dead worker's late record is ignored."""
    [app], clock = _apps(sqlite_store, 1)
    receiver = Receiver().up()
    try:
        pat = app.accounts.create(None, "pat", ["poster"]).value
        account = app.accounts.authenticate(pat["api_key"])
        made = app.webhooks.create_endpoint(account, receiver.url("pat")).value
        receiver.secrets["/pat"] = made["secret"]
        app.webhooks.test_endpoint(account, made["id"])
        now = clock.now()
        with app.store.write() as tx:  # the worker that will die
            [dead] = outbox.claim(tx, now=now, lease=SETTINGS.webhooks_lease, limit=10).claimed
        with Sender(allow_private=True) as sender:
            assert app.webhooks.deliver_due(sender) == 0
            clock.advance(seconds=SETTINGS.webhooks_lease.total_seconds() - 1)
            assert app.webhooks.deliver_due(sender) == 0
            clock.advance(seconds=1)
            assert app.webhooks.deliver_due(sender) == 1
        assert len(receiver.received) == 1 and receiver.received[0].verified
        with app.store.write() as tx:
            late = outbox.finish(
                tx, dead, now=clock.now(), ok=False, status=500, error="late", next_at=now
            )
        assert late is False
        assert app.webhooks.counts() == {"delivered": 1}
        # A replay is refused while a worker holds the delivery, and allowed after.
        delivery = app.webhooks.deliveries(account)["deliveries"][0]
        app.webhooks.replay(account, delivery["id"])
        with app.store.write() as tx:
            outbox.claim(tx, now=clock.now(), lease=SETTINGS.webhooks_lease, limit=10)
        with pytest.raises(Error) as refused:
            app.webhooks.replay(account, delivery["id"])
        assert refused.value.code == "WEBHOOK_DELIVERY_IN_FLIGHT"
    finally:
        receiver.down()
        app.close()


@dataclass
class _SlowAndFast:
    """A service whose worker keeps ``batch`` attempts in flight, ann's endpoint at a receiver
    that answers in four seconds and bob's at one that answers at once."""

    app: App
    slow: Receiver
    fast: Receiver
    endpoints: dict[str, tuple[Account, str]]
    worker: DeliveryWorker | None = None

    def send(self, name: str, events: int = 1) -> None:
        for _ in range(events):
            self.app.webhooks.test_endpoint(*self.endpoints[name])

    def start(self) -> DeliveryWorker:
        self.worker = DeliveryWorker(self.app.webhooks, Sender(allow_private=True)).start()
        return self.worker


@contextmanager
def _slow_and_fast(store: Store, batch: int) -> Iterator[_SlowAndFast]:
    settings = Settings(webhooks_allow_private=True, webhooks_test_events=100, webhooks_batch=batch)
    box = SecretBox([SecretBox.generate_key()])
    app = App(
        Store(store.url), clock=FakeClock(), issuer=FakeIssuer(), secrets=box, settings=settings
    )
    world = _SlowAndFast(app, Receiver(mode="slow", delay=4.0).up(), Receiver().up(), {})
    try:
        for name, receiver in (("ann", world.slow), ("bob", world.fast)):
            made = app.accounts.create(None, name, ["poster"]).value
            account = app.accounts.authenticate(made["api_key"])
            endpoint = app.webhooks.create_endpoint(account, receiver.url(name)).value
            receiver.secrets[f"/{name}"] = endpoint["secret"]
            world.endpoints[name] = (account, endpoint["id"])
        yield world
    finally:
        if world.worker is not None:
            world.worker.stop()
        world.slow.down()
        world.fast.down()
        app.close()


def test_a_slow_receiver_holds_its_own_place_not_a_pass(sqlite_store: Store) -> None:
    """Batches of two: one account's receiver takes four seconds to answer; another account's
    six events are all delivered meanwhile, through the other place, long before it answers
    (a worker that sent a batch and waited for its slowest delivered one of them in four
    seconds). Stopped, the worker records the slow one as it ends: all seven delivered."""
    with _slow_and_fast(sqlite_store, batch=2) as w:
        w.send("ann")
        w.send("bob", 6)
        started = time.monotonic()
        worker = w.start()
        while len(w.fast.verified()) < 6:
            assert time.monotonic() - started < 3.0, len(w.fast.verified())
            time.sleep(0.01)
        assert len(w.slow.received) == 1  # sent, and still waiting for its answer
        worker.stop()
        w.worker = None
        assert w.app.webhooks.counts() == {"delivered": 7}


def test_one_accounts_slow_pile_leaves_places_for_another(sqlite_store: Store) -> None:
    """Batches of ten: one account's twenty events go to a receiver that takes four seconds to
    answer; another account's event, queued once they are in flight, is delivered at once, in
    a place the pile could not take (no account has more than a fifth of the batch in flight:
    before, the pile took every place, and the other event waited for its four seconds)."""
    with _slow_and_fast(sqlite_store, batch=10) as w:
        w.send("ann", 20)
        w.start()
        while len(w.slow.received) < 2:
            time.sleep(0.01)
        started = time.monotonic()
        w.send("bob")
        while not w.fast.verified():
            assert time.monotonic() - started < 3.0, "the other account's event waited"
            time.sleep(0.01)
        assert len(w.slow.received) == 2  # its share of the batch in flight, no more


class _Flaky:
    """A sender whose first attempt is cancelled, whose second cannot start, whose third never
    ends (its loop gone), and whose others are delivered."""

    def __init__(self) -> None:
        self.calls = 0

    def attempt_bound(self) -> float:
        return 0.3

    def submit(self, item: object) -> Future[Attempt]:
        self.calls += 1
        future: Future[Attempt] = Future()
        if self.calls == 1:
            future.cancel()
        elif self.calls == 2:
            raise RuntimeError("the sender's loop is closed")
        elif self.calls == 3:
            return future  # never ends
        else:
            future.set_result(Attempt(True, 204, None, None, 0.0))
        return future

    def close(self) -> None:
        pass


def test_the_worker_outlives_its_senders_failures_and_stops(sqlite_store: Store) -> None:
    """An attempt cancelled and one that cannot start are recorded as failed attempts (to be
    tried again on the schedule) and the worker goes on to deliver the next; stopped while an
    attempt never ends, it records that one as failed once an attempt's bound has passed, and
    returns."""
    settings = Settings(
        webhooks_allow_private=True, webhooks_test_events=100, webhooks_poll_seconds=0.05
    )
    box = SecretBox([SecretBox.generate_key()])
    app = App(
        Store(sqlite_store.url),
        clock=FakeClock(),
        issuer=FakeIssuer(),
        secrets=box,
        settings=settings,
    )
    made = app.accounts.create(None, "ann", ["poster"]).value
    ann = app.accounts.authenticate(made["api_key"])
    endpoint = app.webhooks.create_endpoint(ann, "http://127.0.0.1:9/ann").value
    sender = _Flaky()
    worker = DeliveryWorker(app.webhooks, sender).start()  # type: ignore[arg-type]
    try:
        for n in range(4):
            app.webhooks.test_endpoint(ann, endpoint["id"])
            deadline = time.monotonic() + 5
            while sender.calls < n + 1:
                assert time.monotonic() < deadline, sender.calls
                time.sleep(0.01)
        assert worker._thread is not None and worker._thread.is_alive()
        started = time.monotonic()
        worker.stop()
        assert time.monotonic() - started < 5
        assert not worker._thread.is_alive()
        deliveries = app.webhooks.deliveries(ann)["deliveries"]
        assert sorted(d["status"] for d in deliveries) == [
            "delivered",
            "pending",
            "pending",
            "pending",
        ]
        assert all(d["attempts"] == 1 for d in deliveries)  # each recorded once
    finally:
        worker.stop()
        app.close()
