"""A tool's contract: its name, version, output schema and response mapping.

A contract is registered once: the output schema (JSON Schema 2020-12) is checked against its
meta-schema and compiled, and every mapping expression (JMESPath) is compiled. A malformed
contract is refused here with a stable code, never discovered at call time.

At call time the provider's raw JSON is mapped into the tool's output shape and the result is
checked against the output schema. Mapping failures and shape violations are recorded at that
boundary with the JSON path that broke.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import fastjsonschema
import jmespath
import jmespath.exceptions
import jmespath.parser
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from adjudge.calls._jmes import compile_node
from adjudge.errors import CriteriaError

__all__ = [
    "Contract",
    "Expression",
    "ExpressionError",
    "ShapeCheck",
    "compile_expression",
    "map_response",
    "register_contract",
]

# Keywords whose meaning is the same in draft 7 (what the compiled fast path implements) and in
# 2020-12. A schema that uses only these takes the fast path for its yes/no answer; anything else
# (prefixItems, unevaluated*, dependentSchemas, $dynamicRef, uniqueItems, …) is validated by
# jsonschema's Draft202012Validator alone. multipleOf is left out because the two libraries
# round floats differently (0.3 is a multiple of 0.1 to one and not to the other). Annotations
# are listed because they assert nothing.
_FAST_KEYWORDS = frozenset(
    {
        "$schema", "$comment", "$defs", "$ref", "title", "description", "default",
        "examples", "deprecated", "readOnly", "writeOnly",
        "type", "enum", "const", "properties", "required", "additionalProperties",
        "patternProperties", "propertyNames", "minProperties", "maxProperties",
        "items", "minItems", "maxItems", "contains",
        "minLength", "maxLength", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    }
)  # fmt: skip
# Keywords whose value is a map of names to subschemas, or a list of subschemas.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf"})
_SCHEMA_ONE = frozenset(
    {"additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else"}
)


class ExpressionError(Exception):
    """A JMESPath expression broke on the data it was given (a type error in the data)."""


class Expression:
    """A compiled JMESPath expression that remembers its source text.

    Searching gives exactly the interpreter's answer; common node types run as compiled
    closures (see ``_jmes``), the rest through ``jmespath``'s own interpreter.
    """

    __slots__ = ("_fast", "_parsed", "source")

    def __init__(self, source: str, parsed: jmespath.parser.ParsedResult) -> None:
        self.source = source
        self._parsed = parsed
        self._fast = compile_node(parsed.parsed)

    @property
    def compiled(self) -> bool:
        """True when the expression runs as compiled closures rather than interpreted."""
        return self._fast is not None

    def search(self, data: Any) -> Any:
        """Evaluate on ``data``; raises :class:`ExpressionError` when the data breaks it."""
        try:
            if self._fast is not None:
                return self._fast(data)
            return self._parsed.search(data)
        except (jmespath.exceptions.JMESPathError, TypeError, ValueError) as exc:
            raise ExpressionError(str(exc)) from None

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


def compile_expression(source: object, *, what: str, code: str) -> Expression:
    """Compile a JMESPath expression, or refuse with ``code`` naming ``what`` it was for."""
    if not isinstance(source, str) or not source.strip():
        raise CriteriaError(f"{what} must be a non-empty JMESPath expression.", code=code)
    try:
        return Expression(source, jmespath.compile(source))
    except jmespath.exceptions.JMESPathError as exc:
        raise CriteriaError(
            f"{what} is not a valid JMESPath expression ({source!r}): {exc}", code=code
        ) from None


@dataclass(frozen=True)
class ShapeCheck:
    """The outcome of mapping a response and checking it against the output schema.

    ``ok`` is False when the mapping broke or the mapped output violates the schema; ``path``
    then names where (``$.results[3].url``) and ``stage`` says which boundary it was
    (``"mapping"`` or ``"schema"``). ``output`` is the mapped output (``None`` if mapping broke).
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
    _validator: Draft202012Validator | None = field(compare=False)
    _fast: Callable[[Any], Any] | None = field(compare=False)

    def __repr__(self) -> str:
        return f"<Contract {self.tool}@{self.version}>"

    @property
    def fast_path(self) -> bool:
        """True when the schema stage answers through the compiled fast validator."""
        return self._fast is not None

    def check_shape(self, output: Any) -> ShapeCheck:
        """Check a mapped output against the output schema; no schema: the stage does not apply."""
        if self._validator is None:
            return ShapeCheck(ok=True, output=output, schema_declared=False)
        if self._fast is not None:
            try:
                self._fast(output)
            except fastjsonschema.JsonSchemaValueException as exc:
                return self._fast_failure(output, exc)
            return ShapeCheck(ok=True, output=output)
        error = best_match(self._validator.iter_errors(output))
        if error is None:
            return ShapeCheck(ok=True, output=output)
        path = _json_path(error)
        if error.validator == "required" and isinstance(error.instance, Mapping):
            missing = [name for name in error.validator_value if name not in error.instance]
            if missing:  # name the field that is missing, not the object that lacks it
                path = f"{path}.{missing[0]}" if path != "$" else f"$.{missing[0]}"
        return ShapeCheck(
            ok=False,
            output=output,
            stage="schema",
            path=path,
            reason=error.message + self._mapped_from(path),
        )

    def _fast_failure(
        self, output: Any, exc: fastjsonschema.JsonSchemaValueException
    ) -> ShapeCheck:
        """The fast validator's first error, spelled like the reference validator's path."""
        name = exc.name or "data"
        path = "$" + name[4:] if name.startswith("data") else "$"
        reason = exc.message
        if reason.startswith(name):
            reason = path + reason[len(name) :]
        if exc.rule == "required" and isinstance(exc.value, dict):
            missing = [n for n in exc.rule_definition or () if n not in exc.value]
            if missing:  # name the field that is missing, not the object that lacks it
                path = f"{path}.{missing[0]}"
                reason = f"{missing[0]!r} is a required property"
        return ShapeCheck(
            ok=False,
            output=output,
            stage="schema",
            path=path,
            reason=reason + self._mapped_from(path),
        )

    def _mapped_from(self, path: str) -> str:
        """`` (mapped from 'expr')`` for a path under a mapped field, so the source is named."""
        if not isinstance(self.mapping, tuple) or not path.startswith("$."):
            return ""
        top = path[2:].split(".", 1)[0].split("[", 1)[0]
        for name, expr in self.mapping:
            if name == top:
                return f" (field {name!r} is mapped from {expr.source!r})"
        return ""


def _json_path(error: ValidationError) -> str:
    """``$.a[0].b`` from an error's absolute path."""
    out = "$"
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def map_response(contract: Contract, raw: Any) -> ShapeCheck:
    """Map the provider's raw JSON into the tool's output shape, then check the shape.

    With no mapping the raw JSON is the output, as sent. With a mapping (one expression, or one
    expression per output field) object members whose value is null are left out at every depth,
    so the schema's ``required`` names a missing field. An expression that breaks on the data
    (a JMESPath type error) fails the shape check at the mapping boundary, naming the field and
    the expression.
    """
    mapping = contract.mapping
    where, expr = "$", mapping if isinstance(mapping, Expression) else None
    try:
        if mapping is None:
            output = raw
        elif isinstance(mapping, Expression):
            output = _drop_nulls(mapping.search(raw))
        else:
            output = {}
            for name, expr in mapping:
                where = f"$.{name}"
                value = expr.search(raw)
                if value is not None:
                    output[name] = _drop_nulls(value)
    except ExpressionError as exc:
        source = f" (expression {expr.source!r})" if expr is not None else ""
        return ShapeCheck(
            ok=False,
            output=None,
            stage="mapping",
            path=where,
            reason=f"the response mapping broke{source}: {exc}",
            schema_declared=contract.output_schema is not None,
        )
    return contract.check_shape(output)


def _drop_nulls(value: Any) -> Any:
    """The mapped value with null object members removed, at every depth.

    JMESPath answers null for what it cannot find, so ``{url: url}`` on an item without a URL
    yields ``{"url": null}``. In the tool's shape a missing optional field is absent, and the
    schema's ``required`` names a missing required one, rather than a type error on null.
    """
    # Only containers are walked into; scalars are returned as they are without a call.
    if isinstance(value, dict):
        return {
            k: _drop_nulls(v) if isinstance(v, dict | list) else v
            for k, v in value.items()
            if v is not None
        }
    if isinstance(value, list):
        return [_drop_nulls(v) if isinstance(v, dict | list) else v for v in value]
    return value


def register_contract(data: object) -> Contract:
    """Parse, check and compile a contract document; refuse a malformed one with a stable code.

    Codes: ``CONTRACT_INVALID`` (the document's own fields), ``CONTRACT_SCHEMA_INVALID`` (the
    output schema is not valid JSON Schema 2020-12 or refers outside itself),
    ``CONTRACT_MAPPING_INVALID`` (a mapping expression does not compile).
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
    unknown = set(data) - {"tool", "version", "output_schema", "response_mapping", "description"}
    if unknown:
        raise CriteriaError(
            f"A contract has unknown fields: {', '.join(sorted(unknown))}.", code="CONTRACT_INVALID"
        )
    schema = data.get("output_schema")
    validator: Draft202012Validator | None = None
    fast: Callable[[Any], Any] | None = None
    if schema is not None:
        validator, fast = _compile_schema(schema)
    return Contract(
        tool=tool,
        version=version,
        output_schema=schema,
        mapping=_compile_mapping(data.get("response_mapping")),
        _validator=validator,
        _fast=fast,
    )


def _compile_mapping(raw: object) -> tuple[tuple[str, Expression], ...] | Expression | None:
    code = "CONTRACT_MAPPING_INVALID"
    if raw is None:
        return None
    if isinstance(raw, str):
        return compile_expression(raw, what="The response mapping", code=code)
    if isinstance(raw, Mapping) and raw:
        fields = []
        for name, source in raw.items():
            if not isinstance(name, str) or not name:
                raise CriteriaError("Response mapping field names must be strings.", code=code)
            fields.append(
                (name, compile_expression(source, what=f"The mapping of field {name!r}", code=code))
            )
        return tuple(fields)
    raise CriteriaError(
        "`response_mapping` must be one JMESPath expression or an object of field -> expression.",
        code=code,
    )


def _compile_schema(
    schema: object,
) -> tuple[Draft202012Validator, Callable[[Any], Any] | None]:
    code = "CONTRACT_SCHEMA_INVALID"
    if not isinstance(schema, Mapping | bool):
        raise CriteriaError("`output_schema` must be a JSON Schema object.", code=code)
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    if declared not in (None, "https://json-schema.org/draft/2020-12/schema"):
        raise CriteriaError(
            f"`output_schema` must be JSON Schema 2020-12; it declares {declared!r}.", code=code
        )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise CriteriaError(
            f"`output_schema` is not valid JSON Schema 2020-12: {exc.message}", code=code
        ) from None
    fast_ok = True
    for node, ref in _refs(schema):
        if not ref.startswith("#"):
            raise CriteriaError(
                f"`output_schema` refers outside itself ({ref!r}); nothing is fetched, so "
                "inline the referenced schema under $defs.",
                code=code,
            )
        if len(set(node) - {"$ref", "title", "description", "$comment"}) > 0:
            fast_ok = False  # in 2020-12 a $ref's siblings apply; in draft 7 they are ignored
    validator = Draft202012Validator(schema)
    resolver = Registry().resolver_with_root(DRAFT202012.create_resource(schema))
    try:
        # Resolve every local reference now so an unresolvable one is refused at registration.
        for _node, ref in _refs(schema):
            resolver.lookup(ref)
    except Exception as exc:  # referencing raises several unrelated classes for a bad pointer
        raise CriteriaError(
            f"`output_schema` has a reference that does not resolve: {exc}", code=code
        ) from None
    fast = _compile_fast(schema) if fast_ok and _fast_compatible(schema) else None
    return validator, fast


def _refs(schema: object) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Every ``$ref`` / ``$dynamicRef`` in a schema, with the object holding it."""
    if isinstance(schema, Mapping):
        for key in ("$ref", "$dynamicRef"):
            ref = schema.get(key)
            if isinstance(ref, str):
                yield schema, ref
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def _fast_compatible(schema: object) -> bool:
    """True when every keyword means the same in draft 7 and 2020-12 (see ``_FAST_KEYWORDS``)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping):
        return False
    for key, value in schema.items():
        if key not in _FAST_KEYWORDS:
            return False
        if key in ("enum", "const"):
            # Python's == makes True equal 1; JSON Schema does not. Only strings and null are safe.
            values = value if key == "enum" else [value]
            if not all(v is None or isinstance(v, str) for v in values):
                return False
        elif key in _SCHEMA_MAPS:
            if not all(_fast_compatible(sub) for sub in value.values()):
                return False
        elif key in _SCHEMA_LISTS:
            if not all(_fast_compatible(sub) for sub in value):
                return False
        elif key in _SCHEMA_ONE and not _fast_compatible(value):
            return False
    return True


def _compile_fast(schema: object) -> Callable[[Any], Any] | None:
    try:
        compiled: Callable[[Any], Any] = fastjsonschema.compile(
            schema,  # type: ignore[arg-type]
            use_default=False,  # never write defaults into the data being judged
            use_formats=False,  # 2020-12: `format` is an annotation, not an assertion
            # Details cost nothing on valid data and name the path on invalid data.
            detailed_exceptions=True,
        )
    except Exception:  # a schema the fast compiler cannot handle simply takes the slow path
        return None
    return compiled
