"""JMESPath ASTs compiled into Python closures: the same answers as the interpreter, faster.

``jmespath`` parses an expression once and then walks its syntax tree on every search, which
costs a dispatch per node per value. A tool contract's mapping runs on every call, so the common
node types are turned into nested closures once, at registration. Each closure mirrors the
corresponding ``TreeInterpreter.visit_*`` method exactly (the differential tests in
``tests/calls/test_calls_properties.py`` hold them to it). An expression using anything else
(function calls, expression references) returns ``None`` here and is searched by the
interpreter.

**Strict mode**, for the response mapping: a JMESPath projection (``a[*].b``, ``a[]``, ``*.b``,
``a[?c].b``) leaves out every element whose right-hand side is null, so ``[null, null]``
projects to ``[]`` and a list silently loses items. At the mapping boundary that is a shape
failure, not a smaller answer: a strict projection raises :class:`DroppedElement` instead. A
filter's condition still selects (an element it excludes was not lost). ``StrictInterpreter``
does the same for expressions the closures do not cover.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from numbers import Number
from typing import Any

from jmespath import visitor

__all__ = ["DroppedElement", "StrictInterpreter", "compile_node", "is_false", "location"]

Fn = Callable[[Any], Any]


class DroppedElement(Exception):
    """A strict projection met an element that maps to null (JMESPath would drop it)."""

    def __init__(self, index: int) -> None:
        super().__init__(
            f"element {index} of a projected list maps to null, and a JMESPath projection "
            "leaves such elements out, so the output would silently lose it"
        )
        self.index = index


def _is_actual_number(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, Number)


def _equals(x: Any, y: Any) -> bool:
    # JMESPath keeps true/false apart from 1/0, which Python's == does not.
    if _is_actual_number(x) and x in (0, 1):
        if isinstance(y, bool):
            return False
    elif _is_actual_number(y) and y in (0, 1) and isinstance(x, bool):
        return False
    return bool(x == y)


def is_false(value: Any) -> bool:
    """JMESPath falsiness: null, false, "", [] and {} (but not 0, unlike Python)."""
    return value is None or value is False or value in ("", [], {})


_ORDER: dict[str, Callable[[Any, Any], Any]] = {
    "lt": operator.lt,
    "gt": operator.gt,
    "lte": operator.le,
    "gte": operator.ge,
}


def compile_node(node: dict[str, Any], *, strict: bool = False) -> Fn | None:
    """A closure computing ``node`` on a value, or ``None`` if a node type is not compiled.

    ``strict``: projections raise :class:`DroppedElement` rather than drop a null element.
    """
    kind = node["type"]
    children = node.get("children", [])
    builder = (_STRICT_BUILDERS if strict else _BUILDERS).get(kind)
    if builder is None:
        return None
    subs = []
    if kind not in ("slice",):
        for child in children:
            sub = compile_node(child, strict=strict)
            if sub is None:
                return None
            subs.append(sub)
    return builder(node, subs)


def location(node: dict[str, Any]) -> tuple[str | int, ...] | None:
    """The member names and indexes ``node`` walks, if it is a plain location; else ``None``.

    A plain location is a chain of fields and non-negative indexes (``a.b[2].c``, or ``@``): it
    names one place in the data, which a JSON Pointer can name too. Anything else (a projection,
    a filter, a function, a negative index) has no single place.
    """
    kind = node["type"]
    if kind == "field":
        return (node["value"],)
    if kind in ("identity", "current"):
        return ()
    if kind == "index":
        return (node["value"],) if node["value"] >= 0 else None
    if kind in ("subexpression", "index_expression"):
        out: tuple[str | int, ...] = ()
        for child in node["children"]:
            part = location(child)
            if part is None:
                return None
            out += part
        return out
    return None


def _field(node: dict[str, Any], subs: list[Fn]) -> Fn:
    name = node["value"]

    def field(value: Any) -> Any:
        try:
            return value.get(name)
        except AttributeError:
            return None

    return field


def _chain(node: dict[str, Any], subs: list[Fn]) -> Fn:
    if len(subs) == 2:
        first, second = subs

        def chain2(value: Any) -> Any:
            return second(first(value))

        return chain2

    def chain(value: Any) -> Any:
        for sub in subs:
            value = sub(value)
        return value

    return chain


def _project(elements: Any, right: Fn) -> list[Any]:
    """JMESPath's projection step: ``right`` over each element, nulls dropped."""
    return [current for current in map(right, elements) if current is not None]


def _project_strict(elements: Any, right: Fn) -> list[Any]:
    """The projection step at the mapping boundary: a null element is refused, not dropped."""
    out = list(map(right, elements))
    if None in out:
        raise DroppedElement(out.index(None))
    return out


def _projections(
    project: Callable[[Any, Fn], list[Any]],
) -> tuple[Callable[[dict[str, Any], list[Fn]], Fn], ...]:
    """The three projection builders, projecting with ``project``."""

    def projection_node(node: dict[str, Any], subs: list[Fn]) -> Fn:
        left, right = subs

        def projection(value: Any) -> Any:
            base = left(value)
            return project(base, right) if isinstance(base, list) else None

        return projection

    def value_projection_node(node: dict[str, Any], subs: list[Fn]) -> Fn:
        left, right = subs

        def value_projection(value: Any) -> Any:
            base = left(value)
            try:
                values = base.values()
            except AttributeError:
                return None
            return project(values, right)

        return value_projection

    def filter_projection_node(node: dict[str, Any], subs: list[Fn]) -> Fn:
        left, right, condition = subs

        def filter_projection(value: Any) -> Any:
            base = left(value)
            if not isinstance(base, list):
                return None
            return project([e for e in base if not is_false(condition(e))], right)

        return filter_projection

    return projection_node, value_projection_node, filter_projection_node


_projection, _value_projection, _filter_projection = _projections(_project)
_strict_projections = _projections(_project_strict)


def _flatten(node: dict[str, Any], subs: list[Fn]) -> Fn:
    (inner,) = subs

    def flatten(value: Any) -> Any:
        base = inner(value)
        if not isinstance(base, list):
            return None
        merged: list[Any] = []
        for element in base:
            if isinstance(element, list):
                merged.extend(element)
            else:
                merged.append(element)
        return merged

    return flatten


def _identity(node: dict[str, Any], subs: list[Fn]) -> Fn:
    def identity(value: Any) -> Any:
        return value

    return identity


def _index(node: dict[str, Any], subs: list[Fn]) -> Fn:
    position = node["value"]

    def index(value: Any) -> Any:
        if not isinstance(value, list):
            return None
        try:
            return value[position]
        except IndexError:
            return None

    return index


def _slice(node: dict[str, Any], subs: list[Fn]) -> Fn:
    part = slice(*node["children"])

    def sliced(value: Any) -> Any:
        if not isinstance(value, list):
            return None
        return value[part]

    return sliced


def _literal(node: dict[str, Any], subs: list[Fn]) -> Fn:
    constant = node["value"]

    def literal(value: Any) -> Any:
        return constant

    return literal


def _key_val_pair(node: dict[str, Any], subs: list[Fn]) -> Fn:
    return subs[0]


def _multi_select_dict(node: dict[str, Any], subs: list[Fn]) -> Fn:
    pairs = [(child["value"], sub) for child, sub in zip(node["children"], subs, strict=True)]

    def multi_select_dict(value: Any) -> Any:
        if value is None:
            return None
        return {key: sub(value) for key, sub in pairs}

    return multi_select_dict


def _multi_select_list(node: dict[str, Any], subs: list[Fn]) -> Fn:
    def multi_select_list(value: Any) -> Any:
        if value is None:
            return None
        return [sub(value) for sub in subs]

    return multi_select_list


def _comparator(node: dict[str, Any], subs: list[Fn]) -> Fn:
    left, right = subs
    op = node["value"]
    if op == "eq":
        return lambda value: _equals(left(value), right(value))
    if op == "ne":
        return lambda value: not _equals(left(value), right(value))
    order = _ORDER[op]

    def compare(value: Any) -> Any:
        a, b = left(value), right(value)
        # Ordering is defined for numbers and strings only; anything else yields null.
        if not (_is_actual_number(a) or isinstance(a, str)):
            return None
        if not (_is_actual_number(b) or isinstance(b, str)):
            return None
        return order(a, b)

    return compare


def _or(node: dict[str, Any], subs: list[Fn]) -> Fn:
    left, right = subs

    def either(value: Any) -> Any:
        matched = left(value)
        if is_false(matched):
            matched = right(value)
        return matched

    return either


def _and(node: dict[str, Any], subs: list[Fn]) -> Fn:
    left, right = subs

    def both(value: Any) -> Any:
        matched = left(value)
        if is_false(matched):
            return matched
        return right(value)

    return both


def _not(node: dict[str, Any], subs: list[Fn]) -> Fn:
    (inner,) = subs

    def negate(value: Any) -> Any:
        original = inner(value)
        if _is_actual_number(original) and original == 0:
            return False  # in JMESPath 0 is not false, so !0 is false
        return not original

    return negate


_BUILDERS: dict[str, Callable[[dict[str, Any], list[Fn]], Fn]] = {
    "field": _field,
    "subexpression": _chain,
    "index_expression": _chain,
    "pipe": _chain,
    "projection": _projection,
    "value_projection": _value_projection,
    "filter_projection": _filter_projection,
    "flatten": _flatten,
    "identity": _identity,
    "current": _identity,
    "index": _index,
    "slice": _slice,
    "literal": _literal,
    "key_val_pair": _key_val_pair,
    "multi_select_dict": _multi_select_dict,
    "multi_select_list": _multi_select_list,
    "comparator": _comparator,
    "or_expression": _or,
    "and_expression": _and,
    "not_expression": _not,
}
_STRICT_BUILDERS = {
    **_BUILDERS,
    "projection": _strict_projections[0],
    "value_projection": _strict_projections[1],
    "filter_projection": _strict_projections[2],
}


class StrictInterpreter(visitor.TreeInterpreter):  # type: ignore[misc]  # jmespath is untyped
    """jmespath's interpreter with strict projections (see the module docstring)."""

    def _collect(self, node: dict[str, Any], elements: Any) -> list[Any]:
        out = [self.visit(node["children"][1], element) for element in elements]
        if None in out:
            raise DroppedElement(out.index(None))
        return out

    def visit_projection(self, node: dict[str, Any], value: Any) -> Any:
        base = self.visit(node["children"][0], value)
        return self._collect(node, base) if isinstance(base, list) else None

    def visit_value_projection(self, node: dict[str, Any], value: Any) -> Any:
        base = self.visit(node["children"][0], value)
        try:
            values = base.values()
        except AttributeError:
            return None
        return self._collect(node, values)

    def visit_filter_projection(self, node: dict[str, Any], value: Any) -> Any:
        base = self.visit(node["children"][0], value)
        if not isinstance(base, list):
            return None
        condition = node["children"][2]
        return self._collect(node, [e for e in base if self._is_true(self.visit(condition, e))])
