"""One provider per tool name: two first registrations of one name at once (two processes on
one PostgreSQL database) leave it one owner, and revision 0052 starts the owners from each
name's first contract."""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from adjudge.app import App
from adjudge.calls.verify import digest_of
from adjudge.errors import NotAllowed
from adjudge.store import Store
from adjudge.store import calls as calls_db
from support.harness import make_harness
from support.migrations import downgrade

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"


def _contract(version: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((EXAMPLES / "weather.contract.json").read_text("utf-8"))
    return {**copy.deepcopy(found), "version": version}


def test_two_first_registrations_of_a_name_at_once_leave_it_one_owner(store: Store) -> None:
    """skycast and findly register versions 2 and 3 of one new name at once, on two processes,
    each read of the owner held until the other's has been made (or a moment has passed):
    one is refused as not the tool's provider, and the owner is the other's (before, on
    PostgreSQL, both read no owner and both stored their contracts: a stranger's policies
    could then judge the first's calls)."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer at a time: the race is two PostgreSQL processes'")
    h = make_harness(store)
    other = Store(store.url)
    second = App(other, clock=h.clock, issuer=h.app.issuer, checker=h.app.checker)
    apps = {"skycast": h.app, "findly": second}
    for provider in apps:
        h.keys[provider] = h.app.accounts.create(None, provider, ["provider"]).value["api_key"]
    real, both_read = calls_db.tool_owner, threading.Barrier(2, timeout=2)

    def racing(tx: Any, tool: str) -> str | None:
        owner = real(tx, tool)
        with contextlib.suppress(threading.BrokenBarrierError):  # the other waits at the key
            both_read.wait()
        return owner

    answers: dict[str, Any] = {}

    def register(who: str, version: str) -> None:
        try:
            answers[who] = apps[who].calls.register_tool(h.account(who), _contract(version))
        except NotAllowed as exc:
            answers[who] = exc

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(calls_db, "tool_owner", racing)
            runs = [
                threading.Thread(target=register, args=a)
                for a in (("skycast", "2"), ("findly", "3"))
            ]
            for run in runs:
                run.start()
            for run in runs:
                run.join()
    finally:
        second.close()
        other.dispose()
    refused = [who for who, a in answers.items() if isinstance(a, NotAllowed)]
    assert len(refused) == 1 and len(answers) == 2, answers
    assert answers[refused[0]].code == "NOT_TOOL_PROVIDER"
    [owner] = set(apps) - set(refused)
    with store.read() as tx:
        assert calls_db.tool_owner(tx, "weather.forecast") == owner
        latest = calls_db.latest_contract(tx, "weather.forecast")
    assert latest is not None and latest.provider == owner


def test_migration_0052_owns_each_name_by_its_first_contract(store: Store) -> None:
    """On each database: after 0052 each name's owner is its first contract's provider, also
    of a name the race forked before it (a stranger's later version stored beside the first's:
    the stranger registers none of its policies, its owner does); a downgrade drops the table
    cleanly."""
    h = make_harness(store)
    for provider in ("skycast", "findly"):
        h.keys[provider] = h.app.accounts.create(None, provider, ["provider"]).value["api_key"]
    h.app.calls.register_tool(h.account("skycast"), _contract("2"))
    h.app.calls.register_tool(h.account("findly"), {**_contract("1"), "tool": "other.tool"})
    downgrade(store, "0051")
    forked = _contract("3")
    with store.write() as tx:
        tx.conn.execute(
            insert(calls_db.call_contracts).values(
                tool="weather.forecast",
                version="3",
                provider="findly",
                document=forked,
                digest=digest_of(forked),
                registered_at=h.clock.now(),
            )
        )
    store.migrate()
    with store.read() as tx:
        assert calls_db.tool_owner(tx, "weather.forecast") == "skycast"
        assert calls_db.tool_owner(tx, "other.tool") == "findly"
        assert calls_db.tool_owner(tx, "unknown") is None
    policy = json.loads((EXAMPLES / "weather.policy.json").read_text("utf-8"))
    with pytest.raises(NotAllowed):
        h.app.calls.register_policy(h.account("findly"), "weather.forecast", policy)
    assert h.app.calls.register_policy(h.account("skycast"), "weather.forecast", policy).value
