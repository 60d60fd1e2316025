"""A service whose webhooks may go to loopback, a receiver that verifies them, a sender."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adjudge.app import Settings
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.store import Store
from adjudge.webhooks import Sender, SenderLimits
from support.harness import Harness, make_harness

#: Loopback receivers are allowed here; everywhere else they are refused by default.
SETTINGS = Settings(webhooks_allow_private=True)
#: Short bounds so a slow receiver times out in well under a second.
SHORT = SenderLimits(connect_timeout=1.0, read_timeout=0.5, write_timeout=0.5, total_timeout=0.6)


@pytest.fixture
def wh(sqlite_store: Store) -> Iterator[Harness]:
    """A fresh service on SQLite with webhooks to loopback allowed."""
    issuer = SignedReceipts(SigningKey.generate())  # signs call receipts too
    harness = make_harness(sqlite_store, settings=SETTINGS, issuer=issuer)
    yield harness
    harness.ledger()


@pytest.fixture
def quick() -> Iterator[Sender]:
    """A sender that gives up on an answer after 0.6 s."""
    s = Sender(SHORT, allow_private=True)
    yield s
    s.close()
