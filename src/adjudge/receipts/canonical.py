"""Canonical JSON (RFC 8785, JCS): the exact bytes that get signed and hashed.

Signed documents hold no floats: money is integer minor units, scores are integers or strings,
so that every implementation agrees on the bytes. A float anywhere is refused.
"""

from __future__ import annotations

import hashlib
import json
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


def parse_exact(data: bytes) -> Any:
    """Parse JSON bytes that must be RFC 8785 canonical; return the value.

    Refuses (``RECEIPT_MALFORMED``) invalid UTF-8 or JSON, floats, integers outside the I-JSON
    range, and any encoding other than the canonical one, so one value has one signed form.
    A fast path covers ASCII documents, for which sorted compact ``json.dumps`` output is
    byte-identical to RFC 8785 (same key order, same escapes); anything else takes ``rfc8785``.
    """
    try:
        value = json.loads(
            data.decode("utf-8"),
            parse_float=_no_float,
            parse_constant=_no_float,
            parse_int=_safe_int,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ReceiptError(f"Not canonical JSON: {exc}", code="RECEIPT_MALFORMED") from exc
    if data.isascii():
        fast = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        if fast.encode("ascii") == data:
            return value
    try:
        exact = canonical_bytes(value)
    except ReceiptError as exc:
        raise ReceiptError(exc.message, code="RECEIPT_MALFORMED") from exc
    if exact != data:
        raise ReceiptError("The JSON is not in RFC 8785 canonical form.", code="RECEIPT_MALFORMED")
    return value


def _no_float(text: str) -> Any:
    raise ValueError(f"signed documents hold no floats ({text})")


_MAX_SAFE = 2**53 - 1


def _safe_int(text: str) -> int:
    number = int(text)
    if not -_MAX_SAFE <= number <= _MAX_SAFE:
        raise ValueError(f"integer {text} is outside the I-JSON range")
    return number


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
