"""The paid-call use cases called directly over a real SQLite store: the gateway forwards to
a provider on loopback, and the signed determination settles or refunds the reservation, with
every minor unit accounted for (no HTTP service in between)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from adjudge.app import Account, App
from adjudge.app.gateway import calls as gateway_calls
from adjudge.calls.meaning import MeaningAsk
from adjudge.calls.pointers import resolve
from adjudge.calls.verify import Citation, Judgment
from adjudge.digests import sha256_digest
from adjudge.market.money import provider_hold_account, wallet_account
from adjudge.settings import Settings
from adjudge.store import Store, Transaction, database
from support.fakes import FakeClock
from support.loopback import AsgiServer
from support.trips import Trips
from support.weather import POLICY, PRICE, PROVIDER, Script, provider, tool

FUNDS = 10_000_000


@dataclass
class Market:
    """The use cases, the provider's script, and the accounts as the use cases see them."""

    app: App
    script: Script
    root: Account
    ann: Account
    seller: Account

    def balance(self, account: str) -> int:
        """A ledger account's balance, after checking the ledger adds up to zero."""
        view = self.app.receipts.ledger(self.root, recount=True)
        assert (view["sum_of_balances"], view["sum_of_entries"], view["unmatched"]) == (
            "0",
            "0",
            [],
        )
        return int(view["balances"].get(account, "0"))

    def conserved(self) -> None:
        """The caller's deposit is all still there: its wallet, the provider's hold or wallet."""
        accounts = (
            wallet_account("ann"),
            provider_hold_account(PROVIDER),
            wallet_account(PROVIDER),
        )
        assert sum(self.balance(a) for a in accounts) == FUNDS


@pytest.fixture
def market(sqlite_store: Store) -> Iterator[Market]:
    """A provider's forecast tool and its policy, registered through the use cases."""
    with _market(sqlite_store) as m:
        yield m


@pytest.fixture
def any_market(store: Store) -> Iterator[Market]:
    """:func:`market` on each database the tests can reach."""
    with _market(store) as m:
        yield m


@contextmanager
def _market(store: Store) -> Iterator[Market]:
    script = Script()
    app = App(
        store,
        clock=FakeClock(script.now),
        settings=Settings(allow_private_providers=True),
    )
    keys = {}
    for name, roles in (("root", ["admin"]), ("ann", ["agent"]), (PROVIDER, ["provider"])):
        keys[name] = app.accounts.create(None, name, roles).value["api_key"]
    root = app.accounts.authenticate(keys["root"])
    app.accounts.deposit(root, "ann", FUNDS)
    with AsgiServer(provider(script)) as server:
        seller = app.accounts.authenticate(keys[PROVIDER])
        app.tools.register(seller, tool(server.url))
        app.calls.register_policy(seller, "weather_forecast", POLICY)
        yield Market(app, script, root, app.accounts.authenticate(keys["ann"]), seller)
        app.close()


def test_a_call_that_passes_is_charged_into_the_providers_hold(market: Market) -> None:
    """A PASS settles: the price moves from the caller's wallet to the provider's hold (paid
    when the report window ends), against the call's receipt."""
    answer = market.app.gateway.call(market.ann, "weather_forecast", {"city": "berlin"}).value
    assert (answer["status"], answer["verdict"]) == ("settled", "PASS")
    assert answer["receipt"] is not None
    assert market.balance(wallet_account("ann")) == FUNDS - PRICE
    assert market.balance(provider_hold_account(PROVIDER)) == PRICE
    market.conserved()


def test_a_call_that_fails_its_contract_is_refunded(market: Market) -> None:
    """A FAIL refunds: the reservation goes back to the caller and the provider gets nothing."""
    market.script.answer = "bad"
    answer = market.app.gateway.call(market.ann, "weather_forecast", {"city": "berlin"}).value
    assert (answer["status"], answer["verdict"]) == ("refunded", "FAIL")
    assert market.balance(wallet_account("ann")) == FUNDS
    assert market.balance(provider_hold_account(PROVIDER)) == 0
    market.conserved()


def test_a_settled_or_refunded_call_leaves_no_balance_row(any_market: Market) -> None:
    """Each call's reservation is emptied by its settle or refund, and its row goes with it:
    the admin's ledger lists the same accounts after many calls as after the first."""
    market = any_market
    market.app.gateway.call(market.ann, "weather_forecast", {"city": "berlin"})
    listed = set(market.app.receipts.ledger(market.root)["balances"])
    for n in range(6):
        market.script.answer = "bad" if n % 2 else "good"
        market.app.gateway.call(market.ann, "weather_forecast", {"city": "berlin"})
    assert set(market.app.receipts.ledger(market.root)["balances"]) == listed
    assert not any(a.startswith("hold:") for a in listed), listed
    market.conserved()


class _Judge:
    """A meaning judge in-process: cites the first day's date as a conflict, finds none, or
    is down, as told."""

    def __init__(self, says: str) -> None:
        self.says = says

    def judge_call(self, ask: MeaningAsk) -> Judgment:
        if self.says == "down":
            raise ConnectionError("the judge is down")
        if self.says == "none":
            return Judgment(ask.call_id, ask.response_digest, True, False)
        found, value = resolve(ask.output, "/days/0/date")
        assert found
        cited = Citation("/days/0/date", sha256_digest(str(value)))
        return Judgment(ask.call_id, ask.response_digest, True, True, (cited,), "another day")


@pytest.mark.parametrize(
    ("says", "refunded"), [("conflict", True), ("none", False), ("down", False)]
)
def test_money_is_conserved_when_judged_after_the_answer(
    market: Market, says: str, refunded: bool
) -> None:
    """Judged after the answer: every minor unit is accounted for when the call settles into
    the hold, when the judges refund it from there (or not), and when the hold matures; the
    provider is paid only what was not refunded, once."""
    market.app.gateway.judges = {"judge": _Judge(says)}
    meaning = {"sample_rate": "1", "judges": ["judge"], "quorum": 1, "when": "after_answer"}
    policy = dict(POLICY) | {
        "version": 2,
        "checks": ["schema", "quality_rules", "meaning"],
        "meaning": meaning,
    }
    market.app.calls.register_policy(market.seller, "weather_forecast", policy)
    answer = market.app.gateway.call(market.ann, "weather_forecast", {"city": "berlin"}).value
    assert (answer["status"], answer["verdict"]) == ("settled", "DEGRADED")
    market.conserved()
    assert market.app.gateway.judge_pending() == 1
    market.conserved()
    assert market.balance(wallet_account("ann")) == FUNDS - (0 if refunded else PRICE)
    market.app.clock.advance(hours=24 * 30)  # type: ignore[attr-defined]
    market.app.gateway.mature_holds()
    market.conserved()
    assert market.balance(provider_hold_account(PROVIDER)) == 0
    assert market.balance(wallet_account(PROVIDER)) == (0 if refunded else PRICE)


def _traced_call(market: Market, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The reads and writes of one paid call (after a first one, which also makes the gateway's
    signing key) and the thread each ran on; a try that found the store held is not counted."""
    market.app.gateway.call(market.ann, "weather_forecast", {"city": "paris"})
    store = market.app.unit.store
    seen: list[tuple[str, str]] = []
    for kind in ("read", "write"):
        original = getattr(store, kind)

        @contextmanager
        def traced(
            *args: Any, _kind: str = kind, _original: Any = original, **kw: Any
        ) -> Iterator[Any]:
            with _original(*args, **kw) as tx:
                seen.append((_kind, threading.current_thread().name))
                yield tx

        monkeypatch.setattr(store, kind, traced)
    answer = market.app.gateway.call(market.ann, "weather_forecast", {"city": "berlin"}).value
    assert answer["verdict"] == "PASS"
    assert [kind for kind, _ in seen] == ["read", "write", "write"]
    return seen


def test_on_sqlite_a_call_reads_and_writes_on_its_own_loop(
    market: Market, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a local store the call's read and its two writes run on the event loop that runs the
    call, handed to no thread (GroupCommit: the hand-offs cost more than the statements)."""
    seen = _traced_call(market, monkeypatch)
    assert len({thread for _, thread in seen}) == 1
    assert not seen[0][1].startswith(("adjudge-commits", "adjudge-gateway-db"))


def test_a_large_answer_is_settled_by_the_commit_thread_not_the_loop(
    market: Market, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer over LOOP_ANSWER_BYTES (here every answer) is settled by the commit thread,
    between whose statements the loop serves on; the read and the reservation stay on it."""
    monkeypatch.setattr(gateway_calls, "LOOP_ANSWER_BYTES", 0)
    seen = _traced_call(market, monkeypatch)
    assert seen[0][1] == seen[1][1] != "adjudge-commits"
    assert seen[2][1] == "adjudge-commits"
    market.conserved()


def test_a_paid_calls_read_is_two_round_trips_on_postgresql(
    any_market: Market, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's earlier call under its key with the tool (and the transaction's BEGIN),
    then the tool's provider, its credential and the policy that judges the call: each set
    read ahead together (before, five reads one by one, counted 5 here, the BEGIN apart)."""
    market = any_market
    if market.app.unit.store.dialect == "sqlite":
        pytest.skip("SQLite's statements are calls into the library: there is no round trip")
    market.app.gateway.call(market.ann, "weather_forecast", {"city": "berlin"}, key="first")
    reads: list[Trips] = []

    class Counted(Transaction):
        def __init__(self, conn: Any) -> None:
            super().__init__(conn)
            if not conn.get_execution_options().get("adjudge_write", False):
                self._driver = Trips(self._driver)
                reads.append(self._driver)

    monkeypatch.setattr(database, "Transaction", Counted)
    answer = market.app.gateway.call(market.ann, "weather_forecast", {"city": "paris"}, key="k")
    assert answer.value["status"] == "settled"
    assert [r.trips for r in reads] == [2]
    market.conserved()
