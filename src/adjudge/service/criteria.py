"""Criteria routes: advice on criteria before a task is posted and funded."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from adjudge.app.criteria import MAX_BRIEF_CHARS
from adjudge.service.deps import Caller, Use, checked, router

routes = router()


class LintCriteria(BaseModel):
    """Criteria as they would be posted, and optionally the brief an agent would read."""

    criteria: dict[str, Any]
    brief: str = Field(default="", max_length=MAX_BRIEF_CHARS)


@routes.post("/criteria/lint", tags=["tasks"])
async def lint_criteria(*, body: LintCriteria, who: Caller, app: Use) -> dict[str, Any]:
    """Findings (a stable code, the field, what to do) and the gaming margin: the shortest
    cheap result the auto check passes, with its score and length, or null. Advice only:
    nothing is stored and no verdict changes. Any account may ask, 120 times an hour
    (``LINT_QUOTA_EXCEEDED``, 429, with ``Retry-After``)."""
    slow = app.criteria.runs_slow(body.criteria)
    return await checked(
        slow,
        lambda: app.criteria.lint(body.criteria, brief=body.brief, who=who),
        who.id,
        wait=app.settings.slow_check_wait_seconds,
    )
