"""The one signer port: what every use case holds to sign a determination into a receipt.

An issuer signs; it never decides. The determination it is given was built by the pure core —
a task verdict's by :mod:`adjudge.market.proof`, a paid call's by
:mod:`adjudge.calls.kernel_rows` — and a :class:`~adjudge.kernel.Determination` cannot exist
with a verdict that does not follow from its checks, so an issuer has nothing to re-check.

:class:`Issuer` is the port (the use cases are coded against it, and a test may hold an
unsigned fake); :class:`SignedReceipts` is the one implementation adjudge ships: Ed25519 over
the in-toto statement in a DSSE envelope (:func:`adjudge.receipts.issue`), chained after the
log's head.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from adjudge.kernel.determination import Determination
from adjudge.receipts.chain import Head, issue, verify
from adjudge.receipts.envelope import Envelope
from adjudge.receipts.keys import SigningKey, VerifyingKey


class Place(NamedTuple):
    """Where a receipt is appended on the log: its lane, and that lane's head (the id and
    sequence, from 0, of its last receipt; None when the lane is still empty)."""

    lane: int
    head: tuple[str, int] | None


class Issuer(Protocol):
    """Signs a determination as the receipt after the head of a lane of the log.

    ``previous`` is where it goes (:class:`Place`): its lane, and the id and sequence number
    (from 0) of the lane's last receipt (None for the lane's first; ``previous`` None: a log's
    first receipt, on lane 0). The receipt returned must carry its own id as ``digest`` (the
    next one names it).
    """

    @property
    def fingerprint(self) -> str | None:
        """The key fingerprint a receipt is verified against (None: receipts are unsigned)."""
        ...

    @property
    def public_key(self) -> VerifyingKey | None:
        """The public key a receipt is verified against (a replay bundle carries it)."""
        ...

    def sign(
        self,
        determination: Determination,
        previous: Place | None,
        *,
        about: str | None = None,
        supersedes: Mapping[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        """The receipt of ``determination`` chained after ``previous``; ``about`` names its
        subject (``call:<id>``, ``task:<id>/round:<n>``), and ``supersedes`` is the envelope of
        an earlier receipt of this issuer about the same subject that it replaces."""
        ...


class SignedReceipts:
    """The :class:`Issuer` of signed receipts (DSSE, Ed25519) under one key."""

    def __init__(self, signer: SigningKey) -> None:
        self.signer = signer

    @property
    def fingerprint(self) -> str:
        """The key fingerprint a receipt is verified against."""
        return self.signer.keyid

    @property
    def public_key(self) -> VerifyingKey:
        """The public key a receipt is verified against (a replay bundle carries it)."""
        return self.signer.public_key

    def sign(
        self,
        determination: Determination,
        previous: Place | None,
        *,
        about: str | None = None,
        supersedes: Mapping[str, Any] | None = None,
    ) -> Mapping[str, Any]:
        """The signed receipt of ``determination`` (see :meth:`Issuer.sign`): its id
        (``digest``), place on the log, verdict, key and envelope."""
        lane, found = previous or Place(0, None)
        head = Head(found[0], found[1], lane) if found else None
        replaced = None
        if supersedes is not None:
            replaced = verify(Envelope.from_dict(supersedes), self.signer.public_key)
        receipt = issue(
            determination, self.signer, head, about=about, supersedes=replaced, lane=lane
        )
        return {
            "digest": receipt.receipt_id,
            "sequence": receipt.sequence,
            "verdict": receipt.verdict.value,
            "keyid": receipt.keyid,
            "envelope": receipt.to_dict(),
        }
