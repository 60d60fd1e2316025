"""Money: integer minor units, the platform fee, and a double-entry ledger.

Every movement is a :class:`Transfer` from one account to another, so the sum of all balances is
zero after any sequence of operations: no operation creates or destroys money. Only the
:data:`WORLD` account (money entering from outside, as deposits) may go below zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from adjudge.errors import BadInput, StateError

#: "A pass pays the agent 90% of the reward and the platform 10%": 1000 basis points.
DEFAULT_FEE_BPS = 1000
#: The highest fee a deployment may configure.
MAX_FEE_BPS = 3000

#: What the ledger's integer minor units are: millionths of a USDC (2000000 is 2 USDC). A price
#: in any other currency would move the same integers as if they were these, so none is taken.
LEDGER_CURRENCY = "USDC"
#: Its decimals: a person reads 1500000 minor units as 1.5 USDC.
LEDGER_DECIMALS = 6

#: Where deposits come from; the only account allowed a negative balance.
WORLD = "world"


def shown(minor: int) -> str:
    """Ledger minor units as a person reads them, in the currency with its decimals:
    ``1500000`` is "1.5 USDC" (for messages; every amount on the wire stays in minor units)."""
    whole, part = divmod(abs(minor), 10**LEDGER_DECIMALS)
    text = f"{whole}.{part:0{LEDGER_DECIMALS}d}".rstrip("0").rstrip(".")
    return f"{'-' if minor < 0 else ''}{text} {LEDGER_CURRENCY}"


def wallet_account(account_id: str) -> str:
    """The ledger account holding an account's spendable money."""
    return f"wallet:{account_id}"


def escrow_account(task_id: str) -> str:
    """The ledger account holding a task's reward from funding until payout or refund."""
    return f"escrow:{task_id}"


def provider_hold_account(provider: str) -> str:
    """The ledger account holding a provider's settled charges until their report deadlines
    pass (spec 003: settled is not yet paid)."""
    return f"held:{provider}"


def platform_account() -> str:
    """The ledger account collecting fees."""
    return "platform:fees"


def fee_of(amount: int, fee_bps: int) -> int:
    """The platform fee on a payout: ``floor(amount × fee_bps / 10000)``, in integer arithmetic.

    Raises :class:`adjudge.Error` (``INVALID_FEE``) for a fee outside 0..MAX_FEE_BPS or a
    negative amount; refunds never call this (they carry no fee).
    """
    if not 0 <= fee_bps <= MAX_FEE_BPS:
        raise BadInput(f"fee_bps must be between 0 and {MAX_FEE_BPS}.", code="INVALID_FEE")
    if amount < 0:
        raise BadInput("An amount cannot be negative.", code="INVALID_AMOUNT")
    return amount * fee_bps // 10000


@dataclass(frozen=True)
class Transfer:
    """Move ``amount`` minor units from ``debit`` to ``credit``; checked when built."""

    debit: str
    credit: str
    amount: int
    memo: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.amount, bool) or not isinstance(self.amount, int) or self.amount <= 0:
            raise BadInput("A transfer moves a positive whole amount.", code="INVALID_AMOUNT")
        if self.debit == self.credit:
            raise BadInput("A transfer needs two different accounts.", code="INVALID_TRANSFER")


@dataclass(frozen=True)
class Ledger:
    """Balances by account, changed only by whole transfers (a pure value)."""

    balances: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def balance(self, account: str) -> int:
        """The balance of ``account``; an account never touched holds 0."""
        return self.balances.get(account, 0)

    def total(self) -> int:
        """The sum of every balance: always 0 for a ledger built only from transfers."""
        return sum(self.balances.values())

    def apply(self, transfers: Iterable[Transfer]) -> Ledger:
        """The ledger after ``transfers``, all or nothing.

        Raises :class:`adjudge.Error` (``INSUFFICIENT_FUNDS``) if any account other than
        :data:`WORLD` would go below zero; the original ledger is unchanged either way.
        """
        balances = dict(self.balances)
        for t in transfers:
            balances[t.debit] = balances.get(t.debit, 0) - t.amount
            balances[t.credit] = balances.get(t.credit, 0) + t.amount
            if t.debit != WORLD and balances[t.debit] < 0:
                raise StateError(
                    f"{t.debit} holds too little to move {shown(t.amount)}.",
                    code="INSUFFICIENT_FUNDS",
                )
        return Ledger(MappingProxyType(balances))
