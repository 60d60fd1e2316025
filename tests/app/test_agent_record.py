"""An agent's record counts every failed round, however many processes judge its rounds at once:
each change reads the record it changes with its row locked (on PostgreSQL; SQLite's writer is
alone), where two transactions reading the same record each wrote their own change over it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from adjudge.app import App
from adjudge.store import Store, Transaction, records
from support.fakes import FakeClock


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_two_rounds_failed_at_once_by_two_processes_both_count(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two service processes fail one agent's rounds of two posters' tasks at the same moment
    (both reach the record together): its reputation falls by both penalties, its disputes
    count both."""
    clock = FakeClock()
    one, two = App(store, clock=clock), App(store, clock=clock)
    try:
        keys = {}
        for name, roles in (("root", ["admin"]), ("pat", ["poster"]), ("pam", ["poster"])):
            keys[name] = one.accounts.create(None, name, roles).value["api_key"]
        keys["ann"] = one.accounts.create(None, "ann", ["agent"]).value["api_key"]
        root = one.accounts.authenticate(keys["root"])
        tasks = []
        for poster in ("pat", "pam"):
            one.accounts.deposit(root, poster, 10_000_000)
            who = one.accounts.authenticate(keys[poster])
            posted = one.tasks.post(
                who,
                title="t",
                brief="b",
                reward=1_000_000,
                mode="auto",
                criteria={"expected_answer": "42"},
                deadline_hours=24,
            )
            ann = one.accounts.authenticate(keys["ann"])
            one.tasks.accept(ann, posted.value["id"])
            one.tasks.submit(ann, posted.value["id"], "The answer is 7.")
            tasks.append(posted.value["id"])
        together = threading.Barrier(2, timeout=10)
        read = records.record_to_change

        def at_once(tx: Transaction, account_id: str) -> Any:
            together.wait()  # both transactions are about to read the record
            return read(tx, account_id)

        monkeypatch.setattr(records, "record_to_change", at_once)
        ended: dict[str, str] = {}

        def finalize(app: App, task_id: str) -> Callable[[], None]:
            def run() -> None:
                ann = app.accounts.authenticate(keys["ann"])
                ended[task_id] = app.tasks.finalize(ann, task_id).value["status"]

            return run

        apps = zip((one, two), tasks, strict=True)
        threads = [threading.Thread(target=finalize(app, task)) for app, task in apps]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(ended.values()) == ["failed", "failed"], ended
        agent = one.unit.read(lambda tx: records.account(tx, "ann"))
        assert agent is not None
        assert (agent.record.reputation, agent.record.disputes) == (80, 2)
    finally:
        one.close()
        two.close()
