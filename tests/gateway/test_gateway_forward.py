"""The forwarder against misbehaving loopback peers: every outcome classified, nothing raised."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import socket
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adjudge.calls.tools import BuiltRequest, Tool, build_request, parse_tool
from adjudge.gateway import (
    AddressGuard,
    AsyncForwarder,
    FailureKind,
    Forwarder,
    ForwardFailure,
    ForwardLimits,
    ProviderAnswer,
    ProviderCredential,
    provider_response,
)
from support.loopback import RawPeer

Peer = Callable[[Callable[[socket.socket, bytes], None]], RawPeer]
FAST = ForwardLimits(
    connect_timeout=1, read_timeout=0.5, write_timeout=1, total_timeout=1.5, max_response_bytes=1000
)
#: The peers here are on loopback.
LOOPBACK = AddressGuard(allow_private=True)


def tool_at(url: str) -> Tool:
    return parse_tool(
        {
            "name": "lookup",
            "provider": "p",
            "endpoint": {"base_url": url, "method": "POST", "path": "/x", "body": "rest"},
            "input_schema": {"type": "object"},
            "contract": {},
            "price": {"amount_minor": 1, "currency": "USD"},
        }
    )


def request_to(peer: RawPeer) -> BuiltRequest:
    return build_request(tool_at(peer.url), {"q": "x"})


def reply(data: bytes) -> Callable[[socket.socket, bytes], None]:
    def behave(conn: socket.socket, _request: bytes) -> None:
        conn.sendall(data)

    return behave


def http(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", f"content-length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def forward(request: BuiltRequest, limits: ForwardLimits = FAST, **kw: Any) -> Any:
    with Forwarder(limits, guard=LOOPBACK) as f:
        return f.forward(request, **kw)


def failed(outcome: Any, kind: FailureKind) -> ForwardFailure:
    assert isinstance(outcome, ForwardFailure), outcome
    assert outcome.kind is kind, outcome
    return outcome


def test_a_json_answer_comes_back_whole(raw_peer: Peer) -> None:
    """A 200 with a JSON body: status, headers, the exact bytes, a digest of them."""
    body = b'{"ok": true}'
    peer = raw_peer(reply(http("200 OK", body, "content-type: application/json")))
    outcome = forward(request_to(peer))
    assert isinstance(outcome, ProviderAnswer)
    assert (outcome.status, outcome.body, outcome.header("Content-Type")) == (
        200,
        body,
        "application/json",
    )
    assert outcome.digest.startswith("sha256:") and len(outcome.digest) == 71
    assert provider_response(outcome).body == {"ok": True}


def test_the_request_goes_out_as_built(raw_peer: Peer) -> None:
    """What reaches the peer is the built request: its method, target, headers and body."""
    peer = raw_peer(reply(http("200 OK", b"{}")))
    built = build_request(tool_at(peer.url), {"q": "ü"})
    forward(built)
    sent = peer.requests[0]
    assert sent.startswith(b"POST /x HTTP/1.1\r\n")
    assert b"\r\naccept-encoding: identity\r\n" in sent.lower()
    assert sent.endswith(built.body or b"")


def test_a_slow_drip_is_cut_at_the_total_deadline(raw_peer: Peer) -> None:
    """Bytes every 0.2 s keep each read under its time-out; the total deadline still cuts it."""

    def drip(conn: socket.socket, _request: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n")
        for _ in range(100):
            conn.sendall(b" ")
            time.sleep(0.2)

    start = time.monotonic()
    outcome = failed(forward(request_to(raw_peer(drip))), FailureKind.TIMEOUT)
    assert outcome.retryable and outcome.category == "request_error"
    assert time.monotonic() - start < FAST.total_timeout + 1


def test_a_silent_peer_times_out_on_read(raw_peer: Peer) -> None:
    """A peer that reads the request and says nothing: a time-out."""
    failed(forward(request_to(raw_peer(lambda conn, req: time.sleep(3)))), FailureKind.TIMEOUT)


def test_a_declared_huge_body_is_refused_before_reading(raw_peer: Peer) -> None:
    """A Content-Length over the cap: too_large at once."""
    peer = raw_peer(reply(b"HTTP/1.1 200 OK\r\ncontent-length: 999999999\r\n\r\n"))
    failed(forward(request_to(peer)), FailureKind.TOO_LARGE)


def test_a_chunked_body_past_the_cap_stops_the_read(raw_peer: Peer) -> None:
    """No length declared, chunks past the cap: reading stops, too_large."""

    def flood(conn: socket.socket, _request: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for _ in range(1000):
            conn.sendall(b"100\r\n" + b"x" * 256 + b"\r\n")

    failed(forward(request_to(raw_peer(flood))), FailureKind.TOO_LARGE)


def test_a_gzip_bomb_is_capped_on_its_decoded_size(raw_peer: Peer) -> None:
    """A small gzip body that inflates past the cap: too_large, without inflating it all."""
    bomb = gzip.compress(b"0" * 10_000_000)
    assert len(bomb) < FAST.max_response_bytes * 20
    limits = ForwardLimits(max_response_bytes=len(bomb) + 10)
    peer = raw_peer(reply(http("200 OK", bomb, "content-encoding: gzip")))
    failed(forward(request_to(peer), limits), FailureKind.TOO_LARGE)


def test_a_gzip_answer_within_the_cap_is_decoded(raw_peer: Peer) -> None:
    """A provider that compresses anyway is still read."""
    peer = raw_peer(reply(http("200 OK", gzip.compress(b'{"a": 1}'), "content-encoding: gzip")))
    outcome = forward(request_to(peer))
    assert isinstance(outcome, ProviderAnswer) and outcome.body == b'{"a": 1}'


def test_an_unknown_encoding_is_a_protocol_failure(raw_peer: Peer) -> None:
    peer = raw_peer(reply(http("200 OK", b"xx", "content-encoding: br")))
    failed(forward(request_to(peer)), FailureKind.PROTOCOL)


@pytest.mark.parametrize("status", ["301 Moved Permanently", "302 Found", "307 Temporary Redirect"])
def test_a_redirect_is_not_followed(raw_peer: Peer, status: str) -> None:
    """A 3xx is a failure naming where it pointed; the second host is never called."""
    target = raw_peer(reply(http("200 OK", b"{}")))
    peer = raw_peer(reply(http(status, b"", f"location: {target.url}/elsewhere")))
    outcome = failed(forward(request_to(peer)), FailureKind.REDIRECT)
    assert target.url in outcome.message
    assert target.requests == []


@pytest.mark.parametrize(
    ("location", "quoted"),
    [
        (b"https://elsewhere.example/a?b=1&c=%20#d", "https://elsewhere.example/a?b=1&c=%20#d"),
        (b"http://x/\x1b[2J\x1b[31mpaid\x07", "http://x/%1B[2J%1B[31mpaid%07"),
        (b"http://x/\x7f\tmore text", "http://x/%7F%09more%20text"),
        ("http://x/\u202eexe.pdf".encode(), "http://x/%E2%80%AEexe.pdf"),
        (b'http://x/"<b>\\', "http://x/%22%3Cb%3E%5C"),
    ],
)
def test_a_redirect_quotes_its_location_escaped(
    raw_peer: Peer, location: bytes, quoted: str
) -> None:
    """A ``Location`` is quoted in printable ASCII: a control character, a space, a quote or a
    character past ASCII percent-encoded, as a URL writes it (it was quoted as it came, so an
    escape sequence or a right-to-left mark reached whoever reads the call's failure)."""
    head = b"HTTP/1.1 302 Found\r\ncontent-length: 0\r\nlocation: " + location + b"\r\n\r\n"
    outcome = failed(forward(request_to(raw_peer(reply(head)))), FailureKind.REDIRECT)
    assert (
        outcome.message == f"the provider redirected (302 to {quoted}); redirects are not followed"
    )
    assert outcome.message.isascii() and outcome.message.isprintable()


@pytest.mark.parametrize("unit", ["a", "\x1b"])
def test_a_long_redirect_location_is_quoted_cut_saying_so(raw_peer: Peer, unit: str) -> None:
    """An 8 KB ``Location`` (the most aiohttp reads of a header) is quoted to 200 characters
    and said to be cut, never an escape cut in two (it was quoted whole, 8 KB in a message);
    the outcome is still the redirect's."""
    location = "http://x/" + unit * 8000
    head = f"HTTP/1.1 301 Moved\r\ncontent-length: 0\r\nlocation: {location}\r\n\r\n"
    outcome = failed(forward(request_to(raw_peer(reply(head.encode())))), FailureKind.REDIRECT)
    assert f"... [cut from {len(location)} characters]); redirects are not" in outcome.message
    shown = outcome.message.split(" to ", 1)[1].split("... [cut", 1)[0]
    assert len(shown) <= 200 and shown.startswith("http://x/")
    assert re.fullmatch(r"http://x/(a+|(%1B)+)", shown), shown
    assert outcome.message.isprintable() and len(outcome.message) < 320
    assert provider_response(outcome).status == "request_error"


@pytest.mark.parametrize(("status", "retryable"), [("500 Oops", False), ("503 Busy", True)])
def test_a_5xx_is_a_provider_failure(raw_peer: Peer, status: str, retryable: bool) -> None:
    peer = raw_peer(reply(http(status, b'{"error": "boom"}')))
    outcome = failed(forward(request_to(peer)), FailureKind.PROVIDER_5XX)
    assert outcome.retryable is retryable and outcome.body == b'{"error": "boom"}'
    assert provider_response(outcome).status == "request_error"


def test_a_4xx_is_a_provider_refusal(raw_peer: Peer) -> None:
    peer = raw_peer(reply(http("429 Too Many", b'{"error": "slow_down"}')))
    outcome = failed(forward(request_to(peer)), FailureKind.PROVIDER_4XX)
    assert (outcome.status, outcome.reason, outcome.retryable) == (429, "slow_down", True)


def test_a_401_that_is_not_the_middleware_is_a_plain_refusal(raw_peer: Peer) -> None:
    peer = raw_peer(reply(http("401 No", b'{"error": "invalid_api_key"}')))
    failed(forward(request_to(peer)), FailureKind.PROVIDER_4XX)


def test_the_middleware_refusal_is_read_with_its_reason(raw_peer: Peer) -> None:
    body = b'{"error":"invalid_assay_signature","reason":"EXPIRED"}'
    outcome = failed(
        forward(request_to(raw_peer(reply(http("401 No", body))))), FailureKind.SIGNATURE_REFUSED
    )
    assert outcome.reason == "EXPIRED"
    assert provider_response(outcome).error_code == "GATEWAY_SIGNATURE_REFUSED:EXPIRED"


@pytest.mark.parametrize(
    ("status", "body", "kind", "code"),
    [
        ("429 Too Many", b'{"error": "Too many requests"}', FailureKind.PROVIDER_4XX, ""),
        ("400 No", b'{"error": "x\\ud800"}', FailureKind.PROVIDER_4XX, ""),
        (
            "401 No",
            b'{"error":"invalid_assay_signature","reason":"\\udfff"}',
            FailureKind.SIGNATURE_REFUSED,
            "",
        ),
        ("400 No", b'{"error": "' + b"e" * 65 + b'"}', FailureKind.PROVIDER_4XX, ""),
        (
            "400 No",
            b'{"error": "bad_input.city:v2"}',
            FailureKind.PROVIDER_4XX,
            ":bad_input.city:v2",
        ),
    ],
    ids=["words", "a lone surrogate", "a reason's lone surrogate", "65 characters", "a code"],
)
def test_a_refusal_is_read_only_for_a_short_code(
    raw_peer: Peer, status: str, body: bytes, kind: FailureKind, code: str
) -> None:
    """A refusal's ``error`` and ``reason`` become part of the call's error code only when
    each is a code: 1-64 letters, digits and ``_.:-``. (Any text was taken: a lone surrogate
    made the call's receipt unsignable.)"""
    outcome = failed(forward(request_to(raw_peer(reply(http(status, body))))), kind)
    assert provider_response(outcome).error_code == "GATEWAY_" + kind.value.upper() + code


def test_garbage_bytes_are_a_protocol_failure(raw_peer: Peer) -> None:
    failed(forward(request_to(raw_peer(reply(b"\x00\xffgarbage\r\n\r\n")))), FailureKind.PROTOCOL)


@pytest.mark.parametrize(
    "answer",
    [
        json.dumps({"forecast": "PAYLOAD" * 800}).encode(),  # no status line
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + b"PAYLOAD" * 50 + b"\r\n",
    ],
    ids=["no status line", "a bad chunk size"],
)
def test_a_failure_never_quotes_the_providers_bytes(raw_peer: Peer, answer: bytes) -> None:
    """A refused call hands over no data, and a provider writes no text of its own into what
    the caller reads: the failure names its kind only (aiohttp's words quoted the bytes it
    could not parse, up to 8 KB of them)."""
    outcome = forward(request_to(raw_peer(reply(answer))))
    assert isinstance(outcome, ForwardFailure), outcome
    assert "PAYLOAD" not in outcome.message, outcome.message


def test_a_connection_reset_before_the_answer_is_a_disconnect(raw_peer: Peer) -> None:
    """The peer resets the connection (RST) instead of answering."""

    def reset(conn: socket.socket, _request: bytes) -> None:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    failed(forward(request_to(raw_peer(reset))), FailureKind.DISCONNECTED)


def test_a_hang_up_mid_body_is_a_disconnect(raw_peer: Peer) -> None:
    peer = raw_peer(reply(b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"a":'))
    failed(forward(request_to(peer)), FailureKind.DISCONNECTED)


def test_a_closed_port_is_a_connect_failure() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    built = build_request(tool_at(f"http://127.0.0.1:{port}"), {})
    outcome = failed(forward(built), FailureKind.CONNECT)
    assert outcome.retryable


def test_a_200_with_non_json_is_an_answer_the_contract_judges(raw_peer: Peer) -> None:
    """HTTP was fine: the bytes are the provider's answer, passed on as text to be judged."""
    outcome = forward(request_to(raw_peer(reply(http("200 OK", b"<html>oops</html>")))))
    assert isinstance(outcome, ProviderAnswer)
    response = provider_response(outcome)
    assert (response.status, response.body) == ("ok", "<html>oops</html>")
    assert response.digest == outcome.digest


def test_nan_is_not_taken_for_json(raw_peer: Peer) -> None:
    outcome = forward(request_to(raw_peer(reply(http("200 OK", b'{"a": NaN}')))))
    assert provider_response(outcome).body == '{"a": NaN}'


def test_a_credential_is_added_and_never_shown(raw_peer: Peer) -> None:
    """The provider's credential header goes out; its repr hides the secret."""
    peer = raw_peer(reply(http("200 OK", b"{}")))
    credential = ProviderCredential("X-Api-Key", "s3cret-value")
    assert "s3cret" not in repr(credential)
    assert forward(request_to(peer), credential=credential).ok
    assert b"\r\nx-api-key: s3cret-value\r\n" in peer.requests[0]


def test_the_async_forwarder_is_the_same(raw_peer: Peer) -> None:
    """The async face returns the same outcomes."""
    peer = raw_peer(reply(http("500 x", b"")))

    async def run() -> Any:
        async with AsyncForwarder(FAST, guard=LOOPBACK) as f:
            return await f.forward(request_to(peer))

    failed(asyncio.run(run()), FailureKind.PROVIDER_5XX)


def test_the_target_goes_out_byte_for_byte_dot_segments_and_all(raw_peer: Peer) -> None:
    """The signed target is the request line's, unnormalised: dot segments, doubled slashes
    and escapes as signed."""
    peer = raw_peer(reply(http("200 OK", b"{}")))
    target = "/a/../b//./c%2f?x=%2F&y=a+b"
    assert forward(BuiltRequest("GET", peer.url + target, (), None)).ok
    assert peer.requests[0].startswith(f"GET {target} HTTP/1.1\r\n".encode())


@pytest.mark.parametrize("target", ["/a?", "/ü", "/a#frag"])
def test_a_url_that_would_not_go_out_as_signed_is_refused_as_a_system_error(
    raw_peer: Peer, target: str
) -> None:
    """A request whose URL the client would not send as signed (an empty query dropped, a
    character that is not ASCII, a fragment) never leaves: a guard against drift."""
    peer = raw_peer(reply(http("200 OK", b"{}")))
    outcome = failed(forward(BuiltRequest("GET", peer.url + target, (), None)), FailureKind.SYSTEM)
    assert outcome.category == "system_error"
    assert peer.requests == []


def test_many_threads_share_one_forwarder(raw_peer: Peer) -> None:
    """The sync face is safe from many threads at once. (The peer closes each connection after
    its answer, so it says so: an unannounced close races the next call on that connection,
    which is sent once and so fails as ``disconnected``.) Its time bounds are roomy: what
    is proven here is safety, and one of its 32 calls once failed on a loaded machine under the
    half-second bounds the other tests use."""
    peer = raw_peer(reply(http("200 OK", b"{}", "connection: close")))
    roomy = ForwardLimits(connect_timeout=10, read_timeout=10, write_timeout=10, total_timeout=20)
    with Forwarder(roomy, guard=LOOPBACK) as f, ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda _: f.forward(request_to(peer)), range(32)))
    assert all(o.ok for o in outcomes), [o for o in outcomes if not o.ok]  # which, and why


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=3000))
def test_whatever_bytes_a_peer_sends_the_forwarder_never_raises(
    raw_peer: Peer, data: bytes
) -> None:
    """Any bytes as the whole answer, then a hang-up: an outcome, never an exception."""
    peer = raw_peer(reply(data))
    outcome = forward(request_to(peer))
    assert isinstance(outcome, ProviderAnswer | ForwardFailure)
    assert provider_response(outcome).status in ("ok", "request_error", "system_error")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    status=st.integers(100, 999),
    body=st.one_of(
        st.binary(max_size=2000),
        st.builds(lambda v: json.dumps(v).encode(), st.dictionaries(st.text(), st.integers())),
    ),
)
def test_whatever_status_and_body_an_http_peer_sends_the_outcome_is_classified(
    raw_peer: Peer, status: int, body: bytes
) -> None:
    """Any status line and body: an answer only for 2xx, else a classified failure."""
    peer = raw_peer(reply(http(f"{status} X", body)))
    outcome = forward(request_to(peer))
    if isinstance(outcome, ProviderAnswer):
        assert 200 <= outcome.status < 300
    else:
        assert outcome.kind in FailureKind
