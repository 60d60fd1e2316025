"""One line of a receipt log, proven valid in one pass over the bytes in hand.

A log's verification costs one Ed25519 verification per receipt plus everything around it; this
is everything around it, made cheap for the line that is what an issuer writes:

1. The envelope must be DSSE's shape exactly: ``payload``, ``payloadType`` (in-toto's) and one
   signature whose ``keyid`` is the pinned fingerprint. The line an issuer writes (canonical
   JSON) is cut at its fixed text, without parsing; any other is parsed once (orjson).
2. The payload and signature are decoded once (pybase64), as canonical base64.
3. The payload bytes are what was signed and hashed: the signature is verified over their PAE and
   the receipt id is sha256 of them, as received; nothing decoded is encoded again to get them.
4. The statement is parsed once (orjson) and must be RFC 8785 canonical: for a pure-ASCII
   payload, sorted compact orjson output is byte-identical to RFC 8785 (code-point and UTF-16 key
   order agree on ASCII; the escapes agree, checked for every ASCII character by a test), so one
   re-encoding, about a microsecond, decides it; it also refuses integers outside ±(2^53−1).
5. The statement names the pinned key (whose loaded public key serves the whole log), and its
   verdict re-derives (:func:`~adjudge.receipts.statement.check_statement`), once for the log's
   receipts that the derivation reads alike (:class:`~adjudge.receipts.statement.Replays`).
6. It holds no float, which :func:`verify`'s decoder refuses while parsing and orjson does not:
   :func:`check_statement` types every field a statement has but four strings, so a statement
   with no other keys than those is shown float-free by typing those four (:func:`_no_float`).

A log is read in blocks (:func:`check_block`): each line's steps but the signature's, then the
block's signatures, so the interpreter's work and Ed25519's do not evict each other from the
core's caches line after line.

A line that does not pass any step — a non-ASCII payload, another key, a bad signature, a
statement that does not re-derive — is not refused here: :func:`check` answers None and the
caller hands the line to :func:`~adjudge.receipts.chain.verify`, which decides it and names the
error. So this path only ever proves a line good, and every refusal and its code is ``verify``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from adjudge.digests import from_hex, sha256_digest
from adjudge.errors import BadInput, ReceiptError
from adjudge.receipts.canonical import is_sorted_compact
from adjudge.receipts.checkpoints import NamedHead, named_heads
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE, canonical_base64, envelope_json
from adjudge.receipts.keys import FINGERPRINT, VerifyingKey
from adjudge.receipts.statement import Replays, check_statement

_FIELDS: Final = frozenset({"payload", "payloadType", "signatures"})
_SIGNATURE_FIELDS: Final = frozenset({"keyid", "sig"})
_PAE_HEAD: Final = b"DSSEv1 %d %b " % (len(IN_TOTO_PAYLOAD_TYPE), IN_TOTO_PAYLOAD_TYPE.encode())
#: Distinct public-key texts remembered per pin: a log repeats one; a hostile one cannot grow it.
_MAX_KEYS: Final = 16


class Entry(NamedTuple):
    """What linking a verified receipt into its log needs: its id and its chain fields (and,
    for a checkpoint, the heads it names)."""

    receipt_id: str
    sequence: int
    previous: str | None
    supersedes: str | None
    subject: tuple[str | None, str]
    lane: int = 0
    heads: tuple[NamedHead, ...] | None = None


class Pin:
    """The pinned key, read once for a whole log: its fingerprint, and its loaded public key."""

    __slots__ = ("_keys", "keyid", "pinned", "replays", "tail")

    def __init__(self, key: VerifyingKey | str) -> None:
        self.pinned = key if isinstance(key, VerifyingKey) else None
        fingerprint = key.lower() if isinstance(key, str) else ""
        if self.pinned is not None:
            fingerprint = self.pinned.keyid
        #: None when the pin is unusable: every line then goes to verify(), which says why.
        self.keyid = fingerprint if FINGERPRINT.fullmatch(fingerprint) else None
        #: What follows the payload's text on a canonical line signed by the pinned key.
        self.tail = _TAIL % (self.keyid or "").encode()
        self._keys: dict[str, Ed25519PublicKey | None] = {}
        #: The log's derivations so far: receipts alike but for subject and place derive once.
        self.replays = Replays()

    def key_for(self, carried: str) -> Ed25519PublicKey | None:
        """The key to verify with, if the statement's ``publicKey`` text is the pinned key's."""
        try:
            return self._keys[carried]
        except KeyError:
            pass
        try:
            key = VerifyingKey.from_base64(carried)
        except (ReceiptError, BadInput):  # not a key at all: nothing to verify with
            loaded = None
        else:
            matches = key.keyid == self.keyid
            loaded = (
                Ed25519PublicKey.from_public_bytes((self.pinned or key).raw) if matches else None
            )
        if len(self._keys) < _MAX_KEYS:
            self._keys[carried] = loaded
        return loaded


def check(line: bytes, pin: Pin) -> Entry | None:
    """``line``'s entry if it is a valid receipt signed by the pinned key; None when in doubt."""
    return check_block([line], pin)[0]


#: Lines read before their signatures are verified together (:func:`check_block`).
BLOCK: Final = 128


def check_block(lines: Sequence[bytes], pin: Pin) -> list[Entry | None]:
    """:func:`check` of each of ``lines``, answered in order.

    Every line's reading (steps 1, 2, 4, 5 and 6) comes first, then every signature (3): a
    line's answer is all of its steps passing, whatever their order, and interleaving the
    interpreter's work with each Ed25519 verification evicts each other's code and data from
    the core's caches (about a sixth more CPU a line). A line whose signature fails is read as
    well, which reads nothing it trusts: every step is a pure test of the bytes in hand.
    """
    read = [_read(line, pin) for line in lines]
    answers: list[Entry | None] = []
    for one in read:
        if one is None:
            answers.append(None)
            continue
        key, sig, message, entry = one
        try:
            key.verify(sig, message)  # (3)
        except InvalidSignature:
            answers.append(None)
        else:
            answers.append(entry)
    return answers


def _read(line: bytes, pin: Pin) -> tuple[Ed25519PublicKey, bytes, bytes, Entry] | None:
    """Every step of :func:`check` but the signature's: the key, signature and PAE to verify,
    and the entry; None when in doubt."""
    if pin.keyid is None:
        return None
    texts = _canonical_envelope(line, pin) or _envelope(line, pin)  # (1)
    if texts is None:
        return None
    payload = canonical_base64(texts[0])  # (2)
    sig = canonical_base64(texts[1])
    if payload is None or sig is None:
        return None
    try:
        body = orjson.loads(payload)  # (4)
    except orjson.JSONDecodeError:
        return None
    if type(body) is not dict or not payload.isascii() or not is_sorted_compact(body, payload):
        return None
    predicate = body.get("predicate")
    if type(predicate) is not dict:
        return None
    signer = predicate.get("signer")
    if type(signer) is not dict or signer.get("keyid") != pin.keyid:  # (5)
        return None
    carried = signer.get("publicKey")
    key = pin.key_for(carried) if type(carried) is str else None
    if key is None:
        return None
    try:
        check_statement(body, pin.replays)  # (5)
    except (ReceiptError, BadInput):
        return None
    if not _no_float(body, predicate, signer):  # (6)
        return None
    try:
        entry = _entry(payload, body, predicate)
    except ReceiptError:  # a checkpoint that names its heads wrongly: verify() then says so
        return None
    return key, sig, b"%b%d %b" % (_PAE_HEAD, len(payload), payload), entry  # (3)


_HEAD: Final = b'{"payload":"'
_TAIL: Final = (
    b'","payloadType":"' + IN_TOTO_PAYLOAD_TYPE.encode() + b'","signatures":[{"keyid":"%b","sig":"'
)
_END: Final = b'"}]}'


def _canonical_envelope(line: bytes, pin: Pin) -> tuple[bytes, bytes] | None:
    """The payload's and the signature's text, if ``line`` is canonical JSON of an envelope
    signed by the pinned key: its fixed text around them is all that is compared. Either text is
    then decoded as base64, which has no quote or backslash, so each is exactly what a JSON
    parser reads between its quotes."""
    if not line.startswith(_HEAD) or not line.endswith(_END):
        return None
    end = line.find(b'"', len(_HEAD))
    sig = end + len(pin.tail)
    if end < 0 or sig > len(line) - len(_END) or not line.startswith(pin.tail, end):
        return None
    return line[len(_HEAD) : end], line[sig : -len(_END)]


def _envelope(line: bytes, pin: Pin) -> tuple[str, str] | None:
    """The payload's and the signature's text of any JSON envelope signed by the pinned key."""
    try:
        envelope = envelope_json(line)  # a line that is not canonical: read as verify() reads it
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if (
        type(envelope) is not dict
        or envelope.keys() != _FIELDS
        or envelope["payloadType"] != IN_TOTO_PAYLOAD_TYPE
    ):
        return None
    signatures = envelope["signatures"]
    if type(signatures) is not list or len(signatures) != 1:
        return None
    signature = signatures[0]
    if (
        type(signature) is not dict
        or signature.keys() != _SIGNATURE_FIELDS
        or signature["keyid"] != pin.keyid
        or type(envelope["payload"]) is not str
        or type(signature["sig"]) is not str
    ):
        return None
    return envelope["payload"], signature["sig"]


_TOP: Final = frozenset({"_type", "subject", "predicateType", "predicate"})
_SUBJECT: Final = frozenset({"name", "digest"})
_DIGEST: Final = frozenset({"sha256"})
_PREDICATE: Final = frozenset(
    {
        "verdict",
        "decidedAt",
        "checks",
        "trustPolicy",
        "criteriaDigest",
        "engine",
        "signer",
        "sequence",
        "previous",
        "lane",
        "trustedVerifierKey",
        "about",
        "supersedesReceiptId",
        "policyDecision",
    }
)
_CHECK: Final = frozenset(
    {
        "name",
        "verdict",
        "authority",
        "evidence",
        "reason",
        "observable",
        "expression",
        "oracle",
        "verifierKey",
        "pending",
    }
)
_PENDING: Final = frozenset({"deadline", "expiresTo"})
_POLICY: Final = frozenset({"authorities", "verifierKeys"})
_SIGNER: Final = frozenset({"keyid", "publicKey"})
_ENGINE: Final = frozenset({"name", "version"})


def _no_float(body: dict[str, Any], predicate: dict[str, Any], signer: dict[str, Any]) -> bool:
    """Whether a statement :func:`check_statement` accepted is shown to hold no float.

    It is when no object has a key a statement does not have (a set's ``issuperset`` of a
    dict reads its keys): check_statement() requires a
    string, a whole number, a boolean, null, or an object or list it checks in turn, of every
    one of them but a check's ``name`` and ``reason`` and the engine's ``name`` and ``version``,
    typed here (a test puts a float at every place and checks that this path never takes it).
    Anything else is not shown, and goes to :func:`verify`.
    """
    subject = body["subject"][0]  # all four: shapes check_statement() has checked
    engine = predicate.get("engine")
    if not (
        _TOP.issuperset(body)
        and _SUBJECT.issuperset(subject)
        and _DIGEST.issuperset(subject["digest"])
        and _PREDICATE.issuperset(predicate)
        and _POLICY.issuperset(predicate["trustPolicy"])
        and _SIGNER.issuperset(signer)
        and (
            engine is None
            or (
                type(engine) is dict
                and _ENGINE.issuperset(engine)
                and type(engine.get("name", "")) is str
                and type(engine.get("version", "")) is str
            )
        )
    ):
        return False
    for c in predicate["checks"]:
        pending = c.get("pending")
        if not (
            _CHECK.issuperset(c)
            and type(c.get("name", "")) is str
            and type(c.get("reason", "")) is str
            and (pending is None or _PENDING.issuperset(pending))
        ):
            return False
    return True


def _entry(payload: bytes, body: dict[str, Any], predicate: dict[str, Any]) -> Entry:
    # check_statement() has checked every field read here.
    subject = from_hex(body["subject"][0]["digest"]["sha256"])
    return Entry(
        sha256_digest(payload),  # (3)
        predicate["sequence"],
        predicate["previous"],
        predicate.get("supersedesReceiptId"),
        (predicate.get("about"), subject),
        predicate.get("lane", 0),
        named_heads(predicate, subject) if "policyDecision" in predicate else None,
    )
