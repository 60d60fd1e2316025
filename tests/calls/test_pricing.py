"""A tool's price over time: no caller is ever charged an increase it could not have seen a
notice period ahead; decreases apply at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adjudge.calls.pricing import ListedPrice, announce

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOTICE = timedelta(hours=24)


def test_an_increase_waits_and_a_decrease_does_not() -> None:
    """1000 → 5,000,000 waits 24 h (1000 charged meanwhile); → 500 applies at once."""
    first = announce(None, 1000, T0, NOTICE)
    assert first.at(T0) == 1000 and first.pending(T0) is None
    dearer = announce(first, 5_000_000, T0 + timedelta(hours=1), NOTICE)
    assert dearer.at(T0 + timedelta(hours=1)) == 1000
    assert dearer.pending(T0 + timedelta(hours=2)) == (5_000_000, T0 + timedelta(hours=25))
    assert dearer.at(T0 + timedelta(hours=25)) == 5_000_000
    cheaper = announce(dearer, 500, T0 + timedelta(hours=2), NOTICE)
    assert cheaper.at(T0 + timedelta(hours=2)) == 500 and cheaper.pending(T0) is None


def test_a_smaller_increase_during_a_notice_keeps_its_date() -> None:
    """Announced 5000 for t+24h, then 3000 at t+1h: 3000 is charged from t+24h, not t+25h; a
    larger one (9000) starts a notice of its own."""
    dearer = announce(announce(None, 1000, T0, NOTICE), 5000, T0, NOTICE)
    smaller = announce(dearer, 3000, T0 + timedelta(hours=1), NOTICE)
    assert (smaller.prior, smaller.effective_at) == (1000, T0 + NOTICE)
    larger = announce(dearer, 9000, T0 + timedelta(hours=1), NOTICE)
    assert (larger.prior, larger.effective_at) == (1000, T0 + timedelta(hours=25))


def test_a_negative_notice_is_refused() -> None:
    """A notice is a duration of 0 or more."""
    with pytest.raises(ValueError, match="0 or more"):
        announce(None, 1, T0, timedelta(seconds=-1))


registrations = st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 10_000)),  # (hours after the last, amount)
    min_size=1,
    max_size=12,
)


@given(registrations, st.integers(0, 72))
def test_no_increase_is_charged_without_notice(regs: list[tuple[int, int]], notice_h: int) -> None:
    """For any sequence of re-pricings, at every moment the charge changes: a rise is to an
    amount announced at least the notice period before."""
    notice = timedelta(hours=notice_h)
    at = T0
    price: ListedPrice | None = None
    announced: list[tuple[datetime, int]] = []
    versions: list[tuple[datetime, ListedPrice]] = []
    for gap, amount in regs:
        at += timedelta(hours=gap)
        price = announce(price, amount, at, notice)
        announced.append((at, amount))
        versions.append((at, price))
    moments = sorted(
        {when for when, _ in versions}
        | {p.effective_at for _, p in versions}
        | {when + timedelta(seconds=1) for when, _ in versions}
    )
    before: int | None = None
    for moment in moments:
        current = [p for since, p in versions if since <= moment]
        if not current:
            continue
        now = current[-1].at(moment)
        if before is not None and now > before:
            assert any(a >= now for when, a in announced if when <= moment - notice), (moment, now)
        before = now
