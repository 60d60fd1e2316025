"""What every route needs: the use cases, the caller, the Idempotency-Key, and the reply."""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import BeforeValidator, SkipValidation
from pydantic_core import PydanticCustomError

from adjudge import json_text
from adjudge.app import Account, Answer, App
from adjudge.autocheck import jsregex
from adjudge.errors import BadInput, Unavailable
from adjudge.service import turns
from adjudge.service.errors import RESPONSES
from adjudge.service.ingress import PARSE_ON_LOOP, StrictRoute

#: The largest amount the ledger's 64-bit columns hold.
MAX_AMOUNT = 2**63 - 1
#: A body's amount of money as sent, left to :func:`amount` alone: the schema's lax integer
#: would make ``true`` the amount 1 and ``2000000.0`` the amount 2000000 before it was read.
Amount = SkipValidation[int | str]
T = TypeVar("T")

#: An integer as an address writes it: digits, after a minus for a negative one.
_WHOLE = re.compile(r"-?[0-9]+")


def whole_number(value: Any) -> Any:
    """An integer in a query or a path, read strictly: the schema's reading of text takes
    ``5.0`` as 5, ``5_0`` as 50 and `` 5 `` as 5, so each spelling would name another page or
    attempt than the client meant. Its bounds are the parameter's own."""
    if isinstance(value, str) and not _WHOLE.fullmatch(value):
        raise PydanticCustomError(
            "whole_number",
            "write a whole number in digits (like 50), with no point, exponent, underscore "
            "or spaces",
        )
    return value


def true_or_false(value: Any) -> Any:
    """A switch in a query, read strictly: ``true`` or ``false``. The schema's reading of text
    also takes ``yes``, ``on``, ``1``, ``t`` and ``Y`` (and their opposites)."""
    if isinstance(value, str):
        if value not in ("true", "false"):
            raise PydanticCustomError(
                "true_or_false", "write true or false (in lowercase); nothing else is read as one"
            )
        return value == "true"
    return value


#: Marks an ``int`` query or path parameter read by :func:`whole_number`:
#: ``Annotated[int, Query(ge=1, le=200), WholeNumber]``.
WholeNumber = BeforeValidator(whole_number)
#: A query's switch, ``true`` or ``false`` (:func:`true_or_false`).
Switch = Annotated[bool, BeforeValidator(true_or_false)]

#: Limiters by event loop (a limiter belongs to the loop it was made in) and lane name.
_LANES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, anyio.CapacityLimiter]] = (
    weakref.WeakKeyDictionary()
)


def slow_checks() -> int:
    """How many slow checks (a regex in the worker pool) run at once, all accounts together; the
    rest wait without holding a request thread. Waiting in the pool costs a thread and nothing
    else, and the pool picks whom to serve fairly, so this is large: it takes 32 accounts
    flooding at once to fill it and make everyone else queue here, first come first served."""
    return max(64, 4 * jsregex.pool_size())


def owner_slow_checks() -> int:
    """How many of them one account may run at once: one more than its share of the pool's
    workers (all but one), so its next check is ready in the pool's round while the others wait
    here."""
    return max(1, jsregex.pool_size() - 1) + 1


def lane(name: str, size: int) -> anyio.CapacityLimiter:
    """The limiter of a lane of work kept apart from the request threads, in this event loop."""
    lanes = _LANES.setdefault(asyncio.get_running_loop(), {})
    found = lanes.get(name)
    if found is None:
        found = lanes[name] = anyio.CapacityLimiter(size)
    return found


_bearer = HTTPBearer(auto_error=False, description="The account's API key.")


# The two dependencies are async so they run on the event loop instead of costing a thread
# handoff each; a key seen recently is answered from memory, an unknown one reads the store once.
def bearer(authorization: str | None) -> str | None:
    """The API key an ``Authorization`` header carries, read as FastAPI's ``HTTPBearer`` reads
    it for the routes (the ``Bearer`` scheme in any case, then the rest, trimmed): one reading
    for every door, the MCP endpoint, the finalize lane and the receipt look-up included."""
    scheme, token = get_authorization_scheme_param(authorization)
    return token if authorization and scheme.lower() == "bearer" and token else None


async def authenticate(app: App, key: str | None, client: tuple[str, int] | None) -> Account:
    """The account ``key`` belongs to, as :meth:`adjudge.app.accounts.Accounts.authenticate`
    finds it: a key seen recently from memory, on the event loop; any other (an unknown one,
    a wrong one) read from the store on a lane of two threads of its own, taken in turn by the
    client's address. Every door finds its caller here. The store was read on the event loop:
    64 connections sending wrong keys (two reads each, answered 401) held the loop and made
    another account's requests 545 ms at the median, against 23 ms under as many requests
    with a right key."""
    found = app.accounts.remembered(key)
    if found is not None:
        return found
    if not key:
        return app.accounts.authenticate(key)  # refused, nothing read
    turns.serve_as(f"address {client[0] if client else ''}")
    return await anyio.to_thread.run_sync(
        app.accounts.authenticate, key, limiter=turns.fair(lane("key-lookups", 2))
    )


async def _app(request: Request) -> App:
    app = request.app.state.adjudge
    assert isinstance(app, App)
    return app


Use = Annotated[App, Depends(_app)]


async def _caller(
    request: Request,
    app: Use,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Account:
    account = getattr(request.state, "caller", None)  # checked before the body (KeyedRoute)
    if not isinstance(account, Account):
        account = await authenticate(
            app, creds.credentials if creds else None, request.scope.get("client")
        )
    # For the access log line (adjudge.service.access), which reads the request's state.
    request.state.account_id = account.id
    turns.serve_as(account.id)  # its threads in its turn
    return account


Caller = Annotated[Account, Depends(_caller)]
IdemKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=255,
        description="Retry safely: the same key and request get the stored answer.",
    ),
]


class KeyedRoute(StrictRoute):
    """A strict route that, when it takes a body, checks the caller's key before reading it:
    FastAPI reads and parses a body before it solves the dependencies (the caller among
    them), so a client with no key had its 4 MiB bodies parsed, a second of CPU each. Every
    route with a body needs a key (``tests/service/test_request_head.py``); the dependency
    then takes the account it found."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The strict handler, after the key is checked when a body will be read."""
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def keyed(request: Request) -> Response:
            app = request.app.state.adjudge
            assert isinstance(app, App)
            # Kept for the caller's dependency (the request's state is its scope's: the same
            # request's), which then does not look the key up again.
            request.state.caller = await authenticate(
                app, bearer(request.headers.get("authorization")), request.scope.get("client")
            )
            turns.serve_as(request.state.caller.id)
            if turns.large(request.scope["headers"], PARSE_ON_LOOP):
                async with turns.large_body(request.state.caller.id):
                    return await handler(request)
            return await handler(request)

        return keyed


def router() -> APIRouter:
    """A router under ``/api/v1`` whose bodies are parsed strictly, whose refusals are
    documented and whose answers are written by :class:`FastJSONResponse`."""
    return APIRouter(
        prefix="/api/v1",
        route_class=KeyedRoute,
        responses=RESPONSES,
        default_response_class=FastJSONResponse,
    )


def amount(value: object, code: str) -> int:
    """A positive whole number of minor units, from a decimal string or a JSON integer (a
    boolean, a number with a point or anything else is refused with ``code``)."""
    whole = isinstance(value, int | str) and not isinstance(value, bool)
    text = str(value) if whole else ""
    if (
        not 0 < len(text) <= 19
        or not text.isascii()
        or not text.isdigit()
        or not 0 < int(text) <= MAX_AMOUNT
    ):
        raise BadInput(
            "An amount is a positive whole number of minor units, as decimal digits "
            f"(at most {MAX_AMOUNT}).",
            code=code,
        )
    return int(text)


class FastJSONResponse(JSONResponse):
    """Starlette's JSON answer, its body written by :func:`adjudge.json_text.dumps_utf8`: the
    same JSON value and the same refusals as its ``json.dumps``, several times faster (a
    finalize's answer is about 3 KB). Every route's default, and each state change's answer."""

    def render(self, content: Any) -> bytes:
        """The body."""
        return json_text.dumps_utf8(content)


def reply(answer: Answer[Any], status: int = 200) -> JSONResponse:
    """A state change's answer, marked when it is a replay of the stored one."""
    headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
    return FastJSONResponse(answer.value, status_code=status, headers=headers)


async def checked(slow: bool, fn: Callable[[], T], owner: str, *, wait: float) -> T:
    """Run a use case that may check a result: on the request threads, or — when the check
    needs the regex worker pool — apart: at most :func:`owner_slow_checks` of ``owner``'s (the
    calling account's) and :func:`slow_checks` of everyone's at once, the others waiting their
    turn without a thread (``CHECKER_UNAVAILABLE`` after ``wait`` seconds: the setting
    ``slow_check_wait_seconds``). So
    catastrophic patterns occupy the pool, never the threads that every other request
    (``/health`` included) needs, and one account's flood queues behind itself, in front of
    the pool's own fair round, instead of in front of everyone."""
    if not slow:
        return await anyio.to_thread.run_sync(fn)
    mine = _owner_turns(owner)
    size = slow_checks()
    turns, threads = lane("slow-turns", size), lane("slow-threads", size)
    held: list[anyio.CapacityLimiter] = []
    try:
        try:
            with anyio.fail_after(wait):
                for limiter in (mine.limiter, turns):
                    await limiter.acquire()
                    held.append(limiter)
        except TimeoutError:
            raise Unavailable(
                "The service is busy with slow regex checks; nothing was judged. "
                "Try again shortly.",
                code="CHECKER_UNAVAILABLE",
            ) from None
        return await anyio.to_thread.run_sync(fn, limiter=threads)
    finally:
        for limiter in held:
            limiter.release()
        mine.done()


class _OwnerTurns:
    """One account's turns in the slow lane, kept only while someone uses them."""

    def __init__(self, owners: dict[str, _OwnerTurns], owner: str) -> None:
        self.owners, self.owner = owners, owner
        self.limiter = anyio.CapacityLimiter(owner_slow_checks())
        self.users = 0

    def done(self) -> None:
        self.users -= 1
        if not self.users:
            del self.owners[self.owner]


#: Each account's turns by event loop, like the lanes.
_OWNERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _OwnerTurns]] = (
    weakref.WeakKeyDictionary()
)


def _owner_turns(owner: str) -> _OwnerTurns:
    owners = _OWNERS.setdefault(asyncio.get_running_loop(), {})
    found = owners.get(owner)
    if found is None:
        found = owners[owner] = _OwnerTurns(owners, owner)
    found.users += 1
    return found
