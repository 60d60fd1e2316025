"""A cursor no listing gave is ``400 CURSOR_INVALID`` on every listing and both databases,
however it was made: a key the database could not be sent (half a surrogate pair, a NUL), a
time whose UTC form is past the calendar's ends, a key too long or a ledger line id past 64
bits. Each was a 500 or a 503 (the store's refusal to bind it) where the query bound it."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest

from adjudge.store import Store
from support.harness import Harness, make_harness


def _cursor(at: str, key: str) -> str:
    raw = json.dumps([at, key]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


FORGED = {
    "surrogate": _cursor("2020-01-01T00:00:00+00:00", "\ud800"),
    "nul": _cursor("2020-01-01T00:00:00+00:00", "a\x00b"),
    "before year 1": _cursor("0001-01-01T00:00:00+23:59", "a"),
    "after 9999": _cursor("9999-12-31T23:59:59-23:59", "a"),
    "long key": _cursor("2020-01-01T00:00:00+00:00", "k" * 250),
}
#: And the ledger's lines, paged by their 64-bit ids: a key of other digits (int() of "²"
#: fails), or past 64 bits (the database's bigint).
LINE_IDS = {
    "huge line id": _cursor("2020-01-01T00:00:00+00:00", "9" * 30),
    "other digits": _cursor("2020-01-01T00:00:00+00:00", "\u00b2"),
}
#: Every listing a cursor of this shape pages (the caller: root reads them all).
LISTINGS = [
    "/tasks",
    "/tools",
    "/verifiers",
    "/gateway/calls",
    "/webhooks/deliveries",
    "/webhooks/endpoints?disabled=true",
    "/accounts/me/api-keys?revoked=true",
    "/ledger/lines",
]


@pytest.fixture
def hh(store: Store) -> Iterator[Harness]:
    h = make_harness(store)
    yield h
    h.app.close()


@pytest.mark.parametrize("name", sorted(FORGED))
def test_a_forged_cursor_is_refused_by_every_listing(hh: Harness, name: str) -> None:
    """Each listing refuses each forged cursor with its code, on each database."""
    for listing in LISTINGS:
        joiner = "&" if "?" in listing else "?"
        assert hh.refused("root", "GET", f"{listing}{joiner}cursor={FORGED[name]}") == (
            400,
            "CURSOR_INVALID",
        ), listing


@pytest.mark.parametrize("name", sorted(LINE_IDS))
def test_a_forged_line_id_is_refused_by_the_ledgers_lines(hh: Harness, name: str) -> None:
    """The ledger's lines refuse a cursor whose key is no 64-bit line id."""
    assert hh.refused("root", "GET", f"/ledger/lines?cursor={LINE_IDS[name]}") == (
        400,
        "CURSOR_INVALID",
    )


def test_a_nul_in_the_clients_receipt_path_is_refused(hh: Harness) -> None:
    """The client's receipt look-up, outside ``/api/v1``, refuses a NUL in its path as every
    route does (on PostgreSQL it was the database's refusal, a 503)."""
    r = hh.client.get(
        "/assay/v1/receipts/call%00x", headers={"Authorization": f"Bearer {hh.keys['ann']}"}
    )
    assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_REQUEST")


def test_a_line_id_of_eighteen_digits_is_a_position(hh: Harness) -> None:
    """The longest key the ledger's lines take is read as a position (after every line: the
    whole listing), on each database (PostgreSQL's ids are 64-bit since revision 0049)."""
    cursor = _cursor("2999-01-01T00:00:00+00:00", "9" * 18)
    found = hh.ok("root", "GET", f"/ledger/lines?cursor={cursor}")
    assert found["lines"]
