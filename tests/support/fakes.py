"""Fakes of the market's checker and the issuer port: a tiny checker, a hash-chained issuer."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from adjudge import Error
from adjudge.market import CheckOutcome
from adjudge.receipts.issuer import Place


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
    """An :class:`adjudge.receipts.Issuer` that chains receipts by sha256 over sorted-key JSON;
    unsigned. Its statement is the determination's verdict, subject, criteria digest and policy
    decision."""

    fingerprint = None
    public_key = None

    def sign(
        self,
        determination: Any,
        previous: Place | None,
        *,
        about: str | None = None,
        supersedes: Mapping[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        """A receipt naming the previous digest, with what the determination decided."""
        decision = determination.policy_decision
        statement = {
            "verdict": determination.verdict.value,
            "subject": determination.subject_digest,
            "criteriaDigest": determination.criteria_digest,
            "policyDecision": None if decision is None else dict(decision),
            "about": about,
            "checks": [c.name for c in determination.checks],
        }
        return self.chained(statement, previous)

    @staticmethod
    def chained(statement: Any, previous: Place | None) -> Mapping[str, Any]:
        """``statement`` as the receipt after ``previous`` (on its lane)."""
        lane, head = previous or Place(0, None)
        body = {"statement": statement, "lane": lane, "previous": head[0] if head else None}
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
