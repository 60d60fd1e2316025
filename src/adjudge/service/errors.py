"""Refusals on the wire: ``{"error": {"code", "message", "request_id"}}`` with one status per
code; ``request_id`` is the id the request was logged under (:mod:`adjudge.service.access`),
also sent as the ``X-Request-Id`` header.

The table is the one place a code meets its HTTP status; a code not listed is 400 (or 409 for an
illegal transition), so a new refusal is never a 5xx. A body that does not fit the operation's
schema is ``422 INVALID_REQUEST``, as the OpenAPI schema documents; a body that is not I-JSON is
``400 INVALID_JSON``; one over the size limit ``413 PAYLOAD_TOO_LARGE``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from adjudge.errors import Error, RateLimited, StorageError, TransitionError
from adjudge.service.access import current_request_id

STATUS: dict[str, int] = {
    # 401: who are you?
    "UNAUTHORIZED": 401,
    # 403: you may not do this to this task (spec: "403 IS_VERIFIER")
    "IS_VERIFIER": 403,
    "POSTER_CANNOT_ACCEPT": 403,
    "RELEASED_FROM_TASK": 403,
    "TAKE_LAPSED": 403,
    "NOT_TASK_AGENT": 403,
    "NOT_TASK_POSTER": 403,
    "NOT_TASK_VERIFIER": 403,
    "NOT_A_PARTY": 403,
    "BUNDLE_WITHHELD": 403,
    "ROLE_REQUIRED": 403,
    "CONFLICT_OF_INTEREST": 403,
    "NOT_TOOL_PROVIDER": 403,
    "PRIMARY_KEY_REQUIRED": 403,
    "VERDICT_SIGNATURE_INVALID": 403,
    # 404: no such thing
    "NOT_FOUND": 404,
    "TASK_NOT_FOUND": 404,
    "RECEIPT_NOT_FOUND": 404,
    "ACCOUNT_NOT_FOUND": 404,
    "KEY_NOT_FOUND": 404,
    "TOOL_NOT_FOUND": 404,
    "POLICY_NOT_FOUND": 404,
    "CALL_NOT_FOUND": 404,
    "REPORT_NOT_FOUND": 404,
    "WEBHOOK_ENDPOINT_NOT_FOUND": 404,
    "WEBHOOK_DELIVERY_NOT_FOUND": 404,
    # 409: not now, not in this state (spec: 409 for each of these)
    "VERIFIER_NOT_OPTED_IN": 409,
    "VERIFIER_KEY_REQUIRED": 409,
    "SELF_VERIFICATION": 409,
    "MAX_ATTEMPTS_REACHED": 409,
    "DEADLINE_REACHED": 409,
    "INSUFFICIENT_FUNDS": 409,
    "PAYMENT_PRICE_ABOVE_MAXIMUM": 409,
    "PAYMENT_LIMIT_EXCEEDED": 409,
    "TAKE_LIMIT_REACHED": 409,
    "ACCOUNT_EXISTS": 409,
    "KEY_EXISTS": 409,
    "IDEMPOTENCY_KEY_REUSED": 409,
    "CONCURRENT_UPDATE": 409,
    "RESULT_DIGEST_MISMATCH": 409,
    "NO_CRITERIA": 409,
    "BUNDLE_NOT_AVAILABLE": 409,
    "NOT_CLAIMED": 409,
    "VERDICT_UNPROVABLE": 409,
    "CONTRACT_EXISTS": 409,
    "POLICY_EXISTS": 409,
    "CALL_EXISTS": 409,
    "REPORT_EXISTS": 409,
    "REPORT_NOT_ALLOWED": 409,
    "REPORT_WINDOW_CLOSED": 409,
    "REPORT_RULED": 409,
    "WEBHOOK_ENDPOINT_LIMIT": 409,
    "KEY_LIMIT_REACHED": 409,
    "WEBHOOK_ENDPOINT_DISABLED": 409,
    "WEBHOOK_DELIVERY_IN_FLIGHT": 409,
    # 405: the route exists, the method does not
    "METHOD_NOT_ALLOWED": 405,
    # 413: the body is over the size limit
    "PAYLOAD_TOO_LARGE": 413,
    # 422: the body does not fit the operation's schema
    "INVALID_REQUEST": 422,
    # 429: a bounded action is used up for now (Retry-After says when to come back)
    "RATE_LIMITED": 429,
    "DRY_RUN_QUOTA_EXCEEDED": 429,
    "LINT_QUOTA_EXCEEDED": 429,
    # 500: a stored record is damaged (nothing a caller can fix)
    "RECORD_UNREADABLE": 500,
    # 503: the database failed; nothing was written
    "STORAGE_ERROR": 503,
    "CHECKER_UNAVAILABLE": 503,
    "CALL_RECEIPTS_UNAVAILABLE": 503,
}

#: Where the error shape is documented for every operation.
DOCUMENTED = (400, 401, 403, 404, 409, 413, 422, 429, 503)


class ErrorDetail(BaseModel):
    """A refusal: a stable machine code, a sentence a person can act on, and the id the
    request was logged under (quote it to the operator)."""

    code: str
    message: str
    request_id: str


class ErrorBody(BaseModel):
    """Every refusal's body."""

    error: ErrorDetail


#: The responses every operation documents besides its success.
RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": "A refusal (see `error.code`)."}
    for status in DOCUMENTED
}


def status_of(error: Error) -> int:
    """The HTTP status of a refusal."""
    if error.code in STATUS:
        return STATUS[error.code]
    if isinstance(error, RateLimited):
        return 429
    if isinstance(error, StorageError):
        return 503
    if isinstance(error, TransitionError):
        return 409
    return 400


def body(code: str, message: str) -> dict[str, Any]:
    """The error shape, with the id of the request being answered."""
    return {"error": {"code": code, "message": message, "request_id": current_request_id()}}


def reply(error: Error) -> JSONResponse:
    """A refusal as a response (with ``Retry-After`` when the caller should wait)."""
    headers = None
    if isinstance(error, RateLimited):
        headers = {"Retry-After": str(error.retry_after)}
    return JSONResponse(
        body(error.code, error.message), status_code=status_of(error), headers=headers
    )


def install(app: FastAPI) -> None:
    """Make every refusal, bad request and unknown route answer in the error shape."""

    @app.exception_handler(Error)
    async def _error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Error)
        return reply(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = f"{where}: {first.get('msg', 'invalid')}" if where else "The request is invalid."
        return JSONResponse(body("INVALID_REQUEST", message), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = getattr(exc, "code", None) or {
            401: "UNAUTHORIZED",
            404: "NOT_FOUND",
            405: "METHOD_NOT_ALLOWED",
            413: "PAYLOAD_TOO_LARGE",
        }.get(exc.status_code, "INVALID_REQUEST")
        message = str(exc.detail)
        if exc.status_code == 413:
            message = "The request body is over the size limit; nothing was read."
        return JSONResponse(body(code, message), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(
            body("INTERNAL_ERROR", "The service failed; nothing was written."), status_code=500
        )
