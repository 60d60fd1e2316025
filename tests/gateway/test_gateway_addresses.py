"""The address guard: which addresses may be connected to (the vectors in
tests/vectors/addresses.json, and properties), and the forwarder connecting only to the address
it vetted — resolved once, every answer checked, dialed by address with the host name kept for
``Host`` and TLS. Names resolve through a stub; nothing dials beyond loopback."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from adjudge.calls.tools import BuiltRequest
from adjudge.gateway import (
    AddressGuard,
    AsyncForwarder,
    FailureKind,
    ForwardFailure,
    ForwardLimits,
    ProviderAnswer,
    public_address,
    public_host,
    tls_context,
)
from support.addresses import PUBLIC, PUBLIC_TOO, Dialer, StubResolver
from support.loopback import RawPeer

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "addresses.json").read_text("utf-8")
)["cases"]
FAST = ForwardLimits(connect_timeout=1, read_timeout=1, write_timeout=1, total_timeout=2)
Peer = Callable[[Callable[[socket.socket, bytes], None]], RawPeer]
OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"


def answer_ok(conn: socket.socket, _request: bytes) -> None:
    conn.sendall(OK)


@pytest.mark.parametrize("case", VECTORS, ids=[c["description"] for c in VECTORS])
def test_address_policy_vectors(case: dict[str, Any]) -> None:
    """Each address is public, or not, as its vector says."""
    assert public_address(case["address"]) is case["public"]


ipv4s = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)


@given(ipv4s)
def test_an_ipv6_wrapping_is_judged_by_the_ipv4_address_it_carries(
    v4: ipaddress.IPv4Address,
) -> None:
    """Mapped, compatible, NAT64, 6to4 and Teredo (as its client) forms of an IPv4 address get
    that address's verdict: wrapping never turns an internal address public."""
    n = int(v4)
    wrapped = [
        0xFFFF << 32 | n,  # ::ffff:a.b.c.d
        n,  # ::a.b.c.d
        0x64FF9B << 96 | n,  # 64:ff9b::a.b.c.d
        0x2002 << 112 | n << 80,  # 2002:aabb:ccdd::
        # Teredo: server 8.8.8.8, the client's bits inverted
        0x20010000 << 96 | int(ipaddress.IPv4Address(PUBLIC_TOO)) << 64 | (n ^ 0xFFFFFFFF),
    ]
    verdict = public_address(v4)
    for address in wrapped:
        assert public_address(ipaddress.IPv6Address(address)) is verdict, ipaddress.IPv6Address(
            address
        )


INTERNAL_V6 = [
    "::/128",
    "::1/128",
    "fe80::/10",
    "fc00::/7",
    "fec0::/10",
    "ff00::/8",
    "2001:db8::/32",
    "3fff::/20",
    "5f00::/16",
    "100::/64",
    "64:ff9b:1::/48",
    "::ffff:0:0:0/96",
]


@given(st.sampled_from(INTERNAL_V6), st.integers(0, 2**128 - 1))
def test_no_address_in_an_internal_ipv6_range_passes(network: str, bits: int) -> None:
    """Any address of loopback, link-local, unique-local, site-local, multicast, the
    documentation, discard, SRv6, local NAT64 or IPv4-translated ranges is refused, with or
    without a zone."""
    net = ipaddress.IPv6Network(network)
    address = net.network_address + bits % net.num_addresses
    assert not public_address(address)
    assert not public_address(f"{address}%eth0")


@pytest.mark.parametrize(
    ("host", "public"),
    [
        ("localhost", False),
        ("LOCALHOST.", False),
        ("api.localhost", False),
        ("localhost.localdomain", False),
        ("[::1]", False),
        ("[::7f00:1]", False),
        ("127.0.0.1", False),
        ("example.com", True),  # a name: judged by its addresses when it is resolved
        ("localhost.example.com", True),
        ("[2606:4700::1111]", True),
    ],
)
def test_public_host(host: str, public: bool) -> None:
    """localhost names and non-public literals are refused without a lookup; names wait."""
    assert public_host(host) is public


def run(forwarder: AsyncForwarder, request: BuiltRequest) -> Any:
    async def go() -> Any:
        async with forwarder:
            return await forwarder.forward(request)

    return asyncio.run(go())


def get(url: str) -> BuiltRequest:
    return BuiltRequest("GET", url, (), None)


def refused(outcome: Any) -> ForwardFailure:
    assert isinstance(outcome, ForwardFailure), outcome
    assert outcome.kind is FailureKind.ADDRESS_REFUSED, outcome
    assert outcome.category == "request_error" and not outcome.retryable
    return outcome


def test_a_rebinding_name_is_dialed_at_the_address_that_was_vetted(raw_peer: Peer) -> None:
    """A name answering a public address and then 127.0.0.1: one lookup per connection, and
    the connection goes to the address that lookup vetted, Host kept; a fresh connection that
    looks up 127.0.0.1 is refused and dials nothing."""
    peer = raw_peer(answer_ok)
    port = peer.url.rsplit(":", 1)[1]
    resolver = StubResolver({"rebind.example": [[PUBLIC], ["127.0.0.1"]]})
    dialer = Dialer(serves={PUBLIC})
    guard = AddressGuard(resolver, dial=dialer)
    url = f"http://rebind.example:{port}/x"
    assert isinstance(run(AsyncForwarder(FAST, guard=guard), get(url)), ProviderAnswer)
    assert (resolver.lookups, dialer.dialed) == (["rebind.example"], [PUBLIC])
    assert f"\r\nhost: rebind.example:{port}\r\n".encode() in peer.requests[0].lower()
    outcome = refused(run(AsyncForwarder(FAST, guard=guard), get(url)))
    assert outcome.message == "the provider's endpoint is not a public address"  # not where
    assert dialer.dialed == [PUBLIC] and len(peer.requests) == 1


def test_the_precheck_and_the_connection_are_checked_apart() -> None:
    """The forwarder's early check passes on the first answer; the connection looks again and
    refuses the rebound one: the check ahead of a call is not the one that holds."""
    resolver = StubResolver({"rebind.example": [[PUBLIC], ["127.0.0.1"]]})
    dialer = Dialer(serves={PUBLIC})
    forwarder = AsyncForwarder(FAST, guard=AddressGuard(resolver, dial=dialer))

    async def go() -> tuple[Any, Any]:
        async with forwarder:
            early = await forwarder.refusal("http://rebind.example:9/x")
            return early, await forwarder.forward(get("http://rebind.example:9/x"))

    early, outcome = asyncio.run(go())
    assert early is None
    refused(outcome)
    assert resolver.lookups == ["rebind.example"] * 2 and dialer.dialed == []


@pytest.mark.parametrize(
    "answer",
    [
        [PUBLIC, "127.0.0.1"],
        ["10.0.0.7", PUBLIC],
        ["::ffff:127.0.0.1"],
        ["::7f00:1"],
        ["64:ff9b::a9fe:a9fe"],
        ["2002:7f00:1::"],
        ["fe80::1%eth0"],
    ],
)
def test_every_address_a_name_has_is_vetted(answer: list[str]) -> None:
    """One internal address among a name's answers refuses the name; nothing is dialed, not
    even its public answers."""
    dialer = Dialer(serves={PUBLIC})
    guard = AddressGuard(StubResolver({"mixed.example": [answer]}), dial=dialer)
    refused(run(AsyncForwarder(FAST, guard=guard), get("http://mixed.example/x")))
    assert dialer.dialed == []


def test_literal_and_localhost_hosts_are_refused_without_a_lookup() -> None:
    """A literal internal address, or a localhost name, is refused before any lookup."""
    resolver = StubResolver({"localhost": [[PUBLIC]], "api.localhost": [[PUBLIC]]})
    dialer = Dialer(serves={PUBLIC})
    guard = AddressGuard(resolver, dial=dialer)
    for url in (
        "http://127.0.0.1:9/x",
        "http://[::1]:9/x",
        "http://[64:ff9b::7f00:1]/x",
        "http://169.254.169.254/latest",
        "http://localhost:9/x",
        "http://api.localhost/x",
    ):
        refused(run(AsyncForwarder(FAST, guard=guard), get(url)))
    assert resolver.lookups == [] and dialer.dialed == []


def test_the_next_vetted_address_is_tried_when_one_is_unreachable(raw_peer: Peer) -> None:
    """Answers tried in order within the connect time-out: an unreachable first one, then the
    next; both were vetted."""
    peer = raw_peer(answer_ok)
    port = peer.url.rsplit(":", 1)[1]
    dialer = Dialer(serves={PUBLIC})
    guard = AddressGuard(StubResolver({"two.example": [[PUBLIC_TOO, PUBLIC]]}), dial=dialer)
    assert run(AsyncForwarder(FAST, guard=guard), get(f"http://two.example:{port}/")).ok
    assert dialer.dialed == [PUBLIC_TOO, PUBLIC]


def test_a_name_that_does_not_resolve_is_a_connect_failure() -> None:
    """No answer for the name: a retryable connect failure, early and at connect time."""
    forwarder = AsyncForwarder(FAST, guard=AddressGuard(StubResolver({})))

    async def go() -> tuple[Any, Any]:
        async with forwarder:
            early = await forwarder.refusal("http://nowhere.example/x")
            return early, await forwarder.forward(get("http://nowhere.example/x"))

    for outcome in asyncio.run(go()):
        assert isinstance(outcome, ForwardFailure) and outcome.kind is FailureKind.CONNECT
        assert outcome.retryable and "the provider's host" in outcome.message
        assert "nowhere.example" not in outcome.message  # the caller reads it: not where


def test_allowing_private_addresses_vets_nothing_but_still_dials_the_answer(
    raw_peer: Peer,
) -> None:
    """With private addresses allowed a name may resolve to loopback; it is still resolved
    once by the guard's resolver and dialed by address."""
    peer = raw_peer(answer_ok)
    port = peer.url.rsplit(":", 1)[1]
    resolver = StubResolver({"provider.test": [["127.0.0.1"]]})
    dialer = Dialer()
    guard = AddressGuard(resolver, allow_private=True, dial=dialer)
    assert run(AsyncForwarder(FAST, guard=guard), get(f"http://provider.test:{port}/")).ok
    assert (resolver.lookups, dialer.dialed) == (["provider.test"], ["127.0.0.1"])


# --- TLS keeps the host name -----------------------------------------------------------------


def _certificate(name: str, directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` alone (no IP address in it), and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class _TlsServer:
    """An HTTPS server on loopback that records the SNI and Host of what it receives."""

    def __init__(self, cert: Path, key: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.sni: list[str | None] = []
        self.hosts: list[str | None] = []
        context.sni_callback = lambda _sock, name, _ctx: self.sni.append(name)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hosts.append(self.headers.get("host"))
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[_TlsServer, Path]]:
    cert, key = _certificate("provider.test", tmp_path)
    server = _TlsServer(cert, key)
    yield server, cert
    server.close()


def test_tls_checks_the_host_name_while_the_address_is_dialed(
    tls_server: tuple[_TlsServer, Path],
) -> None:
    """Dialed at 127.0.0.1, the TLS handshake still names provider.test (SNI) and checks the
    certificate against it, and the request carries Host: provider.test; the same certificate
    reached by its address fails the check, so the check is real."""
    server, cert = tls_server
    trust = ssl.create_default_context(cafile=str(cert))
    dialer = Dialer()
    guard = AddressGuard(
        StubResolver({"provider.test": [["127.0.0.1"]]}), allow_private=True, dial=dialer
    )

    def forwarder() -> AsyncForwarder:
        return AsyncForwarder(FAST, guard=guard, verify=trust)

    outcome = run(forwarder(), get(f"https://provider.test:{server.port}/x"))
    assert isinstance(outcome, ProviderAnswer), outcome
    assert dialer.dialed == ["127.0.0.1"]
    assert server.sni == ["provider.test"]
    assert server.hosts == [f"provider.test:{server.port}"]
    by_address = run(forwarder(), get(f"https://127.0.0.1:{server.port}/x"))
    assert isinstance(by_address, ForwardFailure) and by_address.kind is FailureKind.CONNECT
    assert server.hosts == [f"provider.test:{server.port}"]


def test_forwarders_share_one_default_context_that_refuses_an_unknown_issuer(
    tls_server: tuple[_TlsServer, Path],
) -> None:
    """A forwarder given no context verifies with the certifi roots, so the self-signed
    certificate is refused before a request is sent; and every forwarder shares that one
    context, its roots read once a process."""
    server, _ = tls_server
    guard = AddressGuard(StubResolver({"provider.test": [["127.0.0.1"]]}), allow_private=True)
    outcome = run(AsyncForwarder(FAST, guard=guard), get(f"https://provider.test:{server.port}/x"))
    assert isinstance(outcome, ForwardFailure) and outcome.kind is FailureKind.CONNECT
    assert server.hosts == []
    assert tls_context() is tls_context()
    assert tls_context().verify_mode == ssl.CERT_REQUIRED and tls_context().check_hostname


def test_the_forwarders_connections_are_the_guards() -> None:
    """The forwarder's connections are the guard's: a name whose answer is internal is refused
    (the system resolver is never asked)."""
    resolver = StubResolver({"internal.example": [["192.168.0.10"]]})
    refused(
        run(AsyncForwarder(FAST, guard=AddressGuard(resolver)), get("http://internal.example/"))
    )
    assert resolver.lookups == ["internal.example"]
