"""The criteria lint as a use case: one answer for the CLI, the HTTP route and the post form.

A poster asks, before funding, what an agent could game in its criteria and how little would be
paid for (:mod:`adjudge.autocheck.lint`). The answer is advice: nothing is stored, no verdict
changes, and a task posted with findings is posted as before. Input is refused as posting
refuses it — criteria that are not a JSON object or do not parse (``CRITERIA_INVALID``), over a
limit (``CRITERIA_OVER_LIMIT``) — and a brief over the post route's length (``INVALID_BRIEF``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from adjudge.app.at_once import AtOnce
from adjudge.app.tasks import MAX_CRITERIA_BYTES, runs_slow
from adjudge.app.unit import UnitOfWork
from adjudge.autocheck import jsregex
from adjudge.autocheck.lint import lint
from adjudge.errors import BadInput, CriteriaError, RateLimited
from adjudge.market.lifecycle import MAX_RESULT_CHARS
from adjudge.store import Account, Transaction, quotas

#: The longest brief read, in characters: the post route's own bound.
MAX_BRIEF_CHARS = 100_000


#: Lints one account may ask the service for in :data:`LINT_WINDOW`: a lint of the largest
#: criteria costs up to about a second of CPU, so an account's share of the service is bounded.
LINT_QUOTA = 120
LINT_WINDOW = timedelta(hours=1)


class CriteriaAdvice:
    """Advice on criteria before they are posted. Offline (the CLI) it reads and writes
    nothing; in the service (``unit`` given) each account's lints are counted against
    :data:`LINT_QUOTA` an hour (``LINT_QUOTA_EXCEEDED``, with the seconds to wait)."""

    def __init__(self, unit: UnitOfWork | None = None, at_once: AtOnce | None = None) -> None:
        self.unit = unit
        #: The dry runs and lints each account has running at once (shared with the dry runs).
        self.at_once = at_once or AtOnce()

    def lint(
        self, criteria: object, *, brief: str | None = None, who: Account | None = None
    ) -> dict[str, Any]:
        """The findings and the gaming margin for ``criteria`` (``brief``: what an agent could
        copy), as JSON data: ``findings``, ``margin`` (null when no cheap result passes),
        ``summary``, ``candidates`` and ``advice_only`` (always true: a lint decides nothing).
        Results longer than the market accepts are not candidates (no agent could submit one)."""
        if not isinstance(criteria, Mapping):
            raise CriteriaError(
                'Criteria must be a JSON object of rules, such as {"min_length": 200}.',
                code="CRITERIA_INVALID",
            )
        size = len(json.dumps(criteria, ensure_ascii=False, separators=(",", ":")).encode())
        if size > MAX_CRITERIA_BYTES:
            raise CriteriaError(
                f"Criteria are at most {MAX_CRITERIA_BYTES} bytes of JSON; these are {size}.",
                code="CRITERIA_OVER_LIMIT",
            )
        if brief is not None and (not isinstance(brief, str) or len(brief) > MAX_BRIEF_CHARS):
            raise BadInput(
                f"The brief is text of at most {MAX_BRIEF_CHARS:,} characters.",
                code="INVALID_BRIEF",
            )
        if who is not None:
            self._count(who)
            with (
                self.at_once.held(who.id, "dry runs and lints"),
                jsregex.owned_by(who.id),  # the asker's share of the regex worker pool
            ):
                found = lint(criteria, brief=brief, longest_result=MAX_RESULT_CHARS)
        else:
            found = lint(criteria, brief=brief, longest_result=MAX_RESULT_CHARS)
        return {**found.to_dict(), "advice_only": True}

    def _count(self, who: Account) -> None:
        unit = self.unit
        if unit is None:
            return
        start, wait = quotas.window(unit.now(), LINT_WINDOW)

        def count(tx: Transaction) -> int:
            return quotas.use(tx, f"lint:{who.id}", start)

        if unit.write(count) > LINT_QUOTA:
            raise RateLimited(
                f"An account may lint {LINT_QUOTA} criteria an hour; try again in {wait} s.",
                retry_after=wait,
                code="LINT_QUOTA_EXCEEDED",
            )

    def runs_slow(self, criteria: object) -> bool:
        """Whether linting ``criteria`` runs a regex in the time-limited worker pool (the
        service runs such work apart from the request threads)."""
        return isinstance(criteria, Mapping) and runs_slow(criteria)
