"""Ed25519 keys and their fingerprints.

A key's fingerprint is the sha256 of its raw 32-byte public key, in lowercase hex. It is what a
relying party pins, having obtained it through a channel the issuing system does not control.

``Signer`` and ``Verifier`` are protocols, so a key held elsewhere (a KMS, an HSM) can sign
receipts without this package knowing about it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import re
from dataclasses import dataclass, field
from typing import Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from adjudge.errors import BadInput

FINGERPRINT = re.compile(r"[0-9a-f]{64}")


class Signer(Protocol):
    """Anything that signs bytes with Ed25519 and names its key by fingerprint."""

    @property
    def keyid(self) -> str: ...

    @property
    def public_key(self) -> VerifyingKey: ...

    def sign(self, data: bytes) -> bytes: ...


def fingerprint(raw_public_key: bytes) -> str:
    """sha256 of the raw 32-byte public key, lowercase hex."""
    return hashlib.sha256(raw_public_key).hexdigest()


@dataclass(frozen=True, slots=True)
class VerifyingKey:
    """An Ed25519 public key."""

    raw: bytes
    #: The fingerprint: sha256 of the raw public key, hex.
    keyid: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.raw, bytes) or len(self.raw) != 32:
            raise BadInput("An Ed25519 public key is 32 bytes.", code="KEY_INVALID")
        object.__setattr__(self, "keyid", fingerprint(self.raw))

    def verify(self, signature: bytes, data: bytes) -> bool:
        """Whether ``signature`` is this key's signature of ``data``; never raises."""
        try:
            _loaded(self.raw).verify(signature, data)
        except (InvalidSignature, ValueError):
            return False
        return True

    def to_base64(self) -> str:
        """Standard base64 of the raw key, as receipts carry it."""
        return base64.b64encode(self.raw).decode("ascii")

    def to_pem(self) -> bytes:
        """SubjectPublicKeyInfo PEM."""
        return Ed25519PublicKey.from_public_bytes(self.raw).public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    @classmethod
    def from_base64(cls, text: str) -> VerifyingKey:
        """Parse standard base64 of the raw 32 bytes; anything else is ``KEY_INVALID``."""
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError, TypeError) as exc:
            raise BadInput("A public key is standard base64.", code="KEY_INVALID") from exc
        return cls(raw)

    @classmethod
    def from_text(cls, data: bytes) -> VerifyingKey:
        """Parse a public key file: PEM (SubjectPublicKeyInfo), or 64 hex characters of raw key."""
        text = data.strip()
        if re.fullmatch(rb"[0-9a-fA-F]{64}", text):
            return cls(bytes.fromhex(text.decode("ascii")))
        try:
            key = serialization.load_pem_public_key(text)
        except ValueError as exc:
            raise BadInput(
                "Not an Ed25519 public key (PEM, or 64 hex characters).", code="KEY_INVALID"
            ) from exc
        if not isinstance(key, Ed25519PublicKey):
            raise BadInput("The public key is not an Ed25519 key.", code="KEY_INVALID")
        return cls(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


@functools.lru_cache(maxsize=64)
def _loaded(raw: bytes) -> Ed25519PublicKey:
    """The parsed public key; a log is verified against one key many times."""
    return Ed25519PublicKey.from_public_bytes(raw)


class SigningKey:
    """An Ed25519 private key held in memory; implements :class:`Signer`."""

    __slots__ = ("_key", "_public")

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key
        raw = key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self._public = VerifyingKey(raw)

    def __repr__(self) -> str:
        return f"SigningKey(keyid={self.keyid!r})"

    @classmethod
    def generate(cls) -> SigningKey:
        """A new key from the operating system's randomness."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> SigningKey:
        """The key of a 32-byte seed (for tests and known-answer vectors)."""
        try:
            return cls(Ed25519PrivateKey.from_private_bytes(seed))
        except ValueError as exc:
            raise BadInput("An Ed25519 seed is 32 bytes.", code="KEY_INVALID") from exc

    @classmethod
    def from_pem(cls, data: bytes) -> SigningKey:
        """Load an unencrypted PKCS#8 PEM private key; anything else is ``KEY_INVALID``."""
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise BadInput(
                "Not an unencrypted PKCS#8 PEM private key.", code="KEY_INVALID"
            ) from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise BadInput("The private key is not an Ed25519 key.", code="KEY_INVALID")
        return cls(key)

    def to_pem(self) -> bytes:
        """Unencrypted PKCS#8 PEM; whoever writes it to disk must restrict its permissions."""
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    @property
    def keyid(self) -> str:
        """The fingerprint of the public half."""
        return self._public.keyid

    @property
    def public_key(self) -> VerifyingKey:
        """The public half."""
        return self._public

    def sign(self, data: bytes) -> bytes:
        """The Ed25519 signature of ``data``."""
        return self._key.sign(data)
