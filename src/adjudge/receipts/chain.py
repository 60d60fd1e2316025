"""Receipts: issuing one, verifying one, and the append-only hash chain of a log.

A receipt's id is ``sha256:`` of its statement bytes (the DSSE payload), so it is a content
address anyone can recompute. Each receipt records ``sequence`` (its position, from 0) and
``previous`` (the id of the log's head when it was appended; null for the first), inside the
signed statement. Editing a receipt breaks its signature; deleting or reordering one breaks the
next receipt's ``previous`` or ``sequence``. Truncating the tail is only visible against a head
pinned elsewhere, which :func:`verify_chain` accepts.

A changed verdict is a new receipt naming the one it supersedes (``supersedesReceiptId``); both
stay on the log. Nothing here edits or deletes. A receipt supersedes only one about the same
*subject*: what the verdict is about, named by the issuer as ``about`` (``task:<id>/round:<n>``,
``call:<id>``, …) — or, when neither receipt names one, the same judged result. So a PASS about
result B never supersedes a FAIL about result A unless both say they answer the same question.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from adjudge.digests import from_hex, sha256_digest
from adjudge.errors import BadInput, ReceiptError
from adjudge.kernel.determination import Determination
from adjudge.kernel.verdicts import Verdict
from adjudge.receipts import envelope, statement
from adjudge.receipts.canonical import encode_plain, parse_exact
from adjudge.receipts.checkpoints import MAX_LANES, named_heads
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE, Envelope
from adjudge.receipts.keys import FINGERPRINT, Signer, VerifyingKey
from adjudge.receipts.lines import BLOCK, Entry, Pin, check_block
from adjudge.receipts.statement import require_about


@dataclass(frozen=True, slots=True)
class Head:
    """The head of a log (or of one of its lanes): the id and sequence number of its last
    receipt, and its lane."""

    receipt_id: str
    sequence: int
    lane: int = 0


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
    about: str | None = None
    lane: int = 0

    @property
    def subject(self) -> tuple[str | None, str]:
        """What this receipt's verdict is about: its ``about`` name and its judged result."""
        return (self.about, self.subject_digest)

    @property
    def head(self) -> Head:
        """This receipt as the head of its log (its lane)."""
        return Head(self.receipt_id, self.sequence, self.lane)

    def to_bytes(self) -> bytes:
        """The envelope as one line of canonical JSON (no trailing newline)."""
        return self.envelope.to_bytes()

    def to_dict(self) -> dict[str, Any]:
        """The envelope's JSON shape."""
        return self.envelope.to_dict()


def receipt_id(payload: bytes) -> str:
    """A receipt's id: ``sha256:`` of its statement bytes."""
    return sha256_digest(payload)


def same_subject(new: tuple[str | None, str], old: tuple[str | None, str]) -> bool:
    """Whether a receipt about ``new`` may supersede one about ``old`` (``(about, result)``).

    Named subjects must be equal; a named one never matches an unnamed one; with neither named,
    the judged results must be the same.
    """
    if new[0] is None and old[0] is None:
        return new[1] == old[1]
    return new[0] == old[0]


def _describe(subject: tuple[str | None, str]) -> str:
    return f"about {subject[0]!r}" if subject[0] is not None else f"about result {subject[1]}"


def _not_same_subject(new: tuple[str | None, str], old: tuple[str | None, str], old_id: str) -> str:
    return (
        f"a receipt {_describe(new)} cannot supersede {old_id}, which is {_describe(old)}: a "
        "receipt supersedes only one about the same subject (the same task and round, or the "
        "same call)."
    )


def issue(
    determination: Determination,
    signer: Signer,
    previous_head: Head | None = None,
    *,
    supersedes: Receipt | None = None,
    about: str | None = None,
    lane: int = 0,
) -> Receipt:
    """Sign ``determination`` as the receipt that follows ``previous_head`` on ``lane`` of its
    log (None: the lane's first; see :mod:`adjudge.receipts.checkpoints`).

    ``about`` names what the verdict is about (see the module's docstring; None: just the
    judged result). ``supersedes`` is the receipt this one replaces — the old one stays on the
    log — and must be about the same subject (``RECEIPT_SUPERSESSION_INVALID``). Whether it is
    on the same log is :class:`ReceiptLog`'s and :func:`verify_chain`'s to check. A
    :class:`Determination` cannot exist with a verdict that does not follow from its checks, or a
    PASS without its integrity proof, so neither can ever be signed.
    """
    about = require_about(about)
    if supersedes is not None:
        if not isinstance(supersedes, Receipt):
            raise ReceiptError(
                "supersedes is the Receipt this one replaces.",
                code="RECEIPT_SUPERSESSION_INVALID",
            )
        subject = (about, determination.subject_digest)
        if not same_subject(subject, supersedes.subject):
            raise ReceiptError(
                _not_same_subject(subject, supersedes.subject, supersedes.receipt_id),
                code="RECEIPT_SUPERSESSION_INVALID",
            )
    if previous_head is not None and previous_head.lane != lane:
        raise BadInput("A receipt follows the head of its own lane.", code="RECEIPT_UNSIGNABLE")
    if type(lane) is not int or not 0 <= lane < MAX_LANES:
        raise BadInput(f"A lane is 0 to {MAX_LANES - 1}.", code="RECEIPT_UNSIGNABLE")
    sequence = 0 if previous_head is None else previous_head.sequence + 1
    if not 0 <= sequence <= 2**53 - 1:
        raise BadInput(
            "A log's sequence stays within the I-JSON integer range.", code="RECEIPT_UNSIGNABLE"
        )
    previous = None if previous_head is None else previous_head.receipt_id
    body = statement.build(
        determination,
        signer.public_key,
        sequence=sequence,
        previous=previous,
        supersedes=None if supersedes is None else supersedes.receipt_id,
        about=about,
        lane=lane,
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
            raise BadInput(
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
    try:
        carried = _carried_key(signer_field["publicKey"])
    except BadInput as exc:  # the receipt's own key is damaged: the receipt is wrong, not the call
        raise ReceiptError(
            f"The statement's signer key is not one: {exc.message}", code="RECEIPT_MALFORMED"
        ) from exc
    if carried.keyid != fingerprint or signer_field.get("keyid") != fingerprint:
        raise ReceiptError(
            f"The receipt was signed by key {carried.keyid}, not the pinned key {fingerprint}.",
            code="RECEIPT_KEY_MISMATCH",
        )
    return pinned or carried


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What :func:`verify_chain` established: how many receipts, the head, what is superseded;
    and each lane's head (one for a log of one lane) and how many checkpoints it holds.

    ``head`` is the log's last receipt for a log of one lane; for a log of several, the pinned
    checkpoint it ends at (None when none was pinned: each lane has its own head)."""

    count: int
    head: Head | None
    superseded: frozenset[str]
    lanes: tuple[Head, ...] = ()
    checkpoints: int = 0


def verify_chain(
    lines: Iterable[bytes], key: VerifyingKey | str, *, expected_head: str | None = None
) -> ChainReport:
    """Verify a log, line by line: every receipt, and the links between them.

    Raises ``RECEIPT_CHAIN_BROKEN`` naming the first line where a receipt is missing, edited,
    reordered, or supersedes a receipt that is not earlier on the log (or already superseded);
    ``RECEIPT_SUPERSESSION_INVALID`` where a receipt supersedes one about another subject; and
    ``RECEIPT_CHAIN_BROKEN`` when ``expected_head`` is given but the log ends elsewhere (a
    truncated log). Any other refusal is :func:`verify`'s, naming its line. Blank lines are
    skipped. An empty log has no head.

    To use several cores, verify ranges of the lines with :func:`verify_lines` (each where it
    likes: another process, say) and link them with :func:`link_ranges`: the answer is this one.
    """
    walk = _Walk()
    pin = Pin(key)
    for block in _blocks(lines, 1):
        for (number, line), entry in zip(
            block, check_block([b[1] for b in block], pin), strict=True
        ):
            walk.link(entry or _decided(number, line, key), number)
    return walk.report(expected_head)


@dataclass(frozen=True, slots=True)
class Verified:
    """A range of a log's lines verified on its own, not yet linked: each line's number and
    entry, in order, up to the first line refused, and that refusal (None when none was)."""

    entries: tuple[tuple[int, Entry], ...]
    fault: ReceiptError | None


def verify_lines(
    lines: Sequence[bytes], key: VerifyingKey | str, start: int = 0, stop: int | None = None
) -> Verified:
    """Verify lines ``start + 1`` to ``stop`` of ``lines`` (numbered from 1; None: to the end)
    each on its own, as :func:`verify_chain` does before linking them. Stops at the first
    refusal, which it returns rather than raises: a range is one part of an answer."""
    pin = Pin(key)
    entries: list[tuple[int, Entry]] = []
    for block in _blocks(lines[start:stop], start + 1):
        for (number, line), entry in zip(
            block, check_block([b[1] for b in block], pin), strict=True
        ):
            try:
                entries.append((number, entry or _decided(number, line, key)))
            except ReceiptError as exc:
                return Verified(tuple(entries), exc)
    return Verified(tuple(entries), None)


def link_ranges(parts: Iterable[Verified], *, expected_head: str | None = None) -> ChainReport:
    """Link the ranges of a log verified by :func:`verify_lines`, given in log order and
    covering it: what :func:`verify_chain` answers for the whole log, refusal for refusal.

    The first refusal in log order is raised: a link broken before a range's refused line, or
    else that line's own refusal. Parts after it are not read (an iterator may stop there).
    """
    walk = _Walk()
    for part in parts:
        for number, entry in part.entries:
            walk.link(entry, number)
        if part.fault is not None:
            raise part.fault
    return walk.report(expected_head)


def _blocks(lines: Iterable[bytes], first: int) -> Iterator[list[tuple[int, bytes]]]:
    """The non-blank lines, stripped, with their numbers (``first`` for the first), in blocks
    of :data:`~adjudge.receipts.lines.BLOCK` for :func:`~adjudge.receipts.lines.check_block`."""
    block: list[tuple[int, bytes]] = []
    for number, raw in enumerate(lines, start=first):
        line = raw.strip()
        if line:
            block.append((number, line))
            if len(block) == BLOCK:
                yield block
                block = []
    if block:
        yield block


def _decided(number: int, line: bytes, key: VerifyingKey | str) -> Entry:
    """The entry of a line the fast path did not prove good, as :func:`verify` decides it (and,
    for a checkpoint, :func:`~adjudge.receipts.checkpoints.named_heads`)."""
    try:
        return _entry_of(verify(line, key))
    except ReceiptError as exc:
        raise ReceiptError(f"line {number}: {exc.message}", code=exc.code) from exc


def _where(number: int | None) -> str:
    return "" if number is None else f"line {number}: "


def _entry_of(receipt: Receipt) -> Entry:
    return Entry(
        receipt.receipt_id,
        receipt.sequence,
        receipt.previous,
        receipt.supersedes,
        receipt.subject,
        receipt.lane,
        named_heads(receipt.predicate, receipt.subject_digest),
    )


class _Walk:
    """The state of one pass over a log: what is on it so far, each lane's receipts in order,
    and the checkpoints seen (checked against the lanes once the whole log is read)."""

    __slots__ = ("_checkpoints", "_lanes", "count", "subjects", "superseded")

    def __init__(self) -> None:
        self.subjects: dict[str, tuple[str | None, str]] = {}
        self.superseded: set[str] = set()
        #: Each lane's receipt ids by sequence, and its last entry.
        self._lanes: dict[int, tuple[list[str], list[Entry]]] = {}
        self._checkpoints: dict[str, tuple[Entry, int | None]] = {}
        self.count = 0

    @property
    def head(self) -> Head | None:
        """The last receipt's head on a log of one lane (None before the first, and for a log
        of several lanes: each has its own)."""
        if len(self._lanes) != 1 or 0 not in self._lanes:
            return None
        last = self._lanes[0][1][0]
        return Head(last.receipt_id, last.sequence)

    def lane_heads(self) -> tuple[Head, ...]:
        """Each lane's last receipt, by lane."""
        return tuple(
            Head(last[0].receipt_id, last[0].sequence, lane)
            for lane, (_, last) in sorted(self._lanes.items())
        )

    def receipts(self, lines: Iterable[bytes], key: VerifyingKey | str) -> Iterator[Receipt]:
        """Each receipt of ``lines``, verified and linked to the ones before it."""
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line:
                continue
            try:
                receipt = verify(line, key)
                entry = _entry_of(receipt)
            except ReceiptError as exc:
                raise ReceiptError(f"line {number}: {exc.message}", code=exc.code) from exc
            self.link(entry, number)
            yield receipt

    def link(self, entry: Entry, number: int | None) -> None:
        """Check that ``entry`` (on line ``number``, None when appended) follows the head of
        its lane and supersedes lawfully; then take it."""
        lane = self._lanes.get(entry.lane)
        if lane is None:
            expected_sequence, expected_previous = 0, None
        else:
            last = lane[1][0]
            expected_sequence, expected_previous = last.sequence + 1, last.receipt_id
        if entry.sequence != expected_sequence or entry.previous != expected_previous:
            where = f" of lane {entry.lane}" if entry.lane else ""
            raise ReceiptError(
                f"{_where(number)}receipt {entry.receipt_id} has sequence {entry.sequence} "
                f"and previous {entry.previous}, but the log's head there is sequence "
                f"{expected_sequence - 1} ({expected_previous}){where}: a receipt was deleted, "
                "inserted or reordered.",
                code="RECEIPT_CHAIN_BROKEN",
            )
        if entry.supersedes is not None:
            self.check_supersession(entry.supersedes, entry.subject, _where(number))
            self.superseded.add(entry.supersedes)
        self.subjects[entry.receipt_id] = entry.subject
        if lane is None:
            self._lanes[entry.lane] = ([entry.receipt_id], [entry])
        else:
            lane[0].append(entry.receipt_id)
            lane[1][0] = entry
        if entry.heads is not None:
            self._checkpoints[entry.receipt_id] = (entry, number)
        self.count += 1

    def check_supersession(
        self, old: str | None, subject: tuple[str | None, str], where: str
    ) -> None:
        """Refuse a receipt about ``subject`` superseding ``old`` unless that is lawful here."""
        if old is None:
            return
        earlier = self.subjects.get(old)
        if earlier is None:
            raise ReceiptError(
                f"{where}supersedes {old}, which is not earlier on the log.",
                code="RECEIPT_CHAIN_BROKEN",
            )
        if old in self.superseded:
            raise ReceiptError(f"{where}{old} is already superseded.", code="RECEIPT_CHAIN_BROKEN")
        if not same_subject(subject, earlier):
            raise ReceiptError(
                where + _not_same_subject(subject, earlier, old),
                code="RECEIPT_SUPERSESSION_INVALID",
            )

    def report(self, expected_head: str | None) -> ChainReport:
        """What the pass established, once every checkpoint is seen to name heads on the log
        and the log is seen to end at ``expected_head``."""
        for entry, number in sorted(self._checkpoints.values(), key=lambda c: c[1] or 0):
            self.check_checkpoint(entry, number)
        self.require_head(expected_head)
        pinned = self._checkpoints.get(expected_head or "")
        head = self.head
        if pinned is not None and head is None:
            head = Head(pinned[0].receipt_id, pinned[0].sequence, pinned[0].lane)
        return ChainReport(
            self.count, head, frozenset(self.superseded), self.lane_heads(), len(self._checkpoints)
        )

    def check_checkpoint(self, entry: Entry, number: int | None) -> None:
        """Refuse a checkpoint naming a head that is not on its lane at its sequence (a lane
        cut short, a fork, another log), or not its own predecessor on its own lane."""
        assert entry.heads is not None
        for lane, receipt_id, sequence in entry.heads:
            if lane == entry.lane and (receipt_id, sequence) != (
                entry.previous,
                entry.sequence - 1 if entry.previous is not None else None,
            ):
                raise ReceiptError(
                    f"{_where(number)}the checkpoint {entry.receipt_id} names {receipt_id} as "
                    f"the head of its own lane {lane}, not the receipt before it.",
                    code="RECEIPT_CHAIN_BROKEN",
                )
            if receipt_id is None or sequence is None:
                continue
            ids = self._lanes.get(lane, ([], []))[0]
            if sequence >= len(ids):
                raise ReceiptError(
                    f"{_where(number)}the checkpoint {entry.receipt_id} names {receipt_id} "
                    f"(sequence {sequence}) as the head of lane {lane}, but the lane ends "
                    f"{'before it' if ids else 'empty'}: receipts were cut from it.",
                    code="RECEIPT_CHAIN_BROKEN",
                )
            if ids[sequence] != receipt_id:
                raise ReceiptError(
                    f"{_where(number)}the checkpoint {entry.receipt_id} names {receipt_id} as "
                    f"sequence {sequence} of lane {lane}, where the log has {ids[sequence]}: "
                    "a fork, or another log.",
                    code="RECEIPT_CHAIN_BROKEN",
                )

    def require_head(self, expected_head: str | None) -> None:
        """Refuse a log that does not end at ``expected_head`` (when one is pinned): the last
        receipt of a log of one lane, or a checkpoint the log ends at — its own lane at it and
        every other lane at the head it names."""
        if expected_head is None:
            return
        pinned = self._checkpoints.get(expected_head)
        if pinned is not None:
            self._require_checkpoint_end(pinned[0])
            return
        head = self.head
        if len(self._lanes) > 1:
            raise ReceiptError(
                f"The log has {len(self._lanes)} lanes, and {expected_head} is not a checkpoint "
                "on it: a log of several lanes is pinned by a checkpoint (the export names one).",
                code="RECEIPT_CHAIN_BROKEN",
            )
        if head is None or head.receipt_id != expected_head:
            raise ReceiptError(
                f"The log ends at {head.receipt_id if head else 'nothing'}, not at the pinned "
                f"head {expected_head}: it was truncated or is another log.",
                code="RECEIPT_CHAIN_BROKEN",
            )

    def _require_checkpoint_end(self, pinned: Entry) -> None:
        assert pinned.heads is not None
        named = {lane: receipt_id for lane, receipt_id, _ in pinned.heads}
        named[pinned.lane] = pinned.receipt_id
        for lane in sorted(set(named) | set(self._lanes)):
            last = self._lanes[lane][1][0].receipt_id if lane in self._lanes else None
            if last != named.get(lane):
                raise ReceiptError(
                    f"Lane {lane} of the log ends at {last or 'nothing'}, not at "
                    f"{named.get(lane) or 'nothing'}, where the pinned checkpoint "
                    f"{pinned.receipt_id} ends it: it was truncated, goes on past the pin, or "
                    "is another log.",
                    code="RECEIPT_CHAIN_BROKEN",
                )


class ReceiptLog:
    """An append-only log in memory: receipts are added, never edited or removed.

    :meth:`load` reads an existing log (verifying it), so that a re-run is appended after it.
    """

    __slots__ = ("_by_id", "_receipts", "_walk")

    def __init__(self) -> None:
        self._receipts: list[Receipt] = []
        self._by_id: dict[str, Receipt] = {}
        self._walk = _Walk()

    @classmethod
    def load(cls, lines: Iterable[bytes], key: VerifyingKey | str) -> ReceiptLog:
        """The log of ``lines``, verified exactly as :func:`verify_chain` verifies it."""
        log = cls()
        for receipt in log._walk.receipts(lines, key):
            log._receipts.append(receipt)
            log._by_id[receipt.receipt_id] = receipt
        return log

    @property
    def head(self) -> Head | None:
        """The last receipt's head, or None for an empty log."""
        return self._walk.head

    def find(self, receipt_id: str) -> Receipt | None:
        """The receipt on this log with ``receipt_id``, if there is one."""
        return self._by_id.get(receipt_id)

    def append(
        self,
        determination: Determination,
        signer: Signer,
        *,
        supersedes: str | None = None,
        about: str | None = None,
    ) -> Receipt:
        """Issue ``determination`` at the head, ``about`` a subject (None: just its result).

        ``supersedes`` must name a receipt on the log, not yet superseded
        (``RECEIPT_CHAIN_BROKEN``), about the same subject (``RECEIPT_SUPERSESSION_INVALID``):
        a log that would not verify is never written.
        """
        old = None
        if supersedes is not None:
            old = self.find(supersedes)
            if old is None:
                raise ReceiptError(
                    f"{supersedes} is not on this log; a receipt supersedes an earlier one.",
                    code="RECEIPT_CHAIN_BROKEN",
                )
            subject = (require_about(about), determination.subject_digest)
            self._walk.check_supersession(supersedes, subject, "")
        receipt = issue(determination, signer, self.head, supersedes=old, about=about)
        self._walk.link(_entry_of(receipt), None)
        self._receipts.append(receipt)
        self._by_id[receipt.receipt_id] = receipt
        return receipt

    def superseded(self, receipt_id: str) -> bool:
        """Whether a later receipt on this log supersedes ``receipt_id``."""
        return receipt_id in self._walk.superseded

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
        subject_digest=from_hex(body["subject"][0]["digest"]["sha256"]),
        sequence=predicate["sequence"],
        previous=predicate["previous"],
        supersedes=predicate.get("supersedesReceiptId"),
        keyid=signed.signatures[0].keyid,
        predicate=predicate,
        about=predicate.get("about"),
        lane=predicate.get("lane", 0),
    )
