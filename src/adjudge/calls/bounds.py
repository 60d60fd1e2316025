"""How much work judging one answer can cost, read off the provider's own programs beforehand.

A contract's response mapping and output schema, and a policy's rule paths and conditions, are
programs their provider writes and the gateway runs on every answer. Most cost a few steps per
value of the answer. Some have no such bound, and a crafted answer makes them run for hours or
fill the memory, which would stop the service for everyone:

- a ``pattern`` (or ``patternProperties``) backtracks: ``(a|a)*$`` is exponential in the text,
  and the engine cannot be interrupted (a pattern that cannot backtrack, such as
  ``^[0-9]{4}-[0-9]{2}$``, has a bound);
- a ``$ref`` can apply one subschema to the same value any number of times (``allOf`` of two
  references, nested thirty deep, is 2^30 checks of one value), and ``uniqueItems`` compares
  items pairwise;
- an asserted ``format: regex`` compiles the answer's own text as a pattern (seconds for a few
  hundred kilobytes);
- a JMESPath multi-select copies its input (``[@, @]``), and a pipe doubles the copy again;
  functions sort, join and repeat.

:func:`weight` gives an upper bound on the steps per value of the answer (each value takes at
least one byte), or None when there is none. The gateway judges an answer on its event loop
only when ``weight × bytes`` is within :data:`IN_PROCESS_STEPS`; anything else is judged in a
worker process that is killed at a time limit (``adjudge.app.isolation``). Pure: documents in,
numbers out.

The bound is conservative by construction: it counts every node of a schema as applying to
every value of the answer, and a mapping's or rule's copies as multiplying along each path
(branches of a multi-select that read different members of their input copy nothing twice). A
program it cannot bound is not refused; it is only judged apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from adjudge.autocheck import jsregex
from adjudge.autocheck._regexsource import BOUNDED_STEPS

__all__ = [
    "IN_PROCESS_STEPS",
    "disjoint_fields",
    "dotted",
    "dotted_names",
    "expression_cost",
    "in_process",
    "plain_selection",
    "rules_cost",
    "schema_weight",
    "weight",
]

#: The most bounded steps (schema nodes × answer values, mapping copies, …) an answer and its
#: arguments may cost to be judged on the event loop: a few milliseconds at the worst a step
#: costs (``benchmarks/judging.py``).
IN_PROCESS_STEPS = 1_000_000
#: A copy factor past which an expression counts as unbounded (``[@,@]|[@,@]|…`` ten times).
_MOST_COPIES = 1_024
#: The steps each kind of rule takes per byte of the values it judges, at the worst measured
#: (``benchmarks/judging.py``: a list of small values, each judged by ten rules of the kind;
#: ``no_duplicates`` writes each item's canonical form). A kind not listed counts the most.
_RULE_STEPS = {
    "min_results": 1,
    "valid_url": 40,
    "required_values": 40,
    "numeric_range": 60,
    "freshness": 120,
    "no_duplicates": 600,
}
_RULE_STEPS_MOST = max(_RULE_STEPS.values())
#: What a branch that fails costs the compiled validator (``anyOf``, ``oneOf``, ``not``, ``if``
#: and ``contains`` try branches that may fail): it raises and catches an exception, about a
#: thousand plain steps, and names the value by formatting every local of the generated
#: function, one a schema node (measured in ``benchmarks/judging.py``).
_RAISE_STEPS = 2_000
_RAISE_STEPS_A_NODE = 4
#: What an asserted format costs per character of the string it reads (a failing
#: ``uri-reference`` tries two grammars: about 150 ns a character).
_FORMAT_STEPS = 50

# JMESPath nodes whose output holds at most what their children's hold, composed along a path.
_CHAINED = frozenset(
    {
        "subexpression", "pipe", "index_expression", "projection", "value_projection",
        "flatten", "filter_projection",
    }
)  # fmt: skip
# Nodes whose children are all evaluated on the same value (their costs add up).
_SUMMED = frozenset(
    {
        "multi_select_dict", "multi_select_list", "key_val_pair", "comparator",
        "not_expression", "and_expression", "or_expression",
    }
)  # fmt: skip
_LEAVES = frozenset({"field", "index", "slice", "current", "identity"})
# 2020-12 keywords a bounded schema may not hold: see the module docstring.
_UNBOUNDED_KEYWORDS = frozenset({"$ref", "$dynamicRef"})
#: Escapes the u flag reads differently from a pattern without it (``\u{…}``, ``\p{…}``, …):
#: a pattern holding one is not classified by the auto check's reading.
_U_ESCAPES = re.compile(r"\\[upPkc]")


def expression_cost(node: Mapping[str, Any]) -> tuple[int, int] | None:
    """A JMESPath expression's steps per input value and its copies of one input value in its
    output (along each path, multiplied), or None: a function, an expression reference, or more
    than :data:`_MOST_COPIES` copies."""
    try:
        copies = _copies(node)
        nodes = _nodes(node)
    except RecursionError:  # nested past the interpreter's stack: not bounded here
        return None
    if copies is None or copies > _MOST_COPIES:
        return None
    return nodes * copies, copies


def plain_selection(cost: tuple[int, int] | None) -> bool:
    """Whether an expression of this cost only selects (no function, no value copied twice):
    its work is bounded by the size of what it reads."""
    return cost is not None and cost[1] == 1


def _nodes(node: Mapping[str, Any]) -> int:
    children = node.get("children", [])  # a slice's are its numbers, not nodes
    return 1 + sum(_nodes(child) for child in children if isinstance(child, Mapping))


def _copies(node: Mapping[str, Any]) -> int | None:
    kind = node.get("type")
    children = node.get("children", [])
    if kind in _LEAVES:
        return 1
    if kind == "literal":  # a container literal is copied into the output for every value
        return 1 + _size(node.get("value"))
    if kind not in _CHAINED and kind not in _SUMMED:
        return None  # functions, expression references and any node type this does not know
    counts = []
    for child in children:
        found = _copies(child)
        if found is None:
            return None
        counts.append(found)
    if kind in _CHAINED:
        total = 1
        for each in counts:
            total *= each
            if total > _MOST_COPIES:
                return None
        return total
    if kind in ("multi_select_dict", "multi_select_list") and _disjoint(children):
        return max(counts, default=1)  # each branch copies a different member of the input
    return max(sum(counts), 1)


def _disjoint(branches: list[Mapping[str, Any]]) -> bool:
    """True when the branches read pairwise different members of their input."""
    seen: set[str] = set()
    for branch in branches:
        read = _heads(branch)
        if read is None or read & seen:
            return False
        seen |= read
    return True


def _heads(node: Mapping[str, Any]) -> set[str] | None:
    """The members of its input an expression reads, or None when it may read all of it."""
    kind = node.get("type")
    children = node.get("children", [])
    if kind == "field":
        return {str(node.get("value"))}
    if kind == "literal":
        return set()
    if kind in _CHAINED or kind == "key_val_pair":
        return _heads(children[0]) if children else None
    if kind in _SUMMED:
        read: set[str] = set()
        for child in children:
            found = _heads(child)
            if found is None:
                return None
            read |= found
        return read
    return None  # the current value, a wildcard, an index or slice of it, anything else


def _size(value: object) -> int:
    """How many JSON values ``value`` holds below itself."""
    if isinstance(value, Mapping):
        return sum(1 + _size(v) for v in value.values())
    if isinstance(value, list):
        return sum(1 + _size(v) for v in value)
    return 0


def disjoint_fields(expressions: list[Mapping[str, Any]]) -> bool:
    """True when a mapping's field expressions read pairwise different members of the answer."""
    try:
        return _disjoint(expressions)
    except RecursionError:
        return False


def schema_weight(
    schema: object,
    subschemas: Iterator[Mapping[str, Any]],
    *,
    fast: bool,
    format_assertion: bool,
) -> int | None:
    """An upper bound on the checks one value of the output costs, or None.

    ``subschemas`` are every schema object of ``schema`` at a keyword position; ``fast`` says
    whether the compiled validator answers (the reference alone also runs keywords such as
    ``uniqueItems`` and ``unevaluatedProperties`` whose cost is not linear). Every JSON value
    of the schema counts as one check applied to every value of the output.
    """
    if not fast:
        return None
    total = 1
    branches = 0
    try:
        for each in subschemas:
            if _UNBOUNDED_KEYWORDS & each.keys():
                return None
            if format_assertion and each.get("format") == "regex":
                return None
            patterns = list(each.get("patternProperties", {}))
            if isinstance(each.get("pattern"), str):
                patterns.append(each["pattern"])
            for source in patterns:
                if not _bounded_pattern(source):
                    return None
                total += BOUNDED_STEPS  # steps per character it is tried on
            if format_assertion and "format" in each:
                total += _FORMAT_STEPS  # steps per character its grammar reads
            branches += sum(len(each.get(k, ())) for k in ("anyOf", "oneOf"))
            branches += sum(1 for k in ("not", "if", "contains") if k in each)
        size = 1 + _size(schema)
        return total + size + branches * (_RAISE_STEPS + _RAISE_STEPS_A_NODE * size)
    except RecursionError:
        return None


def _bounded_pattern(source: str) -> bool:
    """Whether a pattern cannot backtrack: no quantifier but exact counts of single atoms, no
    alternation or back reference (``^[0-9]{4}-[0-9]{2}$``), by the auto check's reading of a
    pattern, which the u flag's agrees with on ASCII patterns without its own escapes."""
    if not source.isascii() or _U_ESCAPES.search(source):
        return False
    try:
        return jsregex.compile(source).bounded
    except jsregex.JsRegexError:
        return False


def rules_cost(expressions: list[tuple[int, int] | None], kinds: list[str]) -> int | None:
    """A policy's steps per value of the output: its expressions' and its rules' own (one of
    each kind in ``kinds`` per rule)."""
    total = sum(_RULE_STEPS.get(kind, _RULE_STEPS_MOST) for kind in kinds)
    for cost in expressions:
        if cost is None:
            return None
        total += cost[0]
    return total


def weight(mapping: tuple[int, int] | None, schema: int | None, rules: int | None) -> int | None:
    """Steps per value of the answer: the mapping's own, then the schema's and the rules' on
    each copy the mapping makes of a value; None if any part has no bound."""
    if mapping is None or schema is None or rules is None:
        return None
    steps, copies = mapping
    return steps + copies * (schema + rules)


def dotted(name: str) -> bool:
    """Whether a member name can make the compiled validator's name for a place ambiguous
    (``data.a.b`` reads as ``/a/b`` and as ``/a.b``): then the reference validator locates the
    failure by judging the whole output again, at a hundred times a step's cost."""
    return "." in name or "[" in name


def dotted_names(value: Any) -> bool:
    """Whether any member name in a JSON value is :func:`dotted` (a walk over its containers)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, member in item.items():
                if dotted(key):
                    return True
                if isinstance(member, dict | list):
                    stack.append(member)
        elif isinstance(item, list):
            stack.extend(member for member in item if isinstance(member, dict | list))
    return False


def in_process(steps_per_value: int | None, size: int) -> bool:
    """Whether an answer of ``size`` bytes may be judged on the event loop."""
    return steps_per_value is not None and steps_per_value * max(size, 1) <= IN_PROCESS_STEPS
