"""A listing of forwarded calls, page after page, is exactly the calls its filters keep, newest
first (ties by id): whatever the calls' parties, tools, verdicts and times, for every filter the
listing takes, and a party's calls merged from the newest page of each of its roles (caller,
provider). The upkeep's search for interrupted calls finds exactly those still pending."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from adjudge.store import Store, Transaction, gateway, pages, records
from adjudge.store.pages import Page
from support.paging import every_page

T0 = datetime(2026, 3, 10, 12, tzinfo=UTC)
PEOPLE = ("ann", "bob", "cy")
TOOLS = ("forecast", "tides")
_runs = itertools.count()

#: A call: its caller, provider, tool, verdict (None: still pending), seconds after T0.
_call = st.tuples(
    st.sampled_from(PEOPLE),
    st.sampled_from(PEOPLE),
    st.sampled_from(TOOLS),
    st.sampled_from((None, "PASS", "FAIL")),
    st.integers(0, 5),
)
#: The filters of one listing: (the party whose calls, tool, provider, verdict, since, until).
_filters = st.tuples(
    st.sampled_from((None, *PEOPLE)),
    st.sampled_from((None, *TOOLS)),
    st.sampled_from((None, *PEOPLE)),
    st.sampled_from((None, "PASS")),
    st.sampled_from((None, 2)),
    st.sampled_from((None, 4)),
)

Plan = tuple[str, str, str, str | None, int]
Filters = tuple[str | None, str | None, str | None, str | None, int | None, int | None]


def _made(store: Store, plans: list[Plan]) -> list[gateway.GatewayCall]:
    run = next(_runs)
    made = []
    with store.write() as tx:
        tx.conn.execute(text("DELETE FROM gateway_calls"))
        for name in PEOPLE:
            if records.account(tx, name) is None:
                records.create_account(tx, name, ["agent"], f"k-{name}", opt_in=True, at=T0)
        for n, (caller, provider, tool, verdict, seconds) in enumerate(plans):
            call = gateway.GatewayCall(
                id=f"call-{run}-{n:03d}",
                caller=caller,
                tool=tool,
                tool_version=1,
                provider=provider,
                price_minor=1,
                currency="USDC",
                key_hash=None,
                fingerprint="sha256:" + "0" * 64,
                state="pending",
                started_at=T0 + timedelta(seconds=seconds),
                finished_at=None,
                status=None,
                verdict=verdict,
                receipt_id=None,
                answer=None,
            )
            assert gateway.start_call(tx, call)
            if verdict is not None:
                gateway.finish_call(
                    tx,
                    call.id,
                    provider=provider,
                    started_at=call.started_at,
                    status="settled",
                    verdict=verdict,
                    receipt_id=f"r-{n}",
                    answer={},
                    at=call.started_at,
                )
            made.append(call)
    return made


def _at(seconds: int | None) -> datetime | None:
    return None if seconds is None else T0 + timedelta(seconds=seconds)


def _listed(store: Store, filters: Filters, limit: int) -> list[str]:
    party, tool, provider, verdict, since, until = filters

    def read(tx: Transaction, cursor: str | None) -> Page:
        return gateway.list_calls(
            tx,
            party=party,
            tool=tool,
            provider=provider,
            verdict=verdict,
            since=_at(since),
            until=_at(until),
            limit=limit,
            cursor=cursor,
        )

    return [c.id for c in every_page(store, read, limit)]


def _wanted(made: list[gateway.GatewayCall], filters: Filters) -> list[str]:
    party, tool, provider, verdict, since, until = filters
    kept = [
        c
        for c in made
        if (party is None or party in (c.caller, c.provider))
        and (tool is None or c.tool == tool)
        and (provider is None or c.provider == provider)
        and (verdict is None or c.verdict == verdict)
        and (since is None or c.started_at >= T0 + timedelta(seconds=since))
        and (until is None or c.started_at < T0 + timedelta(seconds=until))
    ]
    ordered = sorted(kept, key=lambda c: c.id)
    ordered.sort(key=lambda c: c.started_at, reverse=True)
    return [c.id for c in ordered]


def _pending(store: Store, made: list[gateway.GatewayCall], before: int) -> None:
    with store.read() as tx:
        found = [c.id for c in gateway.pending_before(tx, T0 + timedelta(seconds=before))]
    wanted = [
        c for c in made if c.verdict is None and c.started_at < T0 + timedelta(seconds=before)
    ]
    assert sorted(found) == sorted(c.id for c in wanted)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    plans=st.lists(_call, min_size=3, max_size=14),
    filters=st.lists(_filters, min_size=1, max_size=4),
    limit=st.integers(1, 4),
    before=st.integers(0, 6),
    walked=st.sampled_from((1, 2, 3, pages.SIFTED_ROWS)),
)
def test_every_listing_pages_exactly_the_calls_its_filters_keep(
    sqlite_store: Store,
    plans: list[Plan],
    filters: list[Filters],
    limit: int,
    before: int,
    walked: int,
) -> None:
    """For any calls and any filters, the pages of a listing together are the calls the filters
    keep, newest first and ties by id, each once (a party's: as caller or provider, a call it
    made to itself once), also with a page's walk of each index range cut to one to three calls
    (2,000 in service: a listing filtered by what its range does not lead with, a verdict or a
    tool within a party's calls, then comes in short pages, some empty, each with the cursor to
    read on); and the calls still pending before a moment are exactly those."""
    made = _made(sqlite_store, plans)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pages, "SIFTED_ROWS", walked)
        for chosen in filters:
            assert _listed(sqlite_store, chosen, limit) == _wanted(made, chosen), chosen
    _pending(sqlite_store, made, before)


def test_a_page_of_a_rare_verdict_walks_a_bounded_range(sqlite_store: Store) -> None:
    """A page of ann's failed calls among 40 passed ones, the walk cut to 10 calls: each page
    walks at most its range's 10 (empty pages, each a cursor on) until the failed ones, which
    are all found; the statements it sends read no more than that."""
    plans: list[Plan] = [("ann", "bob", "forecast", "PASS", 5)] * 40
    plans += [("ann", "bob", "forecast", "FAIL", 1), ("bob", "ann", "tides", "FAIL", 0)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pages, "SIFTED_ROWS", 10)
        made = _made(sqlite_store, plans)
        chosen: Filters = ("ann", None, None, "FAIL", None, None)
        sizes: list[int] = []
        cursor = None
        while True:
            with sqlite_store.read() as tx:
                page = gateway.list_calls(tx, party="ann", verdict="FAIL", limit=5, cursor=cursor)
            sizes.append(len(page.items))
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert sum(sizes) == 2 and len(sizes) == 5  # 40 passed, 10 a walk, then the two
        assert _listed(sqlite_store, chosen, 5) == _wanted(made, chosen)


def test_a_partys_calls_page_by_page_on_each_database(store: Store) -> None:
    """On each database: ann's calls as caller and as provider (one to herself), some at one
    moment, two a page; filtered by tool and by verdict with them; and the pending ones."""
    plans: list[Plan] = [
        ("ann", "bob", "forecast", "PASS", 1),
        ("bob", "ann", "tides", "FAIL", 2),
        ("ann", "ann", "forecast", None, 2),
        ("cy", "bob", "forecast", "PASS", 2),
        ("ann", "cy", "tides", "PASS", 3),
        ("bob", "ann", "forecast", "PASS", 0),
        ("ann", "bob", "forecast", "PASS", 4),  # more of one role than a page holds
        ("ann", "bob", "tides", None, 5),
    ]
    made = _made(store, plans)
    for chosen in [
        ("ann", None, None, None, None, None),
        ("ann", "forecast", None, None, None, None),
        ("ann", None, None, "PASS", 2, None),
        (None, None, "bob", None, None, 5),
    ]:
        wanted = _wanted(made, chosen)
        assert wanted and _listed(store, chosen, 2) == wanted, chosen
    _pending(store, made, 6)
