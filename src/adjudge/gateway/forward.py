"""The provider round trip: send a signed request, bounded, and classify what came back.

:meth:`AsyncForwarder.forward` (and the sync :meth:`Forwarder.forward`, which runs the same on
its own event-loop thread) sends a :class:`~adjudge.gateway.signing.SignedRequest` exactly as it
was signed and never raises on anything a provider does. The outcome is either

- a :class:`ProviderAnswer` — a 2xx with its status, headers, body bytes and elapsed time; or
- a :class:`ForwardFailure` of a :class:`FailureKind`: ``connect``, ``timeout``, ``too_large``,
  ``redirect``, ``provider_5xx``, ``provider_4xx``, ``signature_refused`` (the middleware's 401
  ``invalid_assay_signature``, with its ``reason``), ``protocol`` (not HTTP), ``disconnected``
  (closed or reset before a whole answer), ``address_refused`` (the host is, or resolves to, an
  address that is not public) — the provider's side, *request errors* — or ``system`` (the
  gateway's own: a request it could not send as signed, its connection pool exhausted).

Connections are opened by the forwarder's :class:`~adjudge.gateway.addresses.AddressGuard`: the
host is resolved once, every address it has is vetted, and the connection goes to one of those
addresses, the request keeping its ``Host`` and TLS its server name (a name that answers a public
address first and an internal one later is refused, or served by the address that was vetted).

Bounds (:class:`ForwardLimits`): connect, read and write time-outs per operation and one total
deadline over the whole exchange (a slow drip that keeps every read under the read time-out is
still cut at the deadline); redirects are never followed (a 3xx is a failure: a signed request
must not be replayed elsewhere, and a bearer credential must not travel); the response is
streamed and reading stops past ``max_response_bytes`` (a declared ``Content-Length`` over the
cap is refused before reading). The gateway asks for ``identity`` encoding; a compressed answer
is still accepted (gzip, deflate) and its *decoded* size is capped the same way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import threading
import time
import zlib
from collections.abc import Coroutine
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import httpx

from adjudge.calls.tools import BuiltRequest
from adjudge.calls.verify import ProviderResponse, received_response
from adjudge.gateway.addresses import AddressGuard, AddressRefused, pinned_transport
from adjudge.gateway.sealed import ProviderCredential
from adjudge.gateway.signing import SignedRequest

__all__ = [
    "AsyncForwarder",
    "FailureKind",
    "ForwardFailure",
    "ForwardLimits",
    "Forwarder",
    "Outcome",
    "ProviderAnswer",
    "provider_response",
]

USER_AGENT = "adjudge-gateway/0.1"
_T = TypeVar("_T")


class FailureKind(StrEnum):
    """Why a forwarded call produced no answer to verify."""

    CONNECT = "connect"  # no connection: refused, unreachable, DNS, TLS, connect time-out
    TIMEOUT = "timeout"  # connected, but no whole answer in time (read, write or total)
    TOO_LARGE = "too_large"  # the answer exceeded the size cap
    REDIRECT = "redirect"  # a 3xx: never followed
    PROVIDER_5XX = "provider_5xx"
    PROVIDER_4XX = "provider_4xx"
    SIGNATURE_REFUSED = "signature_refused"  # the middleware's 401 invalid_assay_signature
    PROTOCOL = "protocol"  # not valid HTTP (garbage, bad framing, an encoding we cannot read)
    DISCONNECTED = "disconnected"  # closed or reset before a whole answer
    ADDRESS_REFUSED = "address_refused"  # the host is, or resolves to, a non-public address
    SYSTEM = "system"  # the gateway's own failure, not the provider's

    @property
    def category(self) -> str:
        """``system_error`` for the gateway's own failure, else ``request_error``."""
        return "system_error" if self is FailureKind.SYSTEM else "request_error"


@dataclass(frozen=True)
class ForwardLimits:
    """Bounds on one provider round trip (seconds, bytes)."""

    connect_timeout: float = 3.0
    read_timeout: float = 10.0
    write_timeout: float = 10.0
    total_timeout: float = 15.0
    max_response_bytes: int = 4 * 1024 * 1024
    max_connections: int = 100

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "read_timeout", "write_timeout", "total_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.max_response_bytes < 1 or self.max_connections < 1:
            raise ValueError("max_response_bytes and max_connections must be positive")


@dataclass(frozen=True)
class ProviderAnswer:
    """A 2xx answer: status, headers (lowercase names), the body bytes, seconds elapsed."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    elapsed: float

    ok = True

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the body as received: the evidence digest of the call."""
        return "sha256:" + hashlib.sha256(self.body).hexdigest()

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k == name), None)


@dataclass(frozen=True)
class ForwardFailure:
    """No answer to verify: the kind, a sentence, and what is known (status, reason, bytes)."""

    kind: FailureKind
    message: str
    elapsed: float
    status: int | None = None
    reason: str | None = None  # the signature refusal's reason (MISSING … REPLAYED)
    body: bytes = b""  # what came back, if anything (capped), for the record
    retryable: bool = False

    ok = False

    @property
    def category(self) -> str:
        return self.kind.category


Outcome = ProviderAnswer | ForwardFailure

_RETRYABLE_STATUS = frozenset({408, 429, 502, 503, 504})
# What a failure record keeps of a refused answer's body.
_FAILURE_BODY_BYTES = 4096


class _TooLarge(Exception):
    pass


def _decode(raw: bytes, encoding: str, cap: int) -> bytes:
    """A gzip/deflate body decoded with its output capped; identity returned as is."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding in ("gzip", "x-gzip", "deflate"):
        # gzip: wbits 31; HTTP "deflate" is zlib-wrapped (15) but some servers send it raw (-15).
        for wbits in (31,) if encoding != "deflate" else (15, -15):
            try:
                d = zlib.decompressobj(wbits)
                out = d.decompress(raw, cap + 1)
                if len(out) > cap or d.unconsumed_tail:
                    raise _TooLarge
                out += d.flush()
                if len(out) > cap:
                    raise _TooLarge
                if not d.eof:
                    raise zlib.error("truncated")
                return out
            except zlib.error:
                continue
        raise ValueError(f"the {encoding} body does not decode")
    raise ValueError(f"the answer is encoded as {encoding!r}, which the gateway does not read")


class AsyncForwarder:
    """Forwards signed requests over one pooled HTTP/1.1 client (asyncio).

    Use ``async with AsyncForwarder(limits) as f: outcome = await f.forward(signed)``. The
    client never reads proxy settings or credentials from the environment. ``guard`` opens its
    connections (by default one that connects to public addresses only; tests and the demo give
    ``AddressGuard(allow_private=True)``); a ``transport`` given replaces the pinned one and
    does its own connecting.
    """

    def __init__(
        self,
        limits: ForwardLimits | None = None,
        *,
        guard: AddressGuard | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.limits = limits or ForwardLimits()
        lim = self.limits
        self.guard = guard or AddressGuard()
        self._user_agent = user_agent
        pool = httpx.Limits(
            max_connections=lim.max_connections, max_keepalive_connections=lim.max_connections
        )
        self._client = httpx.AsyncClient(
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(
                connect=lim.connect_timeout,
                read=lim.read_timeout,
                write=lim.write_timeout,
                pool=lim.connect_timeout,
            ),
            limits=pool,
            transport=transport or pinned_transport(self.guard, pool),
        )

    async def __aenter__(self) -> AsyncForwarder:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def refusal(self, url: str) -> ForwardFailure | None:
        """Why a connection to ``url``'s host would be refused — ``address_refused``, or
        ``connect`` when the name does not resolve — or None: the connect-time check, ahead of
        a call (its answer may change by then; the check when connecting is the one that holds).
        """
        start = time.perf_counter()
        host = url
        try:
            target = httpx.URL(url)
            host = target.raw_host.decode("ascii")
            port = target.port or (443 if target.scheme == "https" else 80)
            async with asyncio.timeout(self.limits.connect_timeout):
                await self.guard.addresses(host, port)
        except AddressRefused as exc:
            return ForwardFailure(
                FailureKind.ADDRESS_REFUSED, str(exc), time.perf_counter() - start
            )
        except (OSError, TimeoutError, UnicodeError, httpx.InvalidURL) as exc:
            return ForwardFailure(
                FailureKind.CONNECT,
                f"could not resolve {host}: {exc or type(exc).__name__}",
                time.perf_counter() - start,
                retryable=True,
            )
        return None

    async def forward(
        self,
        request: SignedRequest | BuiltRequest,
        *,
        credential: ProviderCredential | None = None,
    ) -> Outcome:
        """Send ``request`` (with ``credential``'s header, if given) and classify the outcome.

        Never raises for anything the provider or the network does; a failure of the gateway's
        own is a ``system`` failure. Cancelling the caller cancels the exchange.
        """
        start = time.perf_counter()
        try:
            async with asyncio.timeout(self.limits.total_timeout):
                return await self._exchange(request, credential, start)
        except TimeoutError:
            return ForwardFailure(
                FailureKind.TIMEOUT,
                f"no whole answer within {self.limits.total_timeout:g} s",
                time.perf_counter() - start,
                retryable=True,
            )
        except Exception as exc:  # never raise on provider behaviour: anything left is ours
            return ForwardFailure(
                FailureKind.SYSTEM, f"the gateway failed: {exc!r}", time.perf_counter() - start
            )

    async def _exchange(
        self,
        request: SignedRequest | BuiltRequest,
        credential: ProviderCredential | None,
        start: float,
    ) -> Outcome:
        def failed(kind: FailureKind, message: str, **extra: Any) -> ForwardFailure:
            return ForwardFailure(kind, message, time.perf_counter() - start, **extra)

        # (1) The request exactly as signed: the URL httpx will send must be the signed target.
        url = httpx.URL(request.url)
        target = request.url[request.url.index("/", request.url.index("://") + 3) :]
        if url.raw_path != target.encode("ascii"):
            return failed(FailureKind.SYSTEM, "the URL would not be sent as it was signed")
        headers = [(k, v) for k, v in request.headers]
        if credential is not None:
            headers = [(k, v) for k, v in headers if k != credential.header.lower()]
            headers.append((credential.header.lower(), credential.secret))
        headers.append(("accept-encoding", "identity"))
        headers.append(("user-agent", self._user_agent))
        built = self._client.build_request(
            request.method, url, headers=headers, content=request.body
        )

        # (2) The exchange, each error of the transport given its kind.
        cap = self.limits.max_response_bytes
        try:
            response = await self._client.send(built, stream=True)
            try:
                status = response.status_code
                answer_headers = tuple((k.lower(), v) for k, v in response.headers.multi_items())
                declared = response.headers.get("content-length", "").strip()
                if declared.isdigit() and int(declared) > cap:
                    return failed(
                        FailureKind.TOO_LARGE,
                        f"the answer declares {declared} bytes, over the cap of {cap}",
                        status=status,
                    )
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_raw():
                    size += len(chunk)
                    if size > cap:
                        return failed(
                            FailureKind.TOO_LARGE,
                            f"the answer exceeded the cap of {cap} bytes",
                            status=status,
                        )
                    chunks.append(chunk)
                raw = b"".join(chunks)
            finally:
                await response.aclose()
        except AddressRefused as exc:  # raised by the guard as it connects, through httpx
            return failed(FailureKind.ADDRESS_REFUSED, str(exc))
        except httpx.ConnectTimeout:
            return failed(
                FailureKind.CONNECT, "no connection within the connect time-out", retryable=True
            )
        except httpx.PoolTimeout:
            return failed(
                FailureKind.SYSTEM, "the gateway's connection pool is exhausted", retryable=True
            )
        except httpx.TimeoutException as exc:
            return failed(
                FailureKind.TIMEOUT,
                f"the provider went silent ({type(exc).__name__})",
                retryable=True,
            )
        except httpx.ConnectError as exc:
            return failed(FailureKind.CONNECT, f"could not connect: {exc}", retryable=True)
        except (httpx.ReadError, httpx.WriteError, httpx.CloseError) as exc:
            return failed(
                FailureKind.DISCONNECTED, f"the connection broke: {exc or type(exc).__name__}"
            )
        except httpx.RemoteProtocolError as exc:
            text = str(exc)
            # httpcore says so in words when the peer closed early (before or mid-answer).
            if "disconnected" in text or "closed connection" in text:
                return failed(FailureKind.DISCONNECTED, f"the provider hung up: {text}")
            return failed(FailureKind.PROTOCOL, f"the answer is not valid HTTP: {text}")
        except (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.LocalProtocolError) as exc:
            return failed(FailureKind.SYSTEM, f"the request could not be sent: {exc}")
        except httpx.HTTPError as exc:
            return failed(FailureKind.PROTOCOL, f"the exchange failed: {exc!r}")

        # (3) The answer, classified.
        try:
            body = _decode(raw, response.headers.get("content-encoding", ""), cap)
        except _TooLarge:
            return failed(
                FailureKind.TOO_LARGE, f"the decoded answer exceeds {cap} bytes", status=status
            )
        except ValueError as exc:
            return failed(FailureKind.PROTOCOL, str(exc), status=status)
        return _classify(status, answer_headers, body, time.perf_counter() - start)


def _classify(
    status: int, headers: tuple[tuple[str, str], ...], body: bytes, elapsed: float
) -> Outcome:
    if 200 <= status < 300:
        return ProviderAnswer(status, headers, body, elapsed)
    kept = body[:_FAILURE_BODY_BYTES]
    if 300 <= status < 400:
        location = next((v for k, v in headers if k == "location"), "")
        return ForwardFailure(
            FailureKind.REDIRECT,
            f"the provider redirected ({status}{' to ' + location if location else ''}); "
            "redirects are not followed",
            elapsed,
            status=status,
            body=kept,
        )
    refusal = _refusal(body)
    if status == 401 and refusal is not None and refusal[0] == "invalid_assay_signature":
        return ForwardFailure(
            FailureKind.SIGNATURE_REFUSED,
            f"the provider refused the gateway's signature ({refusal[1] or 'no reason given'})",
            elapsed,
            status=status,
            reason=refusal[1],
            body=kept,
        )
    if 400 <= status < 500:
        return ForwardFailure(
            FailureKind.PROVIDER_4XX,
            f"the provider refused the request with HTTP {status}",
            elapsed,
            status=status,
            reason=refusal[0] if refusal is not None else None,
            body=kept,
            retryable=status in _RETRYABLE_STATUS,
        )
    if 500 <= status < 600:
        return ForwardFailure(
            FailureKind.PROVIDER_5XX,
            f"the provider failed with HTTP {status}",
            elapsed,
            status=status,
            body=kept,
            retryable=status in _RETRYABLE_STATUS,
        )
    return ForwardFailure(
        FailureKind.PROTOCOL, f"the provider answered with status {status}", elapsed, status=status
    )


def _refusal(body: bytes) -> tuple[str, str | None] | None:
    """``(error, reason)`` of a JSON refusal body such as the middleware's, else ``None``."""
    if len(body) > _FAILURE_BODY_BYTES:
        return None
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("error"), str):
        return None
    reason = data.get("reason")
    return data["error"], reason if isinstance(reason, str) else None


class Forwarder:
    """The sync face of :class:`AsyncForwarder`: its own event loop on a daemon thread.

    Safe to call from many threads at once (each call is one task on the loop; the pool is
    shared). ``close()`` (or ``with``) stops the loop and closes the connections.
    """

    def __init__(
        self,
        limits: ForwardLimits | None = None,
        *,
        guard: AddressGuard | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.limits = limits or ForwardLimits()
        self._config = (guard, transport, user_agent)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="adjudge-forwarder", daemon=True
        )
        self._thread.start()

        async def make() -> AsyncForwarder:
            return AsyncForwarder(
                self.limits, guard=guard, transport=transport, user_agent=user_agent
            )

        self._async = self._run(make())
        self._closed = False

    def _run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __enter__(self) -> Forwarder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def forward(
        self,
        request: SignedRequest | BuiltRequest,
        *,
        credential: ProviderCredential | None = None,
    ) -> Outcome:
        """:meth:`AsyncForwarder.forward`, waited for on the calling thread."""
        future = asyncio.run_coroutine_threadsafe(
            self._async.forward(request, credential=credential), self._loop
        )
        try:
            # The async side enforces the total deadline; this bound only guards a stuck loop.
            return future.result(timeout=self.limits.total_timeout + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return ForwardFailure(FailureKind.SYSTEM, "the forwarder's loop did not answer", 0.0)

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coro`` on this forwarder's loop and wait for it on the calling thread: a sync
        caller's way into code written for an event loop (it forwards with
        :meth:`spawn`'s forwarder for that loop, which for this loop is this one's own)."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def spawn(self) -> AsyncForwarder:
        """A forwarder for the running event loop with this one's bounds, guard and client:
        this one's own on its own loop, a new one (its own connection pool) on any other."""
        if asyncio.get_running_loop() is self._loop:
            return self._async
        guard, transport, user_agent = self._config
        return AsyncForwarder(self.limits, guard=guard, transport=transport, user_agent=user_agent)

    def refusal(self, url: str) -> ForwardFailure | None:
        """:meth:`AsyncForwarder.refusal`, waited for on the calling thread."""
        future = asyncio.run_coroutine_threadsafe(self._async.refusal(url), self._loop)
        try:
            return future.result(timeout=self.limits.connect_timeout + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return None  # a stuck loop is not the provider's refusal: the call will say so

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._run(self._async.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


def provider_response(outcome: Outcome) -> ProviderResponse:
    """The outcome as the call verifier's input (:class:`adjudge.calls.ProviderResponse`).

    An answer's body is its JSON; a body that is not JSON (garbage, HTML, empty) is passed as
    its text, so the contract judges it (it cannot fit an output schema that expects JSON
    structure). The digest is always of the bytes received. A failure becomes a request error
    (or a system error) whose code is ``GATEWAY_<KIND>`` (and the refusal's reason).
    """
    if isinstance(outcome, ProviderAnswer):
        return received_response(outcome.body)
    code = "GATEWAY_" + outcome.kind.value.upper()
    if outcome.reason:
        code += ":" + outcome.reason
    return ProviderResponse(status=outcome.category, error_code=code, error_message=outcome.message)
