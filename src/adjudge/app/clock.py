"""The one place adjudge reads the time; tests inject their own clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Anything that says what time it is (aware UTC)."""

    def now(self) -> datetime:
        """The current time."""
        ...


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)
