"""The edge the market is coded against: the checker.

A small protocol, so the real implementation (``adjudge.autocheck``) plugs in without the
market importing it, and tests use a plain fake. (Receipts need no port here: the market builds
each verdict's determination itself, :mod:`adjudge.market.proof`, and the service signs it with
its one issuer, :mod:`adjudge.receipts.issuer`.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from adjudge.errors import Error


@dataclass(frozen=True)
class CheckOutcome:
    """What the auto check said about one result: pass or fail, 0-100, reasons, full detail."""

    passed: bool
    score: int
    reasons: tuple[str, ...]
    detail: Mapping[str, Any] = field(default_factory=dict)


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
