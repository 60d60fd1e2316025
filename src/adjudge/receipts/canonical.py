"""Canonical JSON (RFC 8785, JCS): the exact bytes that get signed and hashed.

Signed documents hold no floats: money is integer minor units, scores are integers or strings,
so that every implementation agrees on the bytes. A float anywhere is refused.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

from adjudge.errors import ReceiptError


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 bytes of ``value`` (mappings, lists, strings, integers, booleans, null).

    Refuses floats, non-string keys and other types with ``RECEIPT_UNSIGNABLE``.
    """
    _refuse_floats(value)
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise ReceiptError(f"Cannot canonicalize: {exc}", code="RECEIPT_UNSIGNABLE") from exc


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical bytes of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()


def _refuse_floats(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            raise ReceiptError(
                f"Signed documents hold no floats ({item!r}); use integers (money in minor "
                "units) or strings.",
                code="RECEIPT_UNSIGNABLE",
            )
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
