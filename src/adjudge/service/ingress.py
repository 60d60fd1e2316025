"""The edge: every request body is parsed once, strictly, as I-JSON (RFC 7493), before anything
reads it.

Python's ``json`` accepts what no other party can read back: lone surrogates (``"\\ud800"``),
``NaN`` and ``Infinity``, duplicate keys (the last one silently wins), numbers too large for any
double, and NUL, which PostgreSQL cannot store. Stored, such a value breaks every later reader of
the row (a listing that cannot encode it). So a body is refused with ``400 INVALID_JSON`` and a
sentence naming the problem, before it reaches a use case:

- the bytes must be UTF-8 and one JSON text;
- no duplicate member names; no ``NaN``/``Infinity`` (and no float that overflows to one);
- integers within ±(2^53 − 1), where every JSON reader agrees on them (send larger amounts as
  strings, as the API's money fields take them);
- no lone surrogate and no NUL in any string or member name;
- nesting at most :data:`MAX_DEPTH` deep.

The body itself is capped before this, and before authentication, by :class:`BodyCap`
(``413 PAYLOAD_TOO_LARGE``).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.to_thread
from fastapi import Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adjudge.json_text import JSON_DEPTH
from adjudge.service import turns

#: The deepest nesting of arrays and objects a body may have.
MAX_DEPTH = JSON_DEPTH
#: The largest body parsed on the event loop itself (a task's result, a tool's arguments);
#: a larger one is parsed on a worker thread.
PARSE_ON_LOOP = 64 * 1024
#: I-JSON's interoperable integers: those a double holds exactly.
MAX_SAFE_INTEGER = 2**53 - 1
#: Where a string could hold a lone surrogate or a NUL: only an escape can put one there.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000)")
_BAD_CHAR = re.compile("[\ud800-\udfff\x00]")


class WireError(HTTPException):
    """A request the edge refuses before any use case sees it, with a stable code."""

    def __init__(self, status_code: int, code: str, message: str) -> None:
        super().__init__(status_code=status_code, detail=message)
        self.code = code


def _refuse(message: str) -> WireError:
    return WireError(400, "INVALID_JSON", f"The body is not I-JSON (RFC 7493): {message}")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _refuse(f"the member name {name!r} appears twice in one object.")
            seen.add(name)
    return found


def _constant(name: str) -> Any:
    raise _refuse(f"{name} is not a JSON number.")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _refuse(f"the number {text[:40]} is too large for a double.")
    return value


def _int(text: str) -> int:
    # Checked on the digits first: int() of a 5,000-digit literal is itself refused by Python.
    digits = len(text.lstrip("-"))
    if digits > 16 or abs(int(text)) > MAX_SAFE_INTEGER:
        raise _refuse(
            f"the integer {text[:40]}{'…' if len(text) > 40 else ''} is beyond ±(2^53 − 1); "
            "send it as a string."
        )
    return int(text)


def _walk(value: Any, strings: bool, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise _refuse(f"arrays and objects nest more than {MAX_DEPTH} deep.")
    if isinstance(value, dict):
        for name, item in value.items():
            if strings and _BAD_CHAR.search(name):
                raise _refuse(f"the member name {name!r} holds a lone surrogate or a NUL.")
            _walk(item, strings, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, strings, depth + 1)
    elif strings and isinstance(value, str) and _BAD_CHAR.search(value):
        raise _refuse("a string holds a lone surrogate or a NUL character.")


def parse(body: bytes) -> Any:
    """The body as JSON data, or :class:`WireError` ``INVALID_JSON`` (see the module)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(f"the bytes are not UTF-8 (at byte {exc.start}).") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except json.JSONDecodeError as exc:
        raise _refuse(f"{exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    except RecursionError:
        raise _refuse(f"arrays and objects nest more than {MAX_DEPTH} deep.") from None
    _walk(value, strings=_SUSPECT_ESCAPE.search(text) is not None)
    return value


class StrictRequest(Request):
    """A request whose :meth:`json` is :func:`parse`."""

    async def json(self) -> Any:
        """The body, parsed strictly once: a large one on a worker thread, so the event loop
        answers other requests meanwhile (a 4 MiB body of nested arrays takes about a second
        to parse and walk): :func:`parse_async`."""
        if not hasattr(self, "_json"):
            self._json = await parse_async(await self.body())
        return self._json


async def parse_async(body: bytes) -> Any:
    """:func:`parse`, on a worker thread for a body over :data:`PARSE_ON_LOOP` (every door's
    large body: the routes' and MCP's)."""
    if len(body) > PARSE_ON_LOOP:
        return await anyio.to_thread.run_sync(parse, body, limiter=_parsers())
    return parse(body)


#: The large bodies parsed at once, by event loop: a lane of their own, so bodies sent by the
#: many never take the threads the routes run on (parsing holds the interpreter: more at once
#: would only share it).
_PARSERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def _parsers() -> anyio.CapacityLimiter:
    loop = asyncio.get_running_loop()
    found = _PARSERS.get(loop)
    if found is None:
        # Taken in turn by account, one of the two at most each (turns.fair): one account's
        # stream of 4 MiB bodies held both, and every other account's large body waited
        # behind all of them.
        found = _PARSERS[loop] = turns.fair(anyio.CapacityLimiter(2))
    return found


class StrictRoute(APIRoute):
    """A route whose body is parsed by :func:`parse` (FastAPI reads it via ``request.json``),
    and whose path and query hold no NUL."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The route's handler, given a :class:`StrictRequest`."""
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            # A NUL in a path or query parameter can reach no record (PostgreSQL cannot even
            # compare one), so it is refused here rather than failing in the database.
            if "\x00" in request.scope["path"] or "%00" in request.scope["query_string"].decode(
                "latin-1"
            ):
                raise WireError(400, "INVALID_REQUEST", "A path or query holds a NUL character.")
            return await handler(StrictRequest(request.scope, request.receive))

        return strict


class _TooLarge(Exception):
    pass


class BodyCap:
    """Refuses a request body over ``limit`` bytes with ``413 PAYLOAD_TOO_LARGE``, reading at
    most ``limit`` bytes of it: by its ``Content-Length`` at once, or as it streams in; and a
    compressed one with ``415 CONTENT_ENCODING_UNSUPPORTED`` (it was read as its compressed
    bytes, and refused as JSON that is not UTF-8, which said nothing of the cause; a body is
    never inflated here, where a small one could grow past every bound).

    Starlette has the same limit, but it answers in plain text; every refusal of this service
    answers in its one error shape, so the few lines are written here.
    """

    def __init__(self, inner: ASGIApp, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        encoding, body = None, False
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                if not value.isdigit() or int(value) > self.limit:
                    await self._refuse(scope, receive, send)
                    return
                body = body or int(value) > 0
            elif name == b"transfer-encoding":
                body = True
            elif name == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
                encoding = value
        if encoding is not None and body:
            message = (
                "A request body is read as it is sent: send it uncompressed, with no "
                f"Content-Encoding (this one says {encoding[:40].decode('latin-1')!r})."
            )
            await self._reply(scope, receive, send, 415, "CONTENT_ENCODING_UNSUPPORTED", message)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.inner(scope, counted, tracked)
        except _TooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"A request body is at most {self.limit} bytes; nothing was read."
        await self._reply(scope, receive, send, 413, "PAYLOAD_TOO_LARGE", message)

    async def _reply(
        self, scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str
    ) -> None:
        """A refusal, and the connection closed (the body is left unread)."""
        response = JSONResponse(
            self.shape(code, message), status_code=status, headers={"Connection": "close"}
        )
        await response(scope, receive, send)

    def shape(self, code: str, message: str) -> dict[str, Any]:
        """A refusal's body (the service's adds its request id)."""
        return {"error": {"code": code, "message": message}}
