"""Two processes' batches whose units change the same shared rows in other orders (a paid
call's start debits its caller's wallet, an end moves its provider's quality window) commit
side by side: a batch whose units would take the rows they name out of order locks them
first, in one order, so neither holds one the other waits for. Without it the two deadlocked
and PostgreSQL broke the cycle after a second, running one unit again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, text

from adjudge.app.gateway.calls import reserving_rows, settling_rows
from adjudge.app.unit import GroupCommit
from adjudge.market import WORLD, Transfer
from adjudge.store import Store, Transaction, api_keys, hot_rows, ledger, quality_windows
from adjudge.store import schema as s
from support.batches import one_batch
from support.harness import make_harness

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
SPAN = timedelta(days=30)
WALLET = "wallet:a"
#: A batch's units, each with the shared rows it names.
_Units = list[tuple[Callable[[Transaction], str], tuple[hot_rows.Row, ...]]]


def _seed(store: Store) -> None:
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, WALLET, 100)], task_id=None, at=T0)
        quality_windows.observe(tx, "p", SPAN, T0, "passes")  # its row made (no calls recorded)


def _debit(
    runs: list[str],
    name: str,
    after: threading.Event | None = None,
    *,
    sent: threading.Event | None = None,
    first: threading.Event | None = None,
) -> Callable[[Transaction], str]:
    def unit(tx: Transaction) -> str:
        runs.append(name)
        if first is not None:
            first.wait(2.0)  # the other batch's debit first, when it can (not where named)
        ledger.transfer(tx, [Transfer(WALLET, "hold:call:" + name, 1)], task_id=None, at=T0)
        tx.send()  # the debit sent: the wallet's row locked from here to the commit
        if sent is not None:
            sent.set()
        if after is not None:
            # The other batch moves the window meanwhile, when it can (it cannot where the rows
            # are named: then this waits it out). Long enough for a loaded machine's other
            # thread to get there: on a short wait the control below found no deadlock.
            after.wait(2.0)
        return name

    return unit


def _observe(
    runs: list[str], name: str, done: threading.Event | None = None
) -> Callable[[Transaction], str]:
    def unit(tx: Transaction) -> str:
        runs.append(name)
        quality_windows.observe(tx, "p", SPAN, T0 + timedelta(seconds=1), "passes")
        tx.send()
        if done is not None:
            done.set()
        return name

    return unit


def _crossed(store: Store, named: bool) -> tuple[list[str], list[Any]]:
    """Batch A debits the wallet, then moves the window; batch B, on another engine (another
    process's), moves the window, then debits the wallet; A's window waits until B has moved
    it, and B's debit until A has debited, when each can (so the control's crossing does not
    hang on which thread the machine runs first)."""
    _seed(store)
    other = Store(store.url)
    with other.read():  # its first connection made now, not while the batches cross
        pass
    a, b = GroupCommit(store, threads=1), GroupCommit(other, threads=1)
    runs: list[str] = []
    moved, debited = threading.Event(), threading.Event()
    wallet = (hot_rows.balance(WALLET),) if named else ()
    window = (hot_rows.window("p"),) if named else ()
    answers: list[Any] = []

    def batch(commits: GroupCommit, units: _Units) -> None:
        answers.append(one_batch(commits, units))

    threads = [
        threading.Thread(
            target=batch,
            args=(
                a,
                [
                    (_debit(runs, "a1", moved, sent=debited), wallet),
                    (_observe(runs, "a2"), window),
                ],
            ),
        ),
        threading.Thread(
            target=batch,
            args=(
                b,
                [
                    (_observe(runs, "b1", moved), window),
                    (_debit(runs, "b2", first=debited), wallet),
                ],
            ),
        ),
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        a.close()
        b.close()
        other.dispose()
    return runs, answers


def _window_calls(store: Store) -> int:
    with store.read() as tx:
        w = quality_windows.quality_windows.c
        return int(tx.conn.execute(select(w.passes).where(w.provider == "p")).scalar_one())


def test_two_batches_crossing_on_a_wallet_and_a_window_commit_each_unit_once(
    store: Store,
) -> None:
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: two batches never hold rows at the same time")
    runs, answers = _crossed(store, named=True)
    assert sorted(answers) == [["a1", "a2"], ["b1", "b2"]]
    assert sorted(runs) == ["a1", "a2", "b1", "b2"]  # none ran twice: no deadlock's victim
    with store.read() as tx:
        assert ledger.balance(tx, WALLET) == 98
    assert _window_calls(store) == 2  # each batch's move (the row was made empty)


def test_without_the_rows_named_the_same_batches_deadlock(store: Store) -> None:
    """The case above's control: the units as they were, and PostgreSQL chose a victim."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: two batches never hold rows at the same time")
    runs, answers = _crossed(store, named=False)
    assert sorted(answers) == [["a1", "a2"], ["b1", "b2"]]
    # A unit ran again after the deadlock broke (once or more, as the machine's timing goes).
    assert len(runs) > 4


def test_a_batch_locks_first_only_what_its_units_would_take_out_of_order() -> None:
    """Rows go kind by kind (a key's day, a window, a balance), each kind by key; a batch
    whose units take theirs in that order as they run (each unit its own in order) locks
    nothing first, any other locks every row its units name, in order."""
    day, window = hot_rows.spending("k", "2026-03-10"), hot_rows.window("q")
    a, b = hot_rows.balance("wallet:a"), hot_rows.balance("wallet:b")
    day_, window_, a_, b_ = (row[:3] for row in (day, window, a, b))  # the rows' locks
    assert hot_rows.out_of_order([]) == []
    assert hot_rows.out_of_order([(b, day, window)]) == []  # one unit: its own, in order
    assert hot_rows.out_of_order([(day, a), (), (day, a), (a, b)]) == []  # one key's calls
    assert hot_rows.out_of_order([(window,), (a,)]) == []  # an end, then a start with no key
    assert hot_rows.out_of_order([(day, a), (window,)]) == [day_, window_, a_]  # start, end
    assert hot_rows.out_of_order([(window,), (day, a)]) == [day_, window_, a_]
    assert hot_rows.out_of_order([(b,), (a,)]) == [a_, b_]
    # A credit is taken at the commit, after every unit's rows: a refund to a, then a start
    # debiting b, take b before a; a refund to b after a start debiting a is in order.
    assert hot_rows.out_of_order([(hot_rows.credited("wallet:a"),), (b,)]) == [a_, b_]
    assert hot_rows.out_of_order([(a,), (hot_rows.credited("wallet:b"),)]) == []
    assert hot_rows.out_of_order([(a,), (hot_rows.credited("wallet:a"),)]) == []


def test_the_rows_are_locked_and_sqlite_sends_nothing(store: Store) -> None:
    """The lock statements run (on SQLite none is sent) and change nothing."""
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "wallet:a", 1)], task_id=None, at=T0)
        quality_windows.observe(tx, "q", SPAN, T0, "passes")
    units = [
        (hot_rows.balance("wallet:a"), hot_rows.spending("k", "2026-03-10")),
        (hot_rows.window("q"), hot_rows.balance("wallet:b")),
    ]
    with store.write() as tx:
        hot_rows.take(tx, units)
        tx.send()
        b = s.balances.c
        assert tx.conn.execute(select(b.balance).where(b.account == "wallet:a")).scalar_one() == 1


def test_a_paid_calls_units_name_the_rows_they_share() -> None:
    """A call's start: its key's day and its caller's wallet; its end: its provider's window
    (when it declared terms), and, when the call is not charged, the key's day and the wallet
    that get the price back (a free call or one with no key of its own counts on no key's
    day)."""
    day = hot_rows.spending("key_1", "2026-03-10")
    wallet, window = hot_rows.balance("wallet:ann"), hot_rows.window("prov")
    refunded = hot_rows.credited("wallet:ann")
    assert reserving_rows("ann", "key_1", 25, T0) == (day, wallet)
    assert reserving_rows("ann", None, 25, T0) == (wallet,)
    assert reserving_rows("ann", "key_1", 0, T0) == (wallet,)
    assert settling_rows("ann", "key_1", "prov", 25, T0, "settle", termed=True) == (window,)
    assert settling_rows("ann", "key_1", "prov", 25, T0, "settle", termed=False) == ()
    for payment in ("refund", "void"):
        got = settling_rows("ann", "key_1", "prov", 25, T0, payment, termed=True)
        assert got == (day, window, refunded)
    assert settling_rows("ann", None, "prov", 25, T0, "refund", termed=False) == (refunded,)


def _beside(
    store: Store,
    go: threading.Event,
    mine: Callable[[GroupCommit], Any],
    theirs: Callable[[Transaction], str],
) -> Any:
    """``mine`` run on a group commit of ``store`` while, once ``go`` is set, another engine's
    (another process's) commits the unit ``theirs``: what ``mine`` answered."""
    other = Store(store.url)
    a, b = GroupCommit(store, threads=1), GroupCommit(other, threads=1)

    def their_unit() -> None:
        assert go.wait(10)
        b.submit(theirs).result(30)

    thread = threading.Thread(target=their_unit)
    try:
        thread.start()
        answer = mine(a)
        thread.join(60)
    finally:
        a.close()
        b.close()
        other.dispose()
    return answer


def _debit_and_let_go(
    runs: list[str], go: threading.Event, to: str
) -> Callable[[Transaction], str]:
    """Batch A's first unit, "a1": it debits the wallet (its row locked to A's commit), lets
    the other engine's unit go, and gives it half a second (it runs, and waits for the
    wallet)."""

    def debit(tx: Transaction) -> str:
        runs.append("a1")
        ledger.transfer(tx, [Transfer(WALLET, to, 1)], task_id=None, at=T0)
        tx.send()
        go.set()
        threading.Event().wait(0.5)
        return "a1"

    return debit


def _credits_crossed(store: Store, late: str) -> list[str]:
    """Batch A debits the wallet as it runs (a call's start), then, after B began to commit,
    credits ``late`` at its commit (a payout's fee, a settled call's provider hold); B, on
    another engine, credits that wallet and ``late`` at its commit (a finalize paying the
    wallet's agent beside a settled call). The runs of each unit."""
    _seed(store)
    with store.write() as tx:
        payers = [Transfer(WORLD, "wallet:src_a", 5), Transfer(WORLD, "wallet:src_b", 5)]
        ledger.transfer(tx, payers, task_id=None, at=T0)
    runs: list[str] = []
    go = threading.Event()
    debit = _debit_and_let_go(runs, go, "wallet:dst")

    def credit(tx: Transaction) -> str:
        runs.append("a2")
        ledger.transfer(tx, [Transfer("wallet:src_a", late, 1)], task_id=None, at=T0)
        return "a2"

    def payout(tx: Transaction) -> str:
        runs.append("b1")
        paid = [Transfer("wallet:src_b", WALLET, 2), Transfer("wallet:src_b", late, 1)]
        ledger.transfer(tx, paid, task_id=None, at=T0)
        return "b1"

    assert _beside(store, go, lambda a: one_batch(a, [debit, credit]), payout) == ["a1", "a2"]
    with store.read() as tx:
        assert ledger.balance(tx, WALLET) == 101 and ledger.balance(tx, late) == 2
    return runs


@pytest.mark.parametrize("late", ["platform:fees", "held:p"])
def test_fees_and_provider_holds_credited_last_take_part_in_no_cycle(
    store: Store, late: str
) -> None:
    """A batch holding an agent's wallet from a debit as it ran credits a fee or a provider's
    hold at its commit, while another process's payout to that agent credits the same: the
    payout waits for the wallet before it takes the other, so each unit commits once."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: two batches never hold rows at the same time")
    assert sorted(_credits_crossed(store, late)) == ["a1", "a2", "b1"]


@pytest.mark.parametrize("late", ["platform:fees", "held:p"])
def test_with_credits_in_account_order_the_same_batches_deadlock(
    store: Store, monkeypatch: pytest.MonkeyPatch, late: str
) -> None:
    """The case above's control: credits in plain account order, the payout took the fee's
    or hold's row first and waited for the wallet, A waited for that row, and PostgreSQL
    chose a victim."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: two batches never hold rows at the same time")
    monkeypatch.setattr(hot_rows, "credit_order", lambda account: (0, account))
    # A unit ran again after the deadlock (once or more, as the machine's timing goes).
    assert len(_credits_crossed(store, late)) > 3


def _maturity_crossed(store: Store) -> list[str]:
    """A lone unit releases a provider's hold into the wallet (a maturity: the hold debited as
    it runs, the wallet credited at its commit); another engine's unit, after the release's
    debit, debits the wallet as it runs (a call's start) and credits the hold at its commit (a
    settled call). The runs of each unit."""
    _seed(store)
    with store.write() as tx:
        ledger.transfer(tx, [Transfer(WORLD, "held:p", 5)], task_id=None, at=T0)
    runs: list[str] = []
    go = threading.Event()

    def release(tx: Transaction) -> str:
        runs.append("a1")
        tx.appended.add("rcpt-settled")  # as the settle's receipt on the log would be
        paid = [Transfer("held:p", WALLET, 1, "release")]
        ledger.transfer(tx, paid, task_id=None, at=T0, receipt_id="rcpt-settled")
        tx.send()
        go.set()
        threading.Event().wait(0.5)  # B runs meanwhile
        return "a1"

    def start_and_settle(tx: Transaction) -> str:
        runs.append("b1")
        ledger.transfer(tx, [Transfer(WALLET, "held:p", 1, "charge")], task_id=None, at=T0)
        return "b1"

    assert _beside(store, go, lambda a: a.submit(release).result(30), start_and_settle) == "a1"
    with store.read() as tx:
        assert ledger.balance(tx, WALLET) == 100 and ledger.balance(tx, "held:p") == 5
    return runs


def test_a_provider_holds_release_locks_the_wallet_it_credits_first(store: Store) -> None:
    """A release takes the hold as it runs and the wallet only at its commit, against the one
    order (wallets before holds): it locks the wallet first, so a unit debiting that wallet
    and crediting the hold waits for it rather than each holding a row the other wants."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: two units never hold rows at the same time")
    assert sorted(_maturity_crossed(store)) == ["a1", "b1"]


def test_without_the_wallet_locked_first_a_release_deadlocks(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case above's control: the release names nothing it credits, and PostgreSQL chose
    a victim."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: two units never hold rows at the same time")
    monkeypatch.setattr(ledger, "_credited", lambda run: [])
    # A unit ran again after the deadlock (once or more, as the machine's timing goes).
    assert len(_maturity_crossed(store)) > 2


def test_balances_are_credited_and_locked_in_one_order() -> None:
    """Credits at a commit go by account, the providers' holds after the others and the fees
    last; a batch orders the balances it names the same way (a hold after a wallet)."""
    accounts = ["wallet:b", "platform:fees", "held:p", "escrow:x", "wallet:a", "held:a"]
    assert sorted(accounts, key=hot_rows.credit_order) == [
        "escrow:x",
        "wallet:a",
        "wallet:b",
        "held:a",
        "held:p",
        "platform:fees",
    ]
    wallet, hold = hot_rows.balance("wallet:z"), hot_rows.balance("held:a")
    assert hot_rows.out_of_order([(wallet,), (hot_rows.credited("held:a"),)]) == []
    assert hot_rows.out_of_order([(hold,), (wallet,)]) == [wallet[:3], hold[:3]]
    with pytest.raises(AssertionError):
        hot_rows.credited("platform:fees")


def _named_units(monkeypatch: pytest.MonkeyPatch) -> list[tuple[hot_rows.Row, ...]]:
    """The rows each unit queued on a group commit from now on names, in the order queued."""
    named: list[tuple[hot_rows.Row, ...]] = []
    submit, run = GroupCommit.submit, GroupCommit.run

    def spy_submit(self: GroupCommit, fn: Any, *, hot: tuple[hot_rows.Row, ...] = ()) -> Any:
        named.append(hot)
        return submit(self, fn, hot=hot)

    async def spy_run(
        self: GroupCommit, fn: Any, *, on_loop: bool = True, hot: tuple[hot_rows.Row, ...] = ()
    ) -> Any:
        named.append(hot)
        return await run(self, fn, on_loop=on_loop, hot=hot)

    monkeypatch.setattr(GroupCommit, "submit", spy_submit)
    monkeypatch.setattr(GroupCommit, "run", spy_run)
    return named


def test_a_tasks_posting_and_finalize_name_the_rows_they_share(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Posting names the poster's wallet, debited as it runs; a finalize the agent's wallet,
    credited as it commits when the check passes (the fees are never named)."""
    named = _named_units(monkeypatch)
    h = make_harness(store)
    named.clear()
    tid = h.post("auto")
    assert (hot_rows.balance("wallet:pat"),) in named
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A long enough result."})
    named.clear()
    assert h.ok("ann", "POST", f"/tasks/{tid}/finalize")["ending"] == "paid_on_pass"
    assert (hot_rows.credited("wallet:ann"),) in named
    assert not any(row[1] == "platform:fees" for rows in named for row in rows)


def test_the_steps_that_may_end_a_task_name_both_parties_wallets(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review, a verifier's verdict, a ruling and a cancel may pay the agent or refund the
    poster, credited as they commit: each names both wallets (a task nobody took, its
    poster's alone), whichever it moves; steps that move no money name none. On SQLite,
    which locks nothing ahead, none is named."""
    named = _named_units(monkeypatch)
    h = make_harness(store)
    if store.dialect == "sqlite":
        both: tuple[hot_rows.Row, ...] = ()
        poster: tuple[hot_rows.Row, ...] = ()
    else:
        both = (hot_rows.credited("wallet:ann"), hot_rows.credited("wallet:pat"))
        poster = (hot_rows.credited("wallet:pat"),)
    manual, agent, untaken = h.post("manual"), h.post("agent"), h.post("manual")
    for tid in (manual, agent):
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A long enough result."})
    named.clear()
    h.ok("pat", "POST", f"/tasks/{manual}/review", {"passed": False, "reasons": ["No."]})
    assert sorted(named[-1]) == sorted(both)
    named.clear()
    h.ok("ann", "POST", f"/tasks/{manual}/disputes", {"reason": "It is right."})
    assert named == [()]
    view = h.ok("root", "POST", f"/tasks/{manual}/ruling", {"pay_agent": True, "note": "Fine."})
    assert view["ending"] == "paid_by_ruling" and sorted(named[-1]) == sorted(both)
    h.ok("vera", "POST", f"/tasks/{agent}/verdict", h.signed("vera", agent, True))
    assert sorted(named[-1]) == sorted(both)
    assert h.ok("pat", "POST", f"/tasks/{untaken}/cancel")["ending"] == "refunded_on_cancel"
    assert named[-1] == poster


KEY, DAY = "key_1", "2026-03-10"
#: How a batch locked the spending rows before: only the rows already there.
_LOCK_ONLY = text(
    "SELECT 1 FROM key_spend WHERE (key_id, day) IN "
    "(SELECT * FROM unnest(CAST(:keys AS varchar[]), CAST(:days AS varchar[]))) "
    'ORDER BY key_id COLLATE "C", day COLLATE "C" FOR UPDATE OF key_spend'
)


def _spent(store: Store, day: str = DAY) -> int:
    with store.read() as tx:
        k = api_keys.key_spend.c
        row = select(k.spent).where(k.key_id == KEY, k.day == day)
        return int(tx.conn.execute(row).scalar_one())


def _first_spends_crossed(store: Store) -> list[str]:
    """Batch A debits the wallet as it runs (a call's start), then counts a key's first spend
    of the day (another call's start); B, on another engine, after A's debit, counts that
    key's first spend of the day (making its row) and then debits the wallet. The runs of
    each unit."""
    _seed(store)
    runs: list[str] = []
    go = threading.Event()
    debit = _debit_and_let_go(runs, go, "hold:call:a1")

    def spend(tx: Transaction) -> str:
        runs.append("a2")
        assert api_keys.spend(tx, KEY, DAY, 1, 10)
        return "a2"

    def spend_and_debit(tx: Transaction) -> str:
        runs.append("b1")
        assert api_keys.spend(tx, KEY, DAY, 1, 10)
        tx.send()
        ledger.transfer(tx, [Transfer(WALLET, "hold:call:b1", 1)], task_id=None, at=T0)
        return "b1"

    units = [(debit, (hot_rows.balance(WALLET),)), (spend, (hot_rows.spending(KEY, DAY),))]
    assert _beside(store, go, lambda a: one_batch(a, units), spend_and_debit) == ["a1", "a2"]
    with store.read() as tx:
        assert ledger.balance(tx, WALLET) == 98
    assert _spent(store) == 2
    return runs


def test_a_keys_first_spend_of_the_day_is_locked_in_its_place(store: Store) -> None:
    """A batch naming a key's spending row of a day that is not there yet makes it (spending
    nothing) in its place in the order, so another process's first call of that key's day
    waits for it rather than making the row the batch then waits for: each unit commits
    once."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: two batches never hold rows at the same time")
    assert sorted(_first_spends_crossed(store)) == ["a1", "a2", "b1"]


def test_with_the_spending_rows_only_locked_where_there_the_first_spends_deadlock(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case above's control: the batch locked only the rows already there, B's insert
    made the row A's spend then waited for, B waited for the wallet, and PostgreSQL chose a
    victim."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite has one writer: two batches never hold rows at the same time")
    monkeypatch.setattr(hot_rows, "_SPENDING", _LOCK_ONLY)
    # A unit ran again after the deadlock (once or more, as the machine's timing goes).
    assert len(_first_spends_crossed(store)) > 3


def test_a_spending_row_made_ahead_spends_nothing_and_keeps_the_days_limit(
    store: Store,
) -> None:
    """The row a batch makes ahead holds 0: the day's first spend up to the limit passes, one
    past it is refused, as when the spend made the row."""
    if store.dialect == "sqlite":
        pytest.skip("SQLite locks nothing ahead: it has one writer")
    with store.write() as tx:
        hot_rows.take(tx, [(hot_rows.balance(WALLET),), (hot_rows.spending(KEY, DAY),)])
        tx.send()
    assert _spent(store) == 0
    with store.write() as tx:
        assert api_keys.spend(tx, KEY, DAY, 5, 5)
        assert not api_keys.spend(tx, KEY, DAY, 1, 5)
    assert _spent(store) == 5
