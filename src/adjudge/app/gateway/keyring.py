"""The gateway's signing keys kept in the database: the key-ring adapter the use cases give
:mod:`adjudge.gateway.keys` (whose :class:`~adjudge.gateway.keys.KeyRing` protocol it meets).

The private halves are sealed under the server secret, so every ``serve`` process on one
database signs with the same keys and publishes the same JWKS.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta

from adjudge.app.unit import UnitOfWork
from adjudge.errors import Error
from adjudge.gateway import GatewayKey, SecretBox, rotate
from adjudge.receipts import SigningKey
from adjudge.store import gateway as db

#: How far back the gateway's first signing key is dated (see :func:`ensure_key`).
FIRST_KEY_BACKDATE = timedelta(minutes=1)
_CONTEXT_KEY = "adjudge gateway signing key"


class DatabaseKeyRing:
    """The gateway's signing keys in the database, private halves sealed under the server
    secret. Read keys are kept a few seconds per process."""

    def __init__(self, unit: UnitOfWork, box: SecretBox, *, cache_seconds: float = 5.0) -> None:
        self.unit = unit
        self.box = box
        self.cache_seconds = cache_seconds
        self._cached: tuple[float, list[GatewayKey]] | None = None
        self._keys: dict[tuple[str, str], SigningKey] = {}
        self._lock = threading.Lock()

    def all_keys(self) -> Sequence[GatewayKey]:
        """Every key, newest last."""
        with self._lock:
            if self._cached is not None and self._cached[0] > time.monotonic():
                return self._cached[1]
        rows = self.unit.read(db.keys)
        found = [
            GatewayKey(kid, self._opened(kid, sealed), created, retired)
            for kid, sealed, created, retired in rows
        ]
        with self._lock:
            self._cached = (time.monotonic() + self.cache_seconds, found)
        return found

    def _opened(self, kid: str, sealed: str) -> SigningKey:
        """The private half of key ``kid``, unsealed once a process (a key's halves never
        change: each read unsealed and parsed every key ever made, retired ones too)."""
        key = self._keys.get((kid, sealed))
        if key is None:
            key = SigningKey.from_pem(self.box.open(sealed, context=_CONTEXT_KEY))
            self._keys[(kid, sealed)] = key
        return key

    def add(self, key: GatewayKey) -> None:
        """Store a new key."""
        sealed = self.box.seal(key.signing_key.to_pem(), context=_CONTEXT_KEY)
        self.unit.write(lambda tx: db.add_key(tx, key.kid, sealed, key.created_at))
        self.forget()

    def retire(self, kid: str, at: datetime) -> None:
        """Retire a key from ``at``."""
        self.unit.write(lambda tx: db.retire_key(tx, kid, at))
        self.forget()

    def forget(self) -> None:
        """Drop the keys kept in this process: the next read goes to the database."""
        with self._lock:
            self._cached = None


def ensure_key(ring: DatabaseKeyRing, now: datetime) -> None:
    """Make the gateway's first signing key if the database has none yet."""
    if not ring.all_keys():
        try:
            # Dated back: a call that started a moment before (or a process whose clock
            # is a little behind this one's) must find it already signing, not too new.
            rotate(ring, now - FIRST_KEY_BACKDATE)
        except Error:
            ring.forget()  # another process made the first key at the same time
