"""The forwarder's connections: kept alive and pooled, bounded, each request sent once, no
cookies kept, one client per event loop; and the connect, pool and write bounds as outcomes."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from adjudge.calls.tools import BuiltRequest
from adjudge.gateway import (
    AddressGuard,
    AsyncForwarder,
    FailureKind,
    Forwarder,
    ForwardFailure,
    ForwardLimits,
    SignedRequest,
)
from support.addresses import StubResolver
from support.loopback import RawPeer

Peer = Callable[[Callable[[socket.socket, bytes], None]], RawPeer]
FAST = ForwardLimits(connect_timeout=0.5, read_timeout=1, write_timeout=0.5, total_timeout=3)
LOOPBACK = AddressGuard(allow_private=True)


class KeepAlive:
    """An HTTP/1.1 server on loopback that keeps connections open: it counts the connections,
    records each request's Cookie header, and answers ``{}`` after ``delay`` seconds, setting a
    cookie."""

    def __init__(self, delay: float = 0.0) -> None:
        self.connections = 0
        self.cookies: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                server.connections += 1
                super().setup()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.cookies.append(self.headers.get("cookie"))
                time.sleep(delay)
                self.send_response(200)
                self.send_header("content-length", "2")
                self.send_header("set-cookie", "session=abc; Path=/")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def keep_alive() -> Iterator[Callable[..., KeepAlive]]:
    servers: list[KeepAlive] = []

    def make(**kw: Any) -> KeepAlive:
        servers.append(KeepAlive(**kw))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def post(url: str, body: bytes = b"{}") -> BuiltRequest:
    return BuiltRequest("POST", url + "/x", (("content-type", "application/json"),), body)


def test_calls_one_after_another_share_one_kept_alive_connection(
    keep_alive: Callable[..., KeepAlive],
) -> None:
    """Five calls in a row: one connection, kept alive between them."""
    server = keep_alive()
    with Forwarder(FAST, guard=LOOPBACK) as f:
        assert all(f.forward(post(server.url)).ok for _ in range(5))
    assert server.connections == 1


def test_no_cookie_a_provider_sets_is_sent_back(keep_alive: Callable[..., KeepAlive]) -> None:
    """A signed request carries what was signed and the credential: a cookie set by one
    answer is not kept for the next call (which may be another caller's)."""
    server = keep_alive()
    with Forwarder(FAST, guard=LOOPBACK) as f:
        assert f.forward(post(server.url)).ok and f.forward(post(server.url)).ok
    assert server.cookies == [None, None]


def test_a_full_pool_is_the_gateways_own_failure(keep_alive: Callable[..., KeepAlive]) -> None:
    """One connection allowed and held by a slow answer: the next call waits the connect
    time-out for a place, then fails as a system error (retryable), not as the provider's."""
    server = keep_alive(delay=1.5)
    limits = ForwardLimits(connect_timeout=0.3, read_timeout=2, total_timeout=3, max_connections=1)

    async def go() -> tuple[Any, Any]:
        async with AsyncForwarder(limits, guard=LOOPBACK) as f:
            first = asyncio.ensure_future(f.forward(post(server.url)))
            await asyncio.sleep(0.2)
            second = await f.forward(post(server.url))
            return await first, second

    first, second = asyncio.run(go())
    assert first.ok
    assert isinstance(second, ForwardFailure) and second.kind is FailureKind.SYSTEM, second
    assert second.retryable and "pool" in second.message
    assert server.connections == 1


def _as(provider: str, built: BuiltRequest) -> SignedRequest:
    """``built`` as if signed for ``provider`` (the forwarder reads only what it sends and the
    provider's name)."""
    fields = (built.method, built.url, built.headers, built.body)
    return SignedRequest(*fields, "call", provider, "kid", "nonce", 0, 0, b"")


def test_one_provider_holds_at_most_its_share_of_the_pool(
    keep_alive: Callable[..., KeepAlive],
) -> None:
    """A pool of three, a share of two: a provider whose two calls hang holds two places, its
    third call waits the connect time-out for its share and fails as the gateway's own
    (retryable); another provider's call meanwhile takes the place left and is answered
    (before, the first provider's calls could hold the whole pool, and every other provider's
    calls failed "the pool is exhausted")."""
    slow, quick = keep_alive(delay=1.5), keep_alive()
    limits = ForwardLimits(
        connect_timeout=0.3, read_timeout=2, total_timeout=3, max_connections=3, max_per_provider=2
    )

    async def go() -> tuple[list[Any], Any, Any]:
        async with AsyncForwarder(limits, guard=LOOPBACK) as f:
            held = [asyncio.ensure_future(f.forward(_as("slowco", post(slow.url)))) for _ in "ab"]
            await asyncio.sleep(0.2)
            third, other = await asyncio.gather(
                f.forward(_as("slowco", post(slow.url))), f.forward(_as("sky", post(quick.url)))
            )
            done = list(await asyncio.gather(*held))
            # A share is kept only while used: none is left, and an unsigned request (a
            # webhook's) takes none, however many hosts it goes to.
            assert f._shares == {}
            assert (await f.forward(post(quick.url))).ok and f._shares == {}
            return done, third, other

    held, third, other = asyncio.run(go())
    assert all(o.ok for o in held) and other.ok, (held, other)
    assert isinstance(third, ForwardFailure) and third.kind is FailureKind.SYSTEM, third
    assert third.retryable and "provider's share" in third.message


def test_a_request_is_sent_once_even_when_it_could_be_retried(raw_peer: Peer) -> None:
    """A GET whose connection is reset instead of answered: disconnected, and the provider saw
    the signed request once (a client's retry of an idempotent request would replay its
    nonce)."""

    def reset(conn: socket.socket, _request: bytes) -> None:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    peer = raw_peer(reset)
    with Forwarder(FAST, guard=LOOPBACK) as f:
        outcome = f.forward(BuiltRequest("GET", peer.url + "/x", (), None))
    assert isinstance(outcome, ForwardFailure) and outcome.kind is FailureKind.DISCONNECTED
    time.sleep(0.3)
    assert len(peer.requests) == 1


class _SlowResolver(StubResolver):
    async def resolve(self, host: str, port: int) -> list[str]:
        await asyncio.sleep(5)
        return await super().resolve(host, port)


def test_a_name_that_takes_too_long_to_resolve_is_a_connect_time_out() -> None:
    """Resolving is part of connecting: past the connect time-out, a retryable connect
    failure."""
    guard = AddressGuard(_SlowResolver({"slow.example": [["127.0.0.1"]]}), allow_private=True)
    start = time.monotonic()
    with Forwarder(FAST, guard=guard) as f:
        outcome = f.forward(post("http://slow.example:9"))
    assert isinstance(outcome, ForwardFailure) and outcome.kind is FailureKind.CONNECT, outcome
    assert outcome.retryable and "connect time-out" in outcome.message
    assert time.monotonic() - start < FAST.total_timeout


def test_a_provider_that_stops_reading_the_request_is_cut_at_the_write_time_out() -> None:
    """A peer that accepts and never reads a large body: a retryable time-out at the write
    time-out, well before the total deadline."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        start = time.monotonic()
        with Forwarder(FAST, guard=LOOPBACK) as f:
            outcome = f.forward(post(url, b"x" * 64 * 1024 * 1024))
        took = time.monotonic() - start
    finally:
        listener.close()
    assert isinstance(outcome, ForwardFailure) and outcome.kind is FailureKind.TIMEOUT, outcome
    assert outcome.retryable and "stopped reading" in outcome.message
    assert took < FAST.total_timeout


def test_spawn_gives_each_event_loop_its_own_forwarder(
    keep_alive: Callable[..., KeepAlive],
) -> None:
    """On the sync forwarder's own loop, spawn() is that forwarder; on another loop, a new one
    with the same bounds and guard and a pool of its own, closed with aclose()."""
    server = keep_alive()
    with Forwarder(FAST, guard=LOOPBACK) as f:

        async def on_its_loop() -> bool:
            return f.spawn() is f._async

        assert f.run(on_its_loop())

        async def elsewhere() -> tuple[AsyncForwarder, bool]:
            spawned = f.spawn()
            try:
                return spawned, (await spawned.forward(post(server.url))).ok
            finally:
                await spawned.aclose()

        spawned, ok = asyncio.run(elsewhere())
        assert ok and spawned is not f._async
        assert (spawned.limits, spawned.guard) == (FAST, LOOPBACK)
        assert f.forward(post(server.url)).ok
    assert server.connections == 2
