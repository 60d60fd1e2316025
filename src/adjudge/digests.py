"""sha256 digests in their one written form, ``sha256:<64 lowercase hex>``.

Every digest adjudge writes or reads is written this way: a result's bytes, a receipt's
statement, a criteria document, a quote, a provider's answer, a stored key. This module is the
floor of the package — it imports nothing of adjudge — so the kernel (which stands below
receipts) and every layer above it share the one helper and the one pattern. The digest of a
JSON value over its canonical bytes is :func:`adjudge.receipts.canonical.digest`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

#: What every digest starts with.
PREFIX: Final = "sha256:"
#: A digest: ``sha256:`` and 64 lowercase hex digits (use ``fullmatch``, or :func:`is_digest`).
DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")


def sha256_digest(data: bytes | str) -> str:
    """``sha256:<hex>`` of ``data``: bytes as they are, text as its UTF-8 bytes."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return PREFIX + hashlib.sha256(raw).hexdigest()


def is_digest(value: object) -> bool:
    """Whether ``value`` is a digest in the written form (a string, exactly)."""
    return isinstance(value, str) and DIGEST.fullmatch(value) is not None


def from_hex(hex_digest: str) -> str:
    """The digest written from in-toto's ``{"sha256": <hex>}`` value (not checked)."""
    return PREFIX + hex_digest


def to_hex(digest: str) -> str:
    """The hex in-toto's ``{"sha256": …}`` carries, from a written digest."""
    return digest.removeprefix(PREFIX)
