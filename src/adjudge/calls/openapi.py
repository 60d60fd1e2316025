"""Tools imported from an OpenAPI 3.0/3.1 document or from an MCP tool definition.

Pure: the document is an input (already parsed JSON); nothing is fetched. The importer writes a
tool *document* (what :func:`adjudge.calls.tools.parse_tool` reads, so it can be shown, edited
and registered like a hand-written one) and :func:`import_openapi` parses it at once.

From OpenAPI, for one operation (by ``operationId``, or by method and path):

- its parameters (the path item's and the operation's, the latter winning) and its JSON request
  body become the input schema; each argument is placed where the operation says (path, query,
  header; an object body's properties become body members, any other body one ``body``
  argument);
- the chosen response's JSON schema (by default the first 2xx with a JSON media type) becomes
  the contract's output schema;
- every ``#/components/schemas/…`` the schemas use, transitively, is bundled under ``$defs``
  and the references rewritten, so recursive and mutually recursive schemas stay references;
- OpenAPI 3.0's schema dialect is converted to JSON Schema 2020-12: ``nullable: true`` adds
  ``"null"`` to ``type`` (and to an ``enum``), boolean ``exclusiveMinimum``/``exclusiveMaximum``
  become numeric bounds, a ``$ref``'s siblings are dropped (3.0 ignores them), ``example``
  becomes ``examples``, and the OpenAPI-only annotations (``discriminator``, ``xml``,
  ``externalDocs``, ``x-*``) are dropped.

Refusals: ``OPENAPI_INVALID`` (not an OpenAPI 3.x document, or a part of it malformed),
``OPENAPI_OPERATION_UNKNOWN`` (no such operation, or several and none named),
``OPENAPI_UNSUPPORTED`` (something the gateway cannot forward faithfully: an external or
non-schema ``$ref``, no JSON response, a non-JSON required body, a required cookie, a parameter
style other than OpenAPI's defaults, a relative server URL with no ``base_url`` given).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from adjudge.calls.tools import (
    RESERVED_HEADERS,
    TOOL_NAME,
    Tool,
    parse_tool,
)
from adjudge.errors import CriteriaError

__all__ = [
    "import_mcp_tool",
    "import_openapi",
    "mcp_tool_document",
    "openapi_tool_document",
]

_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_SUPPORTED_METHODS = frozenset({"get", "post", "put", "patch", "delete"})
_SCHEMA_ONE = frozenset(
    {
        "additionalProperties", "items", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
        "additionalItems",
    }
)  # fmt: skip
_SCHEMA_MAP = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
# OpenAPI's own annotations: meaningless to a JSON Schema validator, dropped.
_OPENAPI_ONLY = frozenset({"discriminator", "xml", "externalDocs"})
_COMPONENT_SCHEMA = "#/components/schemas/"
_DIALECTS = frozenset(
    {
        "https://spec.openapis.org/oas/3.1/dialect/base",
        "https://json-schema.org/draft/2020-12/schema",
    }
)
# The OpenAPI spec: a header parameter with one of these names "SHALL be ignored".
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_JSON_MEDIA = re.compile(r"application/(?:[A-Za-z0-9.+-]+\+)?json(?:\s*;.*)?", re.IGNORECASE)
_MAX_REF_DEPTH = 32


def _invalid(message: str) -> CriteriaError:
    return CriteriaError(message, code="OPENAPI_INVALID")


def _unsupported(message: str) -> CriteriaError:
    return CriteriaError(message, code="OPENAPI_UNSUPPORTED")


# ----------------------------------------------------------------------------- references


def _unescape(token: str) -> str:
    """A JSON pointer token of a URI fragment: %-decoded, then ``~1`` -> ``/``, ``~0`` -> ``~``."""
    token = re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), token)
    return token.replace("~1", "/").replace("~0", "~")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _resolve(document: Mapping[str, Any], ref: object, what: str) -> Any:
    """The object a local ``$ref`` points at; an external one is unsupported."""
    if not isinstance(ref, str):
        raise _invalid(f"{what} has a `$ref` that is not a string.")
    if not ref.startswith("#"):
        raise _unsupported(
            f"{what} refers to another document ({ref!r}); nothing is fetched, so bundle it first."
        )
    node: Any = document
    for token in ref[1:].split("/")[1:] if ref != "#" else []:
        key = _unescape(token)
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise _invalid(f"{what} refers to {ref!r}, which the document does not have.")
    return node


def _deref(document: Mapping[str, Any], obj: Any, what: str) -> Any:
    """``obj`` with its ``$ref`` chain followed (parameters, bodies, responses, path items)."""
    for _ in range(_MAX_REF_DEPTH):
        if not (isinstance(obj, Mapping) and "$ref" in obj):
            return obj
        obj = _resolve(document, obj["$ref"], what)
    raise _invalid(f"{what} has a `$ref` chain longer than {_MAX_REF_DEPTH} (a cycle?).")


class _Bundle:
    """Converts schemas to 2020-12 and collects the components they use under ``$defs``."""

    def __init__(self, document: Mapping[str, Any], v30: bool) -> None:
        self.document = document
        self.v30 = v30
        self.defs: dict[str, Any] = {}
        self._queue: list[str] = []

    def finish(self, root: Any) -> Any:
        """``root`` with every component it reaches, transitively, bundled under ``$defs``."""
        components = self.document.get("components", {})
        schemas = components.get("schemas", {}) if isinstance(components, Mapping) else {}
        while self._queue:
            name = self._queue.pop()
            if name in self.defs:
                continue
            if not isinstance(schemas, Mapping) or name not in schemas:
                raise _invalid(f"A schema refers to component {name!r}, which is not defined.")
            self.defs[name] = None  # reserved first: a recursive reference stops here
            self.defs[name] = self.convert(schemas[name], f"components.schemas.{name}")
        if not self.defs:
            return root
        if isinstance(root, bool):
            root = {} if root else {"not": {}}
        root = dict(root)
        root["$defs"] = {**dict(sorted(self.defs.items())), **root.get("$defs", {})}
        return root

    def _ref(self, ref: object, where: str) -> str:
        if not isinstance(ref, str):
            raise _invalid(f"The schema at {where} has a `$ref` that is not a string.")
        if not ref.startswith("#"):
            raise _unsupported(
                f"The schema at {where} refers to another document ({ref!r}); nothing is "
                "fetched, so bundle it into components first."
            )
        if not ref.startswith(_COMPONENT_SCHEMA):
            raise _unsupported(
                f"The schema at {where} refers to {ref!r}; only #/components/schemas/… "
                "references can be bundled."
            )
        tokens = ref[len(_COMPONENT_SCHEMA) :].split("/")
        name = _unescape(tokens[0])
        if name not in self.defs:
            self._queue.append(name)
        rest = "".join("/" + t for t in tokens[1:])
        return f"#/$defs/{_escape(name)}{rest}"

    def convert(self, schema: Any, where: str) -> Any:
        """One schema in JSON Schema 2020-12, with its component references rewritten."""
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, Mapping):
            raise _invalid(f"The schema at {where} is not an object.")
        ref = self._ref(schema["$ref"], where) if "$ref" in schema else None
        if ref is not None and self.v30:
            return {"$ref": ref}  # 3.0: "any properties added SHALL be ignored"
        for banned in ("$id", "$anchor", "$dynamicAnchor"):
            if banned in schema:
                raise _unsupported(
                    f"The schema at {where} declares {banned}; references relative to it "
                    "cannot be bundled."
                )
        declared = schema.get("$schema")
        if declared is not None and (not isinstance(declared, str) or declared not in _DIALECTS):
            raise _unsupported(f"The schema at {where} declares dialect {declared!r}.")
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in ("$ref", "$schema", "nullable") or key in _OPENAPI_ONLY:
                continue
            if key.startswith("x-"):
                continue
            if key == "example":
                if "examples" not in schema:
                    out["examples"] = [copy.deepcopy(value)]
                continue
            if key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                if value and bound in schema:  # 3.0: a flag on `minimum`; 2020-12: the bound
                    out[key] = schema[bound]
                continue
            if key in _SCHEMA_ONE:
                out[key] = self.convert(value, f"{where}.{key}")
            elif key in _SCHEMA_MAP:
                if not isinstance(value, Mapping):
                    raise _invalid(f"`{key}` at {where} is not an object.")
                out[key] = {k: self.convert(v, f"{where}.{key}.{k}") for k, v in value.items()}
            elif key in _SCHEMA_LIST:
                if not isinstance(value, list):
                    raise _invalid(f"`{key}` at {where} is not a list.")
                out[key] = [self.convert(v, f"{where}.{key}[{i}]") for i, v in enumerate(value)]
            else:
                out[key] = copy.deepcopy(value)
        for key in ("exclusiveMinimum", "exclusiveMaximum"):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if schema.get(key) is True and bound in out:
                del out[bound]  # the bound moved into the exclusive keyword
        if ref is not None:
            out = {"$ref": ref, **out}  # 2020-12: a $ref's siblings apply beside it
        if schema.get("nullable") is True and "type" in out:
            # 3.0.3: nullable adds "null" to the types "only if type is explicitly defined"; a
            # nullable enum would still refuse null unless null is one of its values.
            kinds = out["type"] if isinstance(out["type"], list) else [out["type"]]
            if "null" not in kinds:
                out["type"] = [*kinds, "null"]
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        return out


# ----------------------------------------------------------------------------- the operation


def _version(document: Mapping[str, Any]) -> bool:
    """True for 3.0, False for 3.1 and later 3.x; anything else is refused."""
    if "swagger" in document:
        raise _unsupported("This is a Swagger 2.0 document; convert it to OpenAPI 3 first.")
    version = document.get("openapi")
    if not isinstance(version, str) or not re.fullmatch(r"3\.[0-9]+\.[0-9]+(?:-.+)?", version):
        raise _invalid("Not an OpenAPI 3.x document (no `openapi: 3.x.y`).")
    if version.startswith("3.0."):
        return True
    dialect = document.get("jsonSchemaDialect")
    if dialect is not None and (not isinstance(dialect, str) or dialect not in _DIALECTS):
        raise _unsupported(f"The document's schema dialect {dialect!r} is not JSON Schema 2020-12.")
    return False


def _operations(
    document: Mapping[str, Any],
) -> list[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]]:
    """Every (method, path, path item, operation) in document order."""
    paths = document.get("paths", {})
    if not isinstance(paths, Mapping):
        raise _invalid("`paths` is not an object.")
    out = []
    for path, raw in paths.items():
        item = _deref(document, raw, f"path {path!r}")
        if not isinstance(item, Mapping):
            raise _invalid(f"Path {path!r} is not an object.")
        for method in _HTTP_METHODS:
            operation = item.get(method)
            if isinstance(operation, Mapping):
                out.append((method, str(path), item, operation))
    return out


def _pick(
    document: Mapping[str, Any], operation: str | None, method: str | None, path: str | None
) -> tuple[str, str, Mapping[str, Any], Mapping[str, Any]]:
    ops = _operations(document)
    code = "OPENAPI_OPERATION_UNKNOWN"
    if operation is not None:
        found = [op for op in ops if op[3].get("operationId") == operation]
        if not found:
            known = sorted(str(op[3]["operationId"]) for op in ops if "operationId" in op[3])
            listed = ", ".join(known[:10]) + (" …" if len(known) > 10 else "")
            raise CriteriaError(
                f"The document has no operation {operation!r} (it has: {listed or 'none named'}).",
                code=code,
            )
        return found[0]
    if method is not None and path is not None:
        for op in ops:
            if op[0] == method.lower() and op[1] == path:
                return op
        raise CriteriaError(f"The document has no operation {method.upper()} {path}.", code=code)
    if len(ops) == 1:
        return ops[0]
    raise CriteriaError(
        f"The document has {len(ops)} operations: name one by operationId, or by method and path.",
        code=code,
    )


def _server_url(document: Mapping[str, Any], item: Mapping[str, Any], op: Mapping[str, Any]) -> str:
    for holder in (op, item, document):
        servers = holder.get("servers")
        if isinstance(servers, list) and servers:
            server = servers[0]
            if not isinstance(server, Mapping) or not isinstance(server.get("url"), str):
                raise _invalid("A server entry has no `url`.")
            url: str = server["url"]
            variables = server.get("variables", {})

            def fill(m: re.Match[str], variables: Any = variables) -> str:
                var = variables.get(m.group(1)) if isinstance(variables, Mapping) else None
                if not isinstance(var, Mapping) or not isinstance(var.get("default"), str):
                    raise _invalid(f"Server variable {m.group(1)!r} has no default.")
                return str(var["default"])

            return re.sub(r"\{([^{}]+)\}", fill, url)
    return "/"


def _json_media(content: object, what: str) -> tuple[bool, Any]:
    """(found, schema) of the JSON media type in a `content` map; schema None if absent."""
    if not isinstance(content, Mapping):
        return False, None
    for media, body in content.items():
        if isinstance(media, str) and _JSON_MEDIA.fullmatch(media.strip()):
            if not isinstance(body, Mapping):
                raise _invalid(f"{what}'s media type {media!r} is not an object.")
            return True, body.get("schema")
    return False, None


def _tool_name(op: Mapping[str, Any], method: str, path: str) -> str:
    raw = op.get("operationId")
    text = raw if isinstance(raw, str) and raw else f"{method}_{path}"
    name = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_-]", "_", text)).strip("_")[:128]
    return name or method


def _resolved_schema(bundle: _Bundle, schema: Any) -> Any:
    """The body schema as a validator would see its root: a bare component $ref followed."""
    seen = 0
    while isinstance(schema, Mapping) and set(schema) == {"$ref"} and seen < _MAX_REF_DEPTH:
        schema = _resolve(bundle.document, schema["$ref"], "The request body")
        seen += 1
    return schema


class _Arguments:
    """The input schema being built: properties, required names, placements, body mode."""

    def __init__(self, bundle: _Bundle, where: str) -> None:
        self.bundle = bundle
        self.where = where
        self.properties: dict[str, Any] = {}
        self.required: list[str] = []
        self.placements: dict[str, Any] = {}
        self.body: Any = None

    def name_for(self, wire: str, prefix: str) -> str:
        argument = wire if wire not in self.properties else f"{prefix}_{wire}"
        if argument in self.properties:
            raise _unsupported(f"{self.where}: two arguments would both be named {argument!r}.")
        return argument

    def add(self, argument: str, schema: Any, needed: bool, placement: Mapping[str, Any]) -> None:
        self.properties[argument] = schema
        if needed:
            self.required.append(argument)
        self.placements[argument] = dict(placement)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "properties": self.properties}
        if self.required:
            out["required"] = self.required
        out["additionalProperties"] = False
        result = self.bundle.finish(out)
        assert isinstance(result, dict)
        return result


def _parameters(
    document: Mapping[str, Any], item: Mapping[str, Any], op: Mapping[str, Any], args: _Arguments
) -> None:
    """(1a) The path item's and the operation's parameters (the latter win) as arguments."""
    where = args.where
    params: dict[tuple[str, str], Mapping[str, Any]] = {}
    for holder in (item, op):
        raw = holder.get("parameters", [])
        if not isinstance(raw, list):
            raise _invalid(f"{where}: `parameters` is not a list.")
        for entry in raw:
            param = _deref(document, entry, f"{where}: a parameter")
            if not isinstance(param, Mapping) or not isinstance(param.get("name"), str):
                raise _invalid(f"{where}: a parameter has no `name`.")
            params[(str(param.get("in")), param["name"])] = param
    for (location, wire), param in params.items():
        what = f"{where}: parameter {wire!r}"
        needed = param.get("required") is True or location == "path"
        if location not in ("path", "query", "header", "cookie"):
            raise _invalid(f"{what} is `in` {location!r}.")
        if location == "header" and wire.lower() in _IGNORED_HEADERS:
            continue
        if location == "cookie" or (location == "header" and wire.lower() in RESERVED_HEADERS):
            if needed:
                raise _unsupported(f"{what} is a required {location} the gateway cannot set.")
            continue  # an optional cookie or reserved header: the tool does without it
        if "content" in param:
            raise _unsupported(f"{what} is described by `content`; only `schema` is supported.")
        style = param.get("style")
        default_style = {"path": "simple", "query": "form", "header": "simple"}[location]
        if style is not None and style != default_style:
            raise _unsupported(f"{what} has style {style!r}; only {default_style!r} is supported.")
        explode = param.get("explode", location == "query")
        if location != "query" and explode:
            raise _unsupported(f"{what} is exploded; only query parameters can be.")
        schema = args.bundle.convert(param.get("schema", {}), f"{what}.schema")
        if isinstance(schema, dict) and "$ref" not in schema:
            for key in ("description", "deprecated"):
                if key in param and key not in schema:
                    schema[key] = copy.deepcopy(param[key])
        argument = args.name_for(wire, location)
        placement: dict[str, Any] = {"in": location}
        if argument != wire:
            placement["name"] = wire
        if location == "query" and not explode:
            placement["explode"] = False
        args.add(argument, schema, needed, placement)


def _request_body(
    document: Mapping[str, Any], op_method: str, op: Mapping[str, Any], args: _Arguments
) -> None:
    """(1b) A JSON request body: an object's properties as members, else one argument."""
    where = args.where
    request_body = _deref(document, op.get("requestBody"), f"{where}: the request body")
    if request_body is None:
        return
    if not isinstance(request_body, Mapping):
        raise _invalid(f"{where}: `requestBody` is not an object.")
    body_required = request_body.get("required") is True
    found, body_schema = _json_media(request_body.get("content"), f"{where}'s request body")
    if not found:
        if body_required:
            raise _unsupported(f"{where}: the request body is not JSON.")
        return  # an optional body the gateway cannot send: the tool does without it
    if op_method not in ("post", "put", "patch"):
        raise _unsupported(f"{where}: a {op_method.upper()} with a body cannot be sent.")
    root = _resolved_schema(args.bundle, body_schema)
    flat = (
        isinstance(root, Mapping)
        and root.get("type") == "object"
        and isinstance(root.get("properties"), Mapping)
        and not any(k in root for k in ("allOf", "anyOf", "oneOf", "not", "if"))
    )
    if not flat:
        argument = args.name_for("body", "request")
        schema = args.bundle.convert(body_schema if body_schema is not None else {}, where)
        args.add(argument, schema, body_required, {"in": "body"})
        del args.placements[argument]
        args.body = {"argument": argument}
        return
    assert isinstance(root, Mapping)
    members = args.bundle.convert(root, f"{where}.body")
    member_required = root.get("required", [])
    for member, member_schema in members["properties"].items():
        if isinstance(member_schema, Mapping) and member_schema.get("readOnly") is True:
            continue  # "SHOULD NOT be sent as part of the request"
        argument = args.name_for(member, "body")
        placement = {"in": "body"} if argument == member else {"in": "body", "name": member}
        needed = body_required and isinstance(member_required, list) and member in member_required
        args.add(argument, member_schema, needed, placement)


def _output_schema(
    document: Mapping[str, Any], op: Mapping[str, Any], v30: bool, where: str, response: str | None
) -> Any:
    """(2) The chosen response's JSON schema (None: JSON with no schema), bundled."""
    responses = op.get("responses", {})
    if not isinstance(responses, Mapping):
        raise _invalid(f"{where}: `responses` is not an object.")
    if response is not None:
        candidates = [response]
    else:  # exact codes in numeric order, then the 2XX range
        candidates = sorted(
            (str(k) for k in responses if re.fullmatch(r"2[0-9][0-9]|2XX", str(k))),
            key=lambda k: (k == "2XX", k),
        )
    outputs = _Bundle(document, v30)
    for status in candidates:
        if status not in responses:
            raise _unsupported(f"{where} has no response {status!r}.")
        answer = _deref(document, responses[status], f"{where}: response {status}")
        if not isinstance(answer, Mapping):
            raise _invalid(f"{where}: response {status} is not an object.")
        found, schema = _json_media(answer.get("content"), f"{where}'s response {status}")
        if found:
            if schema is None:
                return None
            return outputs.finish(outputs.convert(schema, f"{where}.response.{status}"))
        if response is not None:
            raise _unsupported(f"{where}: response {status} is not JSON.")
    raise _unsupported(f"{where} has no 2xx response with a JSON body to verify.")


def openapi_tool_document(
    document: object,
    *,
    provider: str,
    price: Mapping[str, Any],
    operation: str | None = None,
    method: str | None = None,
    path: str | None = None,
    response: str | None = None,
    base_url: str | None = None,
    name: str | None = None,
    description: str | None = None,
    policy: Mapping[str, Any] | None = None,
    response_mapping: Any = None,
) -> dict[str, Any]:
    """The tool document for one operation of an OpenAPI 3.0/3.1 document (see the module).

    ``operation`` is an ``operationId``; else ``method`` and ``path``; with neither, the
    document's only operation. ``response`` names the status (``"200"``, ``"2XX"``); by default
    the first 2xx with a JSON media type. ``base_url`` replaces the document's first server.
    """
    if not isinstance(document, Mapping):
        raise _invalid("An OpenAPI document is a JSON object.")
    v30 = _version(document)
    op_method, op_path, item, op = _pick(document, operation, method, path)
    where = f"{op_method.upper()} {op_path}"
    if op_method not in _SUPPORTED_METHODS:
        raise _unsupported(f"{where}: a {op_method.upper()} operation answers no JSON to verify.")
    args = _Arguments(_Bundle(document, v30), where)
    _parameters(document, item, op, args)
    _request_body(document, op_method, op, args)
    input_schema = args.schema()
    output_schema = _output_schema(document, op, v30, where, response)

    # (3) Where to send it.
    server = base_url if base_url is not None else _server_url(document, item, op)
    if not re.match(r"https?://", server):
        raise _unsupported(
            f"The document's server URL {server!r} is relative (or absent): give the base URL."
        )
    info = document.get("info", {})
    version = info.get("version") if isinstance(info, Mapping) else None
    contract: dict[str, Any] = {
        "version": version if isinstance(version, str) and version.strip() else "1"
    }
    if output_schema is not None:
        contract["output_schema"] = output_schema
    if response_mapping is not None:
        contract["response_mapping"] = copy.deepcopy(response_mapping)
    summary = "\n\n".join(
        text.strip()
        for text in (op.get("summary"), op.get("description"))
        if isinstance(text, str) and text.strip()
    )
    endpoint: dict[str, Any] = {
        "base_url": server.rstrip("/"),
        "method": op_method.upper(),
        "path": op_path,
        "arguments": args.placements,
    }
    if args.body is not None:
        endpoint["body"] = args.body
    return {
        "name": name if name is not None else _tool_name(op, op_method, op_path),
        "description": description if description is not None else summary[:4000],
        "provider": provider,
        "endpoint": endpoint,
        "input_schema": input_schema,
        "contract": contract,
        "price": dict(price),
        "policy": None if policy is None else dict(policy),
    }


def import_openapi(document: object, **options: Any) -> Tool:
    """:func:`openapi_tool_document`, parsed into a :class:`Tool` (same options and refusals)."""
    return parse_tool(openapi_tool_document(document, **options))


# ----------------------------------------------------------------------------- MCP


def mcp_tool_document(
    definition: object,
    *,
    provider: str,
    base_url: str,
    price: Mapping[str, Any],
    method: str = "POST",
    path: str = "",
    arguments: Mapping[str, Any] | None = None,
    policy: Mapping[str, Any] | None = None,
    response_mapping: Any = None,
    version: str = "1",
) -> dict[str, Any]:
    """The tool document for an MCP tool definition (``name``, ``description``, ``inputSchema``,
    ``outputSchema``; ``title``, ``annotations``, ``icons``, ``_meta`` are not the gateway's).

    An MCP definition says nothing of HTTP, so the endpoint is given: by default the arguments
    object is the JSON body of a POST to ``base_url`` + ``path``; ``arguments`` places some of
    them elsewhere (as in a tool document). For a method with no body every argument goes in the
    query unless placed. Refusal: ``MCP_TOOL_INVALID``; then the tool's own codes.
    """
    code = "MCP_TOOL_INVALID"
    if not isinstance(definition, Mapping):
        raise CriteriaError("An MCP tool definition is a JSON object.", code=code)
    name = definition.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise CriteriaError(
            f"The MCP tool's `name` {name!r} is not 1-128 of A-Z, a-z, 0-9, '_', '-'.", code=code
        )
    schema = definition.get("inputSchema")
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise CriteriaError("The MCP tool's `inputSchema` is an object schema.", code=code)
    description = definition.get("description", "")
    if not isinstance(description, str):
        raise CriteriaError("The MCP tool's `description` is a string.", code=code)
    output = definition.get("outputSchema")
    if output is not None and not isinstance(output, Mapping):
        raise CriteriaError("The MCP tool's `outputSchema` is an object schema.", code=code)
    placements = dict(arguments or {})
    endpoint: dict[str, Any] = {"base_url": base_url, "method": method.upper(), "path": path}
    if method.upper() in ("POST", "PUT", "PATCH"):
        endpoint["body"] = "rest"
    else:
        props = schema.get("properties", {})
        for prop in props if isinstance(props, Mapping) else {}:
            placements.setdefault(prop, {"in": "query"})
    endpoint["arguments"] = placements
    contract: dict[str, Any] = {"version": version}
    if output is not None:
        contract["output_schema"] = copy.deepcopy(dict(output))
    if response_mapping is not None:
        contract["response_mapping"] = copy.deepcopy(response_mapping)
    return {
        "name": name,
        "description": description,
        "provider": provider,
        "endpoint": endpoint,
        "input_schema": copy.deepcopy(dict(schema)),
        "contract": contract,
        "price": dict(price),
        "policy": None if policy is None else dict(policy),
    }


def import_mcp_tool(definition: object, **options: Any) -> Tool:
    """:func:`mcp_tool_document`, parsed into a :class:`Tool` (same options and refusals)."""
    return parse_tool(mcp_tool_document(definition, **options))
