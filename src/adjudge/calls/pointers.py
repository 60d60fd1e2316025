"""RFC 6901 JSON Pointers: how a call's record names a place in the mapped output.

Every path the calls package reports (a schema failure, a rule's failing value, a cited quote)
is a JSON Pointer into the tool's mapped output: ``""`` is the whole output, ``/results/3/url``
is member ``url`` of item 3 of ``results``. A member name is one token whatever it contains, so
``/a.b`` (member ``a.b``) and ``/a/b`` (member ``b`` of ``a``) cannot be confused; ``~`` and
``/`` inside a name are written ``~0`` and ``~1``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["is_pointer", "join", "pointer", "resolve", "tokens"]

# One reference token: any characters but "/", with "~" only as "~0" or "~1" (RFC 6901, 3).
_POINTER = re.compile(r"(?:/(?:[^/~]|~[01])*)*\Z")
# An array index token: "0", or digits without a leading zero (RFC 6901, 4).
_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")


def _escape(token: str | int) -> str:
    if isinstance(token, int):
        return str(token)
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


def pointer(parts: Iterable[str | int]) -> str:
    """The pointer of a sequence of member names and array indexes; no parts: ``""``."""
    return "".join("/" + _escape(part) for part in parts)


def join(base: str, *parts: str | int) -> str:
    """``base`` extended by ``parts``: ``join("/a", 0, "b.c")`` is ``/a/0/b.c``."""
    return base + pointer(parts)


def is_pointer(text: object) -> bool:
    """True when ``text`` is a syntactically valid JSON Pointer (the root ``""`` included)."""
    return isinstance(text, str) and _POINTER.match(text) is not None


def tokens(text: str) -> list[str]:
    """The unescaped reference tokens of a valid pointer (``""``: none).

    Raises ``ValueError`` for text that is not a JSON Pointer.
    """
    if not is_pointer(text):
        raise ValueError(f"{text!r} is not a JSON Pointer")
    if not text:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in text[1:].split("/")]


def resolve(document: Any, text: str) -> tuple[bool, Any]:
    """The value at pointer ``text`` in ``document``; ``(False, None)`` if it does not resolve.

    An array is indexed only by a token of digits without a leading zero (``-``, the position
    after the last item, names nothing that exists, so it does not resolve).
    """
    try:
        parts = tokens(text)
    except ValueError:
        return False, None
    value = document
    for part in parts:
        if isinstance(value, Mapping):
            if part not in value:
                return False, None
            value = value[part]
        elif isinstance(value, list):
            if not _INDEX.match(part) or int(part) >= len(value):
                return False, None
            value = value[int(part)]
        else:
            return False, None
    return True, value
