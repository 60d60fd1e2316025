"""The console's dashboards: what each role sees at a glance, day by day over a window.

- **operator** (admins): the money held in escrows and calls' holds, in providers' holds, and
  charged, refunded, paid out and taken as fees each day; calls each day by verdict, task
  verdicts each day passed or failed; the providers closest to their declared failure rate.
- **provider** (its own): its quality window against its declared failure rate and the rate at
  which a penalty would be proposed, its calls each day and by verdict, and the checks that
  failed most.
- **poster** (its own tasks): its tasks by state, its verdicts each day, and the rules that fail
  most.

Amounts are integer minor units as strings, as everywhere in the API; rates are exact ratios
(``"1/3"``). Days are UTC days, oldest first, the last one today (by the service's clock).
Each figure is kept as it happens (:mod:`adjudge.store.day_counts`): a dashboard reads its
window's days, never the rows they count. A list of failing rules or checks is ordered by
failures, most first, then by name.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, timedelta
from fractions import Fraction
from typing import Any

from adjudge.app.accounts import need_role
from adjudge.app.calls import Calls, parsed_terms
from adjudge.app.unit import UnitOfWork
from adjudge.calls.quality import QualityTerms, QualityWindow, binomial_upper_tail
from adjudge.market import Status
from adjudge.store import Account, Transaction
from adjudge.store import console as db
from adjudge.store import day_counts as counted

#: The longest window a dashboard reads, in days.
MAX_DAYS = 90
#: How many providers the operator's list shows.
PROVIDERS_SHOWN = 10
#: How many failing rules (or checks) a list shows.
RULES_SHOWN = 10

#: The money series, each the ledger lines of some kinds coming in (their credit legs).
FLOWS = tuple(counted.FLOW_MEMOS)
#: The balances held over time: escrows and calls' reservations (money waiting on a
#: determination), and providers' holds (settled charges waiting out their report windows).
HELD = {"held": ("escrow:", "hold:"), "provider_holds": ("held:",)}


class Dashboards:
    """The dashboards' read use cases."""

    def __init__(self, unit: UnitOfWork, calls: Calls) -> None:
        self.unit = unit
        self.calls = calls

    def _window(self, days: int) -> list[str]:
        """The window's UTC days, oldest first, today last."""
        today = self.unit.now().astimezone(UTC).date()
        first = today - timedelta(days=days - 1)
        return [(first + timedelta(days=i)).isoformat() for i in range(days)]

    def operator(self, viewer: Account, *, days: int = 30) -> dict[str, Any]:
        """The operator's dashboard (admins; ``ROLE_REQUIRED`` otherwise)."""
        need_role(viewer, "admin")
        day_list = self._window(days)
        now = self.unit.now()

        def run(tx: Transaction) -> dict[str, Any]:
            everyone = counted.EVERYONE
            flows = db.counts_by_day(tx, counted.FLOWS, everyone, day_list)
            prefixes = [p for group in HELD.values() for p in group]
            held = db.held_by_day(tx, prefixes, day_list)
            calls = db.counts_by_day(tx, counted.CALLS, everyone, day_list)
            verdicts = db.counts_by_day(tx, counted.VERDICTS, everyone, day_list)
            # Every termed provider's window in this same read: one transaction, not one a
            # provider, and every figure of the page from one moment of the database.
            providers = [_nearness(terms, window) for terms, window in self.calls.termed_in(tx)]
            return {
                "money": _money(day_list, flows, held),
                "calls": _calls_by_day(day_list, calls),
                "tasks": _verdicts_by_day(day_list, verdicts),
                "providers": providers,
            }

        read = self.unit.read(run, one_moment=True)
        near = heapq.nsmallest(
            PROVIDERS_SHOWN,
            read.pop("providers"),
            key=lambda p: (p["share_of_declared"] is None, -(p["_share"] or 0), p["provider"]),
        )
        for p in near:
            p.pop("_share")
        return {
            "role": "operator",
            "as_of": now.isoformat(),
            "days": day_list,
            "currency": "USDC",
            **read,
            "providers": near,
        }

    def provider(self, viewer: Account, *, days: int = 30) -> dict[str, Any]:
        """A provider's own dashboard (``ROLE_REQUIRED`` without the provider role)."""
        need_role(viewer, "provider")
        day_list = self._window(days)

        def run(tx: Transaction) -> dict[str, Any]:
            return {
                "quality": self.calls.quality_in(tx, viewer.id),
                "calls": db.counts_by_day(tx, counted.CALLS, viewer.id, day_list),
                "checks": db.counts_by_day(tx, counted.CHECKS, viewer.id, day_list),
            }

        read = self.unit.read(run, one_moment=True)
        quality = read["quality"]
        terms = parsed_terms(quality["terms"])
        window = quality["window"]
        by_day = _calls_by_day(day_list, read["calls"])
        observed = int(window["pass"]) + int(window["fail"])
        return {
            "role": "provider",
            "provider": viewer.id,
            "as_of": quality["at"],
            "days": day_list,
            "quality": {
                "window": window,
                "failure_rate": quality["failure_rate"],
                "declared_failure_rate": None
                if terms is None
                else _ratio(terms.declared_failure_rate),
                "sample_gate": None if terms is None else terms.sample_gate,
                "confidence": None if terms is None else _ratio(terms.confidence),
                "penalty_threshold": None if terms is None else _threshold(terms, observed),
                "assessment": quality["assessment"],
                "proposal": quality["proposal"],
            },
            "calls": by_day,
            "failing_checks": _top(read["checks"]),
        }

    def poster(self, viewer: Account, *, days: int = 30) -> dict[str, Any]:
        """A poster's dashboard of its own tasks (any account: one that posted nothing sees
        zeros)."""
        day_list = self._window(days)

        def run(tx: Transaction) -> dict[str, Any]:
            return {
                "states": db.tasks_by_status(tx, viewer.id),
                "verdicts": db.counts_by_day(tx, counted.VERDICTS, viewer.id, day_list),
                "rules": db.counts_by_day(tx, counted.RULES, viewer.id, day_list),
            }

        read = self.unit.read(run, one_moment=True)
        return {
            "role": "poster",
            "as_of": self.unit.now().isoformat(),
            "days": day_list,
            "tasks_by_state": {s.value: read["states"].get(s.value, 0) for s in Status},
            "tasks": _verdicts_by_day(day_list, read["verdicts"]),
            "failing_rules": _top(read["rules"]),
        }


def _nearness(terms: QualityTerms | None, window: QualityWindow) -> dict[str, Any]:
    """A provider's observed failure rate beside its declared one, from its window."""
    rate = window.failure_rate
    share = None
    if terms is not None and rate is not None and terms.declared_failure_rate > 0:
        share = rate / terms.declared_failure_rate
    return {
        "provider": window.provider,
        "failure_rate": None if rate is None else _ratio(rate),
        "declared_failure_rate": None if terms is None else _ratio(terms.declared_failure_rate),
        "observations": window.observations,
        "failures": window.fails,
        # The observed rate as a share of the declared one: 1 is at it, above 1 beyond it.
        "share_of_declared": None if share is None else _ratio(share),
        "_share": share,
    }


def _money(
    day_list: Sequence[str],
    flows: Mapping[str, Counter[str]],
    held: Mapping[str, Sequence[int]],
) -> list[dict[str, str]]:
    """Each day's flows and end-of-day held money (summed over each series' prefixes)."""
    rows = []
    for i, day in enumerate(day_list):
        row = {"day": day}
        for series, prefixes in HELD.items():
            row[series] = str(sum(held[p][i] for p in prefixes))
        moved = flows.get(day, Counter())
        for name in FLOWS:
            row[name] = str(moved[name])
        rows.append(row)
    return rows


def _calls_by_day(day_list: Sequence[str], counts: Mapping[str, Counter[str]]) -> dict[str, Any]:
    """Ended calls each day by verdict (a call with no verdict — a request or system error —
    counts as ``none``; one still running is not counted yet), and the window's totals."""
    totals = _summed(counts)
    verdicts = sorted(totals)
    return {
        "verdicts": verdicts,
        "rows": [
            {"day": d, **{v: counts.get(d, Counter())[v] for v in verdicts}} for d in day_list
        ],
        "totals": {v: totals[v] for v in verdicts},
    }


def _verdicts_by_day(
    day_list: Sequence[str], counts: Mapping[str, Counter[str]]
) -> list[dict[str, Any]]:
    """Task verdicts and rulings each day, passed and failed (one routed to the poster decided
    nothing and is not counted)."""
    return [
        {
            "day": d,
            "passed": counts.get(d, Counter())["passed"],
            "failed": counts.get(d, Counter())["failed"],
        }
        for d in day_list
    ]


def _summed(counts: Mapping[str, Counter[str]]) -> Counter[str]:
    """A window's counts by name, its days summed (names counted zero left out)."""
    total: Counter[str] = Counter()
    for day in counts.values():
        total.update(day)
    return +total


def _top(counts: Mapping[str, Counter[str]]) -> list[dict[str, Any]]:
    """The names failed most over the window, most first, then by name."""
    ranked = sorted(_summed(counts).items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"name": name, "failures": n} for name, n in ranked[:RULES_SHOWN]]


def _ratio(value: Fraction) -> str:
    return f"{value.numerator}/{value.denominator}"


def _threshold(terms: QualityTerms, observed: int) -> dict[str, Any]:
    """The fewest failures among ``observed`` calls at which the declared rate no longer
    explains them at the terms' confidence (a penalty is proposed from there, once the sample
    gate is met): the binomial upper tail is at most 1 − confidence. None when no count would
    (too few observations)."""
    alpha = 1 - terms.confidence
    low, high = 0, observed + 1  # the tail falls as k grows: search for the first k within alpha
    while low < high:
        mid = (low + high) // 2
        if binomial_upper_tail(observed, mid, terms.declared_failure_rate) <= alpha:
            high = mid
        else:
            low = mid + 1
    at_least = low if low <= observed else None
    return {
        "observations": observed,
        "failures_at_least": at_least,
        "rate": None if at_least is None or observed == 0 else _ratio(Fraction(at_least, observed)),
        "gate_met": observed >= terms.sample_gate,
    }


__all__ = ["MAX_DAYS", "Dashboards"]
