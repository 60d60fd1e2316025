"""Two processes (two apps on one PostgreSQL database) make an account's last extra key, or its
last enabled webhook endpoint, at once: the cap holds, as each takes the account's row before
it counts (before: both counted one under the cap and both inserted). Each count is held at a
barrier; with the lock, the second waits for the first's commit instead, so the barrier gives
up after its time-out and the second counts the first's key."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest

from adjudge.app import App, Settings
from adjudge.app import keys as keys_module
from adjudge.app import webhooks as webhooks_module
from adjudge.app.keys import MAX_KEYS
from adjudge.errors import Error
from adjudge.store import Store, Transaction, api_keys
from support.fakes import FakeClock


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_two_processes_cannot_pass_the_key_cap(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    one, two = App(store, clock=clock), App(store, clock=clock)
    try:
        secret = one.accounts.create(None, "ann", ["agent"]).value["api_key"]
        ann = one.accounts.authenticate(secret)
        for n in range(MAX_KEYS - 1):
            one.keys.create(ann, f"k{n}")
        together = threading.Barrier(2, timeout=2)
        count = api_keys.live_count

        def at_once(tx: Transaction, account_id: str) -> Any:
            found = count(tx, account_id)
            with contextlib.suppress(threading.BrokenBarrierError):
                together.wait()  # both have counted MAX_KEYS - 1 (or the lock held one back)
            return found

        monkeypatch.setattr(keys_module.api_keys, "live_count", at_once)
        outcomes: list[Any] = []

        def make(app: App, label: str) -> None:
            try:
                who = app.accounts.authenticate(secret)
                outcomes.append(app.keys.create(who, label).value["key"]["id"])
            except Error as exc:
                outcomes.append(exc.code)

        threads = [
            threading.Thread(target=make, args=(app, label))
            for app, label in ((one, "last-a"), (two, "last-b"))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        monkeypatch.undo()
        live = one.unit.read(lambda tx: api_keys.live_count(tx, "ann"))
        assert live == MAX_KEYS and "KEY_LIMIT_REACHED" in outcomes, outcomes
    finally:
        one.close()
        two.close()


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_two_processes_cannot_pass_the_webhook_endpoint_cap(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same read-then-insert shape: an account's enabled webhook endpoints."""
    clock = FakeClock()
    settings = Settings(webhooks_allow_private=True)
    one = App(store, clock=clock, settings=settings)
    two = App(store, clock=clock, settings=settings)
    try:
        secret = one.accounts.create(None, "pat", ["poster"]).value["api_key"]
        pat = one.accounts.authenticate(secret)
        cap = one.webhooks.settings.max_endpoints
        for n in range(cap - 1):
            one.webhooks.create_endpoint(pat, f"http://127.0.0.1:9/h{n}")
        together = threading.Barrier(2, timeout=2)
        count = webhooks_module.outbox.enabled_count

        def at_once(tx: Transaction, account_id: str) -> Any:
            found = count(tx, account_id)
            with contextlib.suppress(threading.BrokenBarrierError):
                together.wait()
            return found

        monkeypatch.setattr(webhooks_module.outbox, "enabled_count", at_once)
        outcomes: list[Any] = []

        def make(app: App, n: int) -> None:
            try:
                who = app.accounts.authenticate(secret)
                outcomes.append(
                    app.webhooks.create_endpoint(who, f"http://127.0.0.1:9/x{n}").value["id"]
                )
            except Error as exc:
                outcomes.append(exc.code)

        threads = [threading.Thread(target=make, args=(app, n)) for n, app in enumerate((one, two))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        monkeypatch.undo()
        enabled = one.unit.read(lambda tx: count(tx, "pat"))
        assert enabled == cap and "WEBHOOK_ENDPOINT_LIMIT" in outcomes, (enabled, outcomes)
    finally:
        one.close()
        two.close()
