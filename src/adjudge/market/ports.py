"""The two edges the market is coded against: the checker and the receipt issuer.

Both are small protocols so the real implementations (``adjudge.autocheck`` and
``adjudge.receipts``) plug in without the market importing them, and tests use plain fakes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from adjudge.errors import Error
from adjudge.market.effects import Routed, Settlement, VerdictReached
from adjudge.market.tasks import Task


@dataclass(frozen=True)
class CheckOutcome:
    """What the auto check said about one result: pass or fail, 0-100, reasons, full detail,
    and the digest of the criteria it judged against (signed into the verdict's receipt, so a
    replay can bind the criteria it is given; None when the checker names none)."""

    passed: bool
    score: int
    reasons: tuple[str, ...]
    detail: Mapping[str, Any] = field(default_factory=dict)
    criteria_digest: str | None = None


class Checker(Protocol):
    """The auto check of spec 000, as the market needs it. Must be pure."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """Post-time refusals for ``criteria`` in ``mode``; empty when the task may be posted."""
        ...

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        """Judge ``result`` against ``criteria``; a failed check is a value, never an exception.

        ``withhold`` names criteria fields whose items are left out of the score (a dry run's
        hidden rules), while every field still counts where it changes the hard failures.
        """
        ...


class Place(NamedTuple):
    """Where a receipt is appended on the log: its lane, and that lane's head (the id and
    sequence, from 0, of its last receipt; None when the lane is still empty)."""

    lane: int
    head: tuple[str, int] | None


class ReceiptIssuer(Protocol):
    """Turns a verdict, or a settlement no verdict decided, into a receipt after the head of a
    lane of the log.

    ``previous`` is where it goes (:class:`Place`): its lane, and the id and sequence number
    (from 0) of the lane's last receipt, None for the lane's first. A receipt must carry its
    own id as ``digest``: the next one names it. Raises :class:`adjudge.Error` when the
    determination cannot be proven (nothing is written).
    """

    def issue(
        self,
        verdict: VerdictReached,
        result: str | None,
        previous: Place,
        settlement: Settlement | None = None,
    ) -> Mapping[str, Any]:
        """The receipt for ``verdict`` over the stored ``result``, recording the money it
        releases (``settlement``) when it pays or refunds."""
        ...

    def issue_routing(
        self, routed: Routed, result: str | None, previous: Place
    ) -> Mapping[str, Any]:
        """The receipt of an agent review that could not be grounded (it decides nothing)."""
        ...

    def issue_checkpoint(
        self, previous: Place, heads: Sequence[tuple[int, str | None, int | None]], at: datetime
    ) -> Mapping[str, Any]:
        """A checkpoint of the log: a receipt naming ``heads``, the head (lane, id, sequence;
        None and None for a lane still empty) of every lane of the log."""
        ...

    def issue_settlement(
        self,
        settlement: Settlement,
        task: Task,
        result: str | None,
        basis: str | None,
        previous: Place,
    ) -> Mapping[str, Any]:
        """The receipt of an ending no judgment decided (a refund, a payout after escalation):
        over the delivered ``result`` if any, else the task's own record, naming ``basis`` (the
        receipt of the task's last verdict, if any)."""
        ...
