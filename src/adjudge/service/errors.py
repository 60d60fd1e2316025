"""Refusals on the wire: ``{"error": {"code", "message", "request_id"}}`` with one status per
code; ``request_id`` is the id the request was logged under (:mod:`adjudge.service.access`),
also sent as the ``X-Request-Id`` header.

A code's status is the one :mod:`adjudge.error_codes` declares for it (a code it does not declare
takes its kind's). A body that does not fit the operation's schema is ``422 INVALID_REQUEST``, as
the OpenAPI schema documents; a body that is not I-JSON is ``400 INVALID_JSON``; one over the size
limit ``413 PAYLOAD_TOO_LARGE``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from adjudge import error_codes
from adjudge.errors import Error, RateLimited
from adjudge.service.access import current_request_id

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


#: Where a document keeps the error shape's schema.
_REF = f"#/components/schemas/{ErrorBody.__name__}"

#: The responses every operation documents besides its success. They name the error shape by
#: reference, not by model: with a model, FastAPI builds a validator for each status of each
#: route again in every application it serves (about 700 here, 0.15 s of CPU before an app's
#: first request, paid by each test's app); the schemas themselves join the document once, in
#: :func:`document_refusals`. The document is the same either way, byte for byte (a test
#: compares the two).
RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {
        "description": "A refusal (see `error.code`).",
        "content": {"application/json": {"schema": {"$ref": _REF}}},
    }
    for status in DOCUMENTED
}


@cache
def _refusal_schemas() -> dict[str, Any]:
    """``ErrorBody`` and what it refers to, as FastAPI writes a response model's schemas (the
    components of a route that documents nothing else)."""
    probe = FastAPI()
    probe.get("/", responses={400: {"model": ErrorBody}})(lambda: None)
    schemas: dict[str, Any] = probe.openapi()["components"]["schemas"]
    return schemas


def document_refusals(document: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI ``document`` with the schemas :data:`RESPONSES` refers to, in the
    components' order (by name, as FastAPI writes them)."""
    components = document.setdefault("components", {})
    schemas = {**components.get("schemas", {}), **_refusal_schemas()}
    components["schemas"] = dict(sorted(schemas.items()))
    return document


#: What Starlette refuses by status alone (no key, no route, no such method, a body too large).
_BY_STATUS = {
    401: "UNAUTHORIZED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
}


def status_of(error: Error) -> int:
    """The HTTP status of a refusal: the one its code is declared with."""
    return error_codes.status(error)


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
        code = getattr(exc, "code", None) or _BY_STATUS.get(exc.status_code, "INVALID_REQUEST")
        message = str(exc.detail)
        if exc.status_code == 413:
            message = "The request body is over the size limit; nothing was read."
        return JSONResponse(body(str(code), message), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(
            body("INTERNAL_ERROR", "The service failed; nothing was written."), status_code=500
        )
