"""A request's line and headers are bounded where the bytes arrive (``service.http11``): one
client streaming a huge header is answered ``431 HEADERS_TOO_LARGE`` and cut off after a few
tens of KiB, holding no more of it, while another client's requests are answered meanwhile;
a head within the bound is served as always."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import pytest

from adjudge.service import http11, ingress
from adjudge.service.http11 import MAX_HEAD_BYTES
from support import http
from support.harness import Harness
from support.live import serving


def _send_head(base: str, pad: int, chunk: int = 1 << 16) -> tuple[int, bytes]:
    """Send a request whose one header holds ``pad`` bytes, ``chunk`` at a time; the bytes
    sent before the server stopped reading, and its answer."""
    host, port = base.split("//")[1].split(":")
    sent = 0
    with socket.create_connection((host, int(port)), timeout=10) as s:
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: ")
            while sent < pad:
                s.sendall(b"a" * min(chunk, pad - sent))
                sent += min(chunk, pad - sent)
                if sent > MAX_HEAD_BYTES:
                    time.sleep(0.001)  # the server's answer comes as it reads
            s.sendall(b"\r\nConnection: close\r\n\r\n")
        except OSError:  # the server answered and closed while we sent
            pass
        answer = b""
        try:
            while part := s.recv(65536):
                answer += part
        except OSError:
            pass
    return sent, answer


def _secured(head: bytes) -> None:
    """A refusal's head carries the security headers every answer of the service has."""
    lines = head.lower().split(b"\r\n")
    for line in (
        b"x-content-type-options: nosniff",
        b"x-frame-options: deny",
        b"referrer-policy: no-referrer",
        b"content-security-policy: default-src 'none'; frame-ancestors 'none'",
        b"cache-control: no-store",
    ):
        assert line in lines, head


def test_a_huge_header_is_refused_as_it_arrives(h: Harness) -> None:
    """A 64 MiB header: 431 with the service's error shape, the connection closed long before
    the header was whole; /health answers in between; a 16 KiB header is served."""
    with serving(h.app) as base:
        sent, answer = _send_head(base, 64 << 20)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 431 "), answer[:200]
        refusal = json.loads(body)["error"]
        assert refusal["code"] == "HEADERS_TOO_LARGE" and "32768 bytes" in refusal["message"]
        assert f"x-request-id: {refusal['request_id']}".encode() in head  # as every answer
        _secured(head)
        assert sent < 16 << 20  # cut off as it came, not read whole
        assert http.get(base + "/health", timeout=10).status_code == 200
        _, served = _send_head(base, 16 << 10)
        assert served.startswith(b"HTTP/1.1 200 "), served[:200]


def test_a_body_is_read_only_after_the_key_is_checked(h: Harness) -> None:
    """A request with a body and no key (or an unknown one) is 401 before the body is parsed
    (before: its malformed body was ``400 INVALID_JSON``, its 4 MiB a second of the loop's
    CPU); with a key the same body is the parser's refusal."""
    bad = b"[" * 50 + b"\\ud800"
    for key in (None, "nope"):
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        r = h.client.post("/api/v1/tasks", content=bad, headers=headers)
        assert (r.status_code, r.json()["error"]["code"]) == (401, "UNAUTHORIZED"), r.text
    r = h.client.post(
        "/api/v1/tasks",
        content=bad,
        headers={"Authorization": f"Bearer {h.keys['pat']}", "Content-Type": "application/json"},
    )
    assert (r.status_code, r.json()["error"]["code"]) == (400, "INVALID_JSON")


def test_every_route_that_reads_a_body_needs_a_key(h: Harness) -> None:
    """Each route with a body checks the caller's key first (``deps.KeyedRoute``), which holds
    only because every such route needs one: a route taking a body from anyone would need its
    own bound instead."""
    from fastapi.routing import APIRoute  # noqa: PLC0415

    from adjudge.service.deps import KeyedRoute, _caller  # noqa: PLC0415

    def needs(dependant: Any) -> bool:
        return any(d.call is _caller or needs(d) for d in dependant.dependencies)

    with_body = [
        r for r in h.client.app.routes if isinstance(r, APIRoute) and r.body_field is not None
    ]
    assert len(with_body) > 20
    for route in with_body:
        assert isinstance(route, KeyedRoute) and needs(route.dependant), route.path


def test_a_large_body_is_parsed_off_the_event_loop(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A body past ``PARSE_ON_LOOP`` is parsed on a worker thread, a small one on the loop."""
    seen: list[bool] = []
    real = ingress.parse

    def parse(body: bytes) -> Any:
        try:
            asyncio.get_running_loop()
            seen.append(True)
        except RuntimeError:
            seen.append(False)
        return real(body)

    monkeypatch.setattr(ingress, "parse", parse)
    for size in (10, ingress.PARSE_ON_LOOP + 1):
        body = {"title": "t", "brief": "x" * size, "mode": "manual", "reward_minor": "1"}
        h.call("pat", "POST", "/tasks", body)
    assert seen == [True, False]


def test_a_large_body_then_a_pipelined_request_is_no_large_head(h: Harness) -> None:
    """A request with a 200 KiB body and another sent behind it on the same connection: the
    body's bytes are not counted as the next request's head; both are answered."""
    with serving(h.app) as base:
        host, port = base.split("//")[1].split(":")
        body = b"x" * 200_000
        first = b"POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
        second = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        with socket.create_connection((host, int(port)), timeout=10) as s:
            # The next head begins in the chunk that ends the body, and ends in the next one.
            for piece in (first + body[:100], body[100:] + second[:10], second[10:]):
                s.sendall(piece)
                time.sleep(0.1)
            answer = b""
            while part := s.recv(65536):
                answer += part
    assert answer.count(b"HTTP/1.1 ") == 2 and b" 431 " not in answer, answer[:300]
    assert b"HTTP/1.1 200 " in answer


def test_a_head_past_the_bound_in_one_piece_is_refused(h: Harness) -> None:
    """A 40 KiB header sent in one piece (read in one chunk, so never counted as it arrives)
    is measured whole and refused; one of 30 KiB is served."""
    with serving(h.app) as base:
        host, port = base.split("//")[1].split(":")
        for pad, status in ((40_000, b" 431 "), (30_000, b" 200 ")):
            head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\nConnection: close\r\n\r\n"
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(head % (b"a" * pad))
                answer = b""
                while part := s.recv(65536):
                    answer += part
            assert answer.startswith(b"HTTP/1.1" + status), (pad, answer[:200])


def _answer_to(base: str, *pieces: bytes, pause: float = 0.0) -> bytes:
    """Send ``pieces`` on one connection, ``pause`` seconds after each (until the server
    closes it); the server's answers until it closes."""
    host, port = base.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        try:
            for piece in pieces:
                s.sendall(piece)
                time.sleep(pause)
        except OSError:  # closed by the server: its answer is read below
            pass
        answer = b""
        while part := s.recv(65536):
            answer += part
    return answer


def test_a_head_that_does_not_arrive_in_time_is_cut_off(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection that sends nothing, or a head it never finishes, is answered ``408
    REQUEST_TIMEOUT`` and closed once the head's time is up (here 0.3 s); a request on the
    same connection after a pause between requests is timed from its own first byte."""
    monkeypatch.setattr(http11, "HEAD_SECONDS", 0.3)
    with serving(h.app) as base:
        for pieces in ((), (b"GET /health HTTP/1.1\r\nHost: x\r\n",)):
            started = time.monotonic()
            answer = _answer_to(base, *pieces)
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
            _secured(answer.partition(b"\r\n\r\n")[0])
            assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == (
                "REQUEST_TIMEOUT"
            )
            assert time.monotonic() - started < 5
        again = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        last = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        answer = _answer_to(base, again, last, pause=0.5)
        assert answer.count(b"HTTP/1.1 200 ") == 2, answer[:300]


def test_a_body_routes_key_is_looked_up_once(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key checked before the body is the caller the route is given: one look-up a
    request, not one before the body and another for the dependency."""
    seen: list[str | None] = []
    real = h.app.accounts.authenticate

    def counted(key: str | None) -> Any:
        seen.append(key)
        return real(key)

    monkeypatch.setattr(h.app.accounts, "authenticate", counted)
    h.post("manual")
    assert seen == [h.keys["pat"]]


def test_a_body_that_does_not_arrive_in_time_is_cut_off(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A body that stops (here 0.3 s without a byte), and one trickled a byte every 0.1 s past
    its whole time (here 1 s), are each answered ``408 REQUEST_TIMEOUT`` and closed (before,
    both held their connections and requests for good); /health answers meanwhile, and a body
    sent at once is served."""
    monkeypatch.setattr(http11, "BODY_IDLE_SECONDS", 0.3)
    monkeypatch.setattr(http11, "BODY_SECONDS", 1.0)
    head = b"POST /api/v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += b"Authorization: Bearer %s\r\n" % h.keys["pat"].encode()
    with serving(h.app) as base:
        for pieces, pause in (((b"{",), 0.0), ((b" ",) * 30, 0.1)):
            started = time.monotonic()
            answer = _answer_to(base, head + b"Content-Length: 100\r\n\r\n", *pieces, pause=pause)
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
            assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == (
                "REQUEST_TIMEOUT"
            )
            assert time.monotonic() - started < 5
            assert http.get(base + "/health", timeout=10).status_code == 200
        body = b'{"title": "x"}'
        answer = _answer_to(
            base, head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
        )
        assert answer.startswith(b"HTTP/1.1 422 "), answer[:200]  # served: not a whole task


def test_an_address_holds_a_bounded_number_of_connections(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With three connections an address, a fourth from it is answered ``429
    CONNECTIONS_AT_ONCE_EXCEEDED`` and closed at once (before, one address could hold every
    file descriptor of the process); once one closes, a new one is served. (The machine's own
    address, exempt in service, counted here as any other.)"""
    monkeypatch.setattr(http11.BoundedHttpTools, "per_address", 3)
    monkeypatch.setattr(http11.BoundedHttpTools, "loopback_exempt", False)  # the test's address
    with serving(h.app) as base:
        host, port = base.split("//")[1].split(":")
        held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
        try:
            answer = _answer_to(base)
            assert answer.startswith(b"HTTP/1.1 429 "), answer[:200]
            refusal = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
            assert refusal["code"] == "CONNECTIONS_AT_ONCE_EXCEEDED"
            held.pop().close()
            deadline = time.monotonic() + 5
            while http11.BoundedHttpTools.open_by_address.get("127.0.0.1", 0) > 2:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            served = _answer_to(
                base, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            assert served.startswith(b"HTTP/1.1 200 "), served[:200]
        finally:
            for s in held:
                s.close()


def test_the_machines_own_connections_are_not_counted(h: Harness) -> None:
    """A proxy in front of the service, or the demo's provider, connects from this machine:
    five connections from loopback with one allowed an address are all served."""
    assert _loopback_served(h, 5)


def _loopback_served(h: Harness, count: int) -> bool:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(http11.BoundedHttpTools, "per_address", 1)
        with serving(h.app) as base:
            host, port = base.split("//")[1].split(":")
            held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(count)]
            try:
                for s in held:
                    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return all(s.recv(12) == b"HTTP/1.1 200" for s in held)
            finally:
                for s in held:
                    s.close()


def _slow_first(seconds: float) -> Any:
    """The service with ``GET /slow`` standing for a long request (a paid call waiting on its
    provider): answered ``200 ok`` after ``seconds``."""

    def around(inner: Any) -> Any:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] == "/slow":
                await asyncio.sleep(seconds)
                start = {"type": "http.response.start", "status": 200}
                await send({**start, "headers": [(b"content-length", b"2")]})
                await send({"type": "http.response.body", "body": b"ok"})
                return
            await inner(scope, receive, send)

        return app

    return around


def test_a_queued_requests_body_is_not_timed_while_it_waits(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A POST pipelined behind a slow GET, the rest of its body sent while it is queued: the
    service reads nothing meanwhile, so its clocks do not run; the GET's answer comes first,
    then the POST's (before, the queued body's whole time ran out while the service would not
    read, and its 408 was written ahead of the GET's answer)."""
    monkeypatch.setattr(http11, "BODY_IDLE_SECONDS", 0.3)
    monkeypatch.setattr(http11, "BODY_SECONDS", 1.0)
    body = b"0123456789"
    post = b"POST /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 10\r\n\r\n"
    with serving(h.app, _slow_first(1.5)) as base:
        answer = _answer_to(
            base, b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n" + post + body[:5], body[5:], pause=0.1
        )
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert b" 408 " not in answer and answer.count(b"HTTP/1.1 ") == 2, answer[:600]


def test_a_connection_queues_at_most_sixteen_requests(h: Harness) -> None:
    """Behind a slow request, 16 more queue on a connection and are answered in turn; 2,000
    sent at once close it (before, each chunk's every request was queued: thousands a
    connection, each holding its scope and headers)."""
    tiny = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    last = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with serving(h.app, _slow_first(0.3)) as base:
        slow = b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
        answer = _answer_to(base, slow + tiny * 15 + last)
        assert answer.count(b"HTTP/1.1 200 ") == 17, answer[:300]
        started = time.monotonic()
        answer = _answer_to(base, slow + tiny * 2000)
        assert b"HTTP/1.1 " not in answer and time.monotonic() - started < 5, answer[:300]
