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

The client is aiohttp's (pooled HTTP/1.1 keep-alive connections on the event loop, one client
per loop): it sends the signed URL as it is (``yarl.URL(url, encoded=True)``), each request once
(never resent on a broken connection: the provider would see its nonce twice), and keeps no
cookies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import ssl
import threading
import time
import zlib
from collections.abc import Coroutine
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple, TypeVar
from urllib.parse import quote

import aiohttp
import aiohttp.abc
from yarl import URL

from adjudge.calls.tools import BuiltRequest
from adjudge.calls.verify import ProviderResponse, received_response
from adjudge.digests import sha256_digest
from adjudge.gateway.addresses import AddressGuard, AddressRefused, pinned_connector
from adjudge.gateway.sealed import ProviderCredential
from adjudge.gateway.signing import SignedRequest
from adjudge.json_text import deeper_than, json_text

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
    #: The most of them one provider's calls hold at once (its calls past it wait, as for the
    #: pool): the rest of the pool is always the other providers'.
    max_per_provider: int = 50
    #: The most calls one caller has in flight at once in a process; one more is refused
    #: before anything is reserved (the gateway's use case counts them: the forwarder does not
    #: know the caller). Half a provider's share: one caller never holds every place a
    #: provider's callers share, nor, calling two providers, the whole pool.
    max_per_caller: int = 25

    def __post_init__(self) -> None:
        for name in ("connect_timeout", "read_timeout", "write_timeout", "total_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        counts = ("max_response_bytes", "max_connections", "max_per_provider", "max_per_caller")
        if any(getattr(self, name) < 1 for name in counts):
            raise ValueError(", ".join(counts) + " must be positive")


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
        return sha256_digest(self.body)

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
#: The most characters of a redirect's ``Location`` a failure's message quotes.
_LOCATION_SHOWN = 200
#: What of a ``Location`` is quoted as it is: the characters a URL writes plainly (RFC 3986's
#: unreserved and delimiters, and ``%`` of its escapes). Every other one, a control character,
#: a space, a quote, a character past ASCII (one that turns text right to left too), is
#: percent-encoded as its UTF-8 bytes, as a browser writes it.
_LOCATION_SAFE = ":/?#[]@!$&'()*+,;=%"


def _quoted_location(location: str) -> str:
    """A provider's ``Location`` as a failure's message may quote it: at most
    :data:`_LOCATION_SHOWN` characters of printable ASCII, and said to be cut when it was (the
    header is the provider's to write, up to 8 KB, control characters and all, and the message
    reaches the caller and the call's record)."""
    quoted = quote(location[:_LOCATION_SHOWN], safe=_LOCATION_SAFE, errors="backslashreplace")
    if len(location) <= _LOCATION_SHOWN and len(quoted) <= _LOCATION_SHOWN:
        return quoted
    shown = quoted[:_LOCATION_SHOWN]
    half = shown.find("%", len(shown) - 2)  # an escape cut in two is left out whole
    shown = shown if half == -1 else shown[:half]
    return f"{shown}... [cut from {len(location)} characters]"


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


class _BoundedBody(aiohttp.BytesPayload):
    """The request body, its writing cut at the write time-out: a provider that stops reading a
    request mid-way is a time-out, not a connection held open until the total deadline."""

    def __init__(self, body: bytes, limits: ForwardLimits) -> None:
        super().__init__(body, content_type="application/octet-stream")
        self._write_timeout = limits.write_timeout

    async def write_with_length(
        self, writer: aiohttp.abc.AbstractStreamWriter, content_length: int | None
    ) -> None:
        try:
            async with asyncio.timeout(self._write_timeout):
                await super().write_with_length(writer, content_length)
        except TimeoutError:
            # A TimeoutError with no errno is passed on by aiohttp as it is, to the caller.
            raise _WriteTimeout from None


class _WriteTimeout(TimeoutError):
    pass


def _text(value: bytes) -> str:
    """A header's bytes as text: ASCII or UTF-8 when they are, else Latin-1 (never lossy)."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


class AsyncForwarder:
    """Forwards signed requests over one pooled HTTP/1.1 client (aiohttp, asyncio).

    Use ``async with AsyncForwarder(limits) as f: outcome = await f.forward(signed)``. The
    client never reads proxy settings or credentials from the environment and keeps no cookies.
    ``guard`` opens its connections (by default one that connects to public addresses only;
    tests and the demo give ``AddressGuard(allow_private=True)``); ``verify`` is the TLS context
    (the certifi roots by default). The client is made on first use, on the running event loop:
    a forwarder belongs to the loop it first forwarded on.
    """

    def __init__(
        self,
        limits: ForwardLimits | None = None,
        *,
        guard: AddressGuard | None = None,
        verify: ssl.SSLContext | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.limits = limits or ForwardLimits()
        lim = self.limits
        self.guard = guard or AddressGuard()
        self._verify = verify
        self._user_agent = user_agent
        # The connect time-out covers the resolution and every address tried; the read time-out
        # each wait for bytes once the request is written; the total deadline is forward()'s.
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=lim.connect_timeout, sock_read=lim.read_timeout
        )
        # The pool's bound, waited for here so that a full pool is told from a slow connect;
        # and each provider's share of it (one provider whose answers come just inside the
        # time-outs, called at once by its own caller at no price, held every connection and
        # every other provider's calls were voided, "the pool is exhausted").
        self._slots = asyncio.Semaphore(lim.max_connections)
        self._shares: dict[str, _Share] = {}
        self._client: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> AsyncForwarder:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    def _session(self) -> aiohttp.ClientSession:
        if self._client is None:
            connector = pinned_connector(
                self.guard, max_connections=self.limits.max_connections, verify=self._verify
            )
            self._client = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                auto_decompress=False,  # decoded here, its size capped
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=("Content-Type",),  # only what was signed
            )
            # A signed request is sent once: aiohttp would resend an idempotent one whose
            # connection broke, and a provider that saw the first would see its nonce twice.
            self._client._retry_connection = False
        return self._client

    async def refusal(self, url: str) -> ForwardFailure | None:
        """Why a connection to ``url``'s host would be refused — ``address_refused``, or
        ``connect`` when the name does not resolve — or None: the connect-time check, ahead of
        a call (its answer may change by then; the check when connecting is the one that holds).
        """
        start = time.perf_counter()
        host = url
        try:
            target = URL(url, encoded=True)
            host = target.raw_host or ""
            port = target.port or (443 if target.scheme == "https" else 80)
            async with asyncio.timeout(self.limits.connect_timeout):
                await self.guard.addresses(host, port)
        except AddressRefused:
            return ForwardFailure(
                FailureKind.ADDRESS_REFUSED, _NOT_PUBLIC, time.perf_counter() - start
            )
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            return ForwardFailure(
                FailureKind.CONNECT,
                f"could not resolve the provider's host: {_why(exc)}",
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

        # (1) The request exactly as signed: the target sent is the signed one, byte for byte.
        url = URL(request.url, encoded=True)
        target = request.url[request.url.index("/", request.url.index("://") + 3) :]
        if url.raw_path_qs != target or not target.isascii():
            return failed(FailureKind.SYSTEM, "the URL would not be sent as it was signed")
        headers = [(k, v) for k, v in request.headers]
        if credential is not None:
            headers = [(k, v) for k, v in headers if k != credential.header.lower()]
            headers.append((credential.header.lower(), credential.secret))
        headers.append(("accept-encoding", "identity"))
        headers.append(("user-agent", self._user_agent))
        body = None if request.body is None else _BoundedBody(request.body, self.limits)

        # (2) A place among the provider's share of the pool and in the pool, then the
        # exchange, each error of the client given its kind.
        share = self._share_of(request)
        try:
            if share is not None and not await self._place(share.slots):
                full = "the provider's share of the gateway's connections is in use"
                return failed(FailureKind.SYSTEM, full, retryable=True)
            try:
                received = await self._exchanged(request.method, url, headers, body)
            finally:
                if share is not None:
                    share.slots.release()
        finally:
            if share is not None:
                self._leave(share)
        if isinstance(received, _Unsent):
            return failed(received.kind, received.message, retryable=received.retryable)
        if isinstance(received, _TooLargeAnswer):
            return failed(FailureKind.TOO_LARGE, received.message, status=received.status)

        # (3) The answer, classified.
        status, answer_headers, raw, encoding = received
        cap = self.limits.max_response_bytes
        try:
            decoded = _decode(raw, encoding, cap)
        except _TooLarge:
            return failed(
                FailureKind.TOO_LARGE, f"the decoded answer exceeds {cap} bytes", status=status
            )
        except ValueError as exc:
            return failed(FailureKind.PROTOCOL, str(exc), status=status)
        return _classify(status, answer_headers, decoded, time.perf_counter() - start)

    def _share_of(self, request: SignedRequest | BuiltRequest) -> _Share | None:
        """The share of the pool of the provider a signed request goes to, counted as used
        until :meth:`_leave` (None for a request no provider signs for, a webhook's, or when
        a share is the whole pool). A share is kept while a call uses or waits for it, so
        the shares are at most the providers called at once, however many hosts were seen."""
        lim = self.limits
        if not isinstance(request, SignedRequest) or lim.max_per_provider >= lim.max_connections:
            return None
        share = self._shares.get(request.provider)
        if share is None:
            share = self._shares[request.provider] = _Share(
                request.provider, asyncio.Semaphore(lim.max_per_provider)
            )
        share.users += 1
        return share

    def _leave(self, share: _Share) -> None:
        share.users -= 1
        if share.users == 0:
            del self._shares[share.provider]

    async def _exchanged(
        self, method: str, url: URL, headers: list[tuple[str, str]], body: _BoundedBody | None
    ) -> _Received | _TooLargeAnswer | _Unsent:
        """The exchange in a place of the pool, or why there was none: a full pool, or the
        client's error."""
        if not await self._place(self._slots):
            return _Unsent(FailureKind.SYSTEM, "the gateway's connection pool is exhausted", True)
        try:
            return await self._send(method, url, headers, body)
        except Exception as exc:
            known = _failure(exc, url.raw_host or "")
            if known is None:
                raise
            return _Unsent(*known)
        finally:
            self._slots.release()

    async def _place(self, slots: asyncio.Semaphore) -> bool:
        """Take one of ``slots``, waiting at most the connect time-out when none is free (so a
        full pool is told from a slow connect); False if none came."""
        if not slots.locked():
            await slots.acquire()
            return True
        try:
            async with asyncio.timeout(self.limits.connect_timeout):
                await slots.acquire()
        except TimeoutError:
            return False
        return True

    async def _send(
        self, method: str, url: URL, headers: list[tuple[str, str]], body: _BoundedBody | None
    ) -> _Received | _TooLargeAnswer:
        """The exchange: the status, headers, raw body and its encoding, read up to the cap."""
        cap = self.limits.max_response_bytes
        response = await self._session().request(
            method, url, headers=headers, data=body, allow_redirects=False
        )
        whole = False
        try:
            status = response.status
            declared = response.headers.get("content-length", "").strip()
            if declared.isdigit() and int(declared) > cap:
                return _TooLargeAnswer(
                    status, f"the answer declares {declared} bytes, over the cap of {cap}"
                )
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.content.iter_any():
                size += len(chunk)
                if size > cap:
                    return _TooLargeAnswer(status, f"the answer exceeded the cap of {cap} bytes")
                chunks.append(chunk)
            whole = True
        finally:
            # A whole answer's connection goes back to the pool; any other is closed.
            if whole:
                response.release()
            else:
                response.close()
        answer_headers = tuple((_text(k).lower(), _text(v)) for k, v in response.raw_headers)
        encoding = response.headers.get("content-encoding", "")
        return status, answer_headers, b"".join(chunks), encoding


_Received = tuple[int, tuple[tuple[str, str], ...], bytes, str]


@dataclass
class _Share:
    """One provider's share of the pool: its places, and the calls holding or waiting for one."""

    provider: str
    slots: asyncio.Semaphore
    users: int = 0


class _Unsent(NamedTuple):
    """An exchange that did not happen or broke: its failure's kind, message, and whether
    trying again may help."""

    kind: FailureKind
    message: str
    retryable: bool


#: Why a call to an address the guard refused failed, as the caller reads it: never where (the
#: provider's address is for the provider and admins, docs/gateway.md).
_NOT_PUBLIC = "the provider's endpoint is not a public address"


def _why(exc: BaseException) -> str:
    """What went wrong with a connection, without where: the system's words for it (``Connection
    refused``), which name no host, or the error's kind."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__


@dataclass(frozen=True)
class _TooLargeAnswer:
    status: int
    message: str


def _failure(exc: Exception, host: str) -> tuple[FailureKind, str, bool] | None:
    """What an exception of the exchange means — ``(kind, message, retryable)`` — or None for
    one that is the gateway's own bug (it is raised on, to become a ``system`` failure)."""
    match exc:
        case AddressRefused():  # raised by the guard as it connects, through aiohttp
            return FailureKind.ADDRESS_REFUSED, _NOT_PUBLIC, False
        case aiohttp.ConnectionTimeoutError():
            return FailureKind.CONNECT, "no connection within the connect time-out", True
        case _WriteTimeout():
            return FailureKind.TIMEOUT, "the provider stopped reading the request", True
        case aiohttp.ServerTimeoutError():
            return FailureKind.TIMEOUT, f"the provider went silent ({type(exc).__name__})", True
        case aiohttp.ClientConnectorDNSError():
            return (
                FailureKind.CONNECT,
                f"could not resolve the provider's host: {_why(exc.os_error)}",
                True,
            )
        case aiohttp.ClientSSLError():  # its words name the host a certificate is for
            return FailureKind.CONNECT, "the provider's TLS certificate does not verify", True
        case aiohttp.ClientConnectorError():
            return FailureKind.CONNECT, f"could not connect: {_why(exc.os_error)}", True
        case aiohttp.ServerDisconnectedError() | aiohttp.ClientConnectionResetError():
            return FailureKind.DISCONNECTED, f"the provider hung up ({type(exc).__name__})", False
        case aiohttp.ClientOSError():
            return FailureKind.DISCONNECTED, f"the connection broke: {_why(exc)}", False
        # aiohttp's words quote the bytes it could not parse (up to a line of 8 KB: a refused
        # call's data, or any text a provider likes), and the caller reads the message: only
        # what kind of failure it was is said.
        case aiohttp.ClientPayloadError() if "not completed" in str(exc):
            # aiohttp says so in words when the peer closed before the whole body.
            return FailureKind.DISCONNECTED, "the provider hung up before the whole body", False
        case aiohttp.ClientPayloadError():
            return FailureKind.PROTOCOL, "the answer's body is not valid HTTP", False
        case aiohttp.ClientResponseError():
            return FailureKind.PROTOCOL, "the answer is not valid HTTP", False
        case aiohttp.InvalidURL() | ValueError():  # its words may quote the provider's URL
            why = type(exc).__name__
            return FailureKind.SYSTEM, f"the request could not be sent ({why})", False
        case aiohttp.ClientError():
            return FailureKind.PROTOCOL, f"the exchange failed ({type(exc).__name__})", False
    return None


def _classify(
    status: int, headers: tuple[tuple[str, str], ...], body: bytes, elapsed: float
) -> Outcome:
    if 200 <= status < 300:
        return ProviderAnswer(status, headers, body, elapsed)
    kept = body[:_FAILURE_BODY_BYTES]
    if 300 <= status < 400:
        location = next((v for k, v in headers if k == "location"), "")
        where = f" to {_quoted_location(location)}" if location else ""
        return ForwardFailure(
            FailureKind.REDIRECT,
            f"the provider redirected ({status}{where}); redirects are not followed",
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


#: The deepest a refusal's JSON is read: checked on its bytes first, as where Python's parser
#: gives up depends on the stack it is called on (and a refusal is a flat object).
_REFUSAL_DEPTH = 32


#: What a refusal's ``error`` or ``reason`` is read as: a short code, which becomes part of the
#: call's error code. Any other text is not taken: it is the provider's to choose, and a lone
#: surrogate in it made the call's receipt unsignable (the call ended without one, its price
#: left in the caller's hold).
_REFUSAL_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def _code(value: object) -> str | None:
    """``value`` if it is a refusal's code (:data:`_REFUSAL_CODE`), else None."""
    return value if isinstance(value, str) and _REFUSAL_CODE.fullmatch(value) else None


def _refusal(body: bytes) -> tuple[str, str | None] | None:
    """``(error, reason)`` of a JSON refusal body such as the middleware's, else ``None``; each
    a short code (:data:`_REFUSAL_CODE`), or the body is not read as a refusal (an ``error``)
    or gives no reason (a ``reason``)."""
    if len(body) > _FAILURE_BODY_BYTES:
        return None
    try:
        text = json_text(body)
        if deeper_than(text, _REFUSAL_DEPTH):
            return None
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    error = _code(data.get("error"))
    return None if error is None else (error, _code(data.get("reason")))


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
        verify: ssl.SSLContext | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.limits = limits or ForwardLimits()
        self._config = (guard, verify, user_agent)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="adjudge-forwarder", daemon=True
        )
        self._thread.start()

        async def make() -> AsyncForwarder:
            return AsyncForwarder(self.limits, guard=guard, verify=verify, user_agent=user_agent)

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
        """A forwarder for the running event loop with this one's bounds, guard, TLS context and
        user agent: this one's own on its own loop, a new one (its own connection pool, closed
        with its ``aclose()``) on any other."""
        if asyncio.get_running_loop() is self._loop:
            return self._async
        guard, verify, user_agent = self._config
        return AsyncForwarder(self.limits, guard=guard, verify=verify, user_agent=user_agent)

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
