"""Fixtures for the gateway's tests: loopback servers stopped when their test ends."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import pytest

from adjudge.gateway import MemoryKeyRing, rotate
from support.loopback import AsgiServer, JwksHost, QuietHandler, RawPeer, start_wsgi


@pytest.fixture
def jwks_host() -> Iterator[JwksHost]:
    """A JWKS host with one key, created three hours ago and signing now."""
    ring = MemoryKeyRing()
    rotate(ring, datetime.now(UTC) - timedelta(hours=3), lead=timedelta(0))
    host = JwksHost(ring).start()
    yield host
    host.stop()


@pytest.fixture
def asgi_server() -> Iterator[Callable[[Any], AsgiServer]]:
    """Starts ASGI apps under uvicorn on loopback; each is stopped when the test ends."""
    started: list[AsgiServer] = []

    def start(app: Any) -> AsgiServer:
        server = AsgiServer(app).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture
def wsgi_server() -> Iterator[Callable[..., str]]:
    """Starts WSGI apps under wsgiref on loopback; returns each one's base URL."""
    started: list[WSGIServer] = []

    def start(app: Any, handler: type[WSGIRequestHandler] = QuietHandler) -> str:
        server = start_wsgi(app, handler)
        started.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


@pytest.fixture
def raw_peer() -> Iterator[Callable[[Callable[[socket.socket, bytes], None]], RawPeer]]:
    """Starts raw TCP peers that answer one request as a test scripts it."""
    peers: list[RawPeer] = []

    def start(behave: Callable[[socket.socket, bytes], None]) -> RawPeer:
        peer = RawPeer(behave)
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        peer.close()
