"""Paid-call routes (spec 003): tools and their policies, reported calls, provider quality."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, StrictBool, StrictInt

from adjudge.app.calls import (
    MAX_REPORT_PAGE,
    MAX_REPORT_REASON,
    MAX_RULING_REASONS,
    MAX_VERSION,
)
from adjudge.service.deps import Caller, IdemKey, Use, WholeNumber, reply, router

routes = router()


class NewTool(BaseModel):
    """A tool's contract, and optionally its provider's declared quality terms."""

    contract: dict[str, Any]
    quality: dict[str, Any] | None = Field(
        default=None,
        description="declared_failure_rate (a ratio or decimal string), sample_gate, "
        "window_days, and optionally confidence (default 0.95) and penalty_minor.",
    )


class NewPolicy(BaseModel):
    """A decision policy document for the tool in the path."""

    policy: dict[str, Any]


class PolicyRef(BaseModel):
    """Which registered policy governs a call; without a version, its highest."""

    id: str = Field(min_length=1, max_length=200)
    version: StrictInt | None = Field(default=None, ge=1, le=MAX_VERSION)


class ReportCall(BaseModel):
    """A call and the response its caller says the provider gave. Its time is the service's
    clock, never the body's ``at``; it never counts toward the provider's quality."""

    request: dict[str, Any]
    response: dict[str, Any]
    policy: PolicyRef | None = Field(
        default=None, description="Default: the policy most recently registered for the tool."
    )
    judgment: dict[str, Any] | None = None
    corroboration: dict[str, Any] | None = None


class FileReport(BaseModel):
    """Why the result is bad despite the checks: what an admin reviewing it should look at."""

    reason: str = Field(min_length=1, max_length=MAX_REPORT_REASON)


class ReportRuling(BaseModel):
    """An admin's ruling on a report: upheld (a human FAIL; a forwarded call's charge is given
    back) or dismissed (nothing changes), with its reasons."""

    upheld: StrictBool
    reasons: list[str] = Field(min_length=1, max_length=MAX_RULING_REASONS)


@routes.post("/tools", status_code=201, tags=["calls"])
def register_tool(*, body: NewTool, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """A provider registers its tool's contract (refusals carry the calls package's codes)."""
    return reply(app.calls.register_tool(who, body.contract, body.quality, key=key), 201)


@routes.post("/tools/{tool}/policies", status_code=201, tags=["calls"])
def register_tool_policy(
    *, tool: str, body: NewPolicy, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """A poster (marketplace) or an admin registers a versioned decision policy for a tool."""
    return reply(app.calls.register_policy(who, tool, body.policy, key=key), 201)


@routes.post("/calls", status_code=201, tags=["calls"])
def report_call(*, body: ReportCall, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """Verify a reported call; its record and signed receipt are stored together, once per
    call id, marked ``reported``."""
    answer = app.calls.report(
        who,
        request=body.request,
        response=body.response,
        policy_id=body.policy.id if body.policy else None,
        policy_version=body.policy.version if body.policy else None,
        judgment=body.judgment,
        corroboration=body.corroboration,
        key=key,
    )
    return reply(answer, 201)


@routes.get("/calls/{call_id}", tags=["calls"])
def get_call(*, call_id: str, who: Caller, app: Use) -> dict[str, Any]:
    """A verified call's record with every check row (its submitter, its provider, admins)."""
    return app.calls.get(who, call_id)


@routes.post("/calls/{call_id}/report", status_code=201, tags=["calls"])
def report_bad_result(
    *, call_id: str, body: FileReport, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """The caller reports a bad result despite the checks, by the call's ``report_deadline``.
    It opens a review for an admin; it does not strike, refund or change any rate."""
    return reply(app.calls.file_report(who, call_id, body.reason, key=key), 201)


@routes.post("/calls/{call_id}/report/ruling", tags=["calls"])
def rule_on_report(
    *, call_id: str, body: ReportRuling, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """An admin (neither the caller nor the provider) rules once on a report."""
    answer = app.calls.rule_report(who, call_id, upheld=body.upheld, reasons=body.reasons, key=key)
    return reply(answer)


@routes.get("/call-reports", tags=["calls"])
def list_reports(
    *,
    who: Caller,
    app: Use,
    status: Annotated[str | None, Query(pattern="^(open|upheld|dismissed)$")] = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_REPORT_PAGE), WholeNumber] = 50,
) -> dict[str, Any]:
    """The admins' review queue: reports oldest first, by status, paged by ``next_cursor``."""
    return app.calls.reports(who, status=status, cursor=cursor, limit=limit)


@routes.get("/providers/{provider}/quality", tags=["calls"])
def provider_quality(
    *,
    provider: str,
    who: Caller,
    app: Use,
    window_days: Annotated[int | None, Query(ge=1, le=3650), WholeNumber] = None,
) -> dict[str, Any]:
    """A provider's quality window now (observed calls only): counts, failure rate (null with
    no observations), the penalty assessment under its declared terms, its latest proposal."""
    return app.calls.quality(provider, window_days=window_days)
