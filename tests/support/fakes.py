"""Fakes that satisfy the market's protocols: a tiny checker and a hash-chained issuer."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from adjudge import Error
from adjudge.market import CheckOutcome, Place


class FakeChecker:
    """Passes a result at least ``min_length`` characters long that holds no ``FAIL``."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """Auto mode needs criteria; ``regex_pattern: "(a+)+$"`` stands for an unusable one."""
        if mode == "auto" and not criteria:
            return [Error("Auto mode needs criteria.", code="AUTO_CRITERIA_REQUIRED")]
        if criteria.get("regex_pattern") == "(a+)+$":
            return [Error("Unsafe pattern.", code="REGEX_PATTERN_UNUSABLE")]
        return []

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        """Pass or fail by length and the word FAIL (nothing to withhold)."""
        ok = len(result) >= int(criteria.get("min_length", 10)) and "FAIL" not in result
        reasons = ("All verification criteria met",) if ok else ("min_length: 0%",)
        return CheckOutcome(ok, 100 if ok else 0, reasons, {"passed": ok})


class FakeIssuer:
    """Chains receipts by sha256 over sorted-key JSON; unsigned."""

    def issue(
        self,
        verdict: Any,
        result: str | None,
        previous: Place,
        settlement: Any = None,
    ) -> Mapping[str, Any]:
        """A receipt naming the previous digest (and the settlement it releases)."""
        statement = verdict.statement() if hasattr(verdict, "statement") else dict(verdict)
        if settlement is not None:
            statement = {**statement, "settlement": settlement.decision()}
        return self._chained(statement, previous)

    def issue_routing(self, routed: Any, result: str | None, previous: Place) -> Mapping[str, Any]:
        """A receipt for an agent review routed to the poster."""
        return self._chained({"routed": routed.task_id, "reason": routed.reason}, previous)

    def issue_settlement(
        self,
        settlement: Any,
        task: Any,
        result: str | None,
        basis: str | None,
        previous: Place,
    ) -> Mapping[str, Any]:
        """A receipt for an ending no verdict decided."""
        return self._chained({**settlement.decision(), "basis": basis}, previous)

    def issue_checkpoint(
        self, previous: Place, heads: Sequence[tuple[int, str | None, int | None]], at: datetime
    ) -> Mapping[str, Any]:
        """A checkpoint naming every lane's head."""
        return self._chained({"checkpoint": [list(h) for h in heads]}, previous)

    @staticmethod
    def _chained(statement: Any, previous: Place) -> Mapping[str, Any]:
        head = previous.head
        body = {
            "statement": statement,
            "lane": previous.lane,
            "previous": head[0] if head else None,
        }
        digest = "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return {**body, "digest": digest}


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        """The current fake time."""
        return self.current

    def advance(self, **kwargs: float) -> None:
        """Move the clock forward by a ``timedelta(**kwargs)``."""
        self.current += timedelta(**kwargs)
