"""Dashboard routes: the operator's, a provider's and a poster's view at a glance, day by day
(:mod:`adjudge.app.dashboards`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query

from adjudge.app.dashboards import MAX_DAYS
from adjudge.service.deps import Caller, Use, WholeNumber, router

routes = router()

Days = Annotated[
    int, Query(ge=1, le=MAX_DAYS, description="The window in UTC days, today last."), WholeNumber
]


@routes.get("/dashboard/operator", tags=["service"])
def operator(*, who: Caller, app: Use, days: Days = 30) -> dict[str, Any]:
    """Money held, charged, refunded, paid out and taken as fees each day, with the held
    balances at each day's end; calls each day by verdict; task verdicts each day; the
    providers closest to their declared failure rate (admins)."""
    return app.dashboards.operator(who, days=days)


@routes.get("/dashboard/provider", tags=["service"])
def provider(*, who: Caller, app: Use, days: Days = 30) -> dict[str, Any]:
    """The caller's quality window against its declared failure rate and the failures at
    which a penalty would be proposed; its calls each day by verdict; its checks that failed
    most (providers)."""
    return app.dashboards.provider(who, days=days)


@routes.get("/dashboard/poster", tags=["service"])
def poster(*, who: Caller, app: Use, days: Days = 30) -> dict[str, Any]:
    """The caller's tasks by state, their verdicts each day, and the rules that failed most."""
    return app.dashboards.poster(who, days=days)
