"""A store listing read page after page, as a client follows ``next_cursor``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adjudge.store import Store, Transaction
from adjudge.store.pages import Page


def every_page(
    store: Store, read: Callable[[Transaction, str | None], Page], limit: int
) -> list[Any]:
    """Every item of a listing, each page read in its own transaction from the last one's
    cursor (``read(tx, cursor)``), each page holding at most ``limit``."""
    found: list[Any] = []
    cursor = None
    while True:
        with store.read() as tx:
            page = read(tx, cursor)
        assert len(page.items) <= limit
        found += page.items
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor
