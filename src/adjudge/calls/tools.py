"""Tools: a provider endpoint, the arguments it takes, the contract it promises, its price.

A tool is what an agent calls through the gateway. Its document names the provider (by the id
its request verifier knows), the provider's endpoint (base URL, HTTP method, a path template)
and where each argument goes in the request (a path segment, a query parameter, a header, a
member of the JSON body), the JSON Schema 2020-12 the arguments must fit, the existing call
contract (output schema and JMESPath response mapping, :func:`register_contract`), a price in
integer minor units and the decision policy that governs its calls.

Pure: parsing, argument checking and request building read nothing but their inputs. The bytes
of the request are decided here, once: the gateway signs exactly these bytes and sends them
unchanged, so what the provider verifies is what this module built.

    tool = parse_tool(document)                     # refuses a malformed tool (TOOL_*, CONTRACT_*)
    check_arguments(tool, arguments)                # TOOL_ARGUMENTS_INVALID with RFC 6901 pointers
    method, url, headers, body = build_request(tool, arguments)
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from jsonschema.exceptions import ValidationError

from adjudge import json_text
from adjudge.calls.contract import Contract, register_contract
from adjudge.calls.kept import json_values
from adjudge.calls.pointers import pointer

# An input schema is compiled as an output schema is: one ECMAScript reading of patterns and
# the same compiled fast path on the same conditions (see docs/calls.md, "The schema stage").
from adjudge.calls.schema import OutputSchema, compile_validators
from adjudge.errors import CriteriaError

__all__ = [
    "PROVIDER_ID",
    "TOOL_NAME",
    "ArgumentProblem",
    "ArgumentsInvalid",
    "BuiltRequest",
    "Endpoint",
    "Listed",
    "Location",
    "Placement",
    "PolicyRef",
    "Price",
    "Tool",
    "build_request",
    "check_arguments",
    "listed",
    "parse_tool",
    "percent_encode",
]

#: A tool name both real clients accept: the MCP SDK's SEP-986 rule (``[A-Za-z0-9._-]``) and the
#: goassay client's (``[A-Za-z0-9_-]``, no dot) intersect here; a dot would be refused by goassay.
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
#: A provider id exactly as goassay-provider-verify accepts it for ``aud``.
PROVIDER_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

_SCHEMA_2020 = "https://json-schema.org/draft/2020-12/schema"
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# A JSON body only where HTTP gives a body a meaning every server agrees on.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_TOOL_FIELDS = frozenset(
    {
        "name",
        "description",
        "provider",
        "endpoint",
        "input_schema",
        "contract",
        "price",
        "policy",
        "refunded_output",
    }
)
#: What a call that is not settled (refunded or voided) gives its caller of the provider's
#: answer: by default nothing but its check rows (an over-strict or hostile policy must not make
#: a tool a source of free data); a provider may opt in to returning the mapped output.
REFUNDED_OUTPUT = ("withhold", "return")
_ENDPOINT_FIELDS = frozenset({"base_url", "method", "path", "arguments", "body", "authority"})
_PLACEMENT_FIELDS = frozenset({"in", "name", "explode"})
_MAX_DESCRIPTION = 4000
_MAX_AMOUNT = 2**63 - 1
#: At most this many problems are listed for one refused set of arguments.
MAX_PROBLEMS = 20
#: The most JSON values (each object, array and scalar counted once) a tool document or a
#: contract a provider registers may hold. Its schemas are compiled into code at registration
#: and again in each process that parses the stored document, at about 0.2 ms of CPU a value
#: on the development machine (0.7 ms a property): a document of 4 MiB took 70 s and 6 GB.
#: At the bound, under half a second. (The demo's forecast tool holds 56.)
MAX_REGISTERED_VALUES = 2_000
#: The most bytes of compact JSON a tool document, a contract or a policy a provider registers
#: may take. The values bound says nothing of a string's length: a tool of 2,000 values took up
#: to the 4 MiB body, every version of it kept, and each listing's page of up to 200 tools
#: answered its documents' definitions (a page of 31 such tools was 109 MB and took 4.4 s).
#: At this bound, a page of 200 is some 26 MB at most. (The demo's forecast tool takes 1.5 kB.)
MAX_REGISTERED_BYTES = 128 * 1024
#: The most bytes of a request's URL the gateway sends (an argument placed in the path or the
#: query is percent-encoded into it), and of the headers its arguments make: a larger one is
#: refused before anything is reserved.
MAX_URL_BYTES = 8_192

# http(s)://host[:port][/path] — no userinfo, query or fragment. The host is a DNS name (ASCII:
# an internationalized name must be given as punycode), an IPv4 address or a bracketed IPv6.
_BASE_URL = re.compile(
    r"(?P<scheme>https?)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
    r"(?::(?P<port>[0-9]{1,5}))?(?P<path>/[^?#]*)?"
)
_AUTHORITY = re.compile(r"(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::[0-9]{1,5})?")
# Path characters that may stand literally in a template or base path: RFC 3986 pchar and "/",
# with every "%" starting an escape.
_PATH_TEXT = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*")
_PLACEHOLDER = re.compile(r"\{([^{}/]+)\}")
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\x20-\x7e\t]*")
# Headers an argument may never set: the transport's, the signature profile's, credentials.
RESERVED_HEADERS = frozenset(
    {
        "host", "content-length", "content-type", "content-digest", "content-encoding",
        "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade", "expect",
        "signature", "signature-input", "x-assay-call-id", "authorization", "cookie",
        "proxy-authorization", "accept-encoding",
    }
)  # fmt: skip
_CURRENCY = re.compile(
    # ISO 4217 alphabetic code, a stablecoin's ticker (USDC, USDG: no ISO code exists for them),
    # or a CAIP-19 asset id (chain/namespace:reference[/token]).
    r"[A-Z]{3}|USDC|USDG|[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}/[-a-z0-9]{3,8}:[-.%a-zA-Z0-9]{1,128}"
    r"(?:/[-.%a-zA-Z0-9]{1,78})?"
)
_DEFAULT_PORTS = {"http": "80", "https": "443"}

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = tuple(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in range(256))
_PLAIN = re.compile(r"[A-Za-z0-9\-._~]*")


def _invalid(message: str, code: str = "TOOL_INVALID") -> CriteriaError:
    return CriteriaError(message, code=code)


# ----------------------------------------------------------------------------- the parts


class Location(StrEnum):
    """Where an argument goes in the provider's request."""

    PATH = "path"  # substituted into the path template, percent-encoded
    QUERY = "query"  # a query parameter, percent-encoded
    HEADER = "header"  # a request header (scalars only)
    BODY = "body"  # a member of the JSON body object


@dataclass(frozen=True)
class Placement:
    """One argument's place in the request: its location and its name on the wire.

    ``explode`` applies to a list in the query: true sends ``k=a&k=b``, false ``k=a,b``
    (OpenAPI's ``form`` style).
    """

    argument: str
    location: Location
    wire_name: str
    explode: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"in": self.location.value, "name": self.wire_name}
        if self.location is Location.QUERY:
            out["explode"] = self.explode
        return out


@dataclass(frozen=True)
class Endpoint:
    """The provider's endpoint: where and how a call's arguments become an HTTP request.

    ``body`` is ``None`` (the JSON body, if any, is the object of the arguments placed in the
    body), ``"rest"`` (the JSON body is the object of every argument not placed in the path,
    the query or a header) or ``"argument:<name>"`` (the body is that one argument's value).
    ``authority`` is what the provider's request verifier sees as the host when that is not the
    base URL's (a proxy in between rewrites ``Host``); it is signed, never sent.
    """

    base_url: str
    method: str
    path: str
    placements: tuple[Placement, ...]
    body: str | None = None
    authority: str | None = None
    # Derived when parsed: the URL's origin, the base path, and the compiled template.
    scheme: str = field(default="", compare=False)
    host: str = field(default="", compare=False)
    base_path: str = field(default="", compare=False)
    _template: tuple[str | Placement, ...] = field(default=(), compare=False, repr=False)

    @property
    def body_argument(self) -> str | None:
        """The argument whose value is the whole body, when ``body`` is ``argument:<name>``."""
        if self.body is not None and self.body.startswith("argument:"):
            return self.body[len("argument:") :]
        return None

    def placement(self, argument: str) -> Placement | None:
        """Where ``argument`` goes, or ``None`` when the endpoint does not place it."""
        for p in self.placements:
            if p.argument == argument:
                return p
        return None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "base_url": self.base_url,
            "method": self.method,
            "path": self.path,
            "arguments": {p.argument: p.to_dict() for p in self.placements},
        }
        arg = self.body_argument
        if arg is not None:
            out["body"] = {"argument": arg}
        elif self.body is not None:
            out["body"] = self.body
        if self.authority is not None:
            out["authority"] = self.authority
        return out


#: A currency's decimals, for showing and taking amounts in its units (``{amount, asset,
#: decimals}`` on the wire; an asset not listed has none: its amounts are whole units).
DECIMALS = {"USD": 2, "EUR": 2, "GBP": 2, "JPY": 0, "USDC": 6, "USDG": 6}


@dataclass(frozen=True)
class Price:
    """What one call costs: integer minor units of a currency (ISO 4217) or asset (CAIP-19)."""

    amount_minor: int
    currency: str

    def to_dict(self) -> dict[str, Any]:
        return {"amount_minor": self.amount_minor, "currency": self.currency}


@dataclass(frozen=True)
class PolicyRef:
    """Which registered decision policy governs the tool's calls; no version: its highest."""

    id: str
    version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "version": self.version}


@dataclass(frozen=True, repr=False)
class Tool:
    """A registered tool. Build one with :func:`parse_tool`; treat its documents as read-only.

    ``policy`` is ``None`` for a tool with no decision policy: its calls are ``UNVERIFIED``.
    """

    name: str
    description: str
    provider: str
    endpoint: Endpoint
    input_schema: Mapping[str, Any]
    contract_document: Mapping[str, Any]
    price: Price
    policy: PolicyRef | None
    contract: Contract = field(compare=False)
    _schema: OutputSchema = field(compare=False)
    #: ``withhold`` (the default) or ``return``: whether a refunded or voided call's caller gets
    #: the mapped output (:data:`REFUNDED_OUTPUT`).
    refunded_output: str = "withhold"

    def __repr__(self) -> str:
        return f"<Tool {self.name} of {self.provider}: {self.endpoint.method} {self.endpoint.path}>"

    @property
    def arguments_weight(self) -> int | None:
        """The checks one value of the arguments costs at most, or None (``calls.bounds``)."""
        return self._schema.weight

    @property
    def fast_path(self) -> bool:
        """True when arguments are checked by the compiled fast validator first."""
        return self._schema.fast_path

    def to_dict(self) -> dict[str, Any]:
        """The tool's document, normalized: :func:`parse_tool` of it gives an equal tool."""
        return {
            "name": self.name,
            "description": self.description,
            "provider": self.provider,
            "endpoint": self.endpoint.to_dict(),
            "input_schema": copy.deepcopy(dict(self.input_schema)),
            "contract": copy.deepcopy(dict(self.contract_document)),
            "price": self.price.to_dict(),
            "policy": None if self.policy is None else self.policy.to_dict(),
        } | ({} if self.refunded_output == "withhold" else {"refunded_output": "return"})

    def mcp_definition(self) -> dict[str, Any]:
        """The tool as MCP lists it: ``name``, ``description``, ``inputSchema``, ``outputSchema``.

        The output schema is listed only when it is an object schema (MCP's structured content
        is an object); the price and other ``_meta`` are the endpoint's to add.
        """
        return _mcp_definition(
            self.name, self.description, self.input_schema, self.contract.output_schema
        )


def _mcp_definition(
    name: str, description: str, input_schema: Mapping[str, Any], output_schema: object
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "description": description,
        "inputSchema": copy.deepcopy(dict(input_schema)),
    }
    if isinstance(output_schema, Mapping) and output_schema.get("type") == "object":
        out["outputSchema"] = copy.deepcopy(dict(output_schema))
    return out


@dataclass(frozen=True)
class Listed:
    """What a listing shows of a registered tool, read from its stored document (the
    :meth:`Tool.to_dict` that :func:`parse_tool` checked at registration) without compiling
    its schemas: a page of tools at the registration bound took 0.3 s of CPU a tool to
    compile, and a page of 200 outgrew the cache of parsed documents, so each such page
    compiled every tool again (:func:`listed`)."""

    description: str
    policy: PolicyRef | None
    refunded_output: str
    definition: dict[str, Any]


def listed(document: Mapping[str, Any]) -> Listed:
    """A stored tool document as a listing shows it (:class:`Listed`): what
    :func:`parse_tool` of it would list, without compiling anything."""
    description = str(document.get("description", ""))
    contract = document.get("contract")
    output_schema = contract.get("output_schema") if isinstance(contract, Mapping) else None
    return Listed(
        description=description,
        policy=_parse_policy_ref(document.get("policy")),
        refunded_output=str(document.get("refunded_output", "withhold")),
        definition=_mcp_definition(
            str(document["name"]), description, document["input_schema"], output_schema
        ),
    )


# ----------------------------------------------------------------------------- parsing


def parse_tool(data: object) -> Tool:
    """Parse, check and compile a tool document; refuse a malformed one with a stable code.

    Codes: ``TOOL_INVALID`` (the document's own fields: name, provider, price, policy, unknown
    fields), ``TOOL_ENDPOINT_INVALID`` (base URL, method, path template, argument placement),
    ``TOOL_INPUT_SCHEMA_INVALID`` (not JSON Schema 2020-12, not an object schema, refers outside
    itself or to nothing), and the contract's own codes (``CONTRACT_*``).
    """
    if not isinstance(data, Mapping):
        raise _invalid("A tool must be a JSON object.")
    unknown = set(data) - _TOOL_FIELDS
    if unknown:
        raise _invalid(f"A tool has unknown fields: {', '.join(sorted(map(str, unknown)))}.")
    name = data.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise _invalid(
            "A tool's `name` is 1 to 128 characters of A-Z, a-z, 0-9, '_' and '-' (what MCP "
            f"clients accept); got {name!r}."
        )
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > _MAX_DESCRIPTION:
        raise _invalid(
            f"A tool's `description` is a string of at most {_MAX_DESCRIPTION} characters."
        )
    provider = data.get("provider")
    if not isinstance(provider, str) or not PROVIDER_ID.fullmatch(provider):
        raise _invalid(
            "A tool's `provider` is the provider's id: 1 to 128 characters of A-Z, a-z, 0-9 and "
            f"'.', '_', ':', '-' (what its request verifier accepts); got {provider!r}."
        )
    schema = copy.deepcopy(data.get("input_schema"))
    compiled = _compile_input_schema(schema)
    assert isinstance(schema, dict)
    endpoint = _parse_endpoint(data.get("endpoint"), schema)
    contract_document = _contract_document(data.get("contract"), name)
    contract = register_contract(contract_document)
    return Tool(
        name=name,
        description=description,
        provider=provider,
        endpoint=endpoint,
        input_schema=schema,
        contract_document=contract_document,
        price=_parse_price(data.get("price")),
        policy=_parse_policy_ref(data.get("policy")),
        contract=contract,
        _schema=compiled,
        refunded_output=_parse_refunded_output(data.get("refunded_output", "withhold")),
    )


def _parse_refunded_output(raw: object) -> str:
    if raw not in REFUNDED_OUTPUT:
        raise _invalid(
            'A tool\'s `refunded_output` is "withhold" (the default: a refunded or voided call '
            'returns its check rows, not the output) or "return".'
        )
    assert isinstance(raw, str)
    return raw


def _contract_document(raw: object, name: str) -> dict[str, Any]:
    """The tool's contract document: its ``tool`` is the tool's name, its version "1" if absent."""
    if not isinstance(raw, Mapping):
        raise _invalid("A tool needs a `contract`: an object with its output schema and mapping.")
    document = copy.deepcopy(dict(raw))
    declared = document.setdefault("tool", name)
    if declared != name:
        raise _invalid(
            f"The contract is for tool {declared!r} but the tool is {name!r}: one tool, one name "
            "(its policies name it too)."
        )
    document.setdefault("version", "1")
    return document


def _parse_price(raw: object) -> Price:
    if not isinstance(raw, Mapping) or set(raw) != {"amount_minor", "currency"}:
        raise _invalid('A tool\'s `price` is {"amount_minor": whole number, "currency": code}.')
    amount, currency = raw["amount_minor"], raw["currency"]
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 <= amount <= _MAX_AMOUNT:
        raise _invalid("`price.amount_minor` is a whole number of minor units, 0 or more.")
    if not isinstance(currency, str) or not _CURRENCY.fullmatch(currency):
        raise _invalid(
            "`price.currency` is an ISO 4217 code (USD), USDC, USDG or a CAIP-19 asset id "
            f"(eip155:1/erc20:0x…); got {currency!r}."
        )
    return Price(amount, currency)


def _parse_policy_ref(raw: object) -> PolicyRef | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not set(raw) <= {"id", "version"}:
        raise _invalid('A tool\'s `policy` is null or {"id": policy id, "version": n or null}.')
    pid, version = raw.get("id"), raw.get("version")
    if not isinstance(pid, str) or not 0 < len(pid) <= 200:
        raise _invalid("`policy.id` is the policy's id, 1 to 200 characters.")
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or not 1 <= version < 2**31
    ):
        raise _invalid("`policy.version` is a whole number from 1, or null for the highest.")
    return PolicyRef(pid, version)


def _compile_input_schema(schema: object) -> OutputSchema:
    code = "TOOL_INPUT_SCHEMA_INVALID"
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise _invalid(
            'A tool\'s `input_schema` is a JSON Schema object with "type": "object" at its root '
            "(MCP's rule: arguments are always an object).",
            code,
        )
    return compile_validators(schema, what="input_schema", code=code)


def _parse_endpoint(raw: object, schema: Mapping[str, Any]) -> Endpoint:
    code = "TOOL_ENDPOINT_INVALID"
    if not isinstance(raw, Mapping):
        raise _invalid("A tool needs an `endpoint`: base_url, method, path and arguments.", code)
    unknown = set(raw) - _ENDPOINT_FIELDS
    if unknown:
        raise _invalid(
            f"The endpoint has unknown fields: {', '.join(sorted(map(str, unknown)))}.", code
        )
    base_url = raw.get("base_url")
    match = _BASE_URL.fullmatch(base_url) if isinstance(base_url, str) else None
    if match is None:
        raise _invalid(
            "`endpoint.base_url` is http(s)://host[:port][/path], with no user, query or "
            f"fragment (an international host name as punycode); got {base_url!r}.",
            code,
        )
    scheme, host, port = match["scheme"], match["host"].lower(), match["port"]
    if port is not None:
        if not 0 < int(port) <= 65535:
            raise _invalid(f"`endpoint.base_url` has port {port}, outside 1-65535.", code)
        port = str(int(port))
        if port != _DEFAULT_PORTS[scheme]:
            host = f"{host}:{port}"  # the default port is dropped, as clients send Host
    base_path = (match["path"] or "").rstrip("/")
    if not _PATH_TEXT.fullmatch(base_path) or _has_dot_segment(base_path):
        raise _invalid(
            "`endpoint.base_url` has a path with characters that must be encoded, or a '.' or "
            "'..' segment (clients remove those, so the signed path would not be the one sent).",
            code,
        )

    method = raw.get("method", "GET")
    if not isinstance(method, str) or method.upper() not in _METHODS:
        raise _invalid(f"`endpoint.method` is one of {', '.join(_METHODS)}; got {method!r}.", code)
    method = method.upper()

    path = raw.get("path", "")
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise _invalid("`endpoint.path` is a path template starting with '/' (or empty).", code)

    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        properties = {}
    placements = _parse_placements(raw.get("arguments", {}), properties, code)

    body = _parse_body(raw.get("body"), method, placements, properties, code)

    template = _compile_template(path, placements, schema, code)
    authority = raw.get("authority")
    if authority is not None and (
        not isinstance(authority, str) or not _AUTHORITY.fullmatch(authority)
    ):
        raise _invalid(
            "`endpoint.authority` is a lowercase host[:port] (what the provider sees).", code
        )
    return Endpoint(
        base_url=f"{scheme}://{host}{base_path}",
        method=method,
        path=path,
        placements=placements,
        body=body,
        authority=authority,
        scheme=scheme,
        host=host,
        base_path=base_path,
        _template=template,
    )


def _parse_body(
    body: object,
    method: str,
    placements: tuple[Placement, ...],
    properties: Mapping[str, Any],
    code: str,
) -> str | None:
    """The endpoint's body mode: None, "rest" or "argument:<name>"; every argument placed."""
    body_argument = None
    if isinstance(body, Mapping):
        body_argument = body.get("argument")
        if set(body) != {"argument"} or not isinstance(body_argument, str):
            raise _invalid('`endpoint.body` is null, "rest" or {"argument": name}.', code)
        if body_argument not in properties:
            raise _invalid(f"The body argument {body_argument!r} is not in the input schema.", code)
        if any(p.argument == body_argument for p in placements):
            raise _invalid(f"The body argument {body_argument!r} is also placed elsewhere.", code)
        if any(p.location is Location.BODY for p in placements):
            raise _invalid("A body that is one argument's value has no other members.", code)
        body = f"argument:{body_argument}"
    elif body not in (None, "rest"):
        raise _invalid('`endpoint.body` is null, "rest" or {"argument": name}.', code)
    has_body = body is not None or any(p.location is Location.BODY for p in placements)
    if has_body and method not in _BODY_METHODS:
        raise _invalid(f"A {method} request carries no JSON body; use POST, PUT or PATCH.", code)
    if body != "rest":
        placed = {p.argument for p in placements} | ({body_argument} if body_argument else set())
        unplaced = sorted(set(properties) - placed)
        if unplaced:
            raise _invalid(
                f"The input schema's argument {unplaced[0]!r} has no place in the request: put it "
                'in `endpoint.arguments`, or send the rest as the body (`"body": "rest"`).',
                code,
            )
    return body if isinstance(body, str) else None


def _has_dot_segment(path: str) -> bool:
    return any(segment in (".", "..") for segment in path.split("/"))


def _parse_placements(
    raw: object, properties: Mapping[str, Any], code: str
) -> tuple[Placement, ...]:
    if not isinstance(raw, Mapping):
        raise _invalid("`endpoint.arguments` is an object of argument name -> placement.", code)
    out: list[Placement] = []
    wire_seen: set[tuple[Location, str]] = set()
    for argument, spec in raw.items():
        if not isinstance(argument, str) or argument not in properties:
            raise _invalid(f"The placed argument {argument!r} is not in the input schema.", code)
        if isinstance(spec, str):
            spec = {"in": spec}  # noqa: PLW2901 (the short form, read as the long one)
        if not isinstance(spec, Mapping) or not set(spec) <= _PLACEMENT_FIELDS:
            raise _invalid(
                f'The placement of {argument!r} is "path", "query", "header", "body" or '
                '{"in", "name"?, "explode"?}.',
                code,
            )
        where = spec.get("in")
        try:
            location = Location(where if isinstance(where, str) else "")
        except ValueError:
            raise _invalid(
                f"Argument {argument!r} goes `in` path, query, header or body; got {where!r}.",
                code,
            ) from None
        wire = spec.get("name", argument)
        explode = spec.get("explode", True)
        if not isinstance(wire, str) or not wire:
            raise _invalid(f"The wire name of {argument!r} is a non-empty string.", code)
        if not isinstance(explode, bool) or ("explode" in spec and location is not Location.QUERY):
            raise _invalid(
                f"`explode` (a boolean) is for query arguments only ({argument!r}).", code
            )
        if location is Location.HEADER:
            if not _HEADER_NAME.fullmatch(wire):
                raise _invalid(f"Header name {wire!r} of {argument!r} is not an HTTP token.", code)
            if wire.lower() in RESERVED_HEADERS:
                raise _invalid(
                    f"An argument cannot set the {wire!r} header (it is reserved).", code
                )
            wire_key = wire.lower()
        else:
            wire_key = wire
        if (location, wire_key) in wire_seen:
            raise _invalid(f"Two arguments are sent as {location.value} {wire!r}.", code)
        wire_seen.add((location, wire_key))
        declared = properties.get(argument)
        kind = declared.get("type") if isinstance(declared, Mapping) else None
        if location is not Location.BODY and kind == "object":
            raise _invalid(
                f"Argument {argument!r} is an object; only the JSON body can carry one "
                f"(it is placed in the {location.value}).",
                code,
            )
        out.append(Placement(argument, location, wire, explode))
    return tuple(out)


def _compile_template(
    path: str, placements: tuple[Placement, ...], schema: Mapping[str, Any], code: str
) -> tuple[str | Placement, ...]:
    by_wire = {p.wire_name: p for p in placements if p.location is Location.PATH}
    parts: list[str | Placement] = []
    used: set[str] = set()
    pos = 0
    for m in _PLACEHOLDER.finditer(path):
        parts.append(path[pos : m.start()])
        wire = m.group(1)
        placement = by_wire.get(wire)
        if placement is None:
            raise _invalid(f"The path names {{{wire}}}, which no path argument fills.", code)
        if wire in used:
            raise _invalid(f"The path names {{{wire}}} twice.", code)
        used.add(wire)
        parts.append(placement)
        pos = m.end()
    parts.append(path[pos:])
    for literal in parts:
        if isinstance(literal, str) and (
            "{" in literal or "}" in literal or not _PATH_TEXT.fullmatch(literal)
        ):
            raise _invalid(
                f"`endpoint.path` {path!r} has characters that must be percent-encoded (or an "
                "unbalanced brace).",
                code,
            )
    if _has_dot_segment(_PLACEHOLDER.sub("x", path)):
        raise _invalid(
            f"`endpoint.path` {path!r} has a '.' or '..' segment; clients remove those, so the "
            "signed path would not be the one sent.",
            code,
        )
    missing = sorted(set(by_wire) - used)
    if missing:
        raise _invalid(
            f"The path argument sent as {missing[0]!r} has no {{{missing[0]}}} in the path.", code
        )
    required = schema.get("required", [])
    for p in by_wire.values():
        if not isinstance(required, list) or p.argument not in required:
            raise _invalid(
                f"Path argument {p.argument!r} must be required in the input schema (a path has "
                "no way to leave a segment out).",
                code,
            )
    return tuple(part for part in parts if part != "")


# ----------------------------------------------------------------------------- arguments


@dataclass(frozen=True)
class ArgumentProblem:
    """Where arguments do not fit: an RFC 6901 pointer into the arguments, and why."""

    pointer: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"pointer": self.pointer, "message": self.message}


class ArgumentsInvalid(CriteriaError):
    """Arguments refused before the provider is called (so nothing is charged)."""

    code = "TOOL_ARGUMENTS_INVALID"

    def __init__(self, tool: str, problems: list[ArgumentProblem]) -> None:
        self.problems = tuple(problems[:MAX_PROBLEMS])
        first = self.problems[0]
        where = first.pointer or "the arguments"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(
            f"The arguments do not fit tool {tool!r}: at {where}, {first.message}{more}."
        )

    @property
    def details(self) -> list[dict[str, str]]:
        """Every problem listed, as ``{"pointer", "message"}`` (at most :data:`MAX_PROBLEMS`)."""
        return [p.to_dict() for p in self.problems]

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent back whole from a judging worker (its message counts problems past those kept).
        return (_arguments_invalid, (self.message, self.problems))


def _arguments_invalid(message: str, problems: tuple[ArgumentProblem, ...]) -> ArgumentsInvalid:
    made = ArgumentsInvalid.__new__(ArgumentsInvalid)
    CriteriaError.__init__(made, message)
    made.problems = problems
    return made


def _problems(error: ValidationError) -> list[ArgumentProblem]:
    """The problems one schema error stands for, pointing at the member that is wrong."""
    where = list(error.absolute_path)
    instance, schema = error.instance, error.schema
    if error.validator == "required" and isinstance(instance, Mapping):
        names = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [n for n in names if n not in instance]
        if missing:  # point at the member that is missing, not the object that lacks it
            return [ArgumentProblem(pointer([*where, n]), "is required") for n in missing]
    if (
        error.validator == "additionalProperties"
        and isinstance(instance, Mapping)
        and isinstance(schema, Mapping)
        and not schema.get("patternProperties")
    ):
        known = schema.get("properties", {})
        extra = [k for k in instance if k not in known]
        message = "is not an argument of this tool" if not where else "is not allowed here"
        return [ArgumentProblem(pointer([*where, k]), message) for k in extra]
    return [ArgumentProblem(pointer(where), error.message)]


def check_arguments(tool: Tool, arguments: object) -> dict[str, Any]:
    """The arguments as a dict, if they fit the tool; else :class:`ArgumentsInvalid`.

    Absent arguments (``None``) are an empty object. Every schema violation is listed (sorted by
    pointer, at most :data:`MAX_PROBLEMS`), and so is an argument the endpoint has no place for.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
        raise ArgumentsInvalid(
            tool.name, [ArgumentProblem("", "the arguments must be a JSON object")]
        )
    args = dict(arguments)
    problems: list[ArgumentProblem] = []
    if not tool._schema.conforms_fast(args):
        problems = [p for e in tool._schema.errors(args) for p in _problems(e)]
    endpoint = tool.endpoint
    if endpoint.body != "rest":
        placed = {p.argument for p in endpoint.placements}
        if endpoint.body_argument is not None:
            placed.add(endpoint.body_argument)
        seen = {p.pointer for p in problems}
        for name in args:
            if name not in placed and pointer([name]) not in seen:
                problems.append(ArgumentProblem(pointer([name]), "is not an argument of this tool"))
    if problems:
        problems.sort(key=lambda p: (p.pointer, p.message))
        raise ArgumentsInvalid(tool.name, problems)
    return args


# ----------------------------------------------------------------------------- the request


class BuiltRequest(NamedTuple):
    """The provider's request, byte for byte: unpack it as ``method, url, headers, body``.

    ``url`` is absolute and already percent-encoded: send it unchanged. ``body`` is ``None``
    when the request has none (then no ``Content-Digest`` is signed). Header names are lowercase.
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None

    @property
    def scheme(self) -> str:
        return self.url[: self.url.index("://")]

    @property
    def authority(self) -> str:
        """The URL's host[:port] (default port dropped): what a client sends as ``Host``."""
        start = self.url.index("://") + 3
        return self.url[start : self.url.index("/", start)]

    @property
    def target(self) -> str:
        """The request target as sent: the path, then ``?`` and the query if there is one."""
        start = self.url.index("://") + 3
        return self.url[self.url.index("/", start) :]

    @property
    def path(self) -> str:
        """The raw path as sent (``/`` at least)."""
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        """The raw query as sent, without the ``?`` (empty: none)."""
        parts = self.target.split("?", 1)
        return parts[1] if len(parts) == 2 else ""


def percent_encode(text: str) -> str:
    """RFC 3986 percent-encoding of UTF-8: every byte but the unreserved set, uppercase hex.

    This is what OpenAPI and RFC 6570 prescribe for a value substituted into a path segment or a
    query (a space is ``%20``, ``+`` is ``%2B``, ``/`` is ``%2F``). Raises ``UnicodeEncodeError``
    for a lone surrogate.
    """
    if _PLAIN.fullmatch(text):
        return text
    return "".join([_ESCAPE[b] for b in text.encode("utf-8")])


class _Unencodable(Exception):
    pass


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Unencodable("is not a finite number")
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))  # JSON's 3.0 is the number 3: sent as a server expects it
        return json.dumps(value)
    raise _Unencodable("an object or a list cannot be sent here")


def _items_text(value: Any) -> list[str]:
    if isinstance(value, list):
        return [_scalar_text(v) for v in value]
    return [_scalar_text(value)]


def build_request(tool: Tool, arguments: object, *, check: bool = True) -> BuiltRequest:
    """The provider's HTTP request for a call with ``arguments``.

    The arguments are checked first (:func:`check_arguments`) unless ``check`` is False (the
    caller has just checked them). Path arguments are substituted percent-encoded (a ``.`` or
    ``..`` value as ``%2E``/``%2E%2E``, so no client or server reads it as a dot-segment); query
    arguments follow in the order the tool places them, percent-encoded (a list repeats the
    name, or is comma-joined without ``explode``; ``null`` leaves the parameter out); header
    arguments are sent as their text; the JSON body is compact UTF-8. A value that cannot go
    where it is placed (an object in the query, an empty path segment, a control character in a
    header) is refused with ``TOOL_ARGUMENTS_INVALID``, naming its pointer.
    """
    if check:
        args = check_arguments(tool, arguments)
    else:
        args = dict(arguments) if isinstance(arguments, Mapping) else {}
    endpoint = tool.endpoint
    problems: list[ArgumentProblem] = []
    path = _path(endpoint, args, problems)
    query, headers = _query_and_headers(endpoint, args, problems)
    body = _body(endpoint, args, problems)
    if body is not None:
        headers.append(("content-type", "application/json"))
    if problems:
        problems.sort(key=lambda p: (p.pointer, p.message))
        raise ArgumentsInvalid(tool.name, problems)
    url = f"{endpoint.scheme}://{endpoint.host}{path}"
    if query:
        url += "?" + "&".join(query)
    if len(url) > MAX_URL_BYTES:  # (ASCII: every argument in it is percent-encoded)
        problem = ArgumentProblem(
            "",
            f"the request's URL would be {len(url):,} bytes, past the {MAX_URL_BYTES:,} the "
            "gateway sends; shorten the values placed in the path and the query",
        )
        raise ArgumentsInvalid(tool.name, [problem])
    head = sum(len(k) + len(v.encode()) for k, v in headers)
    if head > MAX_URL_BYTES:
        problem = ArgumentProblem(
            "",
            f"the request's headers would be {head:,} bytes, past the {MAX_URL_BYTES:,} the "
            "gateway sends; shorten the values placed in headers",
        )
        raise ArgumentsInvalid(tool.name, [problem])
    return BuiltRequest(endpoint.method, url, tuple(headers), body)


def registrable(document: object, what: str, code: str) -> None:
    """Refuse, with ``code``, a document to register that holds more than
    :data:`MAX_REGISTERED_VALUES` JSON values (counted before anything compiles its schemas,
    stopping at the bound) or takes more than :data:`MAX_REGISTERED_BYTES` as compact JSON."""
    if json_values(document, stop=MAX_REGISTERED_VALUES) > MAX_REGISTERED_VALUES:
        raise CriteriaError(
            f"{what} holds more than {MAX_REGISTERED_VALUES:,} JSON values (objects, arrays "
            "and scalars); its schemas are compiled for every process that serves it, so "
            "keep them to the fields callers rely on.",
            code=code,
        )
    if len(json_text.dumps_utf8(document)) > MAX_REGISTERED_BYTES:
        raise CriteriaError(
            f"{what} takes more than {MAX_REGISTERED_BYTES // 1024} KiB as compact JSON; every "
            "listing of the tools answers its definition, so keep its descriptions short.",
            code=code,
        )


def _path(endpoint: Endpoint, args: Mapping[str, Any], problems: list[ArgumentProblem]) -> str:
    parts: list[str] = [endpoint.base_path]
    for part in endpoint._template:
        if isinstance(part, str):
            parts.append(part)
            continue
        value = args.get(part.argument)
        try:
            if value is None:
                raise _Unencodable("a path argument cannot be null or absent")
            texts = _items_text(value)
            if any(t == "" for t in texts):
                raise _Unencodable("a path argument cannot be empty")
            encoded = ",".join(percent_encode(t) for t in texts)
        except _Unencodable as exc:
            problems.append(ArgumentProblem(pointer([part.argument]), str(exc)))
            continue
        except UnicodeEncodeError:
            problems.append(ArgumentProblem(pointer([part.argument]), "is not valid Unicode text"))
            continue
        if encoded in (".", ".."):
            encoded = encoded.replace(".", "%2E")  # a dot-segment would be removed on the way
        parts.append(encoded)
    return "".join(parts) or "/"


def _query_and_headers(
    endpoint: Endpoint, args: Mapping[str, Any], problems: list[ArgumentProblem]
) -> tuple[list[str], list[tuple[str, str]]]:
    query: list[str] = []
    headers: list[tuple[str, str]] = [("accept", "application/json")]
    for p in endpoint.placements:
        if p.location in (Location.PATH, Location.BODY) or p.argument not in args:
            continue
        value = args[p.argument]
        if value is None:
            continue  # null is absent: the parameter is left out
        try:
            texts = _items_text(value)
            if p.location is Location.QUERY:
                name = percent_encode(p.wire_name)
                if isinstance(value, list) and p.explode:
                    query.extend(f"{name}={percent_encode(t)}" for t in texts)
                elif texts:
                    query.append(f"{name}=" + ",".join(percent_encode(t) for t in texts))
            else:  # a header
                text = ",".join(texts)
                if not _HEADER_VALUE.fullmatch(text):
                    raise _Unencodable("a header carries printable ASCII only")
                headers.append((p.wire_name.lower(), text.strip(" \t")))
        except _Unencodable as exc:
            problems.append(ArgumentProblem(pointer([p.argument]), str(exc)))
        except UnicodeEncodeError:
            problems.append(ArgumentProblem(pointer([p.argument]), "is not valid Unicode text"))
    return query, headers


def _body(
    endpoint: Endpoint, args: Mapping[str, Any], problems: list[ArgumentProblem]
) -> bytes | None:
    members = {p.argument: p.wire_name for p in endpoint.placements if p.location is Location.BODY}
    content: Any
    arg = endpoint.body_argument
    if arg is not None:
        if arg not in args:
            return None
        content = args[arg]
    elif endpoint.body == "rest":
        elsewhere = {p.argument for p in endpoint.placements if p.location is not Location.BODY}
        content = {members.get(k, k): v for k, v in args.items() if k not in elsewhere}
    elif members:
        content = {wire: args[a] for a, wire in members.items() if a in args}
    else:
        return None
    try:
        return json.dumps(
            content, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode("utf-8")
    except (ValueError, TypeError, UnicodeEncodeError):
        problems.append(ArgumentProblem("", "the JSON body is not valid Unicode JSON"))
        return None
