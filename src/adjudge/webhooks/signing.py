"""Endpoint secrets and the three Standard Webhooks headers, made with ``standardwebhooks``.

A secret is ``whsec_`` and the standard base64 of 32 random bytes (the spec allows 24 to 64).
The signature is the library's: ``v1,`` and the base64 HMAC-SHA256, under the secret's bytes,
of ``{webhook-id}.{webhook-timestamp}.{body}``. A receiver checks it with the same library
(``Webhook(secret).verify(body, headers)``), which also refuses a timestamp more than five
minutes from its own clock.
"""

from __future__ import annotations

import base64
import os
from datetime import UTC, datetime
from typing import Any

from standardwebhooks import Webhook

from adjudge.receipts.canonical import canonical_json

#: The prefix Standard Webhooks gives a symmetric secret.
PREFIX = "whsec_"
_SECRET_BYTES = 32


def new_secret() -> str:
    """A fresh endpoint secret: ``whsec_`` and base64 of 32 random bytes."""
    return PREFIX + base64.b64encode(os.urandom(_SECRET_BYTES)).decode("ascii")


def body_bytes(payload: Any) -> bytes:
    """The exact bytes sent (and signed) for an event: its canonical JSON (RFC 8785: compact,
    keys sorted, UTF-8)."""
    return canonical_json(payload)


def sign(secret: str, msg_id: str, at: datetime, body: bytes) -> str:
    """The ``webhook-signature`` value of ``body`` sent as ``msg_id`` at ``at``."""
    return Webhook(secret).sign(msg_id, at.astimezone(UTC), body.decode("utf-8"))


def signed_headers(secret: str, msg_id: str, at: datetime, body: bytes) -> list[tuple[str, str]]:
    """The headers of one attempt: ``webhook-id``, ``webhook-timestamp`` (whole seconds since
    the epoch), ``webhook-signature`` and the content type."""
    stamp = at.astimezone(UTC).replace(microsecond=0)
    return [
        ("content-type", "application/json"),
        ("webhook-id", msg_id),
        ("webhook-timestamp", str(int(stamp.timestamp()))),
        ("webhook-signature", sign(secret, msg_id, stamp, body)),
    ]
