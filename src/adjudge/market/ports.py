"""The two edges the market is coded against: the checker and the receipt issuer.

Both are small protocols so the real implementations (``adjudge.autocheck`` and
``adjudge.receipts``) plug in without the market importing them, and tests use plain fakes.
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

    def check(self, result: str, criteria: Mapping[str, Any]) -> CheckOutcome:
        """Judge ``result`` against ``criteria``; a failed check is a value, never an exception."""
        ...


class ReceiptIssuer(Protocol):
    """Signs a determination into a receipt chained after ``previous`` (None for the first)."""

    def issue(self, statement: Mapping[str, Any], previous: str | None) -> Mapping[str, Any]:
        """The receipt for ``statement``; it must carry its own ``digest`` for the next link."""
        ...
