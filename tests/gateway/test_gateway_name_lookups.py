"""Names looked up by c-ares against a real name server on loopback: answers, refusals, and a
slow name that keeps nobody else waiting (it holds no thread of the event loop's pool)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from adjudge.calls.tools import BuiltRequest
from adjudge.gateway import (
    AddressGuard,
    AddressRefused,
    AresResolver,
    AsyncForwarder,
    FailureKind,
    ForwardFailure,
    ForwardLimits,
    ProviderAnswer,
)
from adjudge.gateway.addresses import shared_resolver
from support.loopback import RawPeer
from support.names import NameServer

FAST = ForwardLimits(connect_timeout=1, read_timeout=1, write_timeout=1, total_timeout=2)
OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
#: More lookups in flight than the event loop's default pool has threads (min(32, cores + 4)).
CROWD = 12


@pytest.fixture
def names() -> Iterator[NameServer]:
    server = NameServer(
        {"fast.test": ["127.0.0.1"], "inside.test": ["10.0.0.7"], "two.test": ["127.0.0.1"]},
        slow=".slow.test",
        delay=8.0,
    )
    yield server
    server.close()


def test_a_name_answers_with_its_addresses(names: NameServer) -> None:
    """The name server's A record is the answer; a name it does not know is an OSError."""
    resolver = AresResolver([names.address])

    async def go() -> tuple[list[str], str]:
        found = await resolver.resolve("fast.test", 80)
        with pytest.raises(OSError) as missing:
            await resolver.resolve("nowhere.test", 80)
        return found, str(missing.value)

    found, missing = asyncio.run(go())
    assert found == ["127.0.0.1"]
    assert missing == "nowhere.test does not resolve: Domain name not found"


def test_a_name_no_name_server_can_take_is_an_os_error() -> None:
    """A name c-ares refuses before asking anyone (a label over 63 bytes) fails as a lookup
    does, so the connector reports it as one."""
    resolver = AresResolver(["127.0.0.1:9"], timeout=0.2, tries=1)
    with pytest.raises(OSError):
        asyncio.run(resolver.resolve("a" * 64 + ".test", 80))


def test_the_guard_vets_what_the_name_server_answers(names: NameServer) -> None:
    """An internal address given by the real name server is refused like a stub's."""
    guard = AddressGuard(AresResolver([names.address]))
    with pytest.raises(AddressRefused, match=r"inside\.test resolves to 10\.0\.0\.7"):
        asyncio.run(guard.addresses("inside.test", 80))


def test_slow_names_hold_no_thread_and_keep_no_other_lookup_waiting(names: NameServer) -> None:
    """Twelve lookups of names that answer in 8 s are out at once; another name still answers
    at once, and no thread of the event loop's pool was taken for any of them."""
    resolver = AresResolver([names.address])

    async def go() -> tuple[float, int, int]:
        slow = [
            asyncio.ensure_future(resolver.resolve(f"n{i}.slow.test", 80)) for i in range(CROWD)
        ]
        await asyncio.sleep(0.3)
        start = time.monotonic()
        found = await resolver.resolve("fast.test", 80)
        took = time.monotonic() - start
        assert found == ["127.0.0.1"]
        during = _pool_threads()
        for lookup in slow:
            lookup.cancel()
        await asyncio.gather(*slow, return_exceptions=True)
        return took, during, len(slow)

    took, during, crowd = asyncio.run(go())
    assert crowd == CROWD and took < 0.5, took
    assert during == 0, during


def test_a_call_to_a_healthy_host_goes_through_while_slow_names_are_looked_up(
    names: NameServer, raw_peer: Callable[[Callable[[socket.socket, bytes], None]], RawPeer]
) -> None:
    """Calls to twelve endpoints whose names answer in 8 s fail their connect time-out; a call
    to a healthy host, made while they are out, is answered (a lookup on the loop's pool would
    have waited for a thread past its own time-out)."""
    peer = raw_peer(lambda conn, _request: conn.sendall(OK))
    port = peer.url.rsplit(":", 1)[1]
    guard = AddressGuard(AresResolver([names.address]), allow_private=True)
    forwarder = AsyncForwarder(FAST, guard=guard)

    async def go() -> tuple[list[object], object]:
        async with forwarder:
            slow = [
                asyncio.ensure_future(forwarder.forward(_get(f"http://c{i}.slow.test:{port}/")))
                for i in range(CROWD)
            ]
            await asyncio.sleep(0.3)
            healthy = await forwarder.forward(_get(f"http://fast.test:{port}/x"))
            return list(await asyncio.gather(*slow)), healthy

    slow, healthy = asyncio.run(go())
    assert isinstance(healthy, ProviderAnswer) and healthy.status == 200, healthy
    for outcome in slow:
        assert isinstance(outcome, ForwardFailure) and outcome.kind is FailureKind.CONNECT
    assert len(peer.requests) == 1


def _get(url: str) -> BuiltRequest:
    return BuiltRequest("GET", url, (), None)


def _pool_threads() -> int:
    """Threads of the running loop's default executor (asyncio names them ``asyncio_N``)."""
    return sum(1 for t in threading.enumerate() if t.name.startswith("asyncio_"))


def test_every_guard_made_without_a_resolver_shares_the_c_ares_one() -> None:
    """The gateway's and the webhook sender's default guards look names up through one c-ares
    channel, not the system's getaddrinfo on the loop's pool."""
    first, second = AddressGuard(), AddressGuard(allow_private=True)
    assert isinstance(first.resolver, AresResolver)
    assert first.resolver is second.resolver is shared_resolver()
