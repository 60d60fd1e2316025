"""Tool contracts: the response mapping and the shape check at the mapping boundary."""

from __future__ import annotations

from adjudge.calls import register_contract
from adjudge.calls.contract import map_response

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
    assert (shape.ok, shape.stage, shape.path) == (False, "mapping", "$")
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
    assert (shape.ok, shape.path) == (False, "$.items")
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
