"""``GET /ledger/lines``: every movement of money with its other side and its receipt, filtered
by account, kind and date, paged newest first, with totals that add up; an admin reads every
account, anyone else only its own."""

from __future__ import annotations

from typing import Any

import pytest

from adjudge.store import Store
from support.harness import FUNDS, Harness, make_harness


def _lines(h: Harness, who: str, query: str = "") -> dict[str, Any]:
    return dict(h.ok(who, "GET", f"/ledger/lines?{query}"))


def _paid_task(h: Harness) -> str:
    """A manual task posted by pat, taken by ann, approved: fund, payout and fee lines."""
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A summary of the work."})
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True, "reasons": []})
    return tid


@pytest.fixture
def h(sqlite_store: Store) -> Harness:
    return make_harness(sqlite_store)


def test_a_poster_reads_only_its_own_lines(h: Harness) -> None:
    """pat's lines are its wallet's: the deposit and the funding, never ann's payout; naming
    ann's wallet is refused with NOT_YOUR_ACCOUNT."""
    _paid_task(h)
    page = _lines(h, "pat", "totals=true")
    assert {line["account"] for line in page["lines"]} == {"wallet:pat"}
    assert [line["kind"] for line in page["lines"]] == ["fund", "deposit"]
    assert page["accounts"] == ["wallet:pat", "held:pat"]
    fund = page["lines"][0]
    assert fund["amount"] == "-2000000" and fund["counterpart"].startswith("escrow:")
    assert page["totals"] == {
        "lines": "2",
        "credits": str(FUNDS),
        "debits": "-2000000",
        "net": str(FUNDS - 2_000_000),
    }
    assert h.refused("pat", "GET", "/ledger/lines?account=wallet:ann") == (403, "NOT_YOUR_ACCOUNT")
    assert h.refused("pat", "GET", "/ledger/lines?account=escrow:x") == (403, "NOT_YOUR_ACCOUNT")


def test_an_admin_reads_every_account_and_the_release_names_its_receipt(h: Harness) -> None:
    """The admin sees the escrow's legs; the payout and the fee out of the escrow name the
    receipt that released them, and that receipt is the task's verdict's."""
    tid = _paid_task(h)
    page = _lines(h, "root", f"account=escrow:{tid}")
    kinds = sorted(line["kind"] for line in page["lines"])
    assert kinds == ["fee", "fund", "payout"]
    verdict = h.ok("pat", "GET", f"/tasks/{tid}")["verdicts"][-1]
    released = [line for line in page["lines"] if line["kind"] in ("payout", "fee")]
    assert {line["receipt_id"] for line in released} == {verdict["receipt_id"]}
    assert all(int(line["amount"]) < 0 for line in released)
    # The balance the admin's books show is the net of the account's lines.
    assert _lines(h, "root", f"account=escrow:{tid}&totals=true")["totals"]["net"] == "0"
    everyone = _lines(h, "root", "limit=500&totals=true")
    assert everyone["accounts"] is None and everyone["totals"]["net"] == "0"
    assert int(everyone["totals"]["lines"]) == len(everyone["lines"])


def test_kind_and_date_filters(h: Harness) -> None:
    """``kind`` keeps one memo; ``since``/``until`` keep a time range (a bare ``until`` date
    is through that day); an unknown kind or a bad date is INVALID_REQUEST."""
    _paid_task(h)
    h.later(days=2)
    _paid_task(h)
    fees = _lines(h, "root", "kind=fee&totals=true")
    # Two fees, each a transfer of two legs: out of the escrow, into the platform's account.
    assert [line["kind"] for line in fees["lines"]] == ["fee"] * 4
    assert {line["account"] for line in fees["lines"] if int(line["amount"]) > 0} == {
        "platform:fees"
    }
    assert fees["totals"]["credits"] == str(-int(fees["totals"]["debits"]))
    assert fees["totals"]["net"] == "0"
    newest, oldest = fees["lines"][0]["at"][:10], fees["lines"][-1]["at"][:10]
    assert newest != oldest
    assert [x["id"] for x in _lines(h, "root", f"kind=fee&since={newest}")["lines"]] == [
        x["id"] for x in fees["lines"][:2]
    ]
    assert [x["id"] for x in _lines(h, "root", f"kind=fee&until={oldest}")["lines"]] == [
        x["id"] for x in fees["lines"][2:]
    ]
    assert h.refused("root", "GET", "/ledger/lines?kind=bribe") == (422, "INVALID_REQUEST")
    assert h.refused("root", "GET", "/ledger/lines?since=yesterday") == (422, "INVALID_REQUEST")
    # The calendar's edges: through its last day is every line, and its totals are the whole
    # ledger's; a time moved past its first or last day by its offset is refused.
    whole = _lines(h, "root", "limit=500&totals=true")
    edges = _lines(h, "root", "limit=500&totals=true&since=0001-01-01&until=9999-12-31")
    assert edges["totals"] == whole["totals"] and edges["lines"] == whole["lines"]
    for bound in ("until=0001-01-01T00:00%2B01:00", "since=9999-12-31T23:00-02:00"):
        assert h.refused("root", "GET", f"/ledger/lines?{bound}&totals=true") == (
            422,
            "INVALID_REQUEST",
        )


def test_pages_follow_the_cursor_to_the_end_without_repeats(h: Harness) -> None:
    """A small limit pages through every line once, newest first; a made-up cursor is
    CURSOR_INVALID."""
    _paid_task(h)
    _paid_task(h)
    whole = [line["id"] for line in _lines(h, "root", "limit=500")["lines"]]
    seen: list[int] = []
    query = "limit=3"
    while True:
        page = _lines(h, "root", query)
        seen += [line["id"] for line in page["lines"]]
        if page["next_cursor"] is None:
            break
        query = f"limit=3&cursor={page['next_cursor']}"
    assert seen == whole and len(seen) == len(set(seen)) > 6
    assert h.refused("root", "GET", "/ledger/lines?cursor=nope") == (400, "CURSOR_INVALID")


def test_a_provider_reads_its_hold(h: Harness) -> None:
    """A non-admin's own accounts are its wallet and its provider hold; the admin's page of
    one account equals that account's balance as its net."""
    _paid_task(h)
    ann = _lines(h, "ann", "totals=true")
    assert ann["accounts"] == ["wallet:ann", "held:ann"]
    assert int(ann["totals"]["net"]) == h.balance("wallet:ann") + h.balance("held:ann")
