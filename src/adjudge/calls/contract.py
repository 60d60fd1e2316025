"""A tool's contract: its name, version, output schema and response mapping.

A contract is registered once: the output schema (JSON Schema 2020-12) is checked against its
meta-schema and compiled (``schema``), and every mapping expression (JMESPath) is compiled. A
malformed contract is refused here with a stable code, never discovered at call time.

At call time the provider's raw JSON is mapped into the tool's output shape and the result is
checked against the output schema. Mapping failures and shape violations are recorded at that
boundary with the RFC 6901 JSON Pointer of the place that broke (``/results/3/url``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import jmespath
import jmespath.exceptions
import jmespath.parser

from adjudge.calls._jmes import DroppedElement, StrictInterpreter, compile_node, location
from adjudge.calls.bounds import disjoint_fields, dotted, expression_cost
from adjudge.calls.pointers import join, tokens
from adjudge.calls.schema import OutputSchema, compile_schema
from adjudge.errors import CriteriaError
from adjudge.json_text import JSON_DEPTH

__all__ = [
    "Contract",
    "DroppedElement",
    "Expression",
    "ExpressionError",
    "ShapeCheck",
    "compile_expression",
    "map_response",
    "register_contract",
]


class ExpressionError(Exception):
    """A JMESPath expression broke on the data it was given (a type error in the data)."""


class Expression:
    """A compiled JMESPath expression that remembers its source text.

    Searching gives exactly the interpreter's answer; common node types run as compiled
    closures (see ``_jmes``), the rest through ``jmespath``'s own interpreter. A ``strict``
    expression (the response mapping's) raises :class:`DroppedElement` where a projection would
    silently drop a null element.
    """

    __slots__ = ("_fast", "_parsed", "cost", "location", "source", "strict")

    def __init__(
        self, source: str, parsed: jmespath.parser.ParsedResult, *, strict: bool = False
    ) -> None:
        self.source = source
        self.strict = strict
        self._parsed = parsed
        self._fast = compile_node(parsed.parsed, strict=strict)
        #: The member names and indexes the expression walks when it is a plain location
        #: (``a.b[2]``), so a JSON Pointer can name where it points; else None.
        self.location = location(parsed.parsed)
        #: Its steps per input value and its copies of one (:mod:`adjudge.calls.bounds`).
        self.cost = expression_cost(parsed.parsed)

    @property
    def tree(self) -> dict[str, Any]:
        """The expression's JMESPath syntax tree."""
        tree: dict[str, Any] = self._parsed.parsed
        return tree

    @property
    def compiled(self) -> bool:
        """True when the expression runs as compiled closures rather than interpreted."""
        return self._fast is not None

    def search(self, data: Any) -> Any:
        """Evaluate on ``data``; raises :class:`ExpressionError` when the data breaks it, and
        (strict) :class:`DroppedElement` when a projection would drop a null element."""
        try:
            if self._fast is not None:
                return self._fast(data)
            return self._interpret(data)
        except (jmespath.exceptions.JMESPathError, TypeError, ValueError) as exc:
            raise ExpressionError(str(exc)) from None

    def interpret(self, data: Any) -> Any:
        """Evaluate with the interpreter only (the closures' differential tests use it)."""
        try:
            return self._interpret(data)
        except (jmespath.exceptions.JMESPathError, TypeError, ValueError) as exc:
            raise ExpressionError(str(exc)) from None

    def _interpret(self, data: Any) -> Any:
        if self.strict:
            return StrictInterpreter().visit(self._parsed.parsed, data)
        return self._parsed.search(data)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


def compile_expression(source: object, *, what: str, code: str, strict: bool = False) -> Expression:
    """Compile a JMESPath expression, or refuse with ``code`` naming ``what`` it was for."""
    if not isinstance(source, str) or not source.strip():
        raise CriteriaError(f"{what} must be a non-empty JMESPath expression.", code=code)
    try:
        return Expression(source, jmespath.compile(source), strict=strict)
    except jmespath.exceptions.JMESPathError as exc:
        raise CriteriaError(
            f"{what} is not a valid JMESPath expression ({source!r}): {exc}", code=code
        ) from None


@dataclass(frozen=True)
class ShapeCheck:
    """The outcome of mapping a response and checking it against the output schema.

    ``ok`` is False when the mapping broke or the mapped output violates the schema; ``path``
    then names where, as an RFC 6901 JSON Pointer into the mapped output (``/results/3/url``;
    ``""`` is the whole output), and ``stage`` says which boundary it was (``"mapping"`` or
    ``"schema"``). ``output`` is the mapped output (``None`` if mapping broke).
    """

    ok: bool
    output: Any
    stage: str = ""
    path: str = ""
    reason: str = ""
    schema_declared: bool = True


@dataclass(frozen=True, repr=False)
class Contract:
    """A registered tool contract. Build one with :func:`register_contract`."""

    tool: str
    version: str
    output_schema: Mapping[str, Any] | bool | None
    mapping: tuple[tuple[str, Expression], ...] | Expression | None
    format_assertion: bool = False
    schema: OutputSchema | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        return f"<Contract {self.tool}@{self.version}>"

    @property
    def fast_path(self) -> bool:
        """True when the schema stage answers through the compiled fast validator."""
        return self.schema is not None and self.schema.fast_path

    def check_shape(self, output: Any) -> ShapeCheck:
        """Check a mapped output against the output schema; no schema: the stage does not apply."""
        if self.schema is None:
            return ShapeCheck(ok=True, output=output, schema_declared=False)
        violation = self.schema.violation(output)
        if violation is None:
            return ShapeCheck(ok=True, output=output)
        return ShapeCheck(
            ok=False,
            output=output,
            stage="schema",
            path=violation.pointer,
            reason=violation.message + self._mapped_from(violation.pointer),
        )

    @property
    def schema_weight(self) -> int | None:
        """The checks one value of the mapped output costs, or None (no bound)."""
        return 0 if self.schema is None else self.schema.weight

    @cached_property  # read on every call: its parts never change
    def dotted_output(self) -> bool:
        """Whether the mapping names a member with ``.`` or ``[`` (``calls.bounds.dotted``)."""
        mapping = self.mapping
        if mapping is None:
            return False
        fields = [("", mapping)] if isinstance(mapping, Expression) else list(mapping)
        return any(dotted(name) or _names_dotted(expr.tree) for name, expr in fields)

    @cached_property  # read on every call: its parts never change
    def mapping_cost(self) -> tuple[int, int] | None:
        """The mapping's steps per value of the answer and its copies of one value, or None."""
        mapping = self.mapping
        if mapping is None:
            return 0, 1
        if isinstance(mapping, Expression):
            return mapping.cost
        costs = [expr.cost for _name, expr in mapping]
        if any(cost is None for cost in costs):
            return None
        steps = [cost[0] for cost in costs if cost is not None]
        copies = [cost[1] for cost in costs if cost is not None]
        apart = disjoint_fields([expr.tree for _name, expr in mapping])
        return sum(steps), max(copies) if apart else sum(copies)

    def _mapped_from(self, path: str) -> str:
        """`` (mapped from 'expr')`` for a path under a mapped field, so the source is named."""
        if not isinstance(self.mapping, tuple) or not path:
            return ""
        top = tokens(path)[0]
        for name, expr in self.mapping:
            if name == top:
                return f" (field {name!r} is mapped from {expr.source!r})"
        return ""


def _names_dotted(node: Mapping[str, Any]) -> bool:
    """Whether a multi-select in a JMESPath tree names a member with ``.`` or ``[``."""
    stack = [node]
    while stack:
        item = stack.pop()
        if item.get("type") == "key_val_pair" and dotted(str(item.get("value"))):
            return True
        stack.extend(c for c in item.get("children", []) if isinstance(c, Mapping))
    return False


def map_response(contract: Contract, raw: Any) -> ShapeCheck:
    """Map the provider's raw JSON into the tool's output shape, then check the shape.

    With no mapping the raw JSON is the output, as sent. With a mapping (one expression, or one
    expression per output field) object members whose value is null are left out at every depth,
    so the schema's ``required`` names a missing field. An expression that breaks on the data
    (a JMESPath type error), or a projection that would drop an element mapping to null, fails
    the shape check at the mapping boundary, naming the field and the expression.
    """
    mapping = contract.mapping
    where, expr = "", mapping if isinstance(mapping, Expression) else None
    try:
        if mapping is None:
            output = raw
        elif isinstance(mapping, Expression):
            output = _drop_nulls(mapping.search(raw), 0)
        else:
            output = {}
            for name, expr in mapping:
                where = join("", name)
                value = expr.search(raw)
                if value is not None:
                    output[name] = _drop_nulls(value, 1)
    except (ExpressionError, DroppedElement, _TooDeep) as exc:
        source = f" (expression {expr.source!r})" if expr is not None else ""
        verb = _VERBS.get(type(exc), "broke")
        return ShapeCheck(
            ok=False,
            output=None,
            stage="mapping",
            path=where,
            reason=f"the response mapping {verb}{source}: {exc}",
            schema_declared=contract.output_schema is not None,
        )
    return contract.check_shape(output)


# A tuple, not ``dict | list``: a union written in a comprehension is built anew on every
# iteration, which doubled the cost of this walk (measured).
_CONTAINERS = (dict, list)


class _TooDeep(Exception):
    """A mapped output nests past :data:`~adjudge.json_text.JSON_DEPTH` (an expression can
    nest what it maps, or hold a literal that does): no reader could be sure to read it."""

    def __init__(self) -> None:
        super().__init__(f"its output nests arrays and objects more than {JSON_DEPTH} deep")


_VERBS = {DroppedElement: "dropped an element", _TooDeep: "went too deep"}


def _drop_nulls(value: Any, depth: int) -> Any:
    """The mapped value (``depth`` containers deep in the output) with null object members
    removed, at every depth; :class:`_TooDeep` past the bound.

    JMESPath answers null for what it cannot find, so ``{url: url}`` on an item without a URL
    yields ``{"url": null}``. In the tool's shape a missing optional field is absent, and the
    schema's ``required`` names a missing required one, rather than a type error on null.
    A null *element* of a list is kept: dropping it would change the list.
    """
    # Only containers are walked into; scalars are returned as they are without a call.
    if not isinstance(value, _CONTAINERS):
        return value
    if depth >= JSON_DEPTH:  # the walk's own recursion is bounded by it too
        raise _TooDeep
    if isinstance(value, dict):
        return {
            k: _drop_nulls(v, depth + 1) if isinstance(v, _CONTAINERS) else v
            for k, v in value.items()
            if v is not None
        }
    return [_drop_nulls(v, depth + 1) if isinstance(v, _CONTAINERS) else v for v in value]


def register_contract(data: object) -> Contract:
    """Parse, check and compile a contract document; refuse a malformed one with a stable code.

    ``format_assertion`` (default false) opts in to the 2020-12 format-assertion vocabulary:
    every ``format`` in the schema is then asserted (see ``formats``).

    Codes: ``CONTRACT_INVALID`` (the document's own fields), ``CONTRACT_SCHEMA_INVALID`` (the
    output schema is not valid JSON Schema 2020-12, refers outside itself, has a pattern that is
    not ECMAScript, or asserts an unknown format), ``CONTRACT_MAPPING_INVALID`` (a mapping
    expression does not compile).
    """
    if not isinstance(data, Mapping):
        raise CriteriaError("A contract must be a JSON object.", code="CONTRACT_INVALID")
    tool, version = data.get("tool"), data.get("version")
    if not isinstance(tool, str) or not tool.strip():
        raise CriteriaError("A contract needs a non-empty string `tool`.", code="CONTRACT_INVALID")
    if isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    if not isinstance(version, str) or not version.strip():
        raise CriteriaError(
            "A contract needs a `version` (a string or a whole number).", code="CONTRACT_INVALID"
        )
    unknown = set(data) - _FIELDS
    if unknown:
        raise CriteriaError(
            f"A contract has unknown fields: {', '.join(sorted(unknown))}.", code="CONTRACT_INVALID"
        )
    format_assertion = data.get("format_assertion", False)
    if not isinstance(format_assertion, bool):
        raise CriteriaError(
            "`format_assertion` must be true (the schema's formats are asserted) or false "
            "(they are annotations, the 2020-12 default).",
            code="CONTRACT_INVALID",
        )
    schema = data.get("output_schema")
    return Contract(
        tool=tool,
        version=version,
        output_schema=schema,
        mapping=_compile_mapping(data.get("response_mapping")),
        format_assertion=format_assertion,
        schema=None
        if schema is None
        else compile_schema(schema, format_assertion=format_assertion),
    )


_FIELDS = frozenset(
    {"tool", "version", "output_schema", "response_mapping", "format_assertion", "description"}
)


def _compile_mapping(raw: object) -> tuple[tuple[str, Expression], ...] | Expression | None:
    code = "CONTRACT_MAPPING_INVALID"
    if raw is None:
        return None
    if isinstance(raw, str):
        return compile_expression(raw, what="The response mapping", code=code, strict=True)
    if isinstance(raw, Mapping) and raw:
        fields = []
        for name, source in raw.items():
            if not isinstance(name, str) or not name:
                raise CriteriaError("Response mapping field names must be strings.", code=code)
            fields.append(
                (
                    name,
                    compile_expression(
                        source, what=f"The mapping of field {name!r}", code=code, strict=True
                    ),
                )
            )
        return tuple(fields)
    raise CriteriaError(
        "`response_mapping` must be one JMESPath expression or an object of field -> expression.",
        code=code,
    )
