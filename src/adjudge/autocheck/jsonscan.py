"""JSON objects inside agent output, labelled prose sections, and whether a value has content.

Spec 000, ``required_fields``: "If the result contains a JSON object (bare, in a code fence, or
embedded in text), fields are looked up only in that object, and ``""``, ``[]``, ``{}``, and
``null`` don't count. If there's no JSON object, a field also counts as a labelled section:
``Summary:``, ``## Summary``, or ``**Summary**`` followed by text."

Lookups follow JavaScript's ``key in object``, which the reference uses: a key inherited from
``Object.prototype`` (``constructor``, ``toString`` …) is "in" every object and holds a function,
which counts as content. adjudge reproduces that rather than silently disagreeing with the
reference's verdicts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from adjudge.autocheck.chars import has_letter_or_digit
from adjudge.autocheck.jsvalues import (
    WHITESPACE,
    from_units,
    ignorecase_source,
    parse,
    slice16,
    to_units,
    trim,
    utf16_len,
)

JSON_SCAN_CAP = 200_000
JSON_SCAN_MAX_STARTS = 50  # bounds the balanced-brace scan on brace-heavy prose
LABEL_BODY_CHARS = 400  # how far past a prose label to look for its content
LABEL_MAX_TRIES = 20

_WS = "[" + re.escape(WHITESPACE) + "]"
# ASCII case folding is exactly JavaScript's for an ASCII pattern (see ignorecase_source).
_FENCE = re.compile(r"```(?:json)?" + _WS + r"*\n([\s\S]*?)```", re.IGNORECASE | re.ASCII)
_OUTSIDE = re.compile(r'[{}"]')  # outside a string a backslash escapes nothing
_IN_STRING = re.compile(r'["\\]')


class _Function:
    """A method inherited from a JavaScript prototype: present, and content."""


_FUNCTION = _Function()
_PROTO_OBJECT: dict[str, Any] = {}  # Object.prototype: no own enumerable keys

OBJECT_PROTOTYPE: dict[str, Any] = dict.fromkeys(
    (
        "constructor",
        "__defineGetter__",
        "__defineSetter__",
        "hasOwnProperty",
        "__lookupGetter__",
        "__lookupSetter__",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toString",
        "valueOf",
        "toLocaleString",
    ),
    _FUNCTION,
) | {"__proto__": _PROTO_OBJECT}

ARRAY_PROTOTYPE_METHODS = frozenset(
    [
        "constructor",
        "at",
        "concat",
        "copyWithin",
        "fill",
        "find",
        "findIndex",
        "findLast",
        "findLastIndex",
        "lastIndexOf",
        "pop",
        "push",
        "reverse",
        "shift",
        "unshift",
        "slice",
        "sort",
        "splice",
        "includes",
        "indexOf",
        "join",
        "keys",
        "entries",
        "values",
        "forEach",
        "filter",
        "flat",
        "flatMap",
        "map",
        "every",
        "some",
        "reduce",
        "reduceRight",
        "toLocaleString",
        "toString",
        "toReversed",
        "toSorted",
        "toSpliced",
        "with",
    ]
)

_MISSING = object()


def get_property(obj: dict[str, Any] | list[Any], key: str) -> Any:
    """``obj[key]`` if ``key in obj`` in JavaScript, else a sentinel meaning "not in"."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        return OBJECT_PROTOTYPE.get(key, _MISSING)
    if key == "length":
        return len(obj)
    if key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) < len(obj):
        return obj[int(key)]
    if key in ARRAY_PROTOTYPE_METHODS:
        return _FUNCTION
    return OBJECT_PROTOTYPE.get(key, _MISSING)


def has_property_with_content(obj: dict[str, Any] | list[Any], key: str) -> bool:
    """``key in obj && hasContent(obj[key])``."""
    value = get_property(obj, key)
    return value is not _MISSING and has_content(value)


def has_content(value: Any) -> bool:
    """A field counts only when it holds something: ``""``, ``[]``, ``{}`` and ``null`` do not.

    ``0`` and ``false`` are real values.
    """
    if value is None:
        return False
    if isinstance(value, str):
        return len(trim(value)) > 0
    if isinstance(value, list | dict):
        return len(value) > 0
    return True


def _as_object(text: str) -> dict[str, Any] | None:
    try:
        parsed = parse(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def extract_json_object(output: str) -> dict[str, Any] | None:
    """The first JSON object in ``output``: the whole text, a fenced block, or balanced braces.

    Tries, in order: the whole output, each fenced block, then the first balanced ``{…}`` that
    parses (string-aware, at most 50 starting braces). ``None`` when there is no JSON object.
    """
    src = slice16(output, 0, JSON_SCAN_CAP) if len(output) > JSON_SCAN_CAP // 2 else output
    if "{" not in src:
        return None
    whole = _as_object(trim(src))
    if whole is not None:
        return whole
    if "```" in src:
        for m in _FENCE.finditer(src):
            fenced = _as_object(trim(m.group(1)))
            if fenced is not None:
                return fenced
    closings = _Closings(src)
    starts = 0
    start = src.find("{")
    while start != -1 and starts < JSON_SCAN_MAX_STARTS:
        end = closings.end(start)
        if end is not None:
            candidate = _as_object(src[start : end + 1])
            if candidate is not None:
                return candidate
        start = src.find("{", start + 1)
        starts += 1
    return None


_OPEN = -1  # a level not yet closed (indices are never negative)


class _Closings:
    """Where each ``{`` of one text closes (string-aware), in work linear in the text.

    A scan from one brace and a scan from another that stand at the same character in the same
    state (outside a string, or inside one) read the same characters from there on, and the
    first ``}`` that closes the level each stands at is the same ``}``. So every (character,
    state) a scan meets is recorded with the ``}`` that closed its level, or None when nothing
    did, and a later scan that meets it takes that answer instead of walking on: each (character,
    state) is walked once. Without it, 50 starts on a text of unclosed braces walked it 50 times.
    """

    def __init__(self, src: str) -> None:
        self.src = src
        self.closed_by: dict[int, int | None] = {}  # 2 * index + inside: the level's ``}``

    def end(self, start: int) -> int | None:
        """Index of the ``}`` closing the ``{`` at ``start``, skipping strings; None if unclosed.

        A backslash escapes the next character inside a string and nothing outside one.
        """
        keys: list[int] = []  # the (character, state) keys met on the open levels, in order
        levels = [0]  # where each open level's keys start in ``keys``
        src, closed_by = self.src, self.closed_by
        pos = start + 1
        inside = False
        while (m := (_IN_STRING if inside else _OUTSIDE).search(src, pos)) is not None:
            i = m.start()
            key = 2 * i + inside
            end = closed_by.get(key, _OPEN)
            if end is None:
                break
            if end != _OPEN:
                pos, inside = end + 1, False
            else:
                keys.append(key)
                ch = src[i]
                if ch != "}":
                    pos = i + 2 if ch == "\\" else i + 1
                    inside = (ch == '"') != inside
                    if ch == "{":
                        levels.append(len(keys))
                    continue
                end = i
                pos = i + 1
            level = levels.pop()
            closed_by.update(dict.fromkeys(keys[level:], end))
            del keys[level:]
            if not levels:
                return end
        closed_by.update(dict.fromkeys(keys))
        return None


#: A JSON rule's scorer: the output, and ``extract_json_object(output)``, which a check with
#: several such rules extracts once.
Scorer = Callable[[str, dict[str, Any] | None], float]


_LABEL_GAP = re.compile(_WS.replace("]", "_-]") + "+")


def _label_source(field: str) -> str:
    """A field name as a label pattern, in code units, matched as JavaScript's ``i`` flag does.

    Runs of white space, ``_`` or ``-`` in the name match any such run in the text.
    """
    parts = []
    pos = 0
    name = to_units(trim(field))
    for gap in _LABEL_GAP.finditer(name):
        parts.append(ignorecase_source(name[pos : gap.start()]))
        parts.append(_LABEL_GAP.pattern)
        pos = gap.end()
    parts.append(ignorecase_source(name[pos:]))
    return "".join(parts)


_LINE_END = r"(?=[\n\r\u2028\u2029]|\Z)"
_NEXT_HEADING = re.compile(r"\n[ \t]*#{1,6}[ \t]")


def has_fields(fields: Sequence[str]) -> Scorer:
    """The ``required_fields`` scorer: the share of fields present, in JSON or as labelled prose.

    A field's content ends where the next field's label starts ("Summary: Score: 5"), and bare
    labels ("Summary:\\nScore:") are a template, not a deliverable.
    """
    named = [f for f in fields if trim(f)]
    any_label = re.compile(
        "(?:" + ("|".join(_label_source(f) for f in named) or "(?!)") + r")(?:\*\*|__)?[ \t]*:"
    )
    labels = {f: _Label(f) for f in named}

    def score(output: str, parsed: dict[str, Any] | None) -> float:
        if not fields:
            return 1.0
        if parsed is not None:
            present = sum(1 for f in fields if has_property_with_content(parsed, f))
            return present / len(fields)
        src = to_units(
            slice16(output, 0, JSON_SCAN_CAP) if utf16_len(output) > JSON_SCAN_CAP else output
        )
        present = sum(1 for f in fields if f in labels and _labelled(labels[f], any_label, src))
        return present / len(fields)

    return score


# A label starts a line, or a sentence: after ".", "!" or "?" and one white-space character.
_LABEL_LEAD = r"[ \t]*(?:#{1,6}[ \t]*|[-*][ \t]+)?(?:\*\*|__)?"
_LABEL_TAIL = rf"(?:\*\*|__)?[ \t]*(?::|{_LINE_END})"


class _Label:
    """One field's label, searched the fast way: by the character that precedes it.

    ``(?<=\\n)Label|[.!?]\\sLabel`` searched as such makes ``re`` try every position; written as
    one leading character class (line break or sentence end, consumed) ``re`` skips ahead to
    the next such character. The match at the very start of the text is tried separately. Only
    where a label ends is read, and a label never ends right after a line break, so consuming
    the break instead of looking behind at it finds the same labels.
    """

    def __init__(self, field: str) -> None:
        source = _label_source(field)
        self.first = re.compile(_LABEL_LEAD + source + _LABEL_TAIL)
        self.later = re.compile(
            rf"[\n\r\u2028\u2029.!?](?:(?<![.!?])|{_WS}){_LABEL_LEAD}{source}{_LABEL_TAIL}"
        )

    def search(self, src: str, pos: int) -> re.Match[str] | None:
        if pos == 0 and (m := self.first.match(src)) is not None:
            return m
        return self.later.search(src, pos)


def _labelled(label: _Label, any_label: re.Pattern[str], src: str) -> bool:
    pos = 0
    for _ in range(LABEL_MAX_TRIES):
        m = label.search(src, pos)
        if m is None:
            return False
        after = src[m.end() : m.end() + LABEL_BODY_CHARS]
        heading = _NEXT_HEADING.search(after)
        section = after if heading is None else after[: heading.start()]
        next_label = any_label.search(section)
        body = section if next_label is None else section[: next_label.start()]
        if has_letter_or_digit(from_units(body)):
            return True
        pos = m.end() if m.end() > m.start() else m.end() + 1
    return False


def json_schema(schema: dict[str, Any]) -> Scorer:
    """The ``expected_schema`` scorer: the share of ``required`` keys with non-empty values.

    ``properties`` types are not checked (spec 000). Output without JSON scores 0.
    """
    required = schema.get("required")
    wants_object = schema.get("type") == "object"

    def score(output: str, found: dict[str, Any] | None) -> float:
        parsed: Any = found
        if parsed is None:
            try:
                parsed = parse(output)
            except ValueError:
                return 0.0
        if wants_object and not isinstance(parsed, dict):
            return 0.0
        if required is not None and isinstance(parsed, dict | list):
            if not required:
                return 1.0
            present = sum(1 for k in required if has_property_with_content(parsed, k))
            return present / len(required)
        return 1.0

    return score
