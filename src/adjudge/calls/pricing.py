"""A tool's price over time: the price is the quote.

A provider may change its tool's price whenever it re-registers the tool, but a caller must never
be charged more than it could have seen coming. So:

- a **decrease** (or the same price) takes effect at once;
- an **increase** takes effect only after a notice period (an operator setting; 24 hours by
  default), and until then calls are charged the price in force when it was announced;
- an increase announced while an earlier, larger one is still pending keeps that one's date (the
  callers were already told of a larger price from then); any other increase starts a notice of
  its own.

So the price charged at time ``t`` is either one in force before some announcement, or one
announced at least a notice period before ``t``. Every time is passed in; nothing here reads a
clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

__all__ = ["DEFAULT_PRICE_NOTICE", "MAX_PRICE_NOTICE", "ListedPrice", "announce"]

#: How long a price increase waits before it is charged, when the operator does not say.
DEFAULT_PRICE_NOTICE: Final = timedelta(hours=24)
#: The longest notice an operator may set.
MAX_PRICE_NOTICE: Final = timedelta(days=90)


@dataclass(frozen=True)
class ListedPrice:
    """A tool version's price: ``amount`` from ``effective_at``, ``prior`` before it."""

    amount: int
    prior: int
    effective_at: datetime

    def at(self, when: datetime) -> int:
        """The price a call starting at ``when`` is charged."""
        return self.amount if when >= self.effective_at else self.prior

    def pending(self, when: datetime) -> tuple[int, datetime] | None:
        """The announced price not yet charged at ``when`` and when it will be, or None."""
        if when >= self.effective_at or self.amount == self.prior:
            return None
        return (self.amount, self.effective_at)

    def to_dict(self, when: datetime) -> dict[str, Any]:
        """What is charged at ``when`` and what is pending (``null`` when nothing is)."""
        pending = self.pending(when)
        return {
            "amount_minor": self.at(when),
            "pending": None
            if pending is None
            else {"amount_minor": pending[0], "from": pending[1].isoformat()},
        }


def announce(
    previous: ListedPrice | None, amount: int, now: datetime, notice: timedelta
) -> ListedPrice:
    """The price of a version registered at ``now`` for ``amount``, after ``previous``."""
    if notice < timedelta(0):
        raise ValueError("a price notice is a duration of 0 or more")
    if previous is None:
        return ListedPrice(amount, amount, now)
    current = previous.at(now)
    if amount <= current:  # a decrease is good news: at once
        return ListedPrice(amount, amount, now)
    if now < previous.effective_at and amount <= previous.amount:
        # A larger increase is already announced for a date: this one is no surprise by then.
        return ListedPrice(amount, current, previous.effective_at)
    return ListedPrice(amount, current, now + notice)
