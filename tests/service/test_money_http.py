"""The money invariant through the HTTP API: random sequences of every operation, retried,
duplicated, raced and moved across deadlines, on SQLite and on PostgreSQL.

After each step the books balance, total money equals total deposits (counted by the test from
the deposits the service answered, so a double credit shows), every release of escrow names its
receipt, every task is in a reachable state, and each agent's count of held takes equals a
recount (:func:`support.audit.audit`).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from adjudge.store import Store
from support.audit import audit, reset
from support.harness import ACCOUNTS, FUNDS, Harness, make_harness

RESULTS = st.sampled_from(["A long enough result.", "FAIL", "short", "A long enough answer."])
WHO = st.sampled_from(sorted(ACCOUNTS))
KEYS = st.sampled_from(["k1", "k2", "k3", None])
#: Sequences and steps run, for the closing figures (printed by the last test).
FIGURES: dict[str, int] = {"sequences": 0, "steps": 0, "refusals": 0, "server_errors": 0}


def _machine(store: Store) -> type[RuleBasedStateMachine]:
    class Marketplace(RuleBasedStateMachine):
        """A marketplace driven only through its HTTP API."""

        def __init__(self) -> None:
            super().__init__()
            reset(store)
            self.h: Harness = make_harness(store)
            self.deposited = FUNDS * len(ACCOUNTS)
            self.tasks: list[str] = []
            FIGURES["sequences"] += 1

        def send(
            self, who: str, method: str, path: str, body: Any = None, key: str | None = None
        ) -> Any:
            FIGURES["steps"] += 1
            headers = {"Idempotency_Key": key} if key else {}
            r = self.h.call(who, method, path, body, **headers)
            assert r.status_code < 500, (method, path, r.status_code, r.text[:300])
            if r.status_code >= 400:
                FIGURES["refusals"] += 1
                assert set(r.json()) == {"error"}
            return r

        def task(self, pick: int) -> str | None:
            return self.tasks[pick % len(self.tasks)] if self.tasks else None

        @initialize()
        def start(self) -> None:
            pass

        @rule(amount=st.integers(1, 10**6), key=KEYS, twice=st.booleans())
        def deposit(self, amount: int, key: str | None, twice: bool) -> None:
            """A deposit, maybe retried with the same key (or reusing a key for another one)."""
            path = "/accounts/pat/deposits"
            first = self.send("root", "POST", path, {"amount": str(amount)}, key)
            if first.status_code == 200 and first.headers.get("Idempotent-Replayed") != "true":
                self.deposited += amount
            if twice:
                again = self.send("root", "POST", path, {"amount": str(amount)}, key)
                if key is None and again.status_code == 200:
                    self.deposited += amount
                elif key is not None and first.status_code == 200:
                    assert again.status_code == 200 and again.json() == first.json()

        @rule(
            mode=st.sampled_from(["auto", "manual", "agent"]),
            reward=st.integers(1, 5_000_000),
            hours=st.sampled_from([1, 24, 72]),
            window=st.sampled_from([None, None, 1, 12]),
            key=KEYS,
        )
        def post(
            self, mode: str, reward: int, hours: int, window: int | None, key: str | None
        ) -> None:
            body: dict[str, Any] = {
                "title": "t",
                "reward": str(reward),
                "deadline_hours": hours,
                "mode": mode,
            }
            if window is not None:
                body["take_window_hours"] = window
            if mode == "auto":
                body["criteria"] = {"min_length": 10}
            if mode == "agent":
                body["verifier"] = "vera"
            r = self.send("pat", "POST", "/tasks", body, key)
            if r.status_code == 201 and r.json()["id"] not in self.tasks:
                self.tasks.append(r.json()["id"])

        @precondition(lambda self: self.tasks)
        @rule(
            pick=st.integers(0, 99),
            who=WHO,
            action=st.sampled_from(
                ["accept", "release", "finalize", "reclaim", "collect", "cancel"]
            ),
            key=KEYS,
        )
        def act(self, pick: int, who: str, action: str, key: str | None) -> None:
            self.send(who, "POST", f"/tasks/{self.task(pick)}/{action}", None, key)

        @precondition(lambda self: self.tasks)
        @rule(pick=st.integers(0, 99), who=WHO, result=RESULTS, key=KEYS)
        def submit(self, pick: int, who: str, result: str, key: str | None) -> None:
            self.send(who, "POST", f"/tasks/{self.task(pick)}/submissions", {"result": result}, key)

        @precondition(lambda self: self.tasks)
        @rule(pick=st.integers(0, 99), passed=st.booleans(), key=KEYS)
        def review(self, pick: int, passed: bool, key: str | None) -> None:
            self.send("pat", "POST", f"/tasks/{self.task(pick)}/review", {"passed": passed}, key)

        @precondition(lambda self: self.tasks)
        @rule(pick=st.integers(0, 99), passed=st.booleans())
        def verdict(self, pick: int, passed: bool) -> None:
            tid = self.task(pick)
            view = self.h.call("vera", "GET", f"/tasks/{tid}").json()
            if view.get("result_digest"):
                self.send(
                    "vera", "POST", f"/tasks/{tid}/verdict", self.h.signed("vera", str(tid), passed)
                )

        @precondition(lambda self: self.tasks)
        @rule(pick=st.integers(0, 99), who=st.sampled_from(["pat", "ann", "bob"]))
        def dispute(self, pick: int, who: str) -> None:
            self.send(who, "POST", f"/tasks/{self.task(pick)}/disputes", {"reason": "no"})

        @precondition(lambda self: self.tasks)
        @rule(pick=st.integers(0, 99), pay=st.booleans())
        def rule_on(self, pick: int, pay: bool) -> None:
            self.send("root", "POST", f"/tasks/{self.task(pick)}/ruling", {"pay_agent": pay})

        @precondition(lambda self: self.tasks)
        @rule(
            pick=st.integers(0, 99),
            who=WHO,
            action=st.sampled_from(["accept", "finalize", "cancel", "collect"]),
        )
        def race(self, pick: int, who: str, action: str) -> None:
            """The same request twice at once, without a key: at most one applies."""
            tid = self.task(pick)
            codes: list[int] = []

            def go() -> None:
                client = TestClient(self.h.client.app)
                r = client.post(
                    f"/api/v1/tasks/{tid}/{action}",
                    headers={"Authorization": f"Bearer {self.h.keys[who]}"},
                )
                codes.append(r.status_code)

            threads = [threading.Thread(target=go) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            FIGURES["steps"] += 2
            assert all(c < 500 for c in codes), codes
            assert codes.count(200) <= 1, (action, codes)

        @rule(hours=st.sampled_from([1, 12, 25, 24 * 4, 24 * 15]))
        def later(self, hours: int) -> None:
            self.h.advance(hours=hours)

        @rule(pick=st.integers(0, 99), read=st.booleans())
        def lapse(self, pick: int, read: bool) -> None:
            """Takes whose time is up lapse: on a read of the task, or by the service's sweep."""
            tid = self.task(pick)
            if read and tid is not None:
                self.send("ann", "GET", f"/tasks/{tid}")
            else:
                self.h.app.tasks.lapse_due()

        @invariant()
        def books(self) -> None:
            audit(store, self.deposited)

    return Marketplace


@pytest.mark.slow
def test_random_http_sequences_keep_the_books(store: Store) -> None:
    """Random operations over HTTP, with retries, key reuse, races and clock moves: after every
    step the ledger balances, holds exactly what was deposited, and each escrow release is
    proven by its receipt."""
    machine = _machine(store)
    machine.TestCase.settings = settings(
        max_examples=50 if store.dialect == "sqlite" else 15,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    before = dict(FIGURES)
    machine.TestCase().runTest()
    ran = {k: FIGURES[k] - before[k] for k in FIGURES}
    print(f"\nmoney over HTTP on {store.dialect}: {ran}")
    assert ran["sequences"] >= 10 and ran["server_errors"] == 0
