"""A provider's endpoint address through the gateway: a name that resolves to an internal
address is refused before anything is reserved; one that answers a public address to that check
and 127.0.0.1 to the connection (DNS rebinding) is refused as the forwarder connects — nothing
reaches loopback, the call is refunded from its receipt, nothing is charged; a public name is
called at the address that was vetted. Names resolve through a stub; nothing dials beyond
loopback."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from adjudge.app import App
from adjudge.gateway import AddressGuard, Forwarder, ForwardLimits
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.service import create_app
from adjudge.store import Store
from support.addresses import PUBLIC, Dialer, StubResolver
from support.audit import audit
from support.harness import FUNDS, Harness, make_harness
from support.loopback import RawPeer
from support.weather import POLICY, PRICE, PROVIDER, Script, forecast, tool

LIMITS = ForwardLimits(connect_timeout=1, read_timeout=1, total_timeout=2)
NAME = "weather.example"


@dataclass
class Site:
    """The service, the provider on loopback under a name, the name's answers, the dials."""

    h: Harness
    peer: RawPeer
    resolver: StubResolver
    dialer: Dialer

    def answers(self, *turns: list[str]) -> None:
        self.resolver.answers[NAME] = list(turns)

    def call(self) -> Any:
        return self.h.call(
            "ann",
            "POST",
            "/gateway/calls",
            {"tool": "weather_forecast", "arguments": {"city": "x"}},
        )


def _forecast(conn: socket.socket, _request: bytes) -> None:
    body = json.dumps(forecast(Script(), 3)).encode()
    head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}"
    conn.sendall(head.encode() + b"\r\n\r\n" + body)


@pytest.fixture
def site(store: Store, raw_peer: Callable[[Callable[..., None]], RawPeer]) -> Iterator[Site]:
    """Public providers only (the default), the tool's host a name the stub answers."""
    peer = raw_peer(_forecast)
    resolver = StubResolver({})
    dialer = Dialer(serves={PUBLIC})
    h = make_harness(store, issuer=SignedReceipts(SigningKey.generate()))
    h.app = App(
        store,
        clock=h.clock,
        issuer=h.app.issuer,
        forwarder=Forwarder(LIMITS, guard=AddressGuard(resolver, dial=dialer)),
    )
    h.client = TestClient(create_app(h.app))
    h.keys[PROVIDER] = h.app.accounts.create(None, PROVIDER, ["provider"]).value["api_key"]
    port = peer.url.rsplit(":", 1)[1]
    h.ok(PROVIDER, "POST", "/tools/callable", {"tool": tool(f"http://{NAME}:{port}")})
    h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": POLICY})
    yield Site(h, peer, resolver, dialer)
    h.app.close()
    audit(store)


def test_a_name_that_rebinds_after_the_check_is_refused_when_connecting(site: Site) -> None:
    """Public to the early check, 127.0.0.1 to the connection: the forwarder refuses it, so
    the provider on loopback never sees the request; the call ends as a request error,
    refunded with a receipt that says why without where, and the caller keeps every unit."""
    site.answers([PUBLIC], ["127.0.0.1"])
    r = site.call()
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["status"], got["error"]["kind"], got["error"]["code"]) == (
        "refunded",
        "request_error",
        "GATEWAY_ADDRESS_REFUSED",
    ), got
    assert got["error"]["message"] == "the provider's endpoint is not a public address"
    assert "127.0.0.1" not in r.text and NAME not in r.text  # where is not the caller's
    assert got["receiptId"] and not got["strike"]
    assert site.peer.requests == [] and site.dialer.dialed == []
    assert site.resolver.lookups == [NAME, NAME]
    assert site.h.balance("wallet:ann") == FUNDS
    assert site.h.balance(f"wallet:{PROVIDER}") == 0


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (["10.0.0.5"], "PROVIDER_ADDRESS_REFUSED"),
        ([PUBLIC, "::ffff:169.254.169.254"], "PROVIDER_ADDRESS_REFUSED"),
        (["64:ff9b::7f00:1"], "PROVIDER_ADDRESS_REFUSED"),
        ([], "PROVIDER_UNREACHABLE"),
    ],
)
def test_an_internal_or_unresolvable_name_is_refused_before_anything_is_reserved(
    site: Site, answer: list[str], code: str
) -> None:
    """An internal address among the name's answers, or no answer at all: a coded refusal
    before the call starts, saying nothing of where the provider is (its name and addresses
    are for the provider and admins); nothing is reserved, dialed or recorded."""
    if answer:
        site.answers(answer)
    r = site.call()
    assert (r.status_code, r.json()["error"]["code"]) == (400, code)
    assert all(where not in r.text for where in (NAME, *answer)), r.text
    assert site.h.balance("wallet:ann") == FUNDS
    assert site.dialer.dialed == [] and site.peer.requests == []
    assert site.h.ok("ann", "GET", "/gateway/calls")["calls"] == []


def test_a_public_name_is_called_at_the_address_that_was_vetted(site: Site) -> None:
    """A name with a public address: dialed at that address, the request naming the host it
    was signed for; the answer is judged and charged as any other."""
    site.answers([PUBLIC])
    r = site.call()
    got = r.json()
    assert (got["status"], got["verdict"]) == ("settled", "PASS"), got
    assert site.dialer.dialed == [PUBLIC]
    port = site.peer.url.rsplit(":", 1)[1]
    assert f"\r\nhost: {NAME}:{port}\r\n".encode() in site.peer.requests[0].lower()
    assert site.h.balance("wallet:ann") == FUNDS - PRICE
