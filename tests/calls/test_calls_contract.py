"""Tool contracts: the response mapping and the shape check at the mapping boundary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adjudge.calls import (
    CallVerdict,
    Payment,
    parse_request,
    parse_response,
    register_contract,
    register_policy,
    verify_call,
)
from adjudge.calls.contract import map_response

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"

SCHEMA = {
    "type": "object",
    "required": ["items"],
    "properties": {"items": {"type": "array", "items": {"type": "object", "required": ["id"]}}},
}


def test_without_a_mapping_the_raw_json_is_the_output() -> None:
    """No mapping: the provider's JSON is judged as sent, nulls included."""
    contract = register_contract({"tool": "t", "version": "1"})
    shape = map_response(contract, {"a": None})
    assert shape.ok
    assert shape.output == {"a": None}
    assert not shape.schema_declared


def test_one_expression_maps_the_whole_output() -> None:
    """A single JMESPath expression builds the whole output; null members are dropped."""
    contract = register_contract(
        {
            "tool": "t",
            "version": "1",
            "response_mapping": "{items: data.rows[*].{id: key, note: note}}",
            "output_schema": SCHEMA,
        }
    )
    shape = map_response(contract, {"data": {"rows": [{"key": "a"}, {"key": "b", "note": "n"}]}})
    assert shape.ok, shape.reason
    assert shape.output == {"items": [{"id": "a"}, {"id": "b", "note": "n"}]}


def test_a_broken_single_expression_is_reported_at_the_root() -> None:
    """A type error in a whole-output expression fails at `$`, naming the expression."""
    contract = register_contract({"tool": "t", "version": "1", "response_mapping": "length(data)"})
    shape = map_response(contract, {"data": 5})
    assert (shape.ok, shape.stage, shape.path) == (False, "mapping", "")
    assert "'length(data)'" in shape.reason


def test_a_missing_mapped_field_names_its_source() -> None:
    """A required field the mapping could not find is named, with the expression it came from."""
    contract = register_contract(
        {
            "tool": "t",
            "version": "1",
            "response_mapping": {"items": "payload.items"},
            "output_schema": SCHEMA,
        }
    )
    shape = map_response(contract, {"data": {"items": []}})
    assert (shape.ok, shape.path) == (False, "/items")
    assert "'payload.items'" in shape.reason


def test_the_mapping_never_changes_the_providers_data() -> None:
    """Mapping and checking leave the raw response untouched (no defaults written into it)."""
    raw = {"data": {"items": [{"id": "a", "extra": None}]}}
    schema = dict(SCHEMA, properties={"items": {"type": "array"}, "n": {"default": 3}})
    contract = register_contract(
        {
            "tool": "t",
            "version": "1",
            "response_mapping": {"items": "data.items"},
            "output_schema": schema,
        }
    )
    before = repr(raw)
    shape = map_response(contract, raw)
    assert shape.ok
    assert repr(raw) == before
    assert "n" not in shape.output


def _example(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("issued", "verdict"),
    [
        ("2026-11-29T18:00:00Z", "PASS"),
        ("2026-11-29T18:00:00", "FAIL"),  # no offset: not RFC 3339, the provider's fault
        ("yesterday evening", "FAIL"),
        ("2026-11-29 18:00:00Z", "FAIL"),
        ("2099-01-01T00:00:00Z", "FAIL"),  # a valid date-time, but from the future
    ],
)
def test_the_weather_contract_asserts_its_date_time(issued: str, verdict: str) -> None:
    """The shipped weather contract opts in to format assertion: a bad `issued` timestamp is
    the provider's schema failure (refund, strike), not a rule voided for want of an age."""
    contract = register_contract(_example("weather.contract.json"))
    policy = register_policy(_example("weather.policy.json"), contract)
    envelope = _example("weather.good.response.json")
    envelope["body"]["issued"] = issued
    request = parse_request(_example("weather.request.json"))
    assert request.at is not None
    result = verify_call(contract, policy, request, parse_response(envelope), request.at)
    assert result.verdict is CallVerdict(verdict), result.decided_by
    if verdict == "FAIL":
        assert (result.effect.payment, result.effect.strike) == (Payment.REFUND, True)


def test_the_search_contract_asserts_its_urls() -> None:
    """`format: uri` in the shipped search contract is asserted: a URL with a space fails."""
    contract = register_contract(_example("search.contract.json"))
    shape = map_response(
        contract, {"query": {"original": "q"}, "web": {"results": [{"title": "t", "url": "a b"}]}}
    )
    assert (shape.ok, shape.path) == (False, "/results/0/url")


@pytest.mark.parametrize("name", ["weather.contract.json", "search.contract.json"])
def test_the_shipped_contracts_opt_in_to_format_assertion(name: str) -> None:
    """The examples the docs point providers at assert the formats they declare."""
    assert _example(name)["format_assertion"] is True
    assert register_contract(_example(name)).format_assertion
