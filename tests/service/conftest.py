"""A fresh service over SQLite for the service tests that need no other database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adjudge.store import Store
from support.harness import Harness, make_harness


@pytest.fixture
def h(sqlite_store: Store) -> Iterator[Harness]:
    """A fresh service on SQLite; its ledger must balance when the test ends."""
    harness = make_harness(sqlite_store)
    yield harness
    harness.ledger()
