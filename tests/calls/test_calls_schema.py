"""The schema stage: its compiled fast path agrees with the JSON Schema 2020-12 reference.

Both paths read ``pattern`` and ``patternProperties`` as ECMA-262 regular expressions with the
u flag (one engine, ``adjudge.calls._ecma``) and assert the same formats, so which path answers
can never change a verdict. The differential tests below generate schemas (with patterns,
pattern properties and property names) and documents (with the characters where ECMAScript and
Python disagree) and hold the two paths to each other; node's own RegExp holds the engine to
ECMAScript.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from tests.conftest import requires_node, run_node

from adjudge.calls import Contract, register_contract

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


@functools.cache
def _registered(name: str) -> tuple[Contract, Draft202012Validator]:
    """``SCHEMAS[name]``'s contract and its reference validator, made once: registering checks
    the schema against the 2020-12 metaschema (25 ms, most of an example's time), and both
    only read the documents they are given."""
    contract = register_contract({"tool": "t", "version": "1", "output_schema": SCHEMAS[name]})
    return contract, Draft202012Validator(SCHEMAS[name])


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fast_path_agrees_with_the_reference(name: str, data: st.DataObject) -> None:
    """On valid and near-valid documents the stage says what Draft202012Validator says."""
    contract, reference = _registered(name)
    assert contract.fast_path
    document = data.draw(st.one_of(_mutations(GOOD[name]), values))
    expected = reference.is_valid(document)
    shape = contract.check_shape(document)
    assert shape.ok is expected
    if not shape.ok:
        assert shape.path == "" or shape.path.startswith("/")


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
    assert (shape.ok, shape.path) == (False, "/a/0")
    assert "not of type 'string'" in shape.reason


def test_enum_keeps_true_and_1_apart() -> None:
    """JSON Schema says true is not 1; the stage agrees, whichever path it takes."""
    contract = register_contract({"tool": "t", "version": "1", "output_schema": {"enum": [1]}})
    assert not contract.check_shape(True).ok
    assert contract.check_shape(1).ok


# ----------------------------------------------------------------------------- differential

# Patterns where ECMAScript (u flag) and Python's re disagree, or could: anchors before a
# newline, the ASCII-only classes, Unicode white space, the dot and line separators, astral
# characters, property escapes and ECMAScript-only syntax.
PATTERNS = [
    "^a$", "a$", "^\\d+$", "\\d", "^\\D$", "^\\w+$", "\\W", "^\\s$", "\\S", "^.$", "^.+$",
    "\\bx", "x\\B", "^[a-z]*$", "^[^a]$", "^\\p{L}+$", "^\\p{Nd}$", "(?<n>a)\\k<n>", "^$",
    "^\\u{1F600}$", "[\\u0660-\\u0669]", "^(?:a|ab)$", "(?<=a)b", "^\\cA$", "^[\\d-]+$",
]  # fmt: skip
TEXTS = [
    "", "a", "a\n", "\na", "ab", "x", "xy", " x", "42", "\u0661\u0662", "\u09ea", "caf\u00e9",
    "_", "\ufeff", "\u2028", "\u00a0", "\t", "\U0001f600", "\U0001f600\U0001f600", "\u0001",
    "A", "\u00c9", "-", "1-2", "b", "\r", "\u212a",
]  # fmt: skip

texts = st.sampled_from(TEXTS)
patterns = st.sampled_from(PATTERNS)


INT = {"type": "integer"}


def _schemas() -> st.SearchStrategy[Any]:
    """Schemas of fast-path keywords only, with ECMAScript patterns in every place they go."""
    leaf = st.one_of(
        st.builds(lambda p: {"type": "string", "pattern": p}, patterns),
        st.builds(lambda p: {"pattern": p}, patterns),
        st.just({"type": "string", "minLength": 1}),
        st.just({"type": "integer"}),
        st.just(True),
    )

    def nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        members = st.dictionaries(st.sampled_from(TEXTS[:12]), inner, max_size=3)
        return st.one_of(
            st.builds(lambda props: {"type": "object", "properties": props}, members),
            st.builds(
                lambda pp, extra: {"type": "object", "patternProperties": pp, **extra},
                st.dictionaries(patterns, inner, min_size=1, max_size=2),
                st.sampled_from(
                    [
                        {},
                        {"additionalProperties": False},
                        {"additionalProperties": {"type": "integer"}},
                    ]
                ),
            ),
            st.builds(lambda p: {"type": "object", "propertyNames": {"pattern": p}}, patterns),
            st.builds(lambda i: {"type": "array", "items": i}, inner),
            st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner),
            st.builds(lambda a: {"not": a}, inner),
        )

    return st.recursive(leaf, nest, max_leaves=5)


documents = st.recursive(
    st.one_of(texts, st.integers(-1, 2), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(schema=_schemas(), document=documents)
def test_the_fast_and_the_reference_path_agree_on_patterns(schema: Any, document: Any) -> None:
    """On generated schemas and documents the two paths give one answer and one pointer."""
    contract = register_contract({"tool": "t", "version": "1", "output_schema": schema})
    stage = contract.schema
    assert stage is not None and stage.fast_path
    paths = stage.paths()
    fast, reference = paths["fast"](document), paths["reference"](document)
    assert (fast is None) is (reference is None), (fast, reference)
    # Adding a keyword the fast path does not take switches paths and changes nothing.
    switched = register_contract(
        {"tool": "t", "version": "1", "output_schema": {"allOf": [schema], "uniqueItems": False}}
    )
    assert not switched.fast_path
    assert switched.check_shape(document).ok is (reference is None)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_path_reads_a_pattern_the_same_way(pattern: str) -> None:
    """For each tricky pattern and text, the fast path and the reference path agree."""
    contract = register_contract(
        {"tool": "t", "version": "1", "output_schema": {"type": "string", "pattern": pattern}}
    )
    stage = contract.schema
    assert stage is not None and stage.fast_path
    for text in TEXTS:
        answers = {name: check(text) is None for name, check in stage.paths().items()}
        assert len(set(answers.values())) == 1, (pattern, text, answers)


@pytest.mark.node
@requires_node
def test_patterns_match_as_node_reads_them_with_the_u_flag() -> None:
    """The engine answers what node's `new RegExp(pattern, "u").test(text)` answers."""
    cases = [[p, t] for p in PATTERNS for t in TEXTS]
    expected = run_node("const RESULTS = CASES.map(([p, t]) => new RegExp(p, 'u').test(t));", cases)
    for (pattern, text), want in zip(cases, expected, strict=True):
        contract = register_contract(
            {"tool": "t", "version": "1", "output_schema": {"type": "string", "pattern": pattern}}
        )
        assert contract.check_shape(text).ok is want, (pattern, text)


def test_the_fast_path_never_runs_python_regular_expressions() -> None:
    """The compiled validator's patterns are the ECMAScript engine's, not `re`'s."""
    contract = register_contract(
        {
            "tool": "t",
            "version": "1",
            "output_schema": {
                "type": "object",
                "patternProperties": {"^a$": {"pattern": "^a$"}},
                "propertyNames": {"pattern": "^[a-z]+$"},
            },
        }
    )
    stage = contract.schema
    assert stage is not None and stage.fast_path
    assert stage.compiled_patterns()
    assert all(not isinstance(p, re.Pattern) for p in stage.compiled_patterns())


def test_an_ambiguous_error_name_is_located_by_the_reference() -> None:
    """`data.a.b.c` reads two ways through this output; the pointer is still exact."""
    schema = {
        "type": "object",
        "properties": {
            "a.b": {"type": "object", "properties": {"c": {"type": "string"}}},
            "a": {"type": "object", "properties": {"b.c": {"type": "string"}}},
        },
    }
    contract = register_contract({"tool": "t", "version": "1", "output_schema": schema})
    assert contract.fast_path
    shape = contract.check_shape({"a.b": {"c": 3}, "a": {"b.c": 3}})
    assert not shape.ok
    assert shape.path in ("/a.b/c", "/a/b.c")
