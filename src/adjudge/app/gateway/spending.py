"""What a paid call may cost its caller: the most the call accepts, and its API key's limits
per call and per day.

The price is checked against both before anything is reserved (:func:`within`), and counted
against the key's day from the key's stored row in the transaction that reserves it
(:func:`count_spending`); a call not charged after all gives its price back (:func:`give_back`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from adjudge.calls.tools import DECIMALS
from adjudge.errors import BadInput, Error, NotAllowed, StateError
from adjudge.store import Account, Transaction, api_keys, hot_rows


def within(price: int, currency: str, max_price: int | None, caller: Account) -> None:
    """Refuse a call whose price is above what its caller accepts, or above its key's limit
    per call, before anything moves (the limits are checked again where the price is
    reserved, from the key's stored row)."""
    if max_price is not None and (isinstance(max_price, bool) or not 0 <= max_price < 2**63):
        raise BadInput(
            "The most a call accepts is a whole number of minor units, 0 or more.",
            code="INVALID_AMOUNT",
        )
    grant = caller.key
    if grant is not None and grant.max_per_call is not None and price > grant.max_per_call:
        raise _over_limit(price, currency, grant.max_per_call, "call")
    if max_price is not None and price > max_price:
        raise StateError(
            f"This call costs {_amount(price, currency)}, more than the most you accept "
            f"({_amount(max_price, currency)}). Nothing was charged and the provider was not "
            "called.",
            code="PAYMENT_PRICE_ABOVE_MAXIMUM",
        )


def count_spending(tx: Transaction, key_id: str, price: int, currency: str, now: datetime) -> None:
    """Count a call's price against its key's limits, from the key's stored row (a limit
    lowered a moment ago holds; a revoked key pays for nothing)."""
    grant = api_keys.get(tx, key_id)
    if grant is None or grant.revoked_at is not None:
        raise NotAllowed("This API key was revoked; nothing was charged.", code="UNAUTHORIZED")
    if grant.max_per_call is not None and price > grant.max_per_call:
        raise _over_limit(price, currency, grant.max_per_call, "call")
    if price > 0 and not api_keys.spend(tx, key_id, _day(now), price, grant.max_per_day):
        assert grant.max_per_day is not None
        raise _over_limit(price, currency, grant.max_per_day, "day")


def spending_rows(key_id: str | None, price: int, at: datetime) -> tuple[hot_rows.Row, ...]:
    """The spending row a call at ``at`` counts its price on, or gives it back to (none
    without a key or a price): for a group commit to lock in its order
    (:mod:`adjudge.store.hot_rows`)."""
    if key_id is None or price <= 0:
        return ()
    return (hot_rows.spending(key_id, _day(at)),)


def give_back(tx: Transaction, key_id: str | None, price: int, started: datetime) -> None:
    """A call not charged after all gives its price back to its key's day."""
    if key_id is not None and price > 0:
        api_keys.give_back(tx, key_id, _day(started), price)


def _day(at: datetime) -> str:
    """The UTC day a key's spending is counted on."""
    return at.astimezone(UTC).date().isoformat()


def _over_limit(price: int, currency: str, limit: int, per: str) -> Error:
    return StateError(
        f"This call costs {_amount(price, currency)}, past this API key's limit of "
        f"{_amount(limit, currency)} a {per}. Nothing was charged and the provider was not "
        "called; the account's owner can raise the limit or use another key.",
        code="PAYMENT_LIMIT_EXCEEDED",
    )


def _amount(minor: int, currency: str) -> str:
    """Minor units as a person reads them: ``0.25 USDC``."""
    decimals = DECIMALS.get(currency, 0)
    if decimals == 0:
        return f"{minor} {currency}"
    whole, part = divmod(minor, 10**decimals)
    return f"{whole}.{part:0{decimals}d}".rstrip("0").rstrip(".") + f" {currency}"
