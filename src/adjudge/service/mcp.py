"""The MCP endpoint at ``POST /``: the gateway's tools over the Model Context Protocol.

One endpoint speaks two dialects, chosen per request by its ``MCP-Protocol-Version`` header
(the rule the official SDK's own server follows):

- **stateless (2026-07-28)** — a modern version in the header: each POST carries one JSON-RPC
  request whose ``params._meta`` holds ``io.modelcontextprotocol/protocolVersion`` and
  ``…/clientCapabilities``; the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``
  headers must repeat the body (``-32020`` otherwise). No handshake, no session. The ``goassay``
  client speaks only this; the official SDK speaks it after ``server/discover`` (``mode="auto"``)
  or when pinned to the version. Results carry ``resultType`` (and list results ``ttlMs`` and
  ``cacheScope``) as the revision requires.
- **handshake (2024-11-05 … 2025-11-25)** — no header, or a handshake-era one: ``initialize``
  answers with an ``Mcp-Session-Id``, which every later request must send back (``400`` without
  it, ``404`` when it does not open). The id is a token sealed under the server secret
  (AES-GCM, bound to the caller's account and the negotiated version, valid for
  :data:`SESSION_SECONDS`), so any ``serve`` process on the same database and secret accepts
  it and no process keeps session state. ``DELETE`` cannot end such a session (``405``); it
  simply expires.

Every POST needs ``Authorization: Bearer <adjudge API key>`` (``401`` in the REST error shape
``{"error": {"code", "message"}}`` otherwise, which the goassay client reads). A notification
is acknowledged ``202`` with no body. Answers are ``application/json``, never a stream: nothing
here sends the client anything but the answer to its request, so a ``GET`` asking for an event
stream is ``405`` (``Allow: POST``), while a browser's ``GET /`` still goes to the web UI.

Methods: ``server/discover`` (stateless), ``initialize`` (handshake), ``ping``, ``tools/list``
(every callable tool, each with ``_meta["assay/price"] = {"maxAmount", "asset"}``, a page at a
time with ``nextCursor``; the first page also lists the meta tools) and ``tools/call``: a
provider tool, or a meta tool — ``search_tools``, ``get_tool``, ``call_tool``. Unknown methods
are ``-32601``; a body that is not I-JSON ``-32700`` (:func:`adjudge.service.ingress.parse`);
one that is not a JSON-RPC request ``-32600``; bad params ``-32602``.

A tool result carries the mapped output as ``structuredContent`` (when the call settled and the
output is an object) and as JSON text, ``isError`` when the call did not settle (or settled
with an answer outside the tool's promised shape), ``_meta["assay/receipt"]`` (the call's
answer: status, prices, verdict, checks, the signed receipt) and ``_meta["assay/replayed"]``.
``_meta["assay/idempotency-key"]`` on a call is its Idempotency-Key; without one, the request's
``Idempotency-Key`` header is, as on every REST route (a retry that carries its key there only is
answered from the first call, never charged again). A refusal (an
:class:`adjudge.Error`) is a result with ``isError`` and ``_meta["assay/error"] = {code,
message, retryable, retryAfterMs?, details?}``, as the goassay client reads it; it waits and
resends on ``IDEMPOTENCY_IN_PROGRESS``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio.to_thread
from starlette.types import Receive, Scope, Send

import adjudge
from adjudge import error_codes, json_text
from adjudge.app import Account, App
from adjudge.app.gateway import META_TOOLS
from adjudge.app.timing import stage
from adjudge.errors import BadInput, Error, NotFound, RateLimited, Unavailable, kind_of
from adjudge.market.money import LEDGER_CURRENCY
from adjudge.service import turns
from adjudge.service.deps import authenticate, bearer
from adjudge.service.ingress import PARSE_ON_LOOP, WireError, parse_async

# --- the protocol's words -----------------------------------------------------------------

#: The stateless revision (SEP-2575), the one the goassay client speaks.
MODERN: Final = "2026-07-28"
MODERN_VERSIONS: Final = (MODERN,)
#: Revisions reached through the ``initialize`` handshake, oldest first.
HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: Handshake revisions that know ``outputSchema`` and ``structuredContent``.
_STRUCTURED: Final = frozenset({"2025-06-18", "2025-11-25", MODERN})

PROTOCOL_VERSION_META: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"
PRICE_META: Final = "assay/price"
RECEIPT_META: Final = "assay/receipt"
REPLAYED_META: Final = "assay/replayed"
ERROR_META: Final = "assay/error"
IDEMPOTENCY_META: Final = "assay/idempotency-key"
VOUCHER_META: Final = "assay/voucher"
#: adjudge's own ``_meta`` keys: on a listed tool, the policy version that would judge a call
#: and an announced price increase; on a call, the most its caller accepts (the quote's shape).
POLICY_META: Final = "adjudge/policy"
PENDING_PRICE_META: Final = "adjudge/pending-price"
MAX_PRICE_META: Final = "adjudge/max-price"

# JSON-RPC 2.0 and MCP error codes.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
HEADER_MISMATCH: Final = -32020
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
#: The HTTP status of a JSON-RPC error on the stateless wire (the SDK's own table); the
#: handshake wire answers handler errors with 200 inside the session, as its servers do.
_ERROR_STATUS: Final = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}

#: How long a handshake session id opens, in seconds.
SESSION_SECONDS: Final = 24 * 3600
#: Tools per ``tools/list`` page (the meta tools come on top of the first).
PAGE: Final = 100
#: The most results a ``search_tools`` page holds, and its default.
SEARCH_MAX: Final = 100
SEARCH_DEFAULT: Final = 20
_SESSION_CONTEXT: Final = "mcp-session"
_SERVER_INFO: Final = {"name": "adjudge", "version": adjudge.__version__}
_INSTRUCTIONS: Final = (
    "Paid tools, verified: every call is checked against the tool's contract and policy, and "
    "the verdict decides the charge (see _meta['assay/receipt'] on each result)."
)


class RpcError(Exception):
    """A JSON-RPC error answer: its code, message and optional data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True)
class Call:
    """One JSON-RPC request being answered: who sent it, in which revision."""

    app: App
    caller: Account
    version: str
    #: The request's ``Idempotency-Key`` header: the key of a call whose ``_meta`` names none.
    key: str | None = None

    @property
    def modern(self) -> bool:
        """Whether the request came on the stateless wire."""
        return self.version in MODERN_VERSIONS


Handler = Callable[[Call, dict[str, Any]], Awaitable[dict[str, Any]]]


# --- the meta tools -----------------------------------------------------------------------

_PRICE_SCHEMA: Final = {
    "type": "object",
    "required": ["maxAmount", "asset"],
    "properties": {"maxAmount": {"type": "string"}, "asset": {"type": "string"}},
}

#: The meta tools as ``tools/list`` shows them (free: no price).
META_DEFINITIONS: Final[list[dict[str, Any]]] = [
    {
        "name": "search_tools",
        "description": "Find callable tools by what they do (a word of the name or the "
        "description); each result names the tool and its price.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "maxLength": 200},
                "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX},
                "category": {"type": "string"},
                "detail": {"type": "string"},
                "cursor": {"type": "string"},
            },
        },
        "outputSchema": {
            "type": "object",
            "required": ["results"],
            "properties": {
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "assayPrice"],
                        "properties": {"name": {"type": "string"}, "assayPrice": _PRICE_SCHEMA},
                    },
                },
                "nextCursor": {"type": ["string", "null"]},
            },
        },
    },
    {
        "name": "get_tool",
        "description": "One tool's description, input and output schemas, provider and price.",
        "inputSchema": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}},
        },
        "outputSchema": {
            "type": "object",
            "required": ["name", "price"],
            "properties": {"name": {"type": "string"}, "price": _PRICE_SCHEMA},
        },
    },
    {
        "name": "call_tool",
        "description": "Call a tool by name with its arguments, as tools/call does.",
        "inputSchema": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
        },
    },
]
assert {d["name"] for d in META_DEFINITIONS} == META_TOOLS


def quote(price: Mapping[str, Any]) -> dict[str, str]:
    """A tool's price as the goassay client reads it: the most a call costs, and its asset."""
    return {"maxAmount": str(price["amount"]), "asset": str(price["asset"])}


def listed(view: Mapping[str, Any], version: str) -> dict[str, Any]:
    """A callable tool as ``tools/list`` shows it, its price in ``_meta``."""
    definition = dict(view["definition"])
    if version not in _STRUCTURED:
        definition.pop("outputSchema", None)
    meta: dict[str, Any] = {PRICE_META: quote(view["price"]), "adjudge/provider": view["provider"]}
    meta[POLICY_META] = view.get("judged_by")
    pending = view.get("pending_price")
    if pending is not None:
        meta[PENDING_PRICE_META] = quote(pending) | {"from": pending["from"]}
    definition["_meta"] = meta
    return definition


def max_price(meta: Any) -> int | None:
    """The most a call's caller accepts, from ``_meta["adjudge/max-price"]`` (the quote's shape,
    ``{"maxAmount": "<minor units>", "asset": "USDC"}``); None when absent."""
    found = meta.get(MAX_PRICE_META) if isinstance(meta, dict) else None
    if found is None:
        return None
    amount = found.get("maxAmount") if isinstance(found, dict) else None
    asset = found.get("asset") if isinstance(found, dict) else None
    if (
        not isinstance(amount, str)
        or not amount.isascii()
        or not amount.isdigit()
        or len(amount) > 19
        or int(amount) >= 2**63
        or asset != LEDGER_CURRENCY
    ):
        raise BadInput(
            f'_meta[{MAX_PRICE_META!r}] is {{"maxAmount": "<whole minor units>", "asset": '
            f'"{LEDGER_CURRENCY}"}}, the shape of the price a tool is listed with.',
            code="PAYMENT_MAX_INVALID",
        )
    return int(amount)


def _meta_tool(definition: Mapping[str, Any], version: str) -> dict[str, Any]:
    shown = dict(definition)
    if version not in _STRUCTURED:
        shown.pop("outputSchema", None)
    return shown


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def structured(value: dict[str, Any]) -> dict[str, Any]:
    """A meta tool's answer: the object as structured content and as JSON text."""
    return {"content": [{"type": "text", "text": _text(value)}], "structuredContent": value}


def refusal(error: Error) -> dict[str, Any]:
    """A refusal as the goassay client reads it: an error result with ``assay/error``."""
    detail: dict[str, Any] = {
        "code": error.code,
        "message": error.message,
        # Worth sending again unchanged, later: what was not available now.
        "retryable": (error_codes.kind(error.code) or kind_of(error)) is Unavailable,
    }
    if isinstance(error, RateLimited):
        detail["retryable"] = True
        detail["retryAfterMs"] = int(error.retry_after * 1000)
    details = getattr(error, "details", None)
    if isinstance(details, list):
        detail["details"] = {"problems": details}
    elif isinstance(details, dict):
        detail["details"] = details
    return {
        "content": [{"type": "text", "text": f"{error.code}: {error.message}"}],
        "isError": True,
        "_meta": {ERROR_META: detail},
    }


def call_result(answer: Mapping[str, Any], replayed: bool, version: str) -> dict[str, Any]:
    """A forwarded call's answer as an MCP tool result.

    The mapped output is ``structuredContent`` only when the call settled and the output is an
    object (what MCP's structured content is, and what the SDK checks against the listed
    ``outputSchema``), and its JSON is the text. A call that did not settle is ``isError``, its
    text saying why; so is one that settled (no policy, a shadow policy) with an answer that
    does not fit the tool's promised shape, since there is no output to hand over.
    """
    output = answer.get("output")
    settled = answer.get("status") == "settled"
    result: dict[str, Any]
    if settled and output is not None:
        result = {"content": [{"type": "text", "text": _text(output)}], "isError": False}
        if isinstance(output, dict) and version in _STRUCTURED:
            result["structuredContent"] = output
    else:
        why = f"The call was {answer.get('status')}: {answer.get('decidedBy')}"
        error = answer.get("error")
        if isinstance(error, dict):
            why += f" ({error.get('code')}: {error.get('message')})"
        elif settled:
            why += "; the provider's answer does not fit the tool's output schema"
        result = {"content": [{"type": "text", "text": why + "."}], "isError": True}
    result["_meta"] = {RECEIPT_META: dict(answer), REPLAYED_META: replayed}
    return result


# --- the methods --------------------------------------------------------------------------


async def _discover(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": {"tools": {"listChanged": False}},
        "instructions": _INSTRUCTIONS,
        "ttlMs": 0,
        "cacheScope": "public",
    }


async def _ping(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    return {}


async def _list_tools(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise RpcError(INVALID_PARAMS, "A cursor is the string a listing gave.")
    try:
        page = await anyio.to_thread.run_sync(
            lambda: call.app.tools.search(limit=PAGE, cursor=cursor)
        )
    except Error as exc:  # CURSOR_INVALID
        raise RpcError(INVALID_PARAMS, exc.message, {"code": exc.code}) from None
    tools = [listed(view, call.version) for view in page["tools"]]
    if cursor is None:
        tools = [_meta_tool(d, call.version) for d in META_DEFINITIONS] + tools
    result: dict[str, Any] = {"tools": tools}
    if page["next_cursor"] is not None:
        result["nextCursor"] = page["next_cursor"]
    if call.modern:
        result.update(ttlMs=0, cacheScope="public")
    return result


def _idempotency_key(meta: Any) -> str | None:
    key = meta.get(IDEMPOTENCY_META) if isinstance(meta, dict) else None
    if key is not None and not isinstance(key, str):
        raise BadInput(
            "_meta['assay/idempotency-key'] is a string of printable ASCII.",
            code="INVALID_IDEMPOTENCY_KEY",
        )
    return key


async def _call_tool(call: Call, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    arguments = params.get("arguments")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name, the tool's name.")
    if arguments is not None and not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "params.arguments is an object of the tool's arguments.")
    args = arguments or {}
    meta = params.get("_meta")
    if meta is not None and not isinstance(meta, dict):
        raise RpcError(INVALID_PARAMS, "params._meta is an object, as MCP defines it.")
    try:
        if isinstance(meta, dict) and VOUCHER_META in meta:
            raise BadInput(
                "This gateway charges the caller's prepaid adjudge balance; it takes no "
                "payment vouchers. Nothing was charged.",
                code="PAYMENT_VOUCHER_UNSUPPORTED",
            )
        key = _idempotency_key(meta)
        if key is None:
            key = call.key
        most = max_price(meta)
        meta_tool = _META_TOOLS.get(name)
        if meta_tool is not None:
            return await meta_tool(call, args, key, most)
        return await _provider_call(call, name, args, key, most)
    except Error as exc:
        return refusal(exc)


async def _provider_call(
    call: Call, name: str, args: dict[str, Any], key: str | None, most: int | None
) -> dict[str, Any]:
    gateway = call.app.gateway
    answer = await gateway.call_async(call.caller, name, args, key=key, max_price=most)
    with stage("mcp.answer"):
        return call_result(answer.value, answer.replayed, call.version)


#: A meta tool argument's Python type, in JSON's words.
_KINDS: Final = {str: "a string", int: "a whole number", dict: "an object"}


def _argument(args: Mapping[str, Any], name: str, kind: type, tool: str) -> Any:
    value = args.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise BadInput(
            f"{tool}: the argument {name!r} must be {_KINDS[kind]}.",
            code="TOOL_ARGUMENTS_INVALID",
        )
    return value


async def _search_tools(
    call: Call, args: dict[str, Any], key: str | None, most: int | None
) -> dict[str, Any]:
    query = _argument(args, "query", str, "search_tools")
    limit = _argument(args, "limit", int, "search_tools")
    cursor = _argument(args, "cursor", str, "search_tools")
    category = _argument(args, "category", str, "search_tools")
    _argument(args, "detail", str, "search_tools")
    if limit is not None and not 1 <= limit <= SEARCH_MAX:
        raise BadInput(
            f"search_tools: 'limit' is 1 to {SEARCH_MAX}.", code="TOOL_ARGUMENTS_INVALID"
        )
    if category:
        # adjudge files tools under no category: a category filter matches none of them.
        return structured({"results": [], "nextCursor": None})
    page = await anyio.to_thread.run_sync(
        lambda: call.app.tools.search(
            query=query or None, limit=limit or SEARCH_DEFAULT, cursor=cursor
        )
    )
    results = [
        {
            "name": view["name"],
            "description": view["description"],
            "provider": view["provider"],
            "assayPrice": quote(view["price"]),
            "price": view["price"],
            "pendingPrice": view["pending_price"],
            "policy": view["judged_by"],
        }
        for view in page["tools"]
    ]
    return structured({"results": results, "nextCursor": page["next_cursor"]})


async def _get_tool(
    call: Call, args: dict[str, Any], key: str | None, most: int | None
) -> dict[str, Any]:
    name = _argument(args, "name", str, "get_tool")
    if name is None:
        raise BadInput("get_tool needs the argument 'name'.", code="TOOL_ARGUMENTS_INVALID")
    view = await anyio.to_thread.run_sync(lambda: call.app.tools.get(name))
    definition = listed(view, call.version)
    shown = {
        "name": view["name"],
        "description": view["description"],
        "provider": view["provider"],
        "version": view["version"],
        "price": quote(view["price"]),
        "listedPrice": view["price"],
        "pendingPrice": view["pending_price"],
        "policy": view["policy"],
        "judgedBy": view["judged_by"],
        "policyDocument": view["policy_document"],
        "refundedOutput": view["refunded_output"],
        "inputSchema": definition["inputSchema"],
    }
    if "outputSchema" in definition:
        shown["outputSchema"] = definition["outputSchema"]
    return structured(shown)


async def _call_named(
    call: Call, args: dict[str, Any], key: str | None, most: int | None
) -> dict[str, Any]:
    name = _argument(args, "name", str, "call_tool")
    arguments = _argument(args, "arguments", dict, "call_tool")
    if name is None:
        raise BadInput("call_tool needs the argument 'name'.", code="TOOL_ARGUMENTS_INVALID")
    if name in META_TOOLS:
        raise NotFound(
            f"call_tool calls provider tools; call {name} with tools/call.",
            code="TOOL_NOT_FOUND",
        )
    return await _provider_call(call, name, arguments or {}, key, most)


MetaTool = Callable[[Call, dict[str, Any], str | None, int | None], Awaitable[dict[str, Any]]]
_META_TOOLS: Final[dict[str, MetaTool]] = {
    "search_tools": _search_tools,
    "get_tool": _get_tool,
    "call_tool": _call_named,
}

#: Each era's methods: a method not listed is -32601.
MODERN_METHODS: Final[dict[str, Handler]] = {
    "server/discover": _discover,
    "ping": _ping,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
}
HANDSHAKE_METHODS: Final[dict[str, Handler]] = {
    "ping": _ping,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
}


# --- the HTTP exchange --------------------------------------------------------------------


def _json(value: Any) -> bytes:
    return json_text.dumps_utf8(value)


async def _respond(
    send: Send, status: int, body: bytes | None, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    out = list(headers or [])
    if body is not None:
        out.append((b"content-type", b"application/json"))
    out.append((b"content-length", str(len(body or b"")).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body or b""})


def _rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _rest_error(code: str, message: str) -> bytes:
    return _json({"error": {"code": code, "message": message}})


def _accepts(headers: Mapping[str, str], media: str) -> bool:
    """Whether the Accept header admits ``media`` (no header admits everything)."""
    accept = headers.get("accept")
    if accept is None:
        return True
    kinds = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    major = media.split("/", 1)[0]
    return bool(kinds & {media, f"{major}/*", "*/*"})


def _decode_header(value: str | None) -> str | None:
    """An ``Mcp-Name`` value, its ``=?base64?…?=`` form decoded (``None`` if that is broken)."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    payload = value[9:-2]
    try:
        raw = base64.b64decode(payload, validate=True)
        if base64.b64encode(raw).decode("ascii") != payload:
            return None
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _modern_ladder(
    message: dict[str, Any], params: dict[str, Any], headers: Mapping[str, str]
) -> None:
    """The stateless revision's checks of a request's envelope and routing headers (the SDK
    server's ladder, in its order); raises the first failure."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or not {PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META} <= set(
        meta
    ):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must carry {PROTOCOL_VERSION_META!r} and {CLIENT_CAPABILITIES_META!r}.",
        )
    version = meta[PROTOCOL_VERSION_META]
    if headers.get("mcp-protocol-version") != version:
        raise RpcError(
            HEADER_MISMATCH,
            "The mcp-protocol-version header does not match the request's protocol version.",
        )
    method = message["method"]
    if headers.get("mcp-method") != method:
        raise RpcError(HEADER_MISMATCH, "The mcp-method header does not match the method.")
    name = params.get("name") if method == "tools/call" else None
    if name is not None and _decode_header(headers.get("mcp-name")) != name:
        raise RpcError(HEADER_MISMATCH, "The mcp-name header does not match params.name.")
    if version not in MODERN_VERSIONS:
        raise RpcError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )


class McpEndpoint:
    """The ASGI app serving ``/``: MCP on POST; on GET, ``405`` for an event-stream request
    and the web UI for a browser. A plain ASGI app, not a FastAPI route: the endpoint parses
    its own body (strictly, once) and answers in JSON-RPC, so the framework's request
    machinery would only cost time on the gateway's hot path."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request."""
        headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]
        }
        method = scope["method"]
        if method in ("GET", "HEAD"):
            if _accepts_stream_only(headers):
                await _respond(
                    send,
                    405,
                    _rest_error(
                        "METHOD_NOT_ALLOWED",
                        "This MCP endpoint answers each request in its POST's response and "
                        "opens no stream to the client.",
                    ),
                    [(b"allow", b"POST")],
                )
                return
            await _respond(send, 307, None, [(b"location", b"/ui/")])
            return
        if method != "POST":
            await _respond(
                send,
                405,
                _rest_error(
                    "METHOD_NOT_ALLOWED",
                    "MCP requests are POSTed here; a session is not ended by DELETE, it expires.",
                ),
                [(b"allow", b"GET, POST")],
            )
            return
        app = scope["app"].state.adjudge
        assert isinstance(app, App)
        # The first Authorization header, as the routes read it (``headers`` keeps the last).
        authorization = next(
            (v.decode("latin-1") for n, v in scope["headers"] if n == b"authorization"), None
        )
        try:
            caller = await authenticate(app, bearer(authorization), scope.get("client"))
            turns.serve_as(caller.id)
        except Error as exc:
            await _respond(
                send,
                401,
                _rest_error(exc.code, exc.message),
                [(b"www-authenticate", b'Bearer realm="adjudge"')],
            )
            return
        if turns.large(scope["headers"], PARSE_ON_LOOP):
            async with turns.large_body(caller.id):
                await self._read_and_answer(app, caller, headers, scope, receive, send)
            return
        await self._read_and_answer(app, caller, headers, scope, receive, send)

    async def _read_and_answer(
        self,
        app: App,
        caller: Account,
        headers: Mapping[str, str],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        body = await _body(receive)
        status, answer, extra = await self._answer(app, caller, headers, scope["headers"], body)
        with stage("mcp.answer"):
            encoded = None if answer is None else _json(answer)
        await _respond(send, status, encoded, extra)

    async def _answer(
        self,
        app: App,
        caller: Account,
        headers: Mapping[str, str],
        raw_headers: list[tuple[bytes, bytes]],
        body: bytes,
    ) -> tuple[int, Any, list[tuple[bytes, bytes]]]:
        """The status, JSON-RPC answer (``None``: no body) and extra headers of one POST."""
        if not _accepts(headers, "application/json"):
            return 406, _rpc_error(None, INVALID_REQUEST, "Accept application/json."), []
        try:
            with stage("mcp.parse"):  # a large body off the loop, as every route's
                message = await parse_async(body)
        except WireError as exc:
            return 400, _rpc_error(None, PARSE_ERROR, f"Parse error: {exc.detail}"), []
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return (
                400,
                _rpc_error(None, INVALID_REQUEST, "The body must be one JSON-RPC 2.0 message."),
                [],
            )
        version_header = headers.get("mcp-protocol-version")
        modern = version_header is not None and version_header not in HANDSHAKE_VERSIONS
        if "id" not in message:
            if not isinstance(message.get("method"), str):
                return 400, _rpc_error(None, INVALID_REQUEST, "A notification has a method."), []
            return 202, None, []  # nothing here acts on a notification
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            text = "A request id is a string or an integer."
            return 400, _rpc_error(None, INVALID_REQUEST, text), []
        if "method" not in message and ("result" in message or "error" in message):
            if modern:
                return 400, _rpc_error(None, INVALID_REQUEST, "Post requests, not responses."), []
            return 202, None, []  # an answer to a request this server never sends
        rpc_method = message.get("method")
        params = message.get("params", {})
        if not isinstance(rpc_method, str):
            return 400, _rpc_error(request_id, INVALID_REQUEST, "A request has a method."), []
        if not isinstance(params, dict):
            return 400, _rpc_error(request_id, INVALID_PARAMS, "params is an object."), []
        extra: list[tuple[bytes, bytes]] = []
        # The first Idempotency-Key header, as the finalize lane reads it.
        key = next((v.decode("latin-1") for n, v in raw_headers if n == b"idempotency-key"), None)
        try:
            if modern:
                duplicated = _duplicated_routing_header(raw_headers)
                if duplicated is not None:
                    raise RpcError(HEADER_MISMATCH, f"The {duplicated} header appears twice.")
                with stage("mcp.parse"):
                    _modern_ladder(message, params, headers)
                call = Call(app, caller, version_header or MODERN, key)
                handler = MODERN_METHODS.get(rpc_method)
            elif rpc_method == "initialize":
                result, session = _initialize(app, caller, params)
                return (
                    200,
                    {"jsonrpc": "2.0", "id": request_id, "result": result},
                    [(b"mcp-session-id", session.encode("ascii"))],
                )
            else:
                opened = _open_session(app, caller, headers.get("mcp-session-id"))
                if isinstance(opened, tuple):
                    status, text = opened
                    return status, _rpc_error(request_id, INVALID_REQUEST, text), []
                call = Call(app, caller, opened, key)
                handler = HANDSHAKE_METHODS.get(rpc_method)
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"Method not found: {rpc_method}")
            result = await handler(call, params)
        except RpcError as exc:
            status = _ERROR_STATUS.get(exc.code, 200) if modern else 200
            return status, _rpc_error(request_id, exc.code, exc.message, exc.data), extra
        except Error as exc:  # a read failed (the database): nothing was changed
            return 200, _rpc_error(request_id, INTERNAL_ERROR, exc.message, exc.to_dict()), extra
        if modern:
            result.setdefault("resultType", "complete")
            meta = result.setdefault("_meta", {})
            meta.setdefault(SERVER_INFO_META, dict(_SERVER_INFO))
        return 200, {"jsonrpc": "2.0", "id": request_id, "result": result}, extra


def _accepts_stream_only(headers: Mapping[str, str]) -> bool:
    """Whether a GET asks for an event stream (an MCP client), not a page (a browser)."""
    accept = headers.get("accept", "")
    kinds = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    return "text/event-stream" in kinds and "text/html" not in kinds


def _duplicated_routing_header(raw: list[tuple[bytes, bytes]]) -> str | None:
    seen: set[bytes] = set()
    for name, _ in raw:
        if name in (b"mcp-protocol-version", b"mcp-method", b"mcp-name"):
            if name in seen:
                return name.decode("ascii")
            seen.add(name)
    return None


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


# --- handshake sessions -------------------------------------------------------------------


def _initialize(app: App, caller: Account, params: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The ``initialize`` answer and its session id: the version asked for when this server
    speaks it, else its newest handshake revision (the client then decides)."""
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise RpcError(INVALID_PARAMS, "initialize needs params.protocolVersion.")
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    issued = int(app.clock.now().timestamp())
    session = app.gateway.box.seal(
        _json({"a": caller.id, "v": version, "t": issued}), context=_SESSION_CONTEXT
    )
    result = {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": dict(_SERVER_INFO),
        "instructions": _INSTRUCTIONS,
    }
    return result, session


def _open_session(app: App, caller: Account, session: str | None) -> str | tuple[int, str]:
    """The negotiated version a session id holds, or the status and sentence refusing it:
    ``400`` without one, ``404`` for one that does not open, is another caller's, or expired
    (the client then starts a new session)."""
    if not session:
        return 400, "Bad Request: send the Mcp-Session-Id that initialize gave."
    try:
        opened = json.loads(app.gateway.box.open(session, context=_SESSION_CONTEXT))
    except (Error, ValueError):
        return 404, "Not Found: the session id is not one this service gave; initialize again."
    now = app.clock.now().timestamp()
    if (
        not isinstance(opened, dict)
        or opened.get("a") != caller.id
        or opened.get("v") not in HANDSHAKE_VERSIONS
        or not isinstance(opened.get("t"), int)
        or not opened["t"] - 60 <= now <= opened["t"] + SESSION_SECONDS
    ):
        return 404, "Not Found: the session has expired or is another caller's; initialize again."
    return str(opened["v"])


__all__ = ["McpEndpoint", "call_result", "listed", "refusal"]
