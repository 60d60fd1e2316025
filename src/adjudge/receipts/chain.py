"""Receipts: issuing one, verifying one, and the append-only hash chain of a log.

A receipt's id is ``sha256:`` of its statement bytes (the DSSE payload), so it is a content
address anyone can recompute. Each receipt records ``sequence`` (its position, from 0) and
``previous`` (the id of the log's head when it was appended; null for the first), inside the
signed statement. Editing a receipt breaks its signature; deleting or reordering one breaks the
next receipt's ``previous`` or ``sequence``. Truncating the tail is only visible against a head
pinned elsewhere, which :func:`verify_chain` accepts.

A changed verdict is a new receipt naming the one it supersedes (``supersedesReceiptId``); both
stay on the log. Nothing here edits or deletes.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from adjudge.errors import ReceiptError
from adjudge.kernel.determination import Determination
from adjudge.kernel.verdicts import Verdict
from adjudge.receipts import envelope, statement
from adjudge.receipts.canonical import encode_plain, parse_exact
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE, Envelope
from adjudge.receipts.keys import FINGERPRINT, Signer, VerifyingKey


@dataclass(frozen=True, slots=True)
class Head:
    """The head of a log: the id and sequence number of its last receipt."""

    receipt_id: str
    sequence: int


@dataclass(frozen=True, slots=True)
class Receipt:
    """A signed receipt: the envelope, and what its statement says."""

    envelope: Envelope
    receipt_id: str
    verdict: Verdict
    subject_digest: str
    sequence: int
    previous: str | None
    supersedes: str | None
    keyid: str
    predicate: dict[str, Any]

    @property
    def head(self) -> Head:
        """This receipt as the head of its log."""
        return Head(self.receipt_id, self.sequence)

    def to_bytes(self) -> bytes:
        """The envelope as one line of canonical JSON (no trailing newline)."""
        return self.envelope.to_bytes()

    def to_dict(self) -> dict[str, Any]:
        """The envelope's JSON shape."""
        return self.envelope.to_dict()


def receipt_id(payload: bytes) -> str:
    """A receipt's id: ``sha256:`` of its statement bytes."""
    return "sha256:" + hashlib.sha256(payload).hexdigest()


def issue(
    determination: Determination,
    signer: Signer,
    previous_head: Head | None = None,
    *,
    supersedes: str | None = None,
) -> Receipt:
    """Sign ``determination`` as the receipt that follows ``previous_head`` (None: a new log).

    ``supersedes`` names the receipt this one replaces; the old one stays on the log. A
    :class:`Determination` cannot exist with a verdict that does not follow from its checks, or a
    PASS without its integrity proof, so neither can ever be signed.
    """
    sequence = 0 if previous_head is None else previous_head.sequence + 1
    if not 0 <= sequence <= 2**53 - 1:
        raise ReceiptError(
            "A log's sequence stays within the I-JSON integer range.", code="RECEIPT_UNSIGNABLE"
        )
    previous = None if previous_head is None else previous_head.receipt_id
    body = statement.build(
        determination,
        signer.public_key,
        sequence=sequence,
        previous=previous,
        supersedes=supersedes,
    )
    # The statement is built from validated, typed values (a Determination, its Checks, its
    # TrustPolicy: strings, lists, None, one small sequence number), so the generic type walk
    # of canonical_bytes() is skipped here; the encoding itself is the same RFC 8785.
    payload = encode_plain(body)
    signed = envelope.sign(payload, IN_TOTO_PAYLOAD_TYPE, signer)
    return _receipt(signed, body, payload)


def verify(data: bytes | Envelope, key: VerifyingKey | str) -> Receipt:
    """Verify one receipt offline against a pinned key (a public key, or its fingerprint).

    The steps:

    1. Parse the envelope (``RECEIPT_MALFORMED`` if it is not one); the payload type must be
       in-toto's.
    2. The key. A pinned public key is used as given. A pinned fingerprint pins the public key
       the statement carries, which must hash to it; this is the one thing read from the payload
       before its signature is checked, and nothing read is trusted until step 3 passes.
       Either way the statement must name the pinned key (``RECEIPT_KEY_MISMATCH``).
    3. The DSSE signature over the PAE verifies under that key (``RECEIPT_SIGNATURE_INVALID``).
    4. The statement is RFC 8785 canonical JSON (``RECEIPT_MALFORMED``).
    5. The verdict re-derives from the recorded checks and policy (``RECEIPT_VERDICT_INVALID``).
    """
    signed = data if isinstance(data, Envelope) else Envelope.from_bytes(data)  # (1)
    if signed.payload_type != IN_TOTO_PAYLOAD_TYPE:
        raise ReceiptError(
            f"payloadType is {signed.payload_type!r}, not {IN_TOTO_PAYLOAD_TYPE}.",
            code="RECEIPT_MALFORMED",
        )
    if isinstance(key, VerifyingKey):  # (2) and (3): a known key verifies before any parsing
        envelope.verify(signed, key)
        body = _statement(signed.payload)  # (4)
        _require_signer(body, key.keyid, key)
    else:
        fingerprint = key.lower() if isinstance(key, str) else ""
        if not FINGERPRINT.fullmatch(fingerprint):
            raise ReceiptError(
                "A pinned key is a public key or its fingerprint (64 hex characters).",
                code="KEY_INVALID",
            )
        body = _statement(signed.payload)  # (4), which also yields the carried key
        carried = _require_signer(body, fingerprint, None)
        envelope.verify(signed, carried)  # (3)
    statement.check_statement(body)  # (5)
    return _receipt(signed, body, signed.payload)


def _statement(payload: bytes) -> dict[str, Any]:
    body = parse_exact(payload)
    if not isinstance(body, dict):
        raise ReceiptError("The payload is not a JSON object.", code="RECEIPT_MALFORMED")
    return body


def _require_signer(
    body: dict[str, Any], fingerprint: str, pinned: VerifyingKey | None
) -> VerifyingKey:
    """The key the statement carries, if it is the pinned one; else ``RECEIPT_KEY_MISMATCH``."""
    predicate = body.get("predicate")
    signer_field = predicate.get("signer") if isinstance(predicate, dict) else None
    if not isinstance(signer_field, dict) or not isinstance(signer_field.get("publicKey"), str):
        raise ReceiptError("The statement names no signer key.", code="RECEIPT_MALFORMED")
    carried = _carried_key(signer_field["publicKey"])
    if carried.keyid != fingerprint or signer_field.get("keyid") != fingerprint:
        raise ReceiptError(
            f"The receipt was signed by key {carried.keyid}, not the pinned key {fingerprint}.",
            code="RECEIPT_KEY_MISMATCH",
        )
    return pinned or carried


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What :func:`verify_chain` established: how many receipts, and the head."""

    count: int
    head: Head | None
    superseded: frozenset[str]


def verify_chain(
    lines: Iterable[bytes], key: VerifyingKey | str, *, expected_head: str | None = None
) -> ChainReport:
    """Verify a log, line by line: every receipt, and the links between them.

    Raises ``RECEIPT_CHAIN_BROKEN`` naming the first line where a receipt is missing, edited,
    reordered, or supersedes a receipt that is not earlier on the log (or already superseded);
    and when ``expected_head`` is given but the log ends elsewhere (a truncated log). Blank lines
    are skipped. An empty log has no head.
    """
    seen: set[str] = set()
    superseded: set[str] = set()
    head: Head | None = None
    count = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            receipt = verify(line.strip(), key)
        except ReceiptError as exc:
            raise ReceiptError(f"line {number}: {exc.message}", code=exc.code) from exc
        expected_sequence = 0 if head is None else head.sequence + 1
        expected_previous = None if head is None else head.receipt_id
        if receipt.sequence != expected_sequence or receipt.previous != expected_previous:
            raise ReceiptError(
                f"line {number}: receipt {receipt.receipt_id} has sequence {receipt.sequence} "
                f"and previous {receipt.previous}, but the log's head there is sequence "
                f"{expected_sequence - 1} ({expected_previous}): a receipt was deleted, "
                "inserted or reordered.",
                code="RECEIPT_CHAIN_BROKEN",
            )
        if receipt.supersedes is not None:
            if receipt.supersedes not in seen:
                raise ReceiptError(
                    f"line {number}: supersedes {receipt.supersedes}, which is not earlier on "
                    "the log.",
                    code="RECEIPT_CHAIN_BROKEN",
                )
            if receipt.supersedes in superseded:
                raise ReceiptError(
                    f"line {number}: {receipt.supersedes} is already superseded.",
                    code="RECEIPT_CHAIN_BROKEN",
                )
            superseded.add(receipt.supersedes)
        seen.add(receipt.receipt_id)
        head = receipt.head
        count += 1
    if expected_head is not None and (head is None or head.receipt_id != expected_head):
        raise ReceiptError(
            f"The log ends at {head.receipt_id if head else 'nothing'}, not at the pinned head "
            f"{expected_head}: it was truncated or is another log.",
            code="RECEIPT_CHAIN_BROKEN",
        )
    return ChainReport(count, head, frozenset(superseded))


class ReceiptLog:
    """An append-only log in memory: receipts are added, never edited or removed."""

    __slots__ = ("_receipts",)

    def __init__(self) -> None:
        self._receipts: list[Receipt] = []

    @property
    def head(self) -> Head | None:
        """The last receipt's head, or None for an empty log."""
        return self._receipts[-1].head if self._receipts else None

    def append(
        self, determination: Determination, signer: Signer, *, supersedes: str | None = None
    ) -> Receipt:
        """Issue ``determination`` at the head. ``supersedes`` must name a receipt on the log."""
        if supersedes is not None and all(r.receipt_id != supersedes for r in self._receipts):
            raise ReceiptError(
                f"{supersedes} is not on this log; a receipt supersedes an earlier one.",
                code="RECEIPT_CHAIN_BROKEN",
            )
        receipt = issue(determination, signer, self.head, supersedes=supersedes)
        self._receipts.append(receipt)
        return receipt

    @property
    def receipts(self) -> tuple[Receipt, ...]:
        """Every receipt, oldest first."""
        return tuple(self._receipts)

    def __iter__(self) -> Iterator[Receipt]:
        return iter(tuple(self._receipts))

    def __len__(self) -> int:
        return len(self._receipts)

    def lines(self) -> list[bytes]:
        """The log as JSON Lines, one canonical envelope per line."""
        return [r.to_bytes() for r in self._receipts]


@functools.lru_cache(maxsize=64)
def _carried_key(text: str) -> VerifyingKey:
    """The public key a statement carries; a log repeats one key, so parse it once."""
    return VerifyingKey.from_base64(text)


def _receipt(signed: Envelope, body: dict[str, Any], payload: bytes) -> Receipt:
    predicate = body["predicate"]
    return Receipt(
        envelope=signed,
        receipt_id=receipt_id(payload),
        verdict=Verdict(predicate["verdict"]),
        subject_digest="sha256:" + body["subject"][0]["digest"]["sha256"],
        sequence=predicate["sequence"],
        previous=predicate["previous"],
        supersedes=predicate.get("supersedesReceiptId"),
        keyid=signed.signatures[0].keyid,
        predicate=predicate,
    )
