"""Secrets at rest: provider credentials (and gateway keys) sealed with a server key.

A provider that does not run the signature middleware is called with a credential the gateway
holds for it (a header name and a secret). The store keeps only the sealed form; the API never
returns either. :class:`SecretBox` seals with AES-256-GCM (``cryptography``'s ``AESGCM``):
authenticated encryption with *associated data*, which binds a sealed secret to what it is for
(``context``, e.g. ``"provider-credential:skycast"``), so a sealed value copied onto another
provider's row does not open there. Fernet was the alternative; it has no associated data.

A sealed value is text: ``v1.<key id>.<base64url(nonce ‖ ciphertext ‖ tag)>``. The key id (the
first 8 bytes of the key's sha256, hex) lets a box hold several keys, so the server key can be
rotated: seal with the newest, open with any.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from adjudge.calls.tools import RESERVED_HEADERS
from adjudge.errors import BadInput, VerificationFailed

__all__ = ["ProviderCredential", "SecretBox", "SecretError"]

_SEALED = re.compile(r"v1\.([0-9a-f]{16})\.([A-Za-z0-9_-]+)")
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
_NONCE = 12
_KEY = 32
# Headers a credential may not replace: the transport's and the signature profile's.
_CREDENTIAL_RESERVED = RESERVED_HEADERS - {"authorization", "cookie", "proxy-authorization"}


class SecretError(VerificationFailed):
    """A secret that cannot be sealed or opened: wrong key, wrong context, damaged text."""

    code = "SECRET_UNREADABLE"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SecretBox:
    """Seals and opens secrets with AES-256-GCM under one or more 32-byte server keys.

    The first key seals; every key opens. ``repr`` never shows a key.
    """

    __slots__ = ("_keys", "_sealing")

    def __init__(self, keys: Iterable[bytes]) -> None:
        ordered = list(keys)
        if not ordered or any(not isinstance(k, bytes) or len(k) != _KEY for k in ordered):
            raise BadInput(
                "A secret box needs one or more 32-byte keys.", code="SECRET_KEY_INVALID"
            )
        self._keys = {self.key_id(k): AESGCM(k) for k in ordered}
        self._sealing = self.key_id(ordered[0])

    def __repr__(self) -> str:
        return f"SecretBox(keys={sorted(self._keys)!r})"

    def key_ids(self) -> tuple[str, ...]:
        """The ids of the keys this box opens with, the sealing key's first."""
        return (self._sealing, *sorted(k for k in self._keys if k != self._sealing))

    @staticmethod
    def key_id(key: bytes) -> str:
        """The id a sealed value names its key by: the first 8 bytes of sha256(key), hex."""
        return hashlib.sha256(key).hexdigest()[:16]

    @staticmethod
    def generate_key() -> bytes:
        """A new 32-byte server key from the operating system's randomness."""
        return AESGCM.generate_key(bit_length=256)

    @staticmethod
    def key_from_text(text: str) -> bytes:
        """A server key from its text form (base64url of 32 bytes, as :meth:`key_to_text`)."""
        try:
            key = _unb64(text.strip())
        except (binascii.Error, ValueError):
            key = b""
        if len(key) != _KEY:
            raise BadInput("A server key is base64url of 32 bytes.", code="SECRET_KEY_INVALID")
        return key

    @staticmethod
    def key_to_text(key: bytes) -> str:
        return _b64(key)

    def seal(self, secret: str | bytes, *, context: str) -> str:
        """The sealed text of ``secret``, bound to ``context`` (opened only with the same)."""
        data = secret.encode("utf-8") if isinstance(secret, str) else secret
        nonce = os.urandom(_NONCE)
        sealed = self._keys[self._sealing].encrypt(nonce, data, context.encode("utf-8"))
        return f"v1.{self._sealing}.{_b64(nonce + sealed)}"

    def open(self, sealed: str, *, context: str) -> bytes:
        """The secret ``sealed`` holds; ``SECRET_UNREADABLE`` if it is damaged, sealed under a
        key this box does not hold, or for another context."""
        match = _SEALED.fullmatch(sealed) if isinstance(sealed, str) else None
        if match is None:
            raise SecretError("Not a sealed secret (v1.<key id>.<data>).")
        box = self._keys.get(match.group(1))
        if box is None:
            raise SecretError(
                f"The secret was sealed under key {match.group(1)}, which this server lacks."
            )
        try:
            raw = _unb64(match.group(2))
            if len(raw) < _NONCE + 16:
                raise ValueError("short")
            return box.decrypt(raw[:_NONCE], raw[_NONCE:], context.encode("utf-8"))
        except (InvalidTag, ValueError, binascii.Error):
            raise SecretError(
                "The secret does not open: it is damaged, or sealed for something else."
            ) from None

    def open_text(self, sealed: str, *, context: str) -> str:
        """:meth:`open`, as UTF-8 text."""
        try:
            return self.open(sealed, context=context).decode("utf-8")
        except UnicodeDecodeError:
            raise SecretError("The secret is not text.") from None


@dataclass(frozen=True)
class ProviderCredential:
    """A header the gateway adds when it calls a provider: ``name: secret``.

    For providers not behind the signature middleware (an API key header, a bearer token). The
    secret never appears in ``repr``. Refused (``CREDENTIAL_INVALID``): a header name that is
    not an HTTP token or that the transport or the signature profile owns, a value that is not
    printable ASCII.
    """

    header: str
    secret: str

    def __post_init__(self) -> None:
        if not _HEADER_NAME.fullmatch(self.header) or self.header.lower() in _CREDENTIAL_RESERVED:
            raise BadInput(
                f"A credential header {self.header!r} must be an HTTP token the gateway does not "
                "set itself.",
                code="CREDENTIAL_INVALID",
            )
        if not _HEADER_VALUE.fullmatch(self.secret):
            raise BadInput(
                "A credential is printable ASCII with no surrounding spaces.",
                code="CREDENTIAL_INVALID",
            )

    def __repr__(self) -> str:
        return f"ProviderCredential(header={self.header!r}, secret=<hidden>)"

    def seal(self, box: SecretBox, *, provider: str) -> str:
        """The credential's secret sealed for ``provider`` (what the store keeps)."""
        return box.seal(self.secret, context=credential_context(provider, self.header))

    @classmethod
    def open(cls, box: SecretBox, sealed: str, *, provider: str, header: str) -> ProviderCredential:
        """The credential the store kept for ``provider`` under ``header``."""
        return cls(header, box.open_text(sealed, context=credential_context(provider, header)))


def credential_context(provider: str, header: str) -> str:
    """The associated data a provider's credential is sealed with."""
    return f"provider-credential:{provider}:{header.lower()}"
