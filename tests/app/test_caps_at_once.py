"""Two processes (two apps on one PostgreSQL database) make an account's last extra key, or its
last enabled webhook endpoint, at once: the cap holds, as each takes the account's row before
it counts (before: both counted one under the cap and both inserted). Each count is held at a
barrier; with the lock, the second waits for the first's commit instead, so the barrier gives
up after its time-out and the second counts the first's key."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

from adjudge.app import App, Settings
from adjudge.app import keys as keys_module
from adjudge.app import webhooks as webhooks_module
from adjudge.app.keys import MAX_KEYS
from adjudge.errors import Error
from adjudge.store import Store, Transaction, api_keys, outbox
from support.fakes import FakeClock


def _held(count: Callable[[Transaction, str], int]) -> Callable[[Transaction, str], int]:
    """``count``, each caller then waiting for the other (both have counted, unless the lock
    held one back)."""
    together = threading.Barrier(2, timeout=2)

    def held(tx: Transaction, account_id: str) -> int:
        found = count(tx, account_id)
        with contextlib.suppress(threading.BrokenBarrierError):
            together.wait()
        return found

    return held


def _both(apps: tuple[App, App], secret: str, make: Callable[[App, Any, int], str]) -> list[str]:
    """``make`` on each app at once, as the account: what each made, or its refusal's code."""
    outcomes: list[str] = []

    def run(app: App, n: int) -> None:
        try:
            outcomes.append(make(app, app.accounts.authenticate(secret), n))
        except Error as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=run, args=(app, n)) for n, app in enumerate(apps)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return outcomes


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_two_processes_cannot_pass_the_key_cap(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An account with 49 live extra keys makes two at once: one is made, one refused."""
    clock = FakeClock()
    apps = App(store, clock=clock), App(store, clock=clock)
    try:
        secret = apps[0].accounts.create(None, "ann", ["agent"]).value["api_key"]
        ann = apps[0].accounts.authenticate(secret)
        for n in range(MAX_KEYS - 1):
            apps[0].keys.create(ann, f"k{n}")
        monkeypatch.setattr(keys_module.api_keys, "live_count", _held(api_keys.live_count))
        outcomes = _both(
            apps, secret, lambda app, who, n: app.keys.create(who, f"last{n}").value["key"]["id"]
        )
        monkeypatch.undo()
        live = apps[0].unit.read(lambda tx: api_keys.live_count(tx, "ann"))
        assert live == MAX_KEYS and "KEY_LIMIT_REACHED" in outcomes, outcomes
    finally:
        for app in apps:
            app.close()


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_two_processes_cannot_pass_the_webhook_endpoint_cap(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same read-then-insert shape: an account's enabled webhook endpoints."""
    clock, settings = FakeClock(), Settings(webhooks_allow_private=True)
    apps = App(store, clock=clock, settings=settings), App(store, clock=clock, settings=settings)
    try:
        secret = apps[0].accounts.create(None, "pat", ["poster"]).value["api_key"]
        pat = apps[0].accounts.authenticate(secret)
        cap = apps[0].webhooks.settings.max_endpoints
        for n in range(cap - 1):
            apps[0].webhooks.create_endpoint(pat, f"http://127.0.0.1:9/h{n}")
        monkeypatch.setattr(webhooks_module.outbox, "enabled_count", _held(outbox.enabled_count))

        def make(app: App, who: Any, n: int) -> str:
            return str(app.webhooks.create_endpoint(who, f"http://127.0.0.1:9/x{n}").value["id"])

        outcomes = _both(apps, secret, make)
        monkeypatch.undo()
        enabled = apps[0].unit.read(lambda tx: outbox.enabled_count(tx, "pat"))
        assert enabled == cap and "WEBHOOK_ENDPOINT_LIMIT" in outcomes, (enabled, outcomes)
    finally:
        for app in apps:
            app.close()
