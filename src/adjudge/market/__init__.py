"""The task lifecycle of spec 000 as a pure state machine: events in, new state and effects out.

Nothing here does IO or reads a clock: the caller passes the time, the checker and the fee in a
:class:`Context`, and applies the returned effects (ledger transfers, verdicts, reputation) in one
transaction. Every verdict carries the kernel determination it was decided on
(:mod:`adjudge.market.proof`), which the caller signs as it is. An event that is not allowed
raises an :class:`adjudge.Error` with a stable code and changes nothing.
"""

from adjudge.market.effects import (
    AgentPenalized,
    DisputeFiled,
    Effect,
    Routed,
    Settlement,
    TakeEnded,
    TakeHeld,
    TakeLapsed,
    VerdictReached,
)
from adjudge.market.events import (
    Accept,
    Cancel,
    Collect,
    Dispute,
    Event,
    Finalize,
    Lapse,
    Reclaim,
    Release,
    Review,
    Rule,
    Submit,
    VerifierVerdict,
)
from adjudge.market.lifecycle import Context, Outcome, post, step
from adjudge.market.money import (
    DEFAULT_FEE_BPS,
    MAX_FEE_BPS,
    WORLD,
    Ledger,
    Transfer,
    escrow_account,
    fee_of,
    platform_account,
    provider_hold_account,
    wallet_account,
)
from adjudge.market.ports import Checker, CheckOutcome
from adjudge.market.reputation import AgentRecord, penalize
from adjudge.market.takes import (
    DEFAULT_TAKE_LIMIT,
    MAX_TAKE_LIMIT,
    MAX_TAKE_WINDOW_HOURS,
    MIN_TAKE_WINDOW_HOURS,
    holder,
    lapses_at,
    take_due,
)
from adjudge.market.tasks import Draft, Ending, Mode, Status, Task, digest_of

__all__ = [
    "DEFAULT_FEE_BPS",
    "DEFAULT_TAKE_LIMIT",
    "MAX_FEE_BPS",
    "MAX_TAKE_LIMIT",
    "MAX_TAKE_WINDOW_HOURS",
    "MIN_TAKE_WINDOW_HOURS",
    "WORLD",
    "Accept",
    "AgentPenalized",
    "AgentRecord",
    "Cancel",
    "CheckOutcome",
    "Checker",
    "Collect",
    "Context",
    "Dispute",
    "DisputeFiled",
    "Draft",
    "Effect",
    "Ending",
    "Event",
    "Finalize",
    "Lapse",
    "Ledger",
    "Mode",
    "Outcome",
    "Reclaim",
    "Release",
    "Review",
    "Routed",
    "Rule",
    "Settlement",
    "Status",
    "Submit",
    "TakeEnded",
    "TakeHeld",
    "TakeLapsed",
    "Task",
    "Transfer",
    "VerdictReached",
    "VerifierVerdict",
    "digest_of",
    "escrow_account",
    "fee_of",
    "holder",
    "lapses_at",
    "penalize",
    "platform_account",
    "post",
    "provider_hold_account",
    "step",
    "take_due",
    "wallet_account",
]
