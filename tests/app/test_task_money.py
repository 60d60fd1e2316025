"""The task use cases called directly over a real SQLite store: money moves as the signed
verdict, ruling or ending decides, and the ledger stays whole (no HTTP in between)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from adjudge.app import Account, App
from adjudge.market.money import (
    DEFAULT_FEE_BPS,
    escrow_account,
    fee_of,
    platform_account,
    wallet_account,
)
from adjudge.store import Store
from support.fakes import FakeClock

REWARD = 2_000_000
FEE = fee_of(REWARD, DEFAULT_FEE_BPS)
FUNDS = 10_000_000


@dataclass
class World:
    """The use cases, their clock, and the accounts as the use cases see them."""

    app: App
    clock: FakeClock
    root: Account
    pat: Account
    ann: Account

    def balance(self, account: str) -> int:
        """A ledger account's balance, after checking the ledger adds up to zero."""
        view = self.app.receipts.ledger(self.root, recount=True)
        assert (view["sum_of_balances"], view["sum_of_entries"], view["unmatched"]) == (
            "0",
            "0",
            [],
        )
        return int(view["balances"].get(account, "0"))

    def conserved(self, tid: str) -> None:
        """The two funded wallets' money is all still there: in wallets, escrow or fees."""
        accounts = (wallet_account("pat"), wallet_account("ann"), escrow_account(tid))
        held = sum(self.balance(a) for a in accounts) + self.balance(platform_account())
        assert held == 2 * FUNDS

    def post(self, mode: str) -> str:
        """Post a task as pat: a 2 USDC reward, one day to deliver."""
        criteria = {"min_length": 10} if mode == "auto" else {}
        task = self.app.tasks.post(
            self.pat,
            title=f"A {mode} task",
            brief="Write a summary.",
            reward=REWARD,
            mode=mode,
            criteria=criteria,
            deadline_hours=24,
        )
        return str(task.value["id"])


@pytest.fixture
def world(sqlite_store: Store) -> Iterator[World]:
    """The default checker and signed receipts over a fresh store, each account funded."""
    clock = FakeClock()
    app = App(sqlite_store, clock=clock)
    keys = {}
    for name, roles in (("root", ["admin"]), ("pat", ["poster"]), ("ann", ["agent"])):
        keys[name] = app.accounts.create(None, name, roles).value["api_key"]
    root = app.accounts.authenticate(keys["root"])
    for name in ("pat", "ann"):
        app.accounts.deposit(root, name, FUNDS)
    yield World(
        app,
        clock,
        root,
        app.accounts.authenticate(keys["pat"]),
        app.accounts.authenticate(keys["ann"]),
    )
    app.close()


def test_an_auto_task_that_passes_pays_the_agent_less_the_fee(world: World) -> None:
    """Posting funds the escrow; a PASS pays it out (the agent's share and the fee) against
    the verdict's receipt, and nothing is left in escrow."""
    tid = world.post("auto")
    assert world.balance(escrow_account(tid)) == REWARD
    assert world.balance(wallet_account("pat")) == FUNDS - REWARD
    world.app.tasks.accept(world.ann, tid)
    world.app.tasks.submit(world.ann, tid, "A summary of the brief, well over ten characters.")
    done = world.app.tasks.finalize(world.ann, tid).value
    assert done["status"] == "completed"
    assert world.balance(wallet_account("ann")) == FUNDS + REWARD - FEE
    assert world.balance(platform_account()) == FEE
    assert world.balance(escrow_account(tid)) == 0
    receipts = world.app.receipts.of_task(world.pat, tid)["receipts"]
    assert [r["receipt"]["verdict"] for r in receipts] == ["PASS"]
    world.conserved(tid)


def test_a_cancelled_task_refunds_its_poster(world: World) -> None:
    """A task nobody took is withdrawn: the whole reward goes back to the poster."""
    tid = world.post("manual")
    world.app.tasks.cancel(world.pat, tid)
    assert world.balance(escrow_account(tid)) == 0
    assert world.balance(wallet_account("pat")) == FUNDS
    world.conserved(tid)


def test_a_disputed_failure_ruled_for_the_agent_pays_it(world: World) -> None:
    """The poster fails the work, the agent disputes, the admin rules it paid: the escrow
    moves to the agent (less the fee) and the ledger stays whole."""
    tid = world.post("manual")
    world.app.tasks.accept(world.ann, tid)
    world.app.tasks.submit(world.ann, tid, "A summary of the brief, as asked.")
    world.app.tasks.review(world.pat, tid, passed=False, reasons=["Not what I asked."])
    assert world.balance(escrow_account(tid)) == REWARD
    world.app.tasks.dispute(world.ann, tid, reason="It is what was asked.")
    ruled = world.app.tasks.rule(world.root, tid, pay_agent=True, note="It meets the brief.")
    assert ruled.value["status"] == "completed"
    assert world.balance(escrow_account(tid)) == 0
    assert world.balance(wallet_account("ann")) == FUNDS + REWARD - FEE
    world.conserved(tid)
