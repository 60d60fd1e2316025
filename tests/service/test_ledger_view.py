"""The admin's ledger (``GET /ledger``): what holds money now, read without the history, and
the recount that reads all of it and names what does not add up."""

from __future__ import annotations

from sqlalchemy import text

from adjudge.store import Store
from support.harness import make_harness

REWARD = 2_000_000


def test_an_ended_tasks_escrow_leaves_the_list(store: Store) -> None:
    """An escrow is listed while it holds the reward and gone once the payout empties it; the
    balances and the entries are summed only when asked (the audit reads every row), and the
    sums are zero."""
    h = make_harness(store)
    tid = h.post("auto")
    view = h.ok("root", "GET", "/ledger")
    assert view["balances"][f"escrow:{tid}"] == str(REWARD)
    assert (view["sum_of_balances"], view["sum_of_entries"], view["unmatched"]) == (None,) * 3
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A long enough result."})
    assert h.ok("ann", "POST", f"/tasks/{tid}/finalize")["ending"] == "paid_on_pass"
    after = h.ok("root", "GET", "/ledger")
    assert f"escrow:{tid}" not in after["balances"] and after["sum_of_balances"] is None
    assert set(after["balances"]) == set(view["balances"]) - {f"escrow:{tid}"} | {"platform:fees"}
    counted = h.ok("root", "GET", "/ledger?recount=true")
    assert (counted["sum_of_balances"], counted["sum_of_entries"]) == ("0", "0")
    assert counted["unmatched"] == [] and counted["balances"] == after["balances"]


def test_a_recount_names_a_balance_its_lines_do_not_make(store: Store) -> None:
    """Balances moved behind the ledger's back in pairs keep their sum at zero, so only the
    recount sees them: it names each account whose balance is not the sum of its lines, a
    line with no row, and a line alone makes the sum of the entries non-zero."""
    h = make_harness(store)
    tid = h.post("auto")
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE balances SET balance = balance + 7 WHERE account = 'wallet:ann'"))
        conn.execute(text("UPDATE balances SET balance = balance - 7 WHERE account = 'wallet:pat'"))
        conn.execute(text("DELETE FROM balances WHERE account = :a"), {"a": f"escrow:{tid}"})
        conn.execute(
            text("UPDATE balances SET balance = balance + :r WHERE account = 'world'"),
            {"r": REWARD},
        )
    view = h.ok("root", "GET", "/ledger")
    assert view["sum_of_balances"] is None and view["unmatched"] is None
    counted = h.ok("root", "GET", "/ledger?recount=true")
    assert counted["sum_of_balances"] == "0"
    assert counted["unmatched"] == [f"escrow:{tid}", "wallet:ann", "wallet:pat", "world"]
    assert counted["sum_of_entries"] == "0"
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM ledger_entries WHERE account = 'wallet:pat' AND amount < 0"))
    counted = h.ok("root", "GET", "/ledger?recount=true")
    assert counted["sum_of_entries"] == str(REWARD)


def test_the_balances_come_a_page_at_a_time(store: Store) -> None:
    """Pages of two balances, each after the last one's name, together are every balance row
    once, by name (none sums them all: the recount does); a limit outside
    1-1000 is refused and moves nothing."""
    h = make_harness(store)
    h.post("auto")
    h.post("auto")
    with store.engine.connect() as conn:
        rows = dict(conn.execute(text("SELECT account, balance FROM balances")).all())
    assert len(rows) > 4  # more than two pages
    seen: dict[str, str] = {}
    cursor = ""
    while True:
        page = h.ok("root", "GET", f"/ledger?limit=2{cursor}")
        assert len(page["balances"]) <= 2 and not set(page["balances"]) & set(seen)
        assert page["sum_of_balances"] is None
        seen |= page["balances"]
        if page["next_cursor"] is None:
            break
        assert page["next_cursor"] == list(page["balances"])[-1]
        cursor = f"&cursor={page['next_cursor']}"
    assert list(seen) == sorted(rows) and seen == {a: str(v) for a, v in rows.items()}
    assert h.ok("root", "GET", "/ledger")["balances"] == seen  # a default page holds them all
    for bad in (0, 1001):
        assert h.refused("root", "GET", f"/ledger?limit={bad}") == (422, "INVALID_REQUEST")


def test_only_an_admin_reads_the_ledger(store: Store) -> None:
    """Anyone else is refused, recount or not."""
    h = make_harness(store)
    for path in ("/ledger", "/ledger?recount=true"):
        assert h.refused("ann", "GET", path)[0] == 403
