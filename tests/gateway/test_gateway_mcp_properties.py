"""Whatever a provider answers, the books hold: a property over real HTTP on loopback.

Each example makes one paid call through the MCP endpoint to a raw TCP provider that answers as
hypothesis draws — random JSON, a valid forecast, garbage bytes, a body over the response cap,
a slow drip past the time-out, a 5xx, a reset before or in the middle of the answer, a declared
length it never sends. After each call the ledger balances (both sums zero, nothing negative,
every release backed by its receipt: :func:`support.audit.audit`), and the caller has been
charged the price exactly for the calls that settled and nothing for any other.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from adjudge.app import App, Settings
from adjudge.gateway import AddressGuard, Forwarder, ForwardLimits
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.store import Store
from support import http
from support.audit import audit
from support.harness import FUNDS, Harness, make_harness
from support.live import serving
from support.loopback import RawPeer
from support.weather import POLICY, PRICE, PROVIDER, Script, forecast, tool

#: The forwarder's bounds here: small, so the slow and the huge cases are quick to reach.
LIMITS = ForwardLimits(total_timeout=0.4, read_timeout=0.3, max_response_bytes=32 * 1024)

Behave = Callable[[socket.socket, bytes], None]


def _answer(status: int, body: bytes, content_type: str = "application/json") -> Behave:
    def behave(conn: socket.socket, _: bytes) -> None:
        head = (
            f"HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        conn.sendall(head.encode() + body)

    return behave


def _drip(chunks: int) -> Behave:
    def behave(conn: socket.socket, _: bytes) -> None:
        body = json.dumps(forecast(Script(), 2)).encode()
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
        )
        step = max(1, len(body) // chunks)
        for i in range(0, len(body), step):  # each piece inside the read time-out, the whole not
            conn.sendall(body[i : i + step])
            time.sleep(0.15)

    return behave


def _reset(after: bytes) -> Behave:
    def behave(conn: socket.socket, _: bytes) -> None:
        if after:
            conn.sendall(after)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    return behave


def _short(declared: int, sent: bytes) -> Behave:
    def behave(conn: socket.socket, _: bytes) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\ncontent-length: {declared}\r\n\r\n".encode() + sent)

    return behave


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def forecasts(draw: st.DrawFn) -> bytes:
    """A forecast, valid or bent: a high out of range, a text rain chance, no days."""
    body = forecast(Script(), draw(st.integers(0, 4)))
    if body["daily"] and draw(st.booleans()):
        day = body["daily"][0]
        day[draw(st.sampled_from(list(day)))] = draw(json_values)
    return json.dumps(body).encode()


behaviours = st.one_of(
    st.builds(_answer, st.just(200), forecasts()),
    st.builds(
        _answer, st.sampled_from([200, 201]), json_values.map(lambda v: json.dumps(v).encode())
    ),
    st.builds(
        _answer,
        st.just(200),
        st.binary(max_size=300),
        st.sampled_from(["application/json", "text/plain", "application/octet-stream"]),
    ),
    st.builds(
        _answer, st.just(200), st.integers(40_000, 200_000).map(lambda n: b"[" + b"1," * n + b"1]")
    ),
    st.builds(_drip, st.integers(4, 8)),
    st.builds(_answer, st.integers(500, 599), st.binary(max_size=100)),
    st.builds(_answer, st.sampled_from([301, 404, 429]), st.just(b"{}")),
    st.builds(_reset, st.sampled_from([b"", b"HTTP/1.1 200 OK\r\ncontent-length: 90\r\n\r\n{"])),
    st.builds(_short, st.integers(10, 1000), st.just(b'{"latitude"')),
    st.just(_answer(200, b"not http at all", "text/plain")),
)


@dataclass
class Books:
    """The service, the raw provider, and the charges expected so far."""

    h: Harness
    service: str
    peer: RawPeer
    behave: list[Behave] = field(default_factory=list)
    settled: int = 0
    calls: int = 0


@pytest.fixture
def books(store: Store, raw_peer: Callable[[Behave], RawPeer]) -> Iterator[Books]:
    h = make_harness(store, issuer=SignedReceipts(SigningKey.generate()))
    h.app = App(
        store,
        clock=h.clock,
        issuer=h.app.issuer,
        forwarder=Forwarder(LIMITS, guard=AddressGuard(allow_private=True)),
        settings=Settings(allow_private_providers=True),
    )
    h.keys[PROVIDER] = h.app.accounts.create(None, PROVIDER, ["provider"]).value["api_key"]
    state: list[Behave] = []
    peer = raw_peer(lambda conn, request: state[-1](conn, request))  # noqa: PLW0108 (late-bound)
    with serving(h.app) as service:
        h.ok(PROVIDER, "POST", "/tools/callable", {"tool": tool(peer.url)})
        h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": POLICY})
        yield Books(h, service, peer, state)
        h.app.close()
    audit(store)


def call(books: Books) -> dict[str, Any]:
    """One tools/call through the MCP endpoint, as the goassay client sends it."""
    body = {
        "jsonrpc": "2.0",
        "id": books.calls,
        "method": "tools/call",
        "params": {
            "name": "weather_forecast",
            "arguments": {"city": "berlin"},
            "_meta": {
                "assay/idempotency-key": f"prop-{books.calls}",
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    r = http.post(
        f"{books.service}/",
        json=body,
        headers={
            "authorization": f"Bearer {books.h.keys['ann']}",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "weather_forecast",
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(behave=behaviours)
def test_whatever_the_provider_answers_the_books_balance(books: Books, behave: Behave) -> None:
    """Any answer at all: the call ends with a receipt; it is charged the price if and only if
    it settled; the ledger balances and every release is backed by its receipt."""
    books.behave.append(behave)
    books.calls += 1
    result = call(books)
    assert "assay/receipt" in result["_meta"], result
    receipt = result["_meta"]["assay/receipt"]
    assert receipt["receiptId"] and receipt["status"] in ("settled", "refunded", "voided")
    settled = receipt["status"] == "settled"
    error = receipt["error"]
    event(f"{receipt['status']} {receipt['verdict'] or error['code']}")
    assert result["isError"] is not (settled and receipt["output"] is not None)
    assert receipt["chargedPrice"]["amount"] == (str(PRICE) if settled else "0")
    if receipt["verdict"] is None:  # a request or system error: never charged, never struck
        assert not settled and receipt["strike"] is False
    books.settled += settled
    assert books.h.balance("wallet:ann") == FUNDS - PRICE * books.settled
    assert books.h.balance(f"held:{PROVIDER}") == PRICE * books.settled
    held = {a: v for a, v in books.h.ledger().items() if a.startswith("hold:") and int(v)}
    assert held == {}
    audit(books.h.app.store)


@pytest.mark.parametrize(
    "body",
    [
        b'{"error": "\\ud800"}',  # a lone surrogate: no UTF-8 holds it
        b'{"error": "slow\\u0000down"}',  # a NUL: PostgreSQL's text holds none
        b'{"error": "' + b"E" * 4000 + b'"}',
        b'{"error": "not found", "reason": "\\udfff"}',
    ],
    ids=["lone surrogate", "NUL", "4000 characters", "spaces"],
)
def test_a_refusals_text_is_not_taken_into_the_calls_error_code(books: Books, body: bytes) -> None:
    """A provider's 4xx whose JSON ``error`` is not a short code is a plain refusal: the call
    ends refunded with its receipt, its error code ``GATEWAY_PROVIDER_4XX`` alone, and the
    caller's hold goes back. (The text was taken into the code as it came: a lone surrogate
    made the receipt unsignable, the call answered RECEIPT_UNSIGNABLE and its price stayed in
    the caller's hold.)"""
    books.behave.append(_answer(400, body))
    books.calls += 1
    result = call(books)
    receipt = result["_meta"]["assay/receipt"]
    assert receipt["status"] == "refunded"
    assert receipt["error"]["code"] == "GATEWAY_PROVIDER_4XX"
    assert books.h.balance("wallet:ann") == FUNDS
    held = {a: v for a, v in books.h.ledger().items() if a.startswith("hold:") and int(v)}
    assert held == {}
