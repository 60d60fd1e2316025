"""The MCP endpoint's protocol, request by request: authentication, the JSON-RPC envelope, the
stateless revision's ladder, the handshake's sessions, listing and the meta tools, and the shape
of tool results — each answer held to the official SDK's own models of its revision."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable
from typing import Any

import pytest
from mcp_types import methods

from adjudge.app import App, Settings
from adjudge.errors import Error, RateLimited
from adjudge.service import mcp
from adjudge.store import Store
from support.harness import Harness, make_harness
from support.loopback import RawPeer
from support.weather import PRICE, PROVIDER, tool

MODERN = "2026-07-28"
IDEM, VOUCHER = "assay/idempotency-key", "assay/voucher"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}


@pytest.fixture
def h(sqlite_store: Store) -> Harness:
    """A service with a provider and three weather tools (never called here)."""
    harness = make_harness(sqlite_store)
    made = harness.app.accounts.create(None, PROVIDER, ["provider"])
    harness.keys[PROVIDER] = made.value["api_key"]
    for name in ("weather_forecast", "weather_history", "weather_radar"):
        doc = tool("https://api.skycast.example/v1")
        doc["name"] = name
        doc["description"] = f"The {name.split('_')[1]} for a city."
        doc["policy"] = None
        doc["contract"] = {**doc["contract"], "tool": name}
        harness.ok(PROVIDER, "POST", "/tools/callable", {"tool": doc})
    return harness


def post(
    h: Harness, body: Any, *, who: str | None = "ann", raw: bytes | None = None, **headers: str
) -> Any:
    """POST ``body`` (or ``raw`` bytes) to ``/``; returns the httpx response."""
    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if who is not None:
        sent["authorization"] = f"Bearer {h.keys[who]}"
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    content = raw if raw is not None else json.dumps(body).encode()
    return h.client.post("/", content=content, headers=sent)


def modern(h: Harness, method: str, params: dict[str, Any] | None = None, **headers: str) -> Any:
    """One stateless request, headers and envelope as a conforming client sends them."""
    params = {**(params or {}), "_meta": {**ENVELOPE, **(params or {}).get("_meta", {})}}
    sent = {"mcp_protocol_version": MODERN, "mcp_method": method}
    if method == "tools/call":
        sent["mcp_name"] = params["name"]
    sent.update(headers)
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    return post(h, body, **sent)


def result_of(response: Any, method: str, version: str = MODERN) -> dict[str, Any]:
    """The result of a 200 answer, checked against the SDK's model of ``method`` at
    ``version``."""
    assert response.status_code == 200, response.text
    message = response.json()
    assert message["jsonrpc"] == "2.0" and "error" not in message, message
    methods.validate_server_result(method, version, message["result"])
    result: dict[str, Any] = message["result"]
    return result


def error_of(response: Any, status: int) -> dict[str, Any]:
    """The JSON-RPC error of an answer with ``status``."""
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def session(h: Harness, who: str = "ann", version: str = "2025-11-25") -> tuple[str, str]:
    """Run the handshake; the session id and the negotiated version."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    r = post(h, body, who=who)
    negotiated = result_of(r, "initialize", "2025-11-25")["protocolVersion"]
    return r.headers["mcp-session-id"], negotiated


def legacy(h: Harness, sid: str | None, method: str, params: dict[str, Any] | None = None) -> Any:
    """One request inside a handshake session."""
    headers = {"mcp_protocol_version": "2025-11-25"}
    if sid is not None:
        headers["mcp_session_id"] = sid
    body = {"jsonrpc": "2.0", "id": 3, "method": method, "params": params or {}}
    return post(h, body, **headers)


def test_every_post_needs_an_api_key(h: Harness) -> None:
    """No key, or one the service does not know: 401 in the REST error shape (what goassay
    reads), before the body is looked at."""
    for who, key in ((None, None), ("ann", "adj_wrong")):
        sent = {} if key is None else {"authorization": f"Bearer {key}"}
        r = h.client.post("/", content=b"not even json", headers=sent)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert r.json()["error"]["code"] == "UNAUTHORIZED", who


def test_get_goes_to_the_ui_unless_an_mcp_client_asks_for_a_stream(h: Harness) -> None:
    """A browser's GET / is redirected to the UI; a GET asking for an event stream is 405
    (this endpoint opens none); DELETE cannot end a session (it expires)."""
    page = h.client.get("/", headers={"accept": "text/html,*/*"}, follow_redirects=False)
    assert (page.status_code, page.headers["location"]) == (307, "/ui/")
    stream = h.client.get("/", headers={"accept": "text/event-stream"})
    assert (stream.status_code, stream.headers["allow"]) == (405, "POST")
    assert h.client.delete("/").status_code == 405


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        (b"{not json", 400, mcp.PARSE_ERROR),
        (b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}', 400, mcp.PARSE_ERROR),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"n": NaN}}', 400, -32700),
        (b"\xff\xfe", 400, mcp.PARSE_ERROR),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', 400, mcp.INVALID_REQUEST),
        (b'{"id": 1, "method": "ping"}', 400, mcp.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', 400, mcp.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', 400, mcp.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', 400, mcp.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []}', 400, -32602),
    ],
)
def test_malformed_messages_are_refused_with_their_code(
    h: Harness, raw: bytes, status: int, code: int
) -> None:
    """Not I-JSON: -32700; not one JSON-RPC 2.0 request: -32600; params not an object: -32602."""
    error = error_of(post(h, None, raw=raw, mcp_protocol_version=MODERN), status)
    assert error["code"] == code


def test_an_unknown_method_is_method_not_found(h: Harness) -> None:
    """-32601, on the stateless wire with the status the SDK maps it to (404); the handshake
    wire answers it inside the session."""
    assert error_of(modern(h, "resources/list"), 404)["code"] == mcp.METHOD_NOT_FOUND
    sid, _ = session(h)
    assert error_of(legacy(h, sid, "prompts/list"), 200)["code"] == mcp.METHOD_NOT_FOUND
    assert error_of(modern(h, "initialize"), 404)["code"] == mcp.METHOD_NOT_FOUND


def test_the_stateless_ladder(h: Harness) -> None:
    """The envelope's keys are required (-32602); the routing headers must repeat the body
    (-32020), a sentinel-encoded name included; a version the service does not speak is -32022
    naming the ones it does."""
    bare = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    r = post(h, bare, mcp_protocol_version=MODERN, mcp_method="tools/list")
    assert error_of(r, 400)["code"] == mcp.INVALID_PARAMS
    r = modern(h, "tools/list", mcp_method="tools/call")
    assert error_of(r, 400)["code"] == mcp.HEADER_MISMATCH
    r = modern(h, "tools/call", {"name": "get_tool", "arguments": {}}, mcp_name="search_tools")
    assert error_of(r, 400)["code"] == mcp.HEADER_MISMATCH
    encoded = "=?base64?" + base64.b64encode(b"get_tool").decode() + "?="
    r = modern(h, "tools/call", {"name": "get_tool", "arguments": {"name": "x"}}, mcp_name=encoded)
    assert result_of(r, "tools/call")["isError"] is True  # routed: TOOL_NOT_FOUND, not -32020
    future = {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": future}}
    r = post(h, body, mcp_protocol_version="2099-01-01", mcp_method="tools/list")
    error = error_of(r, 400)
    assert error["code"] == mcp.UNSUPPORTED_PROTOCOL_VERSION
    assert error["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
    r = modern(h, "tools/list", mcp_protocol_version="2025-11-25")  # routed to the handshake
    assert r.status_code == 400  # and it has no session


def test_a_repeated_routing_header_is_a_mismatch(h: Harness) -> None:
    """Two Mcp-Method headers: first- and last-copy readers would disagree (-32020)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": ENVELOPE}}
    headers = [
        ("authorization", f"Bearer {h.keys['ann']}"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "ping"),
        ("mcp-method", "ping"),
    ]
    r = h.client.post("/", content=json.dumps(body).encode(), headers=headers)
    assert error_of(r, 400)["code"] == mcp.HEADER_MISMATCH


def test_notifications_are_acknowledged_without_a_body(h: Harness) -> None:
    """A notification (no id) is 202 with no body, on either wire."""
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    for headers in ({}, {"mcp_protocol_version": MODERN}):
        r = post(h, note, **headers)
        assert (r.status_code, r.content) == (202, b"")


def test_discover_and_ping(h: Harness) -> None:
    """server/discover names the one stateless version and the tools capability; ping is
    answered on both wires (the 2026-07-28 revision dropped it; answering costs nothing)."""
    found = result_of(modern(h, "server/discover"), "server/discover")
    assert found["supportedVersions"] == [MODERN] and "tools" in found["capabilities"]
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "adjudge"
    pong = modern(h, "ping")  # removed from the 2026-07-28 schema; still answered
    assert pong.json()["result"] == {"resultType": "complete", "_meta": found["_meta"]}
    sid, _ = session(h)
    assert result_of(legacy(h, sid, "ping"), "ping", "2025-11-25") == {}


def test_handshake_sessions_are_sealed_bound_and_expire(h: Harness) -> None:
    """initialize gives a session id (the version asked for, or the newest the service
    speaks); a request without one is 400; one that does not open, is another caller's, or
    has expired is 404."""
    sid, version = session(h)
    assert version == "2025-11-25" and sid.startswith("v1.")
    assert result_of(legacy(h, sid, "tools/list"), "tools/list", "2025-11-25")["tools"]
    _, older = session(h, version="2025-03-26")
    _, unknown = session(h, version="1999-01-01")
    assert (older, unknown) == ("2025-03-26", "2025-11-25")
    assert legacy(h, None, "tools/list").status_code == 400
    assert legacy(h, sid[:-2] + "xx", "tools/list").status_code == 404
    bobs, _ = session(h, who="bob")
    assert legacy(h, bobs, "tools/list").status_code == 404
    h.advance(hours=25)
    assert legacy(h, sid, "tools/list").status_code == 404


def test_old_handshake_revisions_list_no_output_schema(h: Harness) -> None:
    """A 2025-03-26 session predates output schemas and structured content: none is listed."""
    sid, _ = session(h, version="2025-03-26")
    tools = result_of(legacy(h, sid, "tools/list"), "tools/list", "2025-11-25")["tools"]
    assert tools and not [t for t in tools if "outputSchema" in t]


def test_tools_list_pages_through_every_tool_with_its_price(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each callable tool once, its price in _meta; the meta tools on the first page; a page
    at a time with nextCursor; a cursor the service did not give is -32602."""
    monkeypatch.setattr(mcp, "PAGE", 2)
    first = result_of(modern(h, "tools/list"), "tools/list")
    assert [t["name"] for t in first["tools"]] == [
        "search_tools",
        "get_tool",
        "call_tool",
        "weather_forecast",
        "weather_history",
    ]
    assert (first["ttlMs"], first["cacheScope"], first["resultType"]) == (0, "public", "complete")
    assert first["tools"][3]["_meta"]["assay/price"] == {"maxAmount": str(PRICE), "asset": "USDC"}
    second = result_of(modern(h, "tools/list", {"cursor": first["nextCursor"]}), "tools/list")
    assert [t["name"] for t in second["tools"]] == ["weather_radar"]
    assert "nextCursor" not in second
    bad = modern(h, "tools/list", {"cursor": "not-a-cursor"})
    assert error_of(bad, 400)["code"] == mcp.INVALID_PARAMS
    for forged in FORGED_CURSORS:  # JSON's strings are not bounded as a query's are
        assert error_of(modern(h, "tools/list", {"cursor": forged}), 400)["code"] == (
            mcp.INVALID_PARAMS
        )
        got = tool_call(h, "search_tools", {"cursor": forged})
        assert got["isError"] and got["_meta"]["assay/error"]["code"] == "CURSOR_INVALID"


def _forged(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


#: Cursors no listing gave that once were 500s: nesting past the parser's depth, half a
#: surrogate pair in the key, a time whose UTC form is before year 1.
FORGED_CURSORS = [
    _forged(b"[" * 100_000),
    _forged(b'["2020-01-01T00:00:00+00:00", "\\ud800"]'),
    _forged(b'["0001-01-01T00:00:00+23:59", "a"]'),
]


def tool_call(h: Harness, name: str, arguments: Any, **meta: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": meta}
    return result_of(modern(h, "tools/call", params), "tools/call")


def test_the_meta_tools(h: Harness) -> None:
    """search_tools finds by name or description, pages, and quotes each price; get_tool
    describes one tool with its price and schemas; a category matches nothing (adjudge files
    no tool under one)."""
    found = tool_call(h, "search_tools", {"query": "history"})
    assert not found.get("isError")
    assert [r["name"] for r in found["structuredContent"]["results"]] == ["weather_history"]
    assert found["structuredContent"]["results"][0]["assayPrice"] == {
        "maxAmount": str(PRICE),
        "asset": "USDC",
    }
    assert json.loads(found["content"][0]["text"]) == found["structuredContent"]
    page = tool_call(h, "search_tools", {"query": "weather", "limit": 2})["structuredContent"]
    rest = tool_call(h, "search_tools", {"query": "weather", "cursor": page["nextCursor"]})
    assert len(page["results"]) == 2 and len(rest["structuredContent"]["results"]) == 1
    assert tool_call(h, "search_tools", {"category": "news"})["structuredContent"] == {
        "results": [],
        "nextCursor": None,
    }
    got = tool_call(h, "get_tool", {"name": "weather_radar"})["structuredContent"]
    assert got["price"] == {"maxAmount": str(PRICE), "asset": "USDC"}
    assert got["listedPrice"] == {"amount": str(PRICE), "asset": "USDC", "decimals": 6}
    assert got["inputSchema"]["required"] == ["city"] and got["outputSchema"]["type"] == "object"


@pytest.mark.parametrize(
    ("name", "arguments", "meta", "code"),
    [
        ("search_tools", {"limit": 0}, {}, "TOOL_ARGUMENTS_INVALID"),
        ("search_tools", {"query": 5}, {}, "TOOL_ARGUMENTS_INVALID"),
        ("get_tool", {}, {}, "TOOL_ARGUMENTS_INVALID"),
        ("get_tool", {"name": "nope"}, {}, "TOOL_NOT_FOUND"),
        ("call_tool", {"name": "get_tool"}, {}, "TOOL_NOT_FOUND"),
        ("call_tool", {"name": "nope", "arguments": {}}, {}, "TOOL_NOT_FOUND"),
        ("nope", {}, {}, "TOOL_NOT_FOUND"),
        ("weather_forecast", {"town": "x"}, {}, "TOOL_ARGUMENTS_INVALID"),
        ("weather_forecast", {"city": "x"}, {IDEM: 7}, "INVALID_IDEMPOTENCY_KEY"),
        ("weather_forecast", {"city": "x"}, {IDEM: "has space"}, "INVALID_IDEMPOTENCY_KEY"),
        ("weather_forecast", {"city": "x"}, {VOUCHER: {}}, "PAYMENT_VOUCHER_UNSUPPORTED"),
    ],
)
def test_refusals_are_error_results_with_assay_error(
    h: Harness, name: str, arguments: Any, meta: dict[str, Any], code: str
) -> None:
    """A refusal is an error result whose _meta["assay/error"] carries the code, a sentence and
    whether to retry — never a crash, never a charge."""
    got = tool_call(h, name, arguments, **meta)
    assert got["isError"] is True
    error = got["_meta"]["assay/error"]
    assert error["code"] == code and error["message"] and error["retryable"] is False
    assert got["content"][0]["text"].startswith(code)
    if code == "TOOL_ARGUMENTS_INVALID" and name == "weather_forecast":
        assert error["details"]["problems"][0]["pointer"] in ("/city", "/town")
    assert h.balance("wallet:ann") == 100_000_000


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("search_tools", {"limit": True}, "'limit' must be a whole number"),
        ("search_tools", {"limit": 5.0}, "'limit' must be a whole number"),
        ("search_tools", {"limit": "5"}, "'limit' must be a whole number"),
        ("search_tools", {"query": 5}, "'query' must be a string"),
        ("call_tool", {"name": "weather_forecast", "arguments": [1]}, "must be an object"),
    ],
)
def test_a_meta_tools_argument_of_another_type_is_named_in_json_words(
    h: Harness, name: str, arguments: dict[str, Any], said: str
) -> None:
    """A meta tool's argument of the wrong JSON type is refused in JSON's words: a boolean or
    a number with a point is no limit (the sentence said 'a int' and 'a dict')."""
    error = tool_call(h, name, arguments)["_meta"]["assay/error"]
    assert error["code"] == "TOOL_ARGUMENTS_INVALID" and said in error["message"]


def test_params_that_are_not_a_tool_call_are_invalid_params(h: Harness) -> None:
    """tools/call without a string name, or with arguments that are not an object: -32602."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": ENVELOPE}}
    r = post(h, body, mcp_protocol_version=MODERN, mcp_method="tools/call")
    assert error_of(r, 400)["code"] == mcp.INVALID_PARAMS
    r = modern(h, "tools/call", {"name": "get_tool", "arguments": [1]})
    assert error_of(r, 400)["code"] == mcp.INVALID_PARAMS


@pytest.mark.parametrize("meta", [[], "key-1", 7, True])
def test_a_meta_that_is_not_an_object_is_invalid_params(h: Harness, meta: Any) -> None:
    """A tools/call whose params._meta is not an object is -32602 and calls nothing, in a
    handshake session as on the stateless wire (it was read as no _meta: the call went ahead
    without the caller's idempotency key or most price)."""
    sid, _ = session(h)
    params = {"name": "weather_forecast", "arguments": {"city": "x"}, "_meta": meta}
    r = legacy(h, sid, "tools/call", params)
    assert r.status_code == 200 and r.json()["error"]["code"] == mcp.INVALID_PARAMS
    assert "_meta" in r.json()["error"]["message"]
    assert h.ok("ann", "GET", "/gateway/calls")["calls"] == []
    assert h.balance("wallet:ann") == 100_000_000


def test_a_provider_tool_may_not_take_a_meta_tools_name(h: Harness) -> None:
    """Registering a tool named like one of the endpoint's own is TOOL_NAME_RESERVED."""
    doc = tool("https://api.skycast.example/v1")
    doc["name"] = "get_tool"
    doc["contract"] = {**doc["contract"], "tool": "get_tool"}
    doc["policy"] = None
    r = h.call(PROVIDER, "POST", "/tools/callable", {"tool": doc})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "TOOL_NAME_RESERVED")


# --- the shape of results -----------------------------------------------------------------


def answer(status: str, output: Any, error: Any = None) -> dict[str, Any]:
    return {
        "intentId": "00000000-0000-4000-8000-000000000001",
        "status": status,
        "decidedBy": "clause 1",
        "output": output,
        "error": error,
    }


@pytest.mark.parametrize("version", [MODERN, "2025-11-25"])
def test_a_settled_object_output_is_structured_content(version: str) -> None:
    """Settled with an object: structured content and the same JSON as text, not an error."""
    result = mcp.call_result(answer("settled", {"a": 1}), False, version)
    result.setdefault("resultType", "complete")
    methods.validate_server_result("tools/call", version, result)
    assert result["structuredContent"] == {"a": 1} and result["isError"] is False
    assert json.loads(result["content"][0]["text"]) == {"a": 1}
    receipt = answer("settled", {"a": 1})
    assert result["_meta"] == {"assay/receipt": receipt, "assay/replayed": False}


def test_other_outputs_are_text_or_errors() -> None:
    """A settled list is text only (MCP's structured content is an object); a settled call
    whose answer broke the shape has no output, so it is an error result; an unsettled call is
    an error result saying why; an old revision gets no structured content."""
    listed = mcp.call_result(answer("settled", [1, 2]), True, MODERN)
    assert "structuredContent" not in listed and listed["isError"] is False
    assert listed["_meta"]["assay/replayed"] is True
    broken = mcp.call_result(answer("settled", None), False, MODERN)
    assert broken["isError"] is True and "output schema" in broken["content"][0]["text"]
    timed_out = answer("refunded", None, {"code": "GATEWAY_TIMEOUT", "message": "no answer"})
    refunded = mcp.call_result(timed_out, False, MODERN)
    assert refunded["isError"] is True and "GATEWAY_TIMEOUT" in refunded["content"][0]["text"]
    old = mcp.call_result(answer("settled", {"a": 1}), False, "2025-03-26")
    assert "structuredContent" not in old


def test_a_refusal_says_when_to_retry() -> None:
    """A rate limit (IDEMPOTENCY_IN_PROGRESS among them) is retryable with retryAfterMs, so
    goassay waits and sends the same again; a storage failure is retryable; a plain refusal is
    not; a mapping of details passes through."""
    waiting = mcp.refusal(RateLimited("wait", retry_after=2, code="IDEMPOTENCY_IN_PROGRESS"))
    assert waiting["_meta"]["assay/error"] == {
        "code": "IDEMPOTENCY_IN_PROGRESS",
        "message": "wait",
        "retryable": True,
        "retryAfterMs": 2000,
    }
    plain = mcp.refusal(Error("no", code="TOOL_NOT_FOUND"))["_meta"]["assay/error"]
    assert plain["retryable"] is False and "retryAfterMs" not in plain
    from adjudge.errors import StorageError  # noqa: PLC0415

    assert mcp.refusal(StorageError("down"))["_meta"]["assay/error"]["retryable"] is True


def test_the_first_signing_key_signs_for_a_clock_a_little_behind(
    sqlite_store: Store, raw_peer: Callable[[Callable[[socket.socket, bytes], None]], RawPeer]
) -> None:
    """The gateway's first key, made on first use by one process (or the call that came first),
    signs for a call whose clock reads a few seconds earlier — concurrent first calls, or two
    `serve` processes — instead of being refused KEYRING_EMPTY as not yet created."""
    from adjudge.gateway import SecretBox  # noqa: PLC0415
    from adjudge.receipts import SignedReceipts, SigningKey  # noqa: PLC0415
    from support.fakes import FakeClock  # noqa: PLC0415

    harness = make_harness(sqlite_store)
    shared = {
        "issuer": SignedReceipts(SigningKey.generate()),
        "secrets": SecretBox([SecretBox.generate_key()]),  # one server secret, two processes
        "settings": Settings(allow_private_providers=True),
    }
    ahead_clock = FakeClock()
    ahead_clock.advance(seconds=10)
    ahead = App(sqlite_store, clock=ahead_clock, **shared)  # type: ignore[arg-type]
    assert ahead.gateway.jwks()["keys"]  # the first key, made by the process ahead
    behind = App(sqlite_store, clock=FakeClock(), **shared)  # type: ignore[arg-type]
    body = json.dumps({"latitude": 1}).encode()
    peer = raw_peer(
        lambda conn, _: conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
    )
    provider = behind.accounts.create(None, PROVIDER, ["provider"]).value["api_key"]
    doc = tool(peer.url)
    doc["policy"] = None
    behind.tools.register(behind.accounts.authenticate(provider), doc)
    ann = behind.accounts.authenticate(harness.keys["ann"])
    answer = behind.gateway.call(ann, "weather_forecast", {"city": "berlin"}).value
    assert answer["error"] is None and len(peer.requests) == 1
    ahead.close()
    behind.close()


def test_a_call_that_cannot_be_signed_ends_and_gives_the_money_back(
    sqlite_store: Store,
    raw_peer: Callable[[Callable[[socket.socket, bytes], None]], RawPeer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failure to sign after the price was reserved (no usable key) is the gateway's own
    system error: the call ends with a receipt and the reservation goes back at once, instead
    of the exception leaving it held until a sweep."""
    from adjudge.app.gateway import calls as use_cases  # noqa: PLC0415
    from adjudge.gateway.keys import KeyRingError  # noqa: PLC0415
    from adjudge.receipts import SignedReceipts, SigningKey  # noqa: PLC0415

    harness = make_harness(sqlite_store)
    app = App(
        sqlite_store,
        clock=harness.clock,
        issuer=SignedReceipts(SigningKey.generate()),
        settings=Settings(allow_private_providers=True),
    )
    peer = raw_peer(lambda conn, _: None)
    provider = app.accounts.create(None, PROVIDER, ["provider"]).value["api_key"]
    doc = tool(peer.url)
    doc["policy"] = None
    app.tools.register(app.accounts.authenticate(provider), doc)

    def no_key(*_: Any) -> Any:
        raise KeyRingError("no key", code="KEYRING_EMPTY")

    monkeypatch.setattr(use_cases, "signing_key", no_key)
    ann = app.accounts.authenticate(harness.keys["ann"])
    answer = app.gateway.call(ann, "weather_forecast", {"city": "berlin"}).value
    assert (answer["status"], answer["error"]["code"]) == ("voided", "GATEWAY_SYSTEM")
    assert peer.requests == [] and harness.balance("wallet:ann") == 100_000_000
    assert [c["state"] for c in app.gateway.list_calls(ann)["calls"]] == ["done"]
    app.close()
