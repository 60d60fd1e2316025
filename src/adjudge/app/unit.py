"""The unit of work every use case runs in: one transaction, the clock, retries, idempotency.

A state change runs as:

1. open a write transaction; if the caller's Idempotency-Key was seen, answer what was stored
   (the same key for another request is ``IDEMPOTENCY_KEY_REUSED``);
2. run the use case, which reads, asks the pure core, and writes its effects;
3. store the answer under the key and commit: the answer and the effects land together or not
   at all.

A lost race (:class:`adjudge.store.ConcurrentUpdate`) re-runs the whole thing from step 1, so the
loser sees the winner's state. Refusals are not stored: nothing happened, so a retry is decided
again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from adjudge.app.clock import Clock
from adjudge.errors import Error
from adjudge.store import ConcurrentUpdate, Store, Transaction, idempotency

T = TypeVar("T")

#: How often a use case that lost a race is re-run before giving up with CONCURRENT_UPDATE.
RETRIES = 8
#: The longest Idempotency-Key (printable ASCII).
MAX_KEY = 255


@dataclass(frozen=True)
class Idempotency:
    """An Idempotency-Key and the fingerprint of the operation that carried it."""

    key: str
    fingerprint: str

    @staticmethod
    def of(key: str | None, operation: str, inputs: Any) -> Idempotency | None:
        """The key with a fingerprint of the operation and its canonical inputs; None without.

        Refused (``INVALID_IDEMPOTENCY_KEY``) unless 1-255 printable ASCII characters.
        """
        if key is None:
            return None
        if not 0 < len(key) <= MAX_KEY or not all(" " < c <= "~" for c in key):
            raise Error(
                f"An Idempotency-Key is 1-{MAX_KEY} printable ASCII characters without spaces.",
                code="INVALID_IDEMPOTENCY_KEY",
            )
        canonical = json.dumps([operation, inputs], sort_keys=True, separators=(",", ":"))
        return Idempotency(key, "sha256:" + hashlib.sha256(canonical.encode()).hexdigest())


@dataclass(frozen=True)
class Answer(Generic[T]):
    """What a state change answered, and whether this is a replay of a stored answer."""

    value: T
    replayed: bool = False


class UnitOfWork:
    """Runs use cases against one store with one clock."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def now(self) -> datetime:
        """The current time, from the injected clock."""
        return self.clock.now()

    def read(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` in a read-only transaction."""
        with self.store.read() as tx:
            return fn(tx)

    def write(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` in a write transaction, again from the start after a lost race."""

        def once() -> T:
            with self.store.write() as tx:
                return fn(tx)

        return retry(once)

    def once(
        self,
        account_id: str,
        idem: Idempotency | None,
        fn: Callable[[Transaction], T],
        *,
        seal: bool = False,
    ) -> Answer[T]:
        """Run a state change at most once per Idempotency-Key (the module's steps).

        ``fn``'s answer must be JSON data: it is stored as it is. With ``seal`` the stored
        answer is encrypted under a key derived from the Idempotency-Key, which the store never
        holds (it keeps only the key's digest): only the caller who sent the key can replay an
        answer that carries a secret.
        """

        def attempt() -> Answer[T]:
            with self.store.write() as tx:  # (1)
                if idem is not None:
                    seen = idempotency.recalled(tx, account_id, idem.key)
                    if seen is not None:
                        return _replay(seen, idem, account_id)
                value = fn(tx)  # (2)
                if idem is not None:  # (3)
                    stored: Any = _seal(value, idem.key, account_id) if seal else value
                    idempotency.remember(
                        tx,
                        account_id=account_id,
                        key=idem.key,
                        fingerprint=idem.fingerprint,
                        answer={"sealed": seal, "answer": stored},
                        at=self.clock.now(),
                    )
                return Answer(value)

        try:
            return retry(attempt)
        except Error:
            # Under READ COMMITTED a duplicate can miss the key (read before the first request
            # committed) yet see the state it changed, and be refused. If the key is stored
            # now, the request did happen: answer as a replay.
            if idem is not None:
                seen = self.read(lambda tx: idempotency.recalled(tx, account_id, idem.key))
                if seen is not None and seen[0] == idem.fingerprint:
                    return _replay(seen, idem, account_id)
            raise


def retry(fn: Callable[[], T]) -> T:
    """``fn()``, run again with a short random back-off after each lost race."""
    for attempt in range(RETRIES):
        try:
            return fn()
        except ConcurrentUpdate:
            if attempt == RETRIES - 1:
                raise
            time.sleep(random.uniform(0, 0.002 * 2**attempt))
    raise AssertionError("unreachable")


def _replay(seen: tuple[str, Any], idem: Idempotency, account_id: str) -> Answer[Any]:
    fingerprint, stored = seen
    if fingerprint != idem.fingerprint:
        raise Error(
            "This Idempotency-Key was used for a different request; send a new key.",
            code="IDEMPOTENCY_KEY_REUSED",
        )
    answer = stored["answer"]
    if stored.get("sealed"):
        answer = _unseal(answer, idem.key, account_id)
    return Answer(answer, replayed=True)


def _cipher(key: str, account_id: str) -> AESGCM:
    hkdf = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=account_id.encode("utf-8"),
        info=b"adjudge idempotent answer v1",
    )
    return AESGCM(hkdf.derive(key.encode("utf-8")))


def _seal(value: Any, key: str, account_id: str) -> str:
    nonce = os.urandom(12)
    data = json.dumps(value, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(nonce + _cipher(key, account_id).encrypt(nonce, data, None)).decode()


def _unseal(sealed: str, key: str, account_id: str) -> Any:
    raw = base64.b64decode(sealed)
    return json.loads(_cipher(key, account_id).decrypt(raw[:12], raw[12:], None))
