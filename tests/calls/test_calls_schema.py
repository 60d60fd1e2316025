"""The schema stage: its compiled fast path agrees with the JSON Schema 2020-12 reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from adjudge.calls import register_contract

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"

SCHEMAS: dict[str, Any] = {
    "weather": json.loads((EXAMPLES / "weather.contract.json").read_text())["output_schema"],
    "search": json.loads((EXAMPLES / "search.contract.json").read_text())["output_schema"],
    "keywords": {
        "type": "object",
        "additionalProperties": False,
        "required": ["kind"],
        "properties": {
            "kind": {"enum": ["a", "b", None]},
            "n": {"type": "integer", "minimum": 0, "exclusiveMaximum": 3},
            "s": {"type": "string", "minLength": 1, "maxLength": 3, "pattern": "^[a-z]+$"},
            "c": {"const": "x"},
            "l": {"type": "array", "minItems": 1, "maxItems": 2, "contains": {"type": "number"}},
            "o": {"type": "object", "minProperties": 1, "propertyNames": {"pattern": "^[a-z]$"}},
            "u": {"anyOf": [{"type": "string"}, {"type": "number", "maximum": 1}]},
            "v": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0.5}]},
            "w": {"allOf": [{"type": "number"}, {"not": {"const": "z"}}]},
        },
        "if": {"properties": {"kind": {"const": "a"}}},
        "then": {"required": ["n"]},
        "else": {"required": ["s"]},
    },
}

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 5),
        st.sampled_from([0.5, 1.0, 2.5, -0.0, 1e300]),
        st.sampled_from(["", "a", "b", "x", "z", "ab", "abcd", "A1", "2026-11-30"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["kind", "n", "s", "c", "l", "o", "u", "v", "w", "a", "B"]),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=15,
)


def _mutations(document: Any) -> st.SearchStrategy[Any]:
    """Documents near a valid one: one member replaced, removed or added at any depth."""

    @st.composite
    def mutate(draw: st.DrawFn) -> Any:
        doc = json.loads(json.dumps(document))
        node = doc
        for _ in range(draw(st.integers(0, 3))):
            if isinstance(node, dict) and node:
                key = draw(st.sampled_from(sorted(node)))
                if isinstance(node[key], dict | list) and draw(st.booleans()):
                    node = node[key]
                    continue
                action = draw(st.sampled_from(["replace", "remove"]))
                if action == "remove":
                    del node[key]
                else:
                    node[key] = draw(values)
                break
            if isinstance(node, list) and node:
                node = node[draw(st.integers(0, len(node) - 1))]
        return doc

    return mutate()


GOOD = {
    "weather": {
        "location": {"lat": 52.5, "lon": 13.4},
        "issued_at": "2026-11-29T18:00:00Z",
        "days": [{"date": "2026-11-30", "temp_max_c": 5.1, "temp_min_c": -1, "precip_prob": 40}],
    },
    "search": {
        "query": "q",
        "results": [{"title": "t", "url": "https://a.example/", "score": 0.5}],
    },
    "keywords": {"kind": "a", "n": 1, "l": [1], "u": "s", "v": 2, "w": 3},
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fast_path_agrees_with_the_reference(name: str, data: st.DataObject) -> None:
    """On valid and near-valid documents the stage says what Draft202012Validator says."""
    contract = register_contract({"tool": "t", "version": "1", "output_schema": SCHEMAS[name]})
    assert contract.fast_path
    document = data.draw(st.one_of(_mutations(GOOD[name]), values))
    expected = Draft202012Validator(SCHEMAS[name]).is_valid(document)
    shape = contract.check_shape(document)
    assert shape.ok is expected
    if not shape.ok:
        assert shape.path.startswith("$")


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"type": "array", "uniqueItems": True},
        {"enum": [1, 2]},
        {"const": True},
        {"properties": {"a": {"$ref": "#/$defs/x", "minLength": 2}}, "$defs": {"x": {}}},
        {"unevaluatedProperties": False},
        {"dependentRequired": {"a": ["b"]}},
        {"type": "number", "multipleOf": 0.1},
    ],
)
def test_keywords_that_differ_take_the_reference_path(schema: dict[str, Any]) -> None:
    """A keyword whose meaning differs between drafts (or in Python's ==) is never fast-pathed."""
    contract = register_contract({"tool": "t", "version": "1", "output_schema": schema})
    assert not contract.fast_path


def test_reference_path_names_the_broken_path() -> None:
    """Off the fast path, jsonschema's best error gives the JSON path and message."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "prefixItems": [{"type": "string"}]}},
    }
    contract = register_contract({"tool": "t", "version": "1", "output_schema": schema})
    shape = contract.check_shape({"a": [3]})
    assert (shape.ok, shape.path) == (False, "$.a[0]")
    assert "not of type 'string'" in shape.reason


def test_enum_keeps_true_and_1_apart() -> None:
    """JSON Schema says true is not 1; the stage agrees, whichever path it takes."""
    contract = register_contract({"tool": "t", "version": "1", "output_schema": {"enum": [1]}})
    assert not contract.check_shape(True).ok
    assert contract.check_shape(1).ok
