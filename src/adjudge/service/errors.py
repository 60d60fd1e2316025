"""Refusals on the wire: ``{"error": {"code", "message"}}`` with one status per code.

The table is the one place a code meets its HTTP status; a code not listed is 400 (or 409 for an
illegal transition), so a new refusal is never a 5xx.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from adjudge.errors import Error, StorageError, TransitionError

STATUS: dict[str, int] = {
    # 401: who are you?
    "UNAUTHORIZED": 401,
    # 403: you may not do this to this task (spec: "403 IS_VERIFIER")
    "IS_VERIFIER": 403,
    "POSTER_CANNOT_ACCEPT": 403,
    "NOT_TASK_AGENT": 403,
    "NOT_TASK_POSTER": 403,
    "NOT_TASK_VERIFIER": 403,
    "NOT_A_PARTY": 403,
    "ROLE_REQUIRED": 403,
    "CONFLICT_OF_INTEREST": 403,
    "NOT_TOOL_PROVIDER": 403,
    "VERDICT_SIGNATURE_INVALID": 403,
    # 404: no such thing
    "NOT_FOUND": 404,
    "TASK_NOT_FOUND": 404,
    "RECEIPT_NOT_FOUND": 404,
    "ACCOUNT_NOT_FOUND": 404,
    "TOOL_NOT_FOUND": 404,
    "POLICY_NOT_FOUND": 404,
    "CALL_NOT_FOUND": 404,
    # 409: not now, not in this state (spec: 409 for each of these)
    "VERIFIER_NOT_OPTED_IN": 409,
    "SELF_VERIFICATION": 409,
    "MAX_ATTEMPTS_REACHED": 409,
    "DEADLINE_REACHED": 409,
    "INSUFFICIENT_FUNDS": 409,
    "ACCOUNT_EXISTS": 409,
    "IDEMPOTENCY_KEY_REUSED": 409,
    "CONCURRENT_UPDATE": 409,
    "RESULT_DIGEST_MISMATCH": 409,
    "NO_CRITERIA": 409,
    "VERDICT_UNPROVABLE": 409,
    "CONTRACT_EXISTS": 409,
    "POLICY_EXISTS": 409,
    "CALL_EXISTS": 409,
    # 405: the route exists, the method does not
    "METHOD_NOT_ALLOWED": 405,
    # 503: the database failed; nothing was written
    "STORAGE_ERROR": 503,
    "CHECKER_UNAVAILABLE": 503,
    "CALL_RECEIPTS_UNAVAILABLE": 503,
}


def status_of(error: Error) -> int:
    """The HTTP status of a refusal."""
    if error.code in STATUS:
        return STATUS[error.code]
    if isinstance(error, StorageError):
        return 503
    if isinstance(error, TransitionError):
        return 409
    return 400


def body(code: str, message: str) -> dict[str, Any]:
    """The error shape."""
    return {"error": {"code": code, "message": message}}


def install(app: FastAPI) -> None:
    """Make every refusal, bad request and unknown route answer in the error shape."""

    @app.exception_handler(Error)
    async def _error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Error)
        return JSONResponse(body(exc.code, exc.message), status_code=status_of(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = f"{where}: {first.get('msg', 'invalid')}" if where else "The request is invalid."
        return JSONResponse(body("INVALID_REQUEST", message), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 401: "UNAUTHORIZED"}.get(
            exc.status_code, "INVALID_REQUEST"
        )
        return JSONResponse(body(code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(
            body("INTERNAL_ERROR", "The service failed; nothing was written."), status_code=500
        )
