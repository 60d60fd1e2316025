"""A listing of tools reads each name's latest version a page at a time, never the versions
before it: the same page as a model of every version, however many versions a name has."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from adjudge.calls.pricing import ListedPrice
from adjudge.store import Store, gateway, records
from support.steps import sqlite_steps

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _register(store: Store, registrations: list[tuple[str, str]], *, account: bool = True) -> None:
    """Each ``(name, description)`` a registration: a name's second is its version 2."""
    with store.write() as tx:
        if account:
            records.create_account(tx, "prov", ["provider"], "key-prov", opt_in=False, at=T0)
        for n, (name, description) in enumerate(registrations):
            gateway.add_tool(
                tx,
                name=name,
                provider="prov",
                document={"name": name, "description": description},
                digest=f"sha256:{n:064x}",
                price=ListedPrice(n, n, T0),
                currency="USDC",
                at=T0 + timedelta(seconds=n),
            )


def _pages(store: Store, query: str | None, limit: int) -> list[list[tuple[str, int]]]:
    pages, cursor = [], None
    while True:
        with store.read() as tx:
            page = gateway.list_tools(tx, query=query, limit=limit, cursor=cursor)
        pages.append([(t.name, t.version) for t in page.items])
        cursor = page.next_cursor
        if cursor is None:
            return pages


def test_pages_of_the_latest_versions_match_a_model_of_every_version(store: Store) -> None:
    rng = random.Random(7)
    names = [f"tool_{i:02d}" for i in range(12)]
    registrations = [
        (rng.choice(names), rng.choice(["tide tables", "weather", "maps"])) for _ in range(60)
    ]
    _register(store, registrations)
    latest: dict[str, tuple[int, str]] = {}
    for name, description in registrations:
        version = latest.get(name, (0, ""))[0] + 1
        latest[name] = (version, description)
    for query in (None, "tide", "TOOL_0", "nothing"):
        wanted = [
            (name, version)
            for name, (version, description) in sorted(latest.items())
            if query is None or query.casefold() in f"{name} {description}".casefold()
        ]
        for limit in (1, 3, 50):
            pages = _pages(store, query, limit)
            assert [item for page in pages for item in page] == wanted, (query, limit)
            assert all(len(page) <= limit for page in pages)


def test_a_page_reads_a_bounded_number_of_rows_whatever_the_versions(store: Store) -> None:
    """A page of two names, one of them re-registered 40 times and then 400 times more, is the
    same page, and on SQLite the database does the same work for it (its virtual machine's
    steps within 10%): each name and its latest version is a step of the key. (A walk of the
    key that checked each row for a newer version took every version: 10× the steps.)"""
    _register(store, [("busy", "weather")] * 40 + [("calm", "maps"), ("quiet", "tides")])
    first = _page_and_steps(store)
    _register(store, [("busy", "weather")] * 400, account=False)
    again = _page_and_steps(store)
    assert first[0] == [("busy", 40), ("calm", 1)] and again[0] == [("busy", 440), ("calm", 1)]
    if store.dialect == "sqlite":
        assert again[1] <= first[1] * 1.1, (first[1], again[1])


def _page_and_steps(store: Store) -> tuple[list[tuple[str, int]], int]:
    """A page of two tools, and how many virtual machine steps SQLite took for it."""
    page, steps = sqlite_steps(store, lambda tx: gateway.list_tools(tx, limit=2))
    return [(t.name, t.version) for t in page.items], steps


def test_a_search_reads_a_bounded_walk_and_names_where_it_ended(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search that finds less than a page in its walk's share of names ends where the walk
    did, short or empty, with a cursor to read on; followed to its end, the pages hold every
    match once, in order (before, a search matching nothing read every tool: 26-117x the time
    from 1,000 to 30,000 tools)."""
    monkeypatch.setattr(gateway, "SIFTED_ROWS", 20)
    monkeypatch.setattr(gateway, "_SEARCH_BATCH", 10)
    names = [f"tool_{i:03d}" for i in range(65)]
    _register(
        store, [(n, "tide tables" if n in ("tool_004", "tool_061") else "maps") for n in names]
    )
    batches: list[int] = []
    latest = gateway._LATEST_NAMES

    class Counted(dict):  # type: ignore[type-arg]
        def __getitem__(self, key: bool) -> object:
            batches.append(1)
            return latest[key]

    monkeypatch.setattr(gateway, "_LATEST_NAMES", Counted(latest))
    with store.read() as tx:
        first = gateway.list_tools(tx, query="nothing", limit=5)
    assert first.items == [] and first.next_cursor is not None
    assert len(batches) == 2  # 20 names read, not 65
    pages = _pages(store, "tide", 5)
    assert pages == [[("tool_004", 1)], [], [], [("tool_061", 1)]], pages


def test_a_searchs_walk_reads_no_document(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search's walk reads each walked name's description, not its document: a search
    matching nothing reads no document, and one matching reads those of its page only, the
    same page as before (the walk read 2,000 whole documents: 29-40 s when some held
    3.5 MB)."""
    names = [f"tool_{i:03d}" for i in range(30)]
    _register(
        store, [(n, "tide tables" if n in ("tool_004", "tool_021") else "maps") for n in names]
    )
    made: list[str] = []
    whole = gateway._tool

    def counted(m: object) -> gateway.StoredTool:
        found = whole(m)
        made.append(found.name)
        return found

    monkeypatch.setattr(gateway, "_tool", counted)
    with store.read() as tx:
        assert gateway.list_tools(tx, query="nothing", limit=5).items == []
    assert made == []
    assert _pages(store, "TIDE", 1) == [[("tool_004", 1)], [("tool_021", 1)]]
    assert made == ["tool_004", "tool_021"]
