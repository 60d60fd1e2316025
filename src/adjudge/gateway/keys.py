"""The gateway's request-signing keys: a key ring, its JWKS, and rotation.

Providers trust "whatever the JWKS at a URL says" (goassay-provider-verify reads
``{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": …, "kid": …}]}``, skips other key types, and
caches the set for an hour, refetching at most once a minute when it meets an unknown ``kid``).
So a key's life has three moments:

1. **created**: it is listed in the JWKS from then on;
2. it **signs** while it is the oldest key that is not retired — so a new key is published
   first and takes over only when the one before it retires;
3. **retired**: it signs nothing from then on, and stays listed for the *overlap*, so requests
   it signed just before (valid for at most 300 s plus the verifier's 60 s of skew) still verify.

:func:`rotate` adds a new key and retires the current ones ``lead`` later (default 2 minutes:
twice the verifier's refetch interval, so no verifier meets the new ``kid`` before it may fetch
it). To retire a compromised key at once, :func:`rotate` with ``lead=timedelta(0)`` and a zero
overlap — but verifiers that cached the old set keep trusting it until their cache expires (an
hour): a JWKS cannot revoke faster than its readers refresh.

A :class:`KeyRing` is where keys live: :class:`MemoryKeyRing` for tests and one process,
:class:`FileKeyRing` for a directory; the store can implement the same protocol in a table.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from adjudge.errors import BadInput
from adjudge.gateway.sealed import SecretBox
from adjudge.receipts.keys import SigningKey, VerifyingKey

__all__ = [
    "DEFAULT_LEAD",
    "DEFAULT_OVERLAP",
    "JWKS_PATH",
    "FileKeyRing",
    "GatewayKey",
    "KeyRing",
    "KeyRingError",
    "MemoryKeyRing",
    "jwks",
    "new_key",
    "rotate",
    "signing_key",
]

#: Where the gateway publishes its JWKS: the path goassay-provider-verify's default URL uses,
#: so a provider points ``jwks_url`` at this gateway's host and nothing else changes.
JWKS_PATH = "/.well-known/assay-request-keys.json"
#: How long a new key is published before it signs (see the module docstring).
DEFAULT_LEAD = timedelta(minutes=2)
#: How long a retired key stays listed.
DEFAULT_OVERLAP = timedelta(hours=1)
#: The least overlap that lets every request signed before retirement verify: the longest
#: signature lifetime (300 s) plus the verifier's clock skew (60 s).
MIN_SAFE_OVERLAP = timedelta(seconds=360)


class KeyRingError(BadInput):
    """The key ring cannot do what was asked (no key to sign with, an unknown or duplicate kid)."""

    code = "KEYRING_ERROR"


def _utc(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise KeyRingError("Key times are timezone-aware (UTC).", code="KEYRING_TIME_NAIVE")
    return at.astimezone(UTC)


@dataclass(frozen=True)
class GatewayKey:
    """One signing key: its ``kid`` in the JWKS, when it was created and when it retires."""

    kid: str
    signing_key: SigningKey = field(compare=False, repr=False)
    created_at: datetime
    retired_at: datetime | None = None
    public: VerifyingKey = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if (
            not isinstance(self.kid, str)
            or not 0 < len(self.kid) <= 128
            or not self.kid.isprintable()
        ):
            raise KeyRingError(
                "A key id is 1-128 printable characters.", code="KEYRING_KID_INVALID"
            )
        if (
            not self.kid.isascii()
            or '"' in self.kid
            or "\\" in self.kid
            or self.kid != self.kid.strip()
        ):
            raise KeyRingError(
                "A key id is ASCII with no quote, backslash or surrounding space.",
                code="KEYRING_KID_INVALID",
            )
        object.__setattr__(self, "created_at", _utc(self.created_at))
        if self.retired_at is not None:
            object.__setattr__(self, "retired_at", _utc(self.retired_at))
        object.__setattr__(self, "public", self.signing_key.public_key)

    def signs_at(self, now: datetime) -> bool:
        """Whether the key may sign at ``now``: created, and not yet retired."""
        return self.created_at <= now and (self.retired_at is None or now < self.retired_at)

    def listed_at(self, now: datetime, overlap: timedelta) -> bool:
        """Whether the JWKS lists the key at ``now``: created, and not past its overlap."""
        return self.created_at <= now and (
            self.retired_at is None or now < self.retired_at + overlap
        )

    def jwk(self) -> dict[str, str]:
        """The public key as a JWK (RFC 8037): ``kty`` OKP, ``crv`` Ed25519, ``x``, ``kid``."""
        x = base64.urlsafe_b64encode(self.public.raw).rstrip(b"=").decode("ascii")
        return {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": self.kid}


def new_key(now: datetime, *, kid: str | None = None) -> GatewayKey:
    """A fresh Ed25519 key created at ``now``; kid by default ``adjudge-<fingerprint[:16]>``."""
    key = SigningKey.generate()
    return GatewayKey(f"adjudge-{key.keyid[:16]}" if kid is None else kid, key, now)


class KeyRing(Protocol):
    """Where the gateway's keys live. Implementations must be safe to share between threads."""

    def all_keys(self) -> Sequence[GatewayKey]:
        """Every key held, retired ones too, oldest first."""
        ...

    def add(self, key: GatewayKey) -> None:
        """Hold a new key; ``KEYRING_KID_TAKEN`` if its kid is already held."""
        ...

    def retire(self, kid: str, at: datetime) -> None:
        """Retire key ``kid`` at ``at`` (never later than an earlier retirement);
        ``KEYRING_KID_UNKNOWN`` if no such key is held."""
        ...


def signing_key(keys: Sequence[GatewayKey], now: datetime) -> GatewayKey:
    """The key that signs at ``now``: the oldest that is created and not retired.

    ``KEYRING_EMPTY`` when there is none: the gateway cannot forward a call it cannot sign.
    """
    now = _utc(now)
    usable = [k for k in keys if k.signs_at(now)]
    if not usable:
        raise KeyRingError(
            "The gateway has no key to sign with at this time: add one (rotate).",
            code="KEYRING_EMPTY",
        )
    return min(usable, key=lambda k: (k.created_at, k.kid))


def jwks(
    keys: Sequence[GatewayKey], now: datetime, *, overlap: timedelta = DEFAULT_OVERLAP
) -> dict[str, list[dict[str, str]]]:
    """The JWKS document at ``now``: every key created and not past its overlap, oldest first."""
    now = _utc(now)
    listed = sorted(
        (k for k in keys if k.listed_at(now, overlap)), key=lambda k: (k.created_at, k.kid)
    )
    return {"keys": [k.jwk() for k in listed]}


def rotate(
    ring: KeyRing, now: datetime, *, lead: timedelta = DEFAULT_LEAD, kid: str | None = None
) -> GatewayKey:
    """Add a new key at ``now`` and retire every key now signing at ``now + lead``.

    Until then the old key signs and both are listed; from then the new key signs and the old
    one stays listed for the overlap. Returns the new key.
    """
    now = _utc(now)
    if lead < timedelta(0):
        raise KeyRingError("A rotation's lead cannot be negative.", code="KEYRING_LEAD_INVALID")
    current = [k for k in ring.all_keys() if k.signs_at(now)]
    fresh = new_key(now, kid=kid)
    ring.add(fresh)
    for key in current:
        ring.retire(key.kid, now + lead)
    return fresh


# ----------------------------------------------------------------------------- rings


class MemoryKeyRing:
    """Keys held in memory (one process; tests)."""

    def __init__(self, keys: Sequence[GatewayKey] = ()) -> None:
        self._lock = threading.Lock()
        self._keys: list[GatewayKey] = []
        for key in keys:
            self.add(key)

    def all_keys(self) -> Sequence[GatewayKey]:
        with self._lock:
            return tuple(sorted(self._keys, key=lambda k: (k.created_at, k.kid)))

    def add(self, key: GatewayKey) -> None:
        with self._lock:
            if any(k.kid == key.kid for k in self._keys):
                raise KeyRingError(f"A key {key.kid!r} is already held.", code="KEYRING_KID_TAKEN")
            self._keys.append(key)

    def retire(self, kid: str, at: datetime) -> None:
        at = _utc(at)
        with self._lock:
            for i, key in enumerate(self._keys):
                if key.kid == kid:
                    if key.retired_at is None or at < key.retired_at:
                        self._keys[i] = replace(key, retired_at=at)
                    return
        raise KeyRingError(f"No key {kid!r} is held.", code="KEYRING_KID_UNKNOWN")


class FileKeyRing:
    """Keys held in one JSON file in ``directory`` (``gateway-keys.json``, mode 0600).

    Private keys are written as PKCS#8 PEM, or sealed with ``box`` when one is given (context
    ``gateway-key:<kid>``). Every change rewrites the file atomically (a temporary file renamed
    over it), so a crash leaves the old ring or the new one, never half of either. One process
    writes at a time (a lock in this process; run one rotating process).
    """

    FILE = "gateway-keys.json"

    def __init__(self, directory: str | os.PathLike[str], *, box: SecretBox | None = None) -> None:
        self._path = Path(directory) / self.FILE
        self._box = box
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path

    def all_keys(self) -> Sequence[GatewayKey]:
        with self._lock:
            return tuple(sorted(self._load(), key=lambda k: (k.created_at, k.kid)))

    def add(self, key: GatewayKey) -> None:
        with self._lock:
            keys = self._load()
            if any(k.kid == key.kid for k in keys):
                raise KeyRingError(f"A key {key.kid!r} is already held.", code="KEYRING_KID_TAKEN")
            self._save([*keys, key])

    def retire(self, kid: str, at: datetime) -> None:
        at = _utc(at)
        with self._lock:
            keys = self._load()
            for i, key in enumerate(keys):
                if key.kid == kid:
                    if key.retired_at is None or at < key.retired_at:
                        keys[i] = replace(key, retired_at=at)
                        self._save(keys)
                    return
        raise KeyRingError(f"No key {kid!r} is held.", code="KEYRING_KID_UNKNOWN")

    def _load(self) -> list[GatewayKey]:
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(text)
            return [self._entry(e) for e in data["keys"]]
        except KeyRingError:
            raise
        except Exception as exc:  # any damage to the file is one refusal, never a crash
            raise KeyRingError(
                f"The key ring {self._path} is unreadable: {exc}", code="KEYRING_UNREADABLE"
            ) from None

    def _entry(self, entry: Mapping[str, Any]) -> GatewayKey:
        kid = entry["kid"]
        private = entry["private_key"]
        if entry.get("sealed"):
            if self._box is None:
                raise KeyRingError(
                    "The key ring's keys are sealed; give the server key that sealed them.",
                    code="KEYRING_UNREADABLE",
                )
            pem = self._box.open(private, context=f"gateway-key:{kid}")
        else:
            pem = private.encode("ascii")
        retired = entry.get("retired_at")
        return GatewayKey(
            kid,
            SigningKey.from_pem(pem),
            datetime.fromisoformat(entry["created_at"]),
            None if retired is None else datetime.fromisoformat(retired),
        )

    def _save(self, keys: Sequence[GatewayKey]) -> None:
        entries = []
        for key in keys:
            pem = key.signing_key.to_pem()
            private = (
                self._box.seal(pem, context=f"gateway-key:{key.kid}")
                if self._box is not None
                else pem.decode("ascii")
            )
            entries.append(
                {
                    "kid": key.kid,
                    "created_at": key.created_at.isoformat(),
                    "retired_at": None if key.retired_at is None else key.retired_at.isoformat(),
                    "sealed": self._box is not None,
                    "private_key": private,
                }
            )
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=".gateway-keys.")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"keys": entries}, out, indent=2)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
