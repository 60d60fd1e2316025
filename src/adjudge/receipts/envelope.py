"""DSSE envelopes (Dead Simple Signing Envelope, v1) carrying in-toto statements.

The signed bytes are exactly the DSSE pre-authentication encoding::

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

where LEN is the byte length in ASCII decimal without leading zeros and SP is one space. The
envelope is ``{"payload": b64(body), "payloadType": type, "signatures": [{"keyid", "sig"}]}``
with standard base64. adjudge's envelopes carry exactly one signature whose ``keyid`` is the
signing key's fingerprint.

Two kinds of failure are kept apart, as DSSE implementations do: an envelope that is not one
(``RECEIPT_MALFORMED``, the check itself could not run) and a signature that does not verify
under the pinned key (``RECEIPT_SIGNATURE_INVALID``).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Final

import pybase64

from adjudge.errors import ReceiptError
from adjudge.json_text import unique_keys
from adjudge.receipts.canonical import canonical_bytes
from adjudge.receipts.keys import Signer, VerifyingKey

IN_TOTO_PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
_FIELDS: Final = frozenset({"payload", "payloadType", "signatures"})
_SIGNATURE_FIELDS: Final = frozenset({"keyid", "sig"})


def pae(payload_type: str, payload: bytes) -> bytes:
    """The DSSE v1 pre-authentication encoding of ``payload`` under ``payload_type``."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


@dataclass(frozen=True, slots=True)
class Signature:
    """One DSSE signature: the key's fingerprint and the raw signature bytes."""

    keyid: str
    sig: bytes


@dataclass(frozen=True, slots=True)
class Envelope:
    """A DSSE envelope: a payload, its type, and its signatures."""

    payload: bytes
    payload_type: str
    signatures: tuple[Signature, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of DSSE, with standard base64."""
        return {
            "payload": _b64(self.payload),
            "payloadType": self.payload_type,
            "signatures": [{"keyid": s.keyid, "sig": _b64(s.sig)} for s in self.signatures],
        }

    def to_bytes(self) -> bytes:
        """The envelope as canonical JSON: one line of a receipt log."""
        return canonical_bytes(self.to_dict())

    @classmethod
    def from_dict(cls, data: object) -> Envelope:
        """Parse the JSON shape strictly; anything else is ``RECEIPT_MALFORMED``."""
        if not isinstance(data, dict) or set(data) != _FIELDS:
            raise _malformed("an envelope has exactly payload, payloadType and signatures")
        payload_type = data["payloadType"]
        signatures = data["signatures"]
        if not isinstance(payload_type, str):
            raise _malformed("payloadType is a string")
        if not isinstance(signatures, list) or len(signatures) != 1:
            raise _malformed("an adjudge envelope carries exactly one signature")
        parsed: list[Signature] = []
        for entry in signatures:
            if not isinstance(entry, dict) or set(entry) != _SIGNATURE_FIELDS:
                raise _malformed("a signature has exactly keyid and sig")
            if not isinstance(entry["keyid"], str):
                raise _malformed("keyid is a string")
            parsed.append(Signature(entry["keyid"], _unb64(entry["sig"], "sig")))
        return cls(_unb64(data["payload"], "payload"), payload_type, tuple(parsed))

    @classmethod
    def from_bytes(cls, data: bytes) -> Envelope:
        """Parse JSON bytes; invalid UTF-8 or JSON (a key twice, a number past Python's
        digits, nesting past its depth included) is ``RECEIPT_MALFORMED``."""
        try:
            value = envelope_json(data)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise _malformed(f"not JSON ({exc})") from exc
        return cls.from_dict(value)


def envelope_json(data: bytes) -> Any:
    """The JSON value of an envelope's bytes, refusing (``ValueError``) an object with a key
    twice: a parser that keeps the first of them would read another payload, type or signature
    list than the one verified here, which keeps the last."""
    return json.loads(data.decode("utf-8"), object_pairs_hook=unique_keys)


def sign(payload: bytes, payload_type: str, signer: Signer) -> Envelope:
    """Sign ``payload`` into a one-signature envelope."""
    signature = signer.sign(pae(payload_type, payload))
    return Envelope(payload, payload_type, (Signature(signer.keyid, signature),))


def verify(envelope: Envelope, key: VerifyingKey) -> bytes:
    """The payload, if the envelope's one signature is ``key``'s signature of its PAE.

    Raises ``RECEIPT_SIGNATURE_INVALID`` when the signature was made by another key (by keyid)
    or does not verify.
    """
    for signature in envelope.signatures:
        if signature.keyid != key.keyid:
            raise ReceiptError(
                f"The envelope is signed by key {signature.keyid!r}, not the pinned key "
                f"{key.keyid}.",
                code="RECEIPT_SIGNATURE_INVALID",
            )
        if not key.verify(signature.sig, pae(envelope.payload_type, envelope.payload)):
            raise ReceiptError(
                "The signature does not verify under the pinned key: the receipt was altered "
                "after signing, or was never signed by that key.",
                code="RECEIPT_SIGNATURE_INVALID",
            )
    if not envelope.signatures:
        raise _malformed("the envelope carries no signature")
    return envelope.payload


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: object, name: str) -> bytes:
    """Strict standard base64: the text must be exactly the encoding of what it decodes to."""
    if not isinstance(value, str):
        raise _malformed(f"{name} is a base64 string")
    try:
        data = binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise _malformed(f"{name} is not standard base64") from exc
    if not _canonical(value, data):
        raise _malformed(f"{name} is not canonical base64")
    return data


def canonical_base64(value: object) -> bytes | None:
    """What ``value`` decodes to, if it is canonical standard base64 text (a string, or its
    ASCII bytes); else None.

    A log's hot path: pybase64 decodes about ten times faster than binascii. The text must be
    exactly the encoding of what it decodes to, which proves it canonical whatever the decoder
    tolerates, and means :func:`_unb64` would decode it to the same bytes.
    """
    kind = type(value)
    if kind is not str and kind is not bytes:
        return None
    try:
        data = pybase64.b64decode(value, validate=True)  # type: ignore[arg-type]
    except (binascii.Error, ValueError):
        return None
    again = pybase64.b64encode_as_string(data) if kind is str else pybase64.b64encode(data)
    return data if again == value else None


def _canonical(text: str, data: bytes) -> bool:
    # Refuse non-canonical encodings, so no two texts carry one value: the length must be the
    # padded length, and the last group must re-encode to itself (no stray padding bits).
    tail = len(data) % 3
    return len(text) == 4 * ((len(data) + 2) // 3) and not (
        tail and binascii.b2a_base64(data[-tail:], newline=False).decode("ascii") != text[-4:]
    )


def _malformed(why: str) -> ReceiptError:
    return ReceiptError(f"Not a DSSE envelope: {why}.", code="RECEIPT_MALFORMED")
