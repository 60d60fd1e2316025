"""The schema stage: a tool's output schema, compiled to validators that answer alike.

The reference is jsonschema's ``Draft202012Validator``. The fastest validator available is
fastjsonschema, which compiles a schema to Python code but implements draft 7. A schema whose
every keyword means the same in both drafts also gets the compiled validator, which answers
the stage; anything else is answered by the reference alone.

Which validator answers must never change a verdict, so everything either could read
differently is given to both from one place:

- ``pattern`` and ``patternProperties`` are ECMA-262 regular expressions with the u flag
  (``_ecma``), never Python's ``re``: the reference's keyword functions for ``pattern``,
  ``patternProperties``, ``additionalProperties`` and ``unevaluatedProperties`` are replaced,
  and the compiled validator is handed the same compiled patterns (its schema copy carries a
  placeholder where each pattern was, so fastjsonschema never reads one itself);
- ``format`` asserts only when the contract opts in (``format_assertion``), and then through the
  one table in ``formats``, on both validators;
- every failure is located by an RFC 6901 JSON Pointer into the mapped output.

A differential test (``tests/calls/test_calls_schema.py``) holds the two to each other on
generated schemas and documents, and the JSON Schema Test Suite's regular-expression and format
cases run on both (``tests/vectors/calls_schema_suite.json``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from adjudge.calls._ecma import PatternError, compile_pattern
from adjudge.calls.bounds import schema_weight
from adjudge.calls.formats import FORMATS
from adjudge.calls.pointers import join, pointer
from adjudge.errors import CriteriaError

__all__ = ["OutputSchema", "Violation", "compile_schema", "compile_validators"]

_CODE = "CONTRACT_SCHEMA_INVALID"
_DRAFT = "https://json-schema.org/draft/2020-12/schema"

# Keywords whose meaning is the same in draft 7 (what the compiled fast path implements) and in
# 2020-12, once patterns and formats are given to both from one place. A schema that uses only
# these takes the fast path; anything else (prefixItems, unevaluated*, dependentSchemas,
# $dynamicRef, uniqueItems, …) is validated by the reference alone. multipleOf is left out
# because the two libraries round floats differently (0.3 is a multiple of 0.1 to one and not
# to the other). Annotations are listed because they assert nothing.
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
# Where 2020-12 keeps subschemas: maps of names to subschemas, lists of them, single ones.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_ONE = frozenset(
    {
        "additionalProperties", "propertyNames", "items", "contains", "not", "if", "then",
        "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Violation:
    """Where the mapped output breaks the schema (a JSON Pointer) and what is wrong there."""

    pointer: str
    message: str


# ----------------------------------------------------------------------------- the reference


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, pattern_properties: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        regex = compile_pattern(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[str]:
    """The members neither ``properties`` nor any ``patternProperties`` pattern covers."""
    named = schema.get("properties", {})
    patterns = [compile_pattern(p) for p in schema.get("patternProperties", {})]
    for key in instance:
        if key not in named and not any(p.search(key) for p in patterns):
            yield key


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    # jsonschema's own keyword, with the extras found by ECMAScript patterns (it joins the
    # patterns with "|" and searches with Python's re).
    if not validator.is_type(instance, "object"):
        return
    extras = sorted(set(_additional(instance, schema)))
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        listed = ", ".join(repr(each) for each in extras)
        yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


def _evaluated_keys(validator: Any, instance: Mapping[str, Any], schema: Any) -> list[str]:
    """jsonschema's ``find_evaluated_property_keys_by_schema``, with ECMAScript patterns."""
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            keys += _evaluated_keys(
                validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                instance,
                resolved.contents,
            )
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys += properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys += (
                key
                for key, value in instance.items()
                if next(validator.descend(value, subschema), None) is None
            )
    if "patternProperties" in schema:
        patterns = [compile_pattern(p) for p in schema["patternProperties"]]
        keys += (key for key in instance for p in patterns if p.search(key))
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys += _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if next(validator.descend(instance, subschema), None) is None:
                keys += _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys += _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys += _evaluated_keys(validator, instance, schema["else"])
    return keys


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = set(_evaluated_keys(validator, instance, schema))
    failing = [
        key
        for key in instance
        if key not in evaluated
        and next(validator.descend(instance[key], unevaluated, path=key, schema_path=key), None)
        is not None
    ]
    if failing:
        listed = ", ".join(repr(each) for each in sorted(failing))
        if unevaluated is False:
            yield ValidationError(f"Unevaluated properties are not allowed ({listed} unexpected)")
        else:
            yield ValidationError(
                f"Unevaluated properties are not valid under the given schema ({listed})"
            )


_Reference: Any = validators.extend(  # type: ignore[no-untyped-call]  # untyped in jsonschema
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": _unevaluated_properties,
    },
)


def _format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())
    for name, check in FORMATS.items():
        checker.checks(name)(_string_format(check))
    return checker


def _string_format(check: Callable[[str], object]) -> Callable[[object], bool]:
    def judge(instance: object) -> bool:
        return not isinstance(instance, str) or bool(check(instance))

    return judge


_FORMAT_CHECKER = _format_checker()
_META = Draft202012Validator(Draft202012Validator.META_SCHEMA)


def _reference_violation(validator: Any, output: Any) -> Violation | None:
    error = best_match(validator.iter_errors(output))
    if error is None:
        return None
    where = pointer(error.absolute_path)
    message = error.message
    if error.validator == "required" and isinstance(error.instance, Mapping):
        missing = [name for name in error.validator_value if name not in error.instance]
        if missing:  # name the field that is missing, not the object that lacks it
            where = join(where, missing[0])
    return Violation(where, message)


# ----------------------------------------------------------------------------- the fast path

# A placeholder fastjsonschema compiles in a pattern's place: a valid Python pattern that never
# matches, unique per pattern, so its table of compiled patterns can be handed ours instead.
_PLACEHOLDER = "(?!)adjudge-pattern-{}"
_NAME_PART = re.compile(r"\[(\d+)\]")


class _Placeholders:
    """The patterns of a schema, each replaced by a placeholder in a copy of it."""

    def __init__(self) -> None:
        self.patterns: dict[str, str] = {}  # placeholder -> ECMAScript source

    def placeholder(self, source: str) -> str:
        key = _PLACEHOLDER.format(len(self.patterns))
        self.patterns[key] = source
        return key

    def rewrite(self, schema: Any) -> Any:
        """A copy of ``schema`` with every pattern (in keyword positions) a placeholder."""
        if not isinstance(schema, Mapping):
            return schema
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "pattern" and isinstance(value, str):
                out[key] = self.placeholder(value)
            elif key == "patternProperties" and isinstance(value, Mapping):
                out[key] = {self.placeholder(p): self.rewrite(s) for p, s in value.items()}
            elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
                out[key] = {name: self.rewrite(s) for name, s in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self.rewrite(s) for s in value]
            elif key in _SCHEMA_ONE:
                out[key] = self.rewrite(value)
            else:
                out[key] = copy.deepcopy(value)
        return out


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


def _compile_fast(
    schema: Any, format_assertion: bool
) -> tuple[Callable[[Any], Any], list[Any], dict[str, str]]:
    """The compiled validator of ``schema``, the patterns it was handed, and their placeholders.

    Raises whatever fastjsonschema raises for a schema it cannot compile.
    """
    placeholders = _Placeholders()
    rewritten = placeholders.rewrite(schema)
    # Its generated code tests a custom format's answer for truthiness; ours may be a match.
    formats: dict[str, Any] = dict(FORMATS) if format_assertion else {}
    compiled: Callable[[Any], Any] = fastjsonschema.compile(
        rewritten,
        use_default=False,  # never write defaults into the data being judged
        use_formats=format_assertion,
        formats=formats,
        # Details cost nothing on valid data and name the path on invalid data.
        detailed_exceptions=True,
    )
    # With custom formats fastjsonschema wraps its function in a partial; the table of compiled
    # patterns lives in the generated function's globals.
    table = getattr(compiled, "__wrapped__", compiled).__globals__["REGEX_PATTERNS"]
    unknown = set(table) - set(placeholders.patterns)
    if unknown:  # a regular expression of fastjsonschema's own: never let it judge
        raise ValueError(f"the compiled validator holds patterns of its own: {sorted(unknown)}")
    handed = []
    for key, source in placeholders.patterns.items():
        if key in table:
            table[key] = compile_pattern(source)
            handed.append(table[key])
    return compiled, handed, placeholders.patterns


def _locations(document: Any, name: str) -> Iterator[list[str | int]]:
    """Every way fastjsonschema's ``data.a.b[0]`` name reads as a path through ``document``.

    The name joins member names with "." and indexes with "[i]", unescaped, so a member whose
    name holds "." or "[" can be read more than one way; each reading is checked against the
    document.
    """

    def walk(value: Any, rest: str, parts: list[str | int]) -> Iterator[list[str | int]]:
        if not rest:
            yield parts
            return
        if rest[0] == "[" and isinstance(value, list):
            match = _NAME_PART.match(rest)
            if match is not None and int(match[1]) < len(value):
                index = int(match[1])
                yield from walk(value[index], rest[match.end() :], [*parts, index])
        if rest[0] == "." and isinstance(value, dict):
            for key in value:
                if isinstance(key, str) and rest.startswith(key, 1):
                    after = rest[1 + len(key) :]
                    if not after or after[0] in ".[":
                        yield from walk(value[key], after, [*parts, key])

    if name.startswith("data"):
        yield from walk(document, name[4:], [])


def _same(found: Any, value: Any) -> bool:
    if isinstance(value, dict | list):
        return found is value
    return type(found) is type(value) and bool(found == value)


# ----------------------------------------------------------------------------- the stage


class OutputSchema:
    """A registered output schema: the reference validator, and the fast one where it applies.

    Build one with :func:`compile_schema`.
    """

    def __init__(
        self,
        reference: Any,
        fast: Callable[[Any], Any] | None,
        handed: list[Any],
        placeholders: Mapping[str, str],
        weight: int | None = None,
    ) -> None:
        self._reference = reference
        self._fast = fast
        self._handed = handed
        self._placeholders = placeholders
        #: An upper bound on the checks one value costs, or None (:mod:`adjudge.calls.bounds`).
        self.weight = weight

    @property
    def fast_path(self) -> bool:
        """True when the compiled fast validator answers the stage."""
        return self._fast is not None

    def violation(self, output: Any) -> Violation | None:
        """Where ``output`` breaks the schema, or None when it conforms."""
        if self._fast is not None:
            return self._fast_violation(output)
        return _reference_violation(self._reference, output)

    def paths(self) -> dict[str, Callable[[Any], Violation | None]]:
        """Every way the stage can answer, by name (``reference``, and ``fast`` if it applies).

        For tests and benchmarks: each must give the same answer.
        """
        out: dict[str, Callable[[Any], Violation | None]] = {
            "reference": lambda output: _reference_violation(self._reference, output)
        }
        if self._fast is not None:
            out["fast"] = self._fast_violation
        return out

    def errors(self, instance: Any) -> Iterator[ValidationError]:
        """Every error the reference validator finds in ``instance`` (to list them all)."""
        errors: Iterator[ValidationError] = self._reference.iter_errors(instance)
        return errors

    def conforms_fast(self, instance: Any) -> bool:
        """True when the compiled fast validator accepts ``instance``; False when it rejects
        it, cannot judge it, or there is none: then ask :meth:`errors`."""
        if self._fast is None:
            return False
        try:
            self._fast(instance)
        except Exception:  # a rejection, or a value the compiled code cannot judge
            return False
        return True

    def compiled_patterns(self) -> list[Any]:
        """The compiled patterns the fast validator was handed (for tests)."""
        return list(self._handed)

    def _fast_violation(self, output: Any) -> Violation | None:
        assert self._fast is not None
        try:
            self._fast(output)
        except fastjsonschema.JsonSchemaValueException as exc:
            return self._located(output, exc)
        return None

    def _located(self, output: Any, exc: fastjsonschema.JsonSchemaValueException) -> Violation:
        """The fast validator's first error, located by a pointer.

        When its name reads only one way through the output, that reading is the pointer; when
        a member name holding "." or "[" makes it ambiguous, the reference locates the error.
        """
        name = exc.name or "data"
        readings = []
        for parts in _locations(output, name):
            found = output
            for part in parts:
                found = found[part]
            if _same(found, exc.value):
                readings.append(parts)
                if len(readings) > 1:
                    break
        if len(readings) != 1:
            located = _reference_violation(self._reference, output)
            if located is not None:
                return located
            readings = [[]]  # the two validators disagree; the differential tests forbid it
        where = pointer(readings[0])
        shown = where or "the output"
        message = exc.message
        if message.startswith(name):
            message = shown + message[len(name) :]
        if exc.rule == "pattern" and isinstance(exc.value, str):
            source = self._placeholders.get(str(exc.rule_definition), "")
            message = f"{exc.value!r} does not match {source!r}"
        if exc.rule == "format":  # worded as the reference words it
            message = f"{exc.value!r} is not a {exc.rule_definition!r}"
        if exc.rule == "required" and isinstance(exc.value, dict):
            missing = [n for n in exc.rule_definition or () if n not in exc.value]
            if missing:  # name the field that is missing, not the object that lacks it
                where = join(where, missing[0])
                message = f"{missing[0]!r} is a required property"
        return Violation(where, message)


def _subschemas(schema: Any) -> Iterator[Mapping[str, Any]]:
    """Every schema object in ``schema`` at a 2020-12 keyword position, itself included."""
    if not isinstance(schema, Mapping):
        return
    yield schema
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, Mapping):
            for sub in value.values():
                yield from _subschemas(sub)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for sub in value:
                yield from _subschemas(sub)
        elif key in _SCHEMA_ONE:
            yield from _subschemas(value)


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


def _check_patterns_and_formats(
    schema: Any, resolver: Any, format_assertion: bool, what: str, code: str
) -> None:
    """Refuse a pattern that is not ECMAScript, and (asserting) a format that is unknown.

    The walk covers every keyword position and every subschema a reference reaches.
    """
    seen: set[int] = set()
    pending = [schema]
    while pending:
        root = pending.pop()
        for node in _subschemas(root):
            if id(node) in seen:
                continue
            seen.add(id(node))
            sources = []
            if isinstance(node.get("pattern"), str):
                sources.append(node["pattern"])
            if isinstance(node.get("patternProperties"), Mapping):
                sources.extend(node["patternProperties"])
            for source in sources:
                try:
                    compile_pattern(source)
                except PatternError as exc:
                    raise CriteriaError(
                        f"`{what}` has a pattern that is not an ECMA-262 regular "
                        f"expression (JSON Schema reads patterns with the u flag): {exc}. "
                        "Write it as JavaScript would, for example \\d rather than "
                        "(?P<name>…) or \\Z.",
                        code=code,
                    ) from None
            named = node.get("format")
            if format_assertion and isinstance(named, str) and named not in FORMATS:
                raise CriteriaError(
                    f"`{what}` uses the format {named!r}, which adjudge cannot assert; "
                    f"with `format_assertion` every format must be one of "
                    f"{', '.join(sorted(FORMATS))}.",
                    code=code,
                )
            for key in ("$ref", "$dynamicRef"):
                ref = node.get(key)
                if isinstance(ref, str):
                    pending.append(resolver.lookup(ref).contents)


def compile_schema(schema: object, *, format_assertion: bool = False) -> OutputSchema:
    """Check ``schema`` against 2020-12 and compile it; refuse a bad one with a code.

    The code is ``CONTRACT_SCHEMA_INVALID``.

    Refused: not a schema object or boolean; another draft; invalid against the 2020-12
    meta-schema; a reference outside the document (nothing is ever fetched) or one that does not
    resolve; a pattern that is not ECMAScript; with ``format_assertion``, an unknown format.
    """
    return compile_validators(
        schema, what="output_schema", code=_CODE, format_assertion=format_assertion
    )


def compile_validators(
    schema: object, *, what: str, code: str, format_assertion: bool = False
) -> OutputSchema:
    """:func:`compile_schema` for any schema adjudge holds (a tool's ``input_schema`` too), its
    refusals naming the field ``what`` under ``code``: one set of rules and one ECMAScript
    reading of patterns wherever a schema judges."""
    if not isinstance(schema, Mapping | bool):
        raise CriteriaError(f"`{what}` must be a JSON Schema object.", code=code)
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    if declared not in (None, _DRAFT):
        raise CriteriaError(
            f"`{what}` must be JSON Schema 2020-12; it declares {declared!r}.", code=code
        )
    # The meta-schema is checked without a format checker: its `format: regex` would ask
    # Python's re. Patterns are checked as ECMAScript below.
    error = best_match(_META.iter_errors(schema))
    if error is not None:
        raise CriteriaError(
            f"`{what}` is not valid JSON Schema 2020-12: {error.message}", code=code
        )
    fast_ok = True
    for node, ref in _refs(schema):
        if not ref.startswith("#"):
            raise CriteriaError(
                f"`{what}` refers outside itself ({ref!r}); nothing is fetched, so "
                "inline the referenced schema under $defs.",
                code=code,
            )
        if len(set(node) - {"$ref", "title", "description", "$comment"}) > 0:
            fast_ok = False  # in 2020-12 a $ref's siblings apply; in draft 7 they are ignored
    resolver = Registry().resolver_with_root(DRAFT202012.create_resource(schema))
    try:
        # Resolve every local reference now so an unresolvable one is refused at registration.
        for _node, ref in _refs(schema):
            resolver.lookup(ref)
    except Exception as exc:  # referencing raises several unrelated classes for a bad pointer
        raise CriteriaError(
            f"`{what}` has a reference that does not resolve: {exc}", code=code
        ) from None
    _check_patterns_and_formats(schema, resolver, format_assertion, what, code)
    reference = _Reference(schema, format_checker=_FORMAT_CHECKER if format_assertion else None)
    fast: Callable[[Any], Any] | None = None
    handed: list[Any] = []
    placeholders: dict[str, str] = {}
    if fast_ok and _fast_compatible(schema):
        try:
            fast, handed, placeholders = _compile_fast(schema, format_assertion)
        except Exception:  # a schema the fast compiler cannot handle simply takes the slow path
            fast, handed, placeholders = None, [], {}
    weight = schema_weight(
        schema, _subschemas(schema), fast=fast is not None, format_assertion=format_assertion
    )
    return OutputSchema(reference, fast, handed, placeholders, weight)
