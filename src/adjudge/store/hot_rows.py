"""Rows many transactions change, taken by a batch of units in one order.

A group commit runs several units in one transaction and holds every row they lock until it
commits. Two batches at once (two ``serve`` processes on one PostgreSQL database) whose units
take the same rows in other orders wait on each other: a paid call's start takes its API key's
spending row and its caller's wallet, its end its provider's quality window (and, refunding,
the key's row and the wallet again), so a batch that began with a start and one that began
with an end deadlocked, and PostgreSQL broke each cycle only after a second. So a unit names
the rows of these kinds it will change, and a batch of several locks them all first, in one
order: spending rows, then quality windows, then balances (providers' holds last), each by key
as code points. That is also the order a lone unit takes them in as it runs (a refund gives the
key's day back before the window moves, and a wallet's credit comes at the commit, credits in
:func:`credit_order`), so no two transactions wait on each other for them; a batch whose
units would take them in that order anyway (one caller's calls, with no window among them; a
wallet's credit counted at the commit, after every unit) is left to: it holds each row from
the unit that takes it, not from its start. A key's spending row of a day not there yet (its
first call of the day) is made, spending nothing, by the statement that locks the others, in
its place in the order (made by the spending unit's own insert as it ran, it was locked out of
order).

On SQLite a transaction holds the one write lock, so there is nothing to order: nothing is sent.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import text

from adjudge.market import platform_account, provider_hold_account
from adjudge.store.transaction import Transaction

#: A row: (kind, key, second key); the kinds in the order they are taken.
Lock = tuple[int, str, str]
#: A row a unit will change, and whether it takes it only as the transaction commits (a
#: balance's credit) rather than as it runs.
Row = tuple[int, str, str, bool]
#: The kinds: a provider's hold is a balance taken after every other (as credits are written
#: at a commit: :func:`credit_order`).
SPENDING, WINDOW, BALANCE, HELD = 0, 1, 2, 3
#: A provider's hold account's prefix.
_HOLD = provider_hold_account("")


def credit_order(account: str) -> tuple[int, str]:
    """The one order balances are taken in: the order a transaction's credits are written in
    as it commits (:func:`adjudge.store.ledger.flush`) and a batch locks the balances its
    units name. By account, the providers' holds after the other accounts and the platform's
    fees last. Nothing debits the fees, so their row is held only at a transaction's very end,
    waiting for nothing after it. Every settled call credits its provider's hold: taken before
    the wallets, a batch paying an agent held it while it waited for the agent's wallet, which
    another batch held from a call's start and which wanted the hold at its commit."""
    if account == platform_account():
        return 2, account
    return (1 if account.startswith(_HOLD) else 0), account


def spending(key_id: str, day: str) -> Row:
    """An API key's spending row of a UTC day (``key_spend``)."""
    return (SPENDING, key_id, day, False)


def window(provider: str) -> Row:
    """A provider's quality window (``quality_windows``)."""
    return (WINDOW, provider, "", False)


def balance(account: str) -> Row:
    """A ledger account's balance, debited as the unit runs (``balances``)."""
    return (_kind(account), account, "", False)


def credited(account: str) -> Row:
    """A ledger account's balance, credited as the transaction commits (the store adds up a
    transaction's credits and writes them then, account by account, in order). Never the
    platform's fees: credited after every other row (:func:`credit_order`), they wait for
    nothing and are left out of this order."""
    assert account != platform_account(), "the platform's fees are credited last, unnamed"
    return (_kind(account), account, "", True)


def _kind(account: str) -> int:
    """A balance's kind, in :func:`credit_order`: a provider's hold (HELD) after the others."""
    return BALANCE + credit_order(account)[0]


def out_of_order(units: Iterable[Iterable[Row]]) -> list[Lock]:
    """The rows a batch must lock before its units run, in order: every row its ``units``
    name, unless the batch takes them in order anyway — each unit its own in order as it runs,
    the credits last, at the commit, and each row first taken after every row taken before
    it: then none."""
    taken: dict[Lock, None] = {}  # in the order first taken
    credits: set[Lock] = set()
    for rows in units:
        for kind, key, second, at_commit in sorted(rows):
            if at_commit:
                credits.add((kind, key, second))
            else:
                taken.setdefault((kind, key, second))
    for lock in sorted(credits):
        taken.setdefault(lock)
    order = list(taken)
    ordered = sorted(order)
    return [] if order == ordered else ordered


def take(tx: Transaction, units: Iterable[Iterable[Row]]) -> None:
    """Lock the rows the batch's ``units`` name in their order, when the units would not take
    them in order themselves (:func:`out_of_order`; PostgreSQL): held, so the locks ride the
    transaction's next round trip, ahead of everything after them."""
    if tx.sqlite:
        return
    ordered = out_of_order(units)
    if not ordered:
        return
    spends = [(k, d) for kind, k, d in ordered if kind == SPENDING]
    if spends:
        tx.later(_SPENDING, {"keys": [k for k, _ in spends], "days": [d for _, d in spends]})
    providers = [k for kind, k, _ in ordered if kind == WINDOW]
    if providers:
        tx.later(_WINDOWS, {"providers": providers})
    for balances in (BALANCE, HELD):
        accounts = [k for kind, k, _ in ordered if kind == balances]
        if accounts:
            tx.later(_BALANCES, {"accounts": accounts})


# ``FOR UPDATE`` under ``ORDER BY`` locks the rows as the sort returns them: in key order,
# compared as code points (``COLLATE "C"``), as Python sorts them, whatever the database's
# collation (a language's would order "a-b" and "ab" otherwise). The spending rows go through
# an insert in that order: a row is made where missing (spending nothing: a call's spend then
# adds to it, its limit checked as when it made the row) and locked where there (an update that
# changes nothing locks a row as ``FOR UPDATE`` would; a row an insert makes is its
# transaction's until it ends).
_SPENDING = text(
    "INSERT INTO key_spend (key_id, day, spent) "
    "SELECT k, d, 0 FROM unnest(CAST(:keys AS varchar[]), CAST(:days AS varchar[])) AS t(k, d) "
    'ORDER BY k COLLATE "C", d COLLATE "C" '
    "ON CONFLICT (key_id, day) DO UPDATE SET spent = key_spend.spent"
)
_WINDOWS = text(
    "SELECT 1 FROM quality_windows WHERE provider = ANY(CAST(:providers AS varchar[])) "
    'ORDER BY provider COLLATE "C" FOR UPDATE'
)
_BALANCES = text(
    "SELECT 1 FROM balances WHERE account = ANY(CAST(:accounts AS varchar[])) "
    'ORDER BY account COLLATE "C" FOR UPDATE'
)
