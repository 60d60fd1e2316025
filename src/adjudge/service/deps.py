"""What every route needs: the use cases, the caller, the Idempotency-Key, and the reply."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from adjudge.app import Account, Answer, App
from adjudge.errors import Error
from adjudge.service.errors import RESPONSES
from adjudge.service.ingress import StrictRoute

#: The largest amount the ledger's 64-bit columns hold.
MAX_AMOUNT = 2**63 - 1

_bearer = HTTPBearer(auto_error=False, description="The account's API key.")


# The two dependencies are async so they run on the event loop instead of costing a thread
# handoff each; a key seen recently is answered from memory, an unknown one reads the store once.
async def _app(request: Request) -> App:
    app = request.app.state.adjudge
    assert isinstance(app, App)
    return app


Use = Annotated[App, Depends(_app)]


async def _caller(
    app: Use, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Account:
    return app.accounts.authenticate(creds.credentials if creds else None)


Caller = Annotated[Account, Depends(_caller)]
IdemKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=255,
        description="Retry safely: the same key and request get the stored answer.",
    ),
]


def router() -> APIRouter:
    """A router under ``/api/v1`` whose bodies are parsed strictly and whose refusals are
    documented."""
    return APIRouter(prefix="/api/v1", route_class=StrictRoute, responses=RESPONSES)


def amount(value: int | str, code: str) -> int:
    """A positive whole number of minor units, from a decimal string or an integer."""
    text = value if isinstance(value, str) else str(value)
    if (
        isinstance(value, bool)
        or not 0 < len(text) <= 19
        or not text.isascii()
        or not text.isdigit()
        or not 0 < int(text) <= MAX_AMOUNT
    ):
        raise Error(
            "An amount is a positive whole number of minor units, as decimal digits "
            f"(at most {MAX_AMOUNT}).",
            code=code,
        )
    return int(text)


def reply(answer: Answer[Any], status: int = 200) -> JSONResponse:
    """A state change's answer, marked when it is a replay of the stored one."""
    headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
    return JSONResponse(answer.value, status_code=status, headers=headers)
