"""Importing tools from OpenAPI 3.0/3.1 documents and from MCP tool definitions."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from adjudge.calls.contract import map_response
from adjudge.calls.openapi import (
    import_mcp_tool,
    import_openapi,
    mcp_tool_document,
    openapi_tool_document,
)
from adjudge.calls.tools import ArgumentsInvalid, build_request, check_arguments
from adjudge.errors import Error

FIXTURES = Path(__file__).resolve().parent / "fixtures"
WEATHER = json.loads((FIXTURES / "weather-3.0.json").read_text(encoding="utf-8"))
SEARCH = json.loads((FIXTURES / "search-3.1.json").read_text(encoding="utf-8"))
PRICE = {"amount_minor": 5, "currency": "USD"}


def weather(operation: str = "getForecast", **kw: Any) -> dict[str, Any]:
    return openapi_tool_document(
        WEATHER, operation=operation, provider="skycast", price=PRICE, **kw
    )


def search(operation: str, **kw: Any) -> dict[str, Any]:
    return openapi_tool_document(
        SEARCH, operation=operation, provider="searchco", price=PRICE, **kw
    )


def test_a_3_0_operation_becomes_a_tool() -> None:
    """Parameters (a path item's $ref'd one included) become arguments, placed where declared;
    the Accept header and the optional cookie are left out, as OpenAPI says."""
    doc = weather()
    assert doc["name"] == "getForecast"
    assert doc["description"].startswith("Daily forecast for a city.\n\nHighs")
    assert doc["endpoint"] == {
        "base_url": "https://eu.api.skycast.example/v1",  # the server variable's default
        "method": "GET",
        "path": "/forecast/{city}",
        "arguments": {
            "city": {"in": "path"},
            "units": {"in": "query"},
            "days": {"in": "query"},
            "X-Request-Id": {"in": "header"},
        },
    }
    schema = doc["input_schema"]
    assert schema["required"] == ["city"] and schema["additionalProperties"] is False
    assert schema["properties"]["city"] == {
        "type": "string",
        "minLength": 1,
        "description": "City name.",
    }
    assert doc["contract"]["version"] == "2.4.0"


def test_3_0_nullable_and_exclusive_bounds_become_2020_12() -> None:
    """nullable adds null to the type and the enum; boolean exclusive bounds become numbers;
    x- extensions and OpenAPI-only annotations go; example becomes examples."""
    props = weather()["input_schema"]["properties"]
    assert props["units"] == {
        "type": ["string", "null"],
        "enum": ["metric", "imperial", None],
        "description": "Unit system.",
    }
    assert props["days"] == {
        "type": "integer",
        "minimum": 1,
        "exclusiveMaximum": 17,
        "examples": [3],
    }
    out = weather()["contract"]["output_schema"]
    day = out["$defs"]["Day"]["properties"]
    assert day["temp_max_c"] == {"type": ["number", "null"]}
    assert day["precip_prob"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert "xml" not in out["$defs"]["Location"] and "discriminator" not in out["$defs"]["Region"]


def test_components_are_bundled_under_defs_with_recursion_kept_as_references() -> None:
    """Every component the response uses, transitively, is in $defs; a recursive one refers to
    itself; a 3.0 $ref's siblings are dropped."""
    out = weather()["contract"]["output_schema"]
    assert out["$ref"] == "#/$defs/Forecast"
    assert sorted(out["$defs"]) == ["Day", "Forecast", "Location", "Region"]
    forecast = out["$defs"]["Forecast"]["properties"]
    assert forecast["region"] == {"$ref": "#/$defs/Region"}
    assert forecast["alerts"]["type"] == ["array", "null"]
    parent = out["$defs"]["Region"]["properties"]["parent"]
    assert parent == {"allOf": [{"$ref": "#/$defs/Region"}]}  # nullable without type: no effect


def test_the_imported_output_schema_judges_responses() -> None:
    """The bundled schema compiles as a contract and tells good answers from bad."""
    tool = import_openapi(WEATHER, operation="getForecast", provider="skycast", price=PRICE)
    good = {
        "location": {"lat": 48.8, "lon": 2.3},
        "issued_at": "2026-11-01T06:00:00Z",
        "days": [{"date": "2026-11-01", "temp_max_c": None}],
        "alerts": None,
        "region": {"name": "IDF", "parent": {"name": "FR"}},
    }
    assert map_response(tool.contract, good).ok
    bad = copy.deepcopy(good)
    bad["region"]["parent"] = {"nom": "FR"}
    check = map_response(tool.contract, bad)
    assert not check.ok and check.path.startswith("/region/parent")


def test_the_imported_tool_builds_its_request() -> None:
    tool = import_openapi(WEATHER, operation="getForecast", provider="skycast", price=PRICE)
    method, url, headers, body = build_request(
        tool, {"city": "Saint-Étienne", "units": None, "days": 3, "X-Request-Id": "r1"}
    )
    assert (method, body) == ("GET", None)
    assert url == "https://eu.api.skycast.example/v1/forecast/Saint-%C3%89tienne?days=3"
    assert ("x-request-id", "r1") in headers
    with pytest.raises(ArgumentsInvalid):
        check_arguments(tool, {"city": "x", "days": 17})  # the exclusive bound holds


def test_a_body_object_becomes_members_and_read_only_members_are_left_out() -> None:
    """A $ref'd request body's properties are body members; readOnly `id` is not sent;
    `required` follows the body's (here required) schema; 3.0 exclusiveMinimum converted."""
    doc = weather("subscribeAlerts")
    assert doc["endpoint"]["method"] == "POST"
    assert doc["endpoint"]["arguments"] == {
        "city": {"in": "path"},
        "email": {"in": "body"},
        "threshold": {"in": "body"},
    }
    schema = doc["input_schema"]
    assert schema["required"] == ["city", "email"]
    assert schema["properties"]["threshold"] == {"type": "number", "exclusiveMinimum": 0}
    tool = import_openapi(WEATHER, operation="subscribeAlerts", provider="skycast", price=PRICE)
    request = build_request(tool, {"city": "Oslo", "email": "a@b.example", "threshold": 0.5})
    assert request.body == b'{"email":"a@b.example","threshold":0.5}'


def test_a_3_1_operation_with_a_referenced_body_and_a_recursive_answer() -> None:
    doc = search("webSearch")
    assert doc["endpoint"]["base_url"] == "https://api.searchco.example"
    assert doc["input_schema"]["required"] == ["query"]
    assert doc["input_schema"]["properties"]["filters"] == {"$ref": "#/$defs/Filters"}
    assert doc["input_schema"]["properties"]["query"] == {"type": "string", "minLength": 1}
    out = doc["contract"]["output_schema"]
    assert out["$defs"]["Result"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Result"}
    assert out["$defs"]["Result"]["examples"] == [{"title": "t", "url": "https://x.example"}]
    assert out["$defs"]["SearchResponse"]["properties"]["next"] == {"type": ["string", "null"]}
    tool = import_openapi(SEARCH, operation="webSearch", provider="searchco", price=PRICE)
    with pytest.raises(ArgumentsInvalid) as caught:
        check_arguments(tool, {"query": "x", "filters": {"lang": 1}})
    assert caught.value.details[0]["pointer"] == "/filters/lang"


def test_a_query_list_without_explode_and_a_2xx_range() -> None:
    doc = search("suggest")
    assert doc["endpoint"]["arguments"]["lang"] == {"in": "query", "explode": False}
    tool = import_openapi(SEARCH, operation="suggest", provider="searchco", price=PRICE)
    assert build_request(tool, {"q": "a", "lang": ["en", "fr"]}).url.endswith("?q=a&lang=en,fr")
    assert tool.contract.output_schema == {"type": "array", "items": {"type": "string"}}


def test_a_body_that_is_not_an_object_is_one_argument() -> None:
    doc = search("batchSearch")
    assert doc["endpoint"]["body"] == {"argument": "body"}
    assert doc["input_schema"]["properties"]["body"]["items"] == {"$ref": "#/$defs/SearchRequest"}
    assert "required" not in doc["input_schema"]  # the body is optional
    tool = import_openapi(SEARCH, operation="batchSearch", provider="searchco", price=PRICE)
    assert build_request(tool, {"body": [{"query": "a"}]}).body == b'[{"query":"a"}]'
    assert build_request(tool, {}).body is None


def test_a_body_member_clashing_with_a_parameter_is_renamed() -> None:
    """Path `id` and body `id`: the body's becomes `body_id`, still sent as `id`."""
    doc = search("putItem", response="200")
    assert doc["endpoint"]["arguments"]["body_id"] == {"in": "body", "name": "id"}
    assert "output_schema" not in doc["contract"]  # JSON with no schema: no shape promised
    tool = import_openapi(
        SEARCH, method="PUT", path="/v1/items/{id}", provider="searchco", price=PRICE
    )
    assert build_request(tool, {"id": "a", "body_id": 7}).body == b'{"id":7}'


@pytest.mark.parametrize(
    ("document", "options", "code"),
    [
        (WEATHER, {"operation": "nope"}, "OPENAPI_OPERATION_UNKNOWN"),
        (WEATHER, {}, "OPENAPI_OPERATION_UNKNOWN"),  # several operations, none named
        (WEATHER, {"method": "DELETE", "path": "/export"}, "OPENAPI_OPERATION_UNKNOWN"),
        (WEATHER, {"operation": "exportCsv"}, "OPENAPI_UNSUPPORTED"),  # no JSON answer
        (WEATHER, {"operation": "listStations"}, "OPENAPI_UNSUPPORTED"),  # an external $ref
        (WEATHER, {"operation": "getForecast", "response": "400"}, "ok"),
        (WEATHER, {"operation": "getForecast", "response": "404"}, "OPENAPI_UNSUPPORTED"),
        (SEARCH, {"operation": "deepFilter"}, "OPENAPI_UNSUPPORTED"),  # style deepObject
        (SEARCH, {"operation": "whoami"}, "OPENAPI_UNSUPPORTED"),  # a required cookie
        ({"swagger": "2.0", "paths": {}}, {}, "OPENAPI_UNSUPPORTED"),
        (["openapi"], {}, "OPENAPI_INVALID"),
        ({"openapi": "4.0.0", "paths": {}}, {}, "OPENAPI_INVALID"),
    ],
)
def test_refusals(document: Any, options: dict[str, Any], code: str) -> None:
    """Each refusal has its code; nothing half-imports."""
    call = lambda: import_openapi(document, provider="p", price=PRICE, **options)  # noqa: E731
    if code == "ok":
        call()
        return
    with pytest.raises(Error) as caught:
        call()
    assert caught.value.code == code, caught.value


def _one(path_item: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"version": "1"}, "paths": {"/x": path_item}, **extra}


JSON_OK = {
    "200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}
}


def test_a_relative_server_needs_a_base_url() -> None:
    document = _one({"get": {"responses": JSON_OK}}, servers=[{"url": "/api"}])
    with pytest.raises(Error) as caught:
        import_openapi(document, provider="p", price=PRICE)
    assert caught.value.code == "OPENAPI_UNSUPPORTED"
    tool = import_openapi(document, provider="p", price=PRICE, base_url="https://api.example/api")
    assert tool.name == "get_x"  # no operationId: method and path
    assert build_request(tool, {}).url == "https://api.example/api/x"


@pytest.mark.parametrize("odd", [[], {}, ["https://spec.openapis.org/oas/3.1/dialect/base"]])
def test_a_dialect_that_is_no_string_is_refused(odd: Any) -> None:
    """A document's `jsonSchemaDialect` and a schema's `$schema` sent as a list or an object
    are refused as a dialect not supported, as any other unknown dialect (each was looked up
    in the known dialects as it came: a value that cannot be hashed raised, and the import
    route answered 500 INTERNAL_ERROR)."""
    schema = {"type": "object", "$schema": odd}
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}
    for document in (
        _one({"get": {"responses": JSON_OK}}, jsonSchemaDialect=odd),
        _one({"get": {"responses": ok}}),
    ):
        with pytest.raises(Error) as caught:
            import_openapi(document, provider="p", price=PRICE, base_url="https://api.example")
        assert caught.value.code == "OPENAPI_UNSUPPORTED", caught.value


def test_a_missing_component_and_a_non_schema_reference_are_refused() -> None:
    missing = _one(
        {
            "get": {
                "responses": {
                    "200": {
                        "description": "",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Gone"}}
                        },
                    }
                }
            }
        },
        servers=[{"url": "https://a.example"}],
    )
    with pytest.raises(Error) as caught:
        import_openapi(missing, provider="p", price=PRICE)
    assert caught.value.code == "OPENAPI_INVALID"
    elsewhere = _one(
        {
            "get": {
                "responses": {
                    "200": {
                        "description": "",
                        "content": {"application/json": {"schema": {"$ref": "#/paths/~1x"}}},
                    }
                }
            }
        },
        servers=[{"url": "https://a.example"}],
    )
    with pytest.raises(Error) as caught:
        import_openapi(elsewhere, provider="p", price=PRICE)
    assert caught.value.code == "OPENAPI_UNSUPPORTED"


def test_a_reference_cycle_between_parameters_is_refused() -> None:
    document = _one(
        {"get": {"parameters": [{"$ref": "#/components/parameters/A"}], "responses": JSON_OK}},
        servers=[{"url": "https://a.example"}],
        components={
            "parameters": {
                "A": {"$ref": "#/components/parameters/B"},
                "B": {"$ref": "#/components/parameters/A"},
            }
        },
    )
    with pytest.raises(Error) as caught:
        import_openapi(document, provider="p", price=PRICE)
    assert caught.value.code == "OPENAPI_INVALID"


MCP_TOOL = {
    "name": "get_weather",
    "title": "Weather",
    "description": "Current weather for a location.",
    "inputSchema": {
        "type": "object",
        "properties": {"location": {"type": "string"}, "units": {"type": "string"}},
        "required": ["location"],
    },
    "outputSchema": {
        "type": "object",
        "properties": {"temperature": {"type": "number"}},
        "required": ["temperature"],
    },
    "annotations": {"readOnlyHint": True},
}


def test_an_mcp_tool_becomes_a_tool_whose_arguments_are_the_body() -> None:
    tool = import_mcp_tool(
        MCP_TOOL, provider="wx", base_url="https://wx.example", path="/call", price=PRICE
    )
    assert tool.mcp_definition() == {
        k: MCP_TOOL[k] for k in ("name", "description", "inputSchema", "outputSchema")
    }
    request = build_request(tool, {"location": "Oslo", "units": "c"})
    assert (request.method, request.url) == ("POST", "https://wx.example/call")
    assert request.body == b'{"location":"Oslo","units":"c"}'
    assert map_response(tool.contract, {"temperature": 3}).ok
    assert not map_response(tool.contract, {"temp": 3}).ok


def test_an_mcp_tool_over_get_sends_its_arguments_in_the_query() -> None:
    doc = mcp_tool_document(
        MCP_TOOL, provider="wx", base_url="https://wx.example", method="GET", price=PRICE
    )
    assert doc["endpoint"]["arguments"] == {"location": {"in": "query"}, "units": {"in": "query"}}
    tool = import_mcp_tool(
        MCP_TOOL, provider="wx", base_url="https://wx.example", method="GET", price=PRICE
    )
    assert build_request(tool, {"location": "Oslo"}).url == "https://wx.example/?location=Oslo"


@pytest.mark.parametrize(
    "change",
    [
        {"name": "get.weather"},
        {"inputSchema": {"type": "array"}},
        {"description": 5},
        {"outputSchema": []},
    ],
)
def test_a_malformed_mcp_tool_is_refused(change: dict[str, Any]) -> None:
    with pytest.raises(Error) as caught:
        import_mcp_tool(
            {**MCP_TOOL, **change}, provider="wx", base_url="https://wx.example", price=PRICE
        )
    assert caught.value.code == "MCP_TOOL_INVALID"
