"""Which provider programs have a bound on their work per value of the answer (judged on the
event loop) and which have none (judged apart, in a worker killed at a time limit)."""

from __future__ import annotations

from typing import Any

import jmespath
import pytest

from adjudge.calls import register_contract
from adjudge.calls.bounds import IN_PROCESS_STEPS, expression_cost, in_process

#: An expression, and whether its copies of one input value are bounded (its copy factor).
EXPRESSIONS: list[tuple[str, int | None]] = [
    ("a.b[0].c", 1),
    ("a[1:3].b", 1),
    ("daily[*].{date: date, high: temperature_2m_max}", 1),  # branches read different members
    ("{lat: latitude, lon: longitude}", 1),
    ("{a: a, b: a}", 2),  # the same member twice
    ("[@, @]", 2),
    (" | ".join(["[@, @][]"] * 11), None),  # 2^11 copies: past the bound
    (" | ".join(["[@, @][]"] * 10), 1024),
    ("items[?price > `3`].name", 2),
    ("length(@)", None),  # functions have no bound here
    ("sort_by(items, &price)", None),
    ("`[1, 2, 3]`", 4),  # a container literal is copied per value
]


@pytest.mark.parametrize(("source", "copies"), EXPRESSIONS)
def test_an_expressions_copies(source: str, copies: int | None) -> None:
    cost = expression_cost(jmespath.compile(source).parsed)
    assert (None if cost is None else cost[1]) == copies


def contract(schema: Any, **extra: Any) -> Any:
    return register_contract({"tool": "t", "version": "1", "output_schema": schema, **extra})


#: A schema, and whether it has a bound (the compiled validator, no pattern, reference, or
#: keyword of superlinear cost).
SCHEMAS: list[tuple[Any, bool]] = [
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}}, True),
    ({"type": "string", "pattern": "^a+$"}, False),  # a repeat can backtrack
    ({"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"}, True),  # exact counts cannot
    ({"type": "string", "pattern": "^\\p{L}{4}$"}, False),  # the u flag's own escape
    ({"patternProperties": {"^x[0-9]{2}$": {"type": "string"}}}, True),
    ({"patternProperties": {"^x+y": {"type": "string"}}}, False),
    ({"$defs": {"n": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/n"}}}, False),
    ({"type": "array", "uniqueItems": True}, False),
    ({"unevaluatedProperties": False, "properties": {"a": {}}}, False),
    ({"type": "string", "format": "date-time"}, True),
]


@pytest.mark.parametrize(("schema", "bounded"), SCHEMAS)
def test_a_schemas_bound(schema: Any, bounded: bool) -> None:
    assert (contract(schema).schema_weight is not None) is bounded


def test_an_asserted_regex_format_compiles_the_answer_so_it_has_no_bound() -> None:
    schema = {"type": "string", "format": "regex"}
    assert contract(schema).schema_weight is not None
    assert contract(schema, format_assertion=True).schema_weight is None


def test_a_mapping_reading_one_member_twice_copies_it_twice() -> None:
    apart = contract(True, response_mapping={"a": "x", "b": "y"})
    twice = contract(True, response_mapping={"a": "x", "b": "x.z"})
    assert apart.mapping_cost is not None and apart.mapping_cost[1] == 1
    assert twice.mapping_cost is not None and twice.mapping_cost[1] == 2


def test_the_answers_size_decides_within_a_bound() -> None:
    assert in_process(100, IN_PROCESS_STEPS // 100)
    assert not in_process(100, IN_PROCESS_STEPS // 100 + 1)
    assert not in_process(None, 1)


def test_an_answers_regex_text_is_compiled_but_never_kept() -> None:
    """An asserted ``format: regex`` compiles the answer's own text; the patterns' cache keeps
    contract patterns only, so answers of megabytes of valid patterns do not pile up in it."""
    from adjudge.calls._ecma import compile_pattern  # noqa: PLC0415
    from adjudge.calls.formats import FORMATS  # noqa: PLC0415

    before = compile_pattern.cache_info().currsize
    texts = [f"a{n}" * 1000 for n in range(50)]
    assert all(FORMATS["regex"](text) for text in texts)
    assert not FORMATS["regex"]("(")
    assert compile_pattern.cache_info().currsize == before


#: Schemas whose branches fail: each failing branch raises (and names the value) for every
#: value, about a hundred times a plain check, and more as the schema grows. Each was judged on
#: the event loop for 0.66-8 s before its branches were counted (the bytes are the answer's).
RAISING: list[tuple[Any, int]] = [
    ({"type": "array", "items": {"anyOf": [False] * 20 + [True]}}, 15_999),
    ({"type": "array", "items": {"allOf": [{"anyOf": [False, True]}] * 1500}}, 65),
    ({"type": "array", "items": {"allOf": [{"anyOf": [False, True]}] * 5000}}, 3),
]


@pytest.mark.parametrize(("schema", "size"), RAISING)
def test_failing_branches_are_counted_as_the_exceptions_they_raise(schema: Any, size: int) -> None:
    assert not in_process(contract(schema).schema_weight, size)


def test_a_nullable_field_keeps_a_small_answer_on_the_loop() -> None:
    nullable = {"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
    assert in_process(contract(nullable).schema_weight, 100)


def test_rule_kinds_are_counted_at_their_own_cost() -> None:
    """A rule's work per value differs by kind (``no_duplicates`` writes each item's canonical
    form); an unknown kind counts as the dearest."""
    from adjudge.calls.bounds import rules_cost  # noqa: PLC0415

    cheap = rules_cost([], ["min_results"])
    dear = rules_cost([], ["no_duplicates"])
    assert cheap is not None and dear is not None and cheap < dear
    assert rules_cost([], ["a kind from later"]) == dear
    assert rules_cost([None], ["min_results"]) is None


def test_an_asserted_format_counts_each_character_it_reads() -> None:
    """A failing ``uri-reference`` tries two grammars over the whole string: a third of a
    megabyte took 50-100 ms on the loop when a format counted once a value."""
    schema = {"format": "uri-reference"}
    asserted = contract(schema, format_assertion=True).schema_weight
    assert not in_process(asserted, 333_332)
    assert in_process(contract(schema).schema_weight, 333_332)  # an annotation reads nothing


def test_a_dotted_member_name_sends_the_answer_apart() -> None:
    """``data.a.b`` reads as ``/a/b`` and as ``/a.b``: the compiled validator's failure is then
    located by the reference validator over the whole output (1.2 s for 62 KB measured), so an
    answer or a mapping with such a name is judged apart."""
    from adjudge.calls.bounds import dotted_names  # noqa: PLC0415
    from adjudge.calls.verify import judged_here  # noqa: PLC0415

    schema = {"type": "object", "properties": {"a": {"type": "object"}}}
    plain = contract(schema)
    assert judged_here(plain.schema_weight, plain, {"a": {"b": 1}}, 20)
    assert not judged_here(plain.schema_weight, plain, {"a": {"b": 1}, "a.b": 1}, 20)
    assert dotted_names([{"x": [{"y[0]": 1}]}]) and not dotted_names({"a": [1, {"b": 2}]})
    mapped = contract(schema, response_mapping={"a.b": "x"})
    assert mapped.dotted_output
    assert contract(schema, response_mapping='{"k.v": x}').dotted_output
    assert not judged_here(mapped.schema_weight, mapped, {"x": 1}, 20)
