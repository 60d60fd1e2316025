"""The in-toto Statement (v1) a receipt signs, and its offline re-derivation.

A receipt's statement names the judged result as its subject (by sha256) and carries our
predicate: the verdict, every check with its authority and evidence digests, the trust policy,
the criteria (or policy) digest, the engine, the signer's public key, and the chain fields
``sequence`` and ``previous`` (and ``lane`` when it is not lane 0: ``receipts.checkpoints``;
plus ``supersedesReceiptId`` when it supersedes a receipt, and
``policyDecision`` when the determination records what another rulebook decided, such as how a
paid call is paid: signed with the rest, never folded into the verdict).

:func:`check_statement` re-derives the verdict from the recorded checks, policy and decision time
with the kernel's own rules, so a verifier does not take the recorded verdict on trust.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any, Final, NamedTuple, TypeVar

import orjson

from adjudge.digests import DIGEST, from_hex, is_digest, to_hex
from adjudge.errors import BadInput, CriteriaError, ReceiptError
from adjudge.kernel.authority import Authority, TrustPolicy
from adjudge.kernel.determination import (
    SUBJECT,
    Determination,
    bound,
    effective,
    is_integrity_proof,
    leans_on_key,
    policy_decision,
)
from adjudge.kernel.observables import CONTENT_DIGEST, is_exact
from adjudge.kernel.verdicts import (
    EXPIRY_VERDICTS,
    Verdict,
    fold,
    format_time,
    parse_time,
)
from adjudge.receipts.keys import VerifyingKey

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
#: v2: the oracle's checks are marked (``"oracle": true``) and only a marked proof counts; a trust
#: policy lists no authority beyond deterministic and human. A v1 statement is refused.
PREDICATE_TYPE: Final = "urn:adjudge:receipt:v2"
ENGINE: Final = "adjudge"


#: The longest ``about`` a receipt carries.
MAX_ABOUT: Final = 256


def require_about(about: object) -> str | None:
    """``about`` if it is a usable subject name, None for None; else ``ABOUT_INVALID``.

    A name is 1 to :data:`MAX_ABOUT` characters with no control characters and no blanks
    around it, so that two receipts about one subject cannot spell it two ways by accident.
    """
    if about is None:
        return None
    if (
        type(about) is not str
        or not 0 < len(about) <= MAX_ABOUT
        or about != about.strip()
        or any(unicodedata.category(c) == "Cc" for c in about)
    ):
        raise BadInput(
            f"{about!r} is not a subject name: 1 to {MAX_ABOUT} characters, no control "
            "characters, no blanks around it (task:<id>/round:<n>, call:<id>, …).",
            code="ABOUT_INVALID",
        )
    return about


def build(
    determination: Determination,
    signer_key: VerifyingKey,
    *,
    sequence: int,
    previous: str | None,
    supersedes: str | None,
    about: str | None = None,
    lane: int = 0,
) -> dict[str, Any]:
    """The statement of ``determination`` as the ``sequence``-th entry of a log's ``lane``
    (named only when it is not lane 0, so a log of one lane is signed as before lanes)."""
    # Imported at call time: the package root may itself still be importing this module.
    from adjudge import __version__  # noqa: PLC0415

    predicate: dict[str, Any] = {
        "verdict": determination.verdict.value,
        "decidedAt": format_time(determination.decided_at),
        "checks": [check.to_dict() for check in determination.checks],
        "trustPolicy": determination.policy.to_dict(),
        "criteriaDigest": determination.criteria_digest,
        "engine": {"name": ENGINE, "version": __version__},
        "signer": {"keyid": signer_key.keyid, "publicKey": signer_key.to_base64()},
        "sequence": sequence,
        "previous": previous,
    }
    if lane:
        predicate["lane"] = lane
    if determination.trusted_verifier_key is not None:
        predicate["trustedVerifierKey"] = determination.trusted_verifier_key
    if about is not None:
        predicate["about"] = about
    if supersedes is not None:
        predicate["supersedesReceiptId"] = supersedes
    if determination.policy_decision is not None:
        predicate["policyDecision"] = dict(determination.policy_decision)
    return {
        "_type": STATEMENT_TYPE,
        "subject": [
            {
                "name": SUBJECT,
                "digest": {"sha256": to_hex(determination.subject_digest)},
            }
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def check_statement(statement: object, replays: Replays | None = None) -> dict[str, Any]:
    """Validate a statement's shape and re-derive its verdict; return the predicate.

    ``replays`` (one per log) skips a re-derivation the log has made already from the same
    values (:class:`Replays`); every other check is made anew.

    Raises ``RECEIPT_MALFORMED`` for a statement that is not ours; ``RECEIPT_POLICY_INVALID``
    for a recorded trust policy the kernel does not allow (one listing a model's class, say);
    and ``RECEIPT_VERDICT_INVALID`` when the recorded verdict is not what the kernel derives from
    the recorded checks — or is a PASS with no oracle-minted integrity proof, or does not say
    (exactly) which verifier key its PASS rests on.
    """
    s = statement if type(statement) is dict else _object(statement, "the statement")
    if s.get("_type") != STATEMENT_TYPE or s.get("predicateType") != PREDICATE_TYPE:
        raise _malformed(f"not an adjudge receipt statement ({PREDICATE_TYPE})")
    subject_digest = _subject_digest(s)
    p = s.get("predicate")
    if type(p) is not dict:
        p = _object(p, "the predicate")
    key = None if replays is None else replays.key(p, subject_digest)
    if replays is None or key is None or key not in replays.seen:
        _require_derivation(p, replay(p, subject_digest))
        if replays is not None and key is not None:
            replays.add(key)
    _require_chain_fields(p)
    if "policyDecision" in p:
        # Recorded, never folded: its shape is checked, its content is not re-derived here.
        try:
            policy_decision(p["policyDecision"])
        except CriteriaError as exc:
            raise _malformed(exc.message) from exc
    return p


class Replays:
    """The derivations one log's receipts have passed, each keyed by exactly what it read.

    :func:`replay` and :func:`_require_derivation` read, of a predicate: its trust policy,
    verdict and ``trustedVerifierKey``; its decision time only to compare it with a pending
    check's deadline (and, otherwise, to parse it); each check's verdict, authority,
    ``verifierKey``, observable, expression, ``oracle`` and ``pending`` as values, and its
    evidence only as a list of digests; and the subject's digest only as the text of the
    integrity proof's expression, ``(= result "<digest>")``. So the key is the JSON (orjson) of
    those values, read as the fold reads them, with that one expression written as ``0`` (any
    other as ``[expression]``); the evidence and decision time are checked on every line. JSON
    tells ``1``, ``1.0``, ``true`` and ``"1"`` apart, which Python's ``==`` does not; it is
    for statements orjson parsed, which hold no NaN or infinity (orjson would write either as
    ``null``). A log of receipts that differ only in subject, evidence, time and place in the
    chain is derived once. A key is None (derive anew) for anything not read as the fold does.
    """

    __slots__ = ("seen", "times")

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        #: Decision times seen to parse (a log of one batch repeats one).
        self.times: set[str] = set()

    def add(self, key: bytes) -> None:
        """Remember a derivation that passed; a hostile log cannot grow this past its bound."""
        if len(self.seen) < _MAX_REPLAYS:
            self.seen.add(key)

    def key(self, p: dict[str, Any], subject_digest: str) -> bytes | None:
        """What the derivation of ``p`` about ``subject_digest`` reads, as exact JSON bytes."""
        checks = p.get("checks")
        if type(checks) is not list:
            return None
        proof = f'(= {SUBJECT} "{subject_digest}")'
        read: list[object] = []
        timed = False
        digest = DIGEST.fullmatch
        for c in checks:
            if type(c) is not dict:
                return None
            get = c.get
            evidence = get("evidence")
            if type(evidence) is not list:
                return None
            for item in evidence:
                if type(item) is not str or digest(item) is None:
                    return None
            expression = get("expression")
            pending = get("pending", _ABSENT)
            if pending is not _ABSENT:
                timed = True
            read.append(
                (
                    get("verdict"),
                    get("authority"),
                    get("verifierKey"),
                    get("observable"),
                    0 if expression == proof else [expression],
                    get("oracle", False),
                    0 if pending is _ABSENT else [pending],
                )
            )
        decided = p.get("decidedAt")
        if not timed:  # the time is then only parsed: it must parse, but is not a key
            if type(decided) is not str:
                return None
            if decided not in self.times:
                try:
                    parse_time(decided, "decidedAt")
                except (ValueError, CriteriaError):
                    return None
                if len(self.times) < _MAX_REPLAYS:
                    self.times.add(decided)
            decided = 0
        try:
            return orjson.dumps(
                (p.get("trustPolicy"), p.get("verdict"), p.get("trustedVerifierKey"), decided, read)
            )
        except (orjson.JSONEncodeError, TypeError):
            return None


#: The derivations a log remembers: a log repeats a few; past this many, the rest derive anew.
_MAX_REPLAYS: Final = 1024


def _subject_digest(s: dict[str, Any]) -> str:
    subject = s.get("subject")
    if not isinstance(subject, list) or len(subject) != 1:
        raise _malformed("a receipt has exactly one subject")
    named = _object(subject[0], "the subject")
    if named.get("name") != SUBJECT:
        raise _malformed(f"the subject is named {SUBJECT!r}")
    hex_digest = _object(named.get("digest"), "subject.digest").get("sha256")
    digest = from_hex(hex_digest) if isinstance(hex_digest, str) else ""
    if not is_digest(digest):
        raise _malformed("the subject has no sha256 digest")
    return digest


class Replayed(NamedTuple):
    """What the kernel derives from a statement's recorded checks and policy at one time.

    A named tuple: one is built for every receipt a log replays."""

    recorded: Verdict  # the verdict the statement records (signed at decidedAt)
    decided_at: datetime
    verdict: Verdict  # the fold at the time replayed
    proven: bool  # an oracle-minted integrity proof of the subject is among the checks
    trusted_verifier_key: str | None  # the key a PASS rests on, if it rests on one


def replay(p: dict[str, Any], subject_digest: str, at: datetime | None = None) -> Replayed:
    """Re-derive the fold of a predicate's recorded checks under its recorded policy, as at
    ``at`` (the recorded decision time when None; never earlier than it).

    Raises ``RECEIPT_POLICY_INVALID`` for a policy the kernel does not allow,
    ``RECEIPT_VERDICT_INVALID`` for a check no kernel could have signed (an accusation the
    oracle did not mint), and ``RECEIPT_MALFORMED`` for anything unreadable.
    """
    try:
        policy = TrustPolicy.from_dict(p.get("trustPolicy"))
    except CriteriaError as exc:
        raise ReceiptError(
            f"The receipt's trust policy is not one the kernel allows: {exc.message}",
            code="RECEIPT_POLICY_INVALID",
        ) from exc
    try:
        decided_at = parse_time(p.get("decidedAt"), "decidedAt")
        text = p.get("verdict")
        recorded = _VERDICTS.get(text) if type(text) is str else None
        if recorded is None:
            recorded = Verdict(_text(text))  # refused, with the enumeration's own words
        checks = p.get("checks")
        if not isinstance(checks, list):
            raise _malformed("checks is a list")
        when = decided_at if at is None else max(at, decided_at)
        contributions: list[Verdict] = []
        proven, leaned = False, None
        for c in checks:  # one pass: a log of ten thousand receipts replays each of them
            contribution, proof, key = _replay(c, when, policy, subject_digest)
            contributions.append(contribution)
            proven = proven or proof
            leaned = leaned or key
    except (ValueError, CriteriaError) as exc:
        raise _malformed(str(exc)) from exc
    derived = fold(contributions)
    return Replayed(recorded, decided_at, derived, proven, leaned if derived is _PASS else None)


def _require_derivation(p: dict[str, Any], r: Replayed) -> None:
    if r.verdict is not r.recorded:
        raise ReceiptError(
            f"The receipt records {r.recorded.value}, but its own checks under its own trust "
            f"policy fold to {r.verdict.value}.",
            code="RECEIPT_VERDICT_INVALID",
        )
    if r.recorded is Verdict.PASS and not r.proven:
        raise ReceiptError(
            "The receipt records a PASS without the oracle's evidence-integrity proof.",
            code="RECEIPT_VERDICT_INVALID",
        )
    if p.get("trustedVerifierKey") != r.trusted_verifier_key:
        raise ReceiptError(
            "The receipt's PASS rests on the poster's trust in verifier key "
            f"{r.trusted_verifier_key}, and its trustedVerifierKey must say exactly that."
            if r.trusted_verifier_key is not None
            else "The receipt names a trustedVerifierKey its verdict does not rest on.",
            code="RECEIPT_VERDICT_INVALID",
        )


def _require_chain_fields(p: dict[str, Any]) -> None:
    sequence = p.get("sequence")
    if type(sequence) is not int or sequence < 0:
        raise _malformed("sequence is a whole number")
    for name in _DIGEST_OR_NULL:
        value = p.get(name, _ABSENT)
        if value is None:
            continue
        if value is _ABSENT:
            raise _malformed(f"the predicate has no {name} (null when there is none)")
        if not is_digest(value):
            raise _malformed(f"{name} is a sha256: digest or null")
    if "lane" in p:
        lane = p["lane"]
        if type(lane) is not int or lane < 1:  # lane 0 is written by omission: one form
            raise _malformed("lane is a whole number from 1 (lane 0 is not named)")
    if "supersedesReceiptId" in p:
        value = p["supersedesReceiptId"]
        if not is_digest(value):
            raise _malformed("supersedesReceiptId is a receipt id (sha256: digest)")
    if "about" in p:
        try:
            require_about(p["about"])
        except BadInput as exc:
            raise _malformed(exc.message) from exc


def _replay(
    raw: object, decided_at: datetime, policy: TrustPolicy, subject_digest: str
) -> tuple[Verdict, bool, str | None]:
    """One recorded check's contribution to the fold, whether it is the integrity proof, and the
    verifier key its PASS leans on (None when it leans on none)."""
    c = raw if type(raw) is dict else _object(raw, "a check")
    get = c.get
    try:
        verdict, authority = _VERDICTS[get("verdict")], _AUTHORITIES[get("authority")]
    except (KeyError, TypeError):  # refused, in _member's words
        verdict = _member(_VERDICTS, get("verdict"), "verdict")
        authority = _member(_AUTHORITIES, get("authority"), "authority")
    evidence = get("evidence")
    if not isinstance(evidence, list):
        raise _malformed(_EVIDENCE)
    for digest in evidence:  # a loop, not all(...): this runs for every check of every receipt
        if not is_digest(digest):
            raise _malformed(_EVIDENCE)
    key = get("verifierKey")
    if key is not None and not isinstance(key, str):
        raise _malformed("verifierKey is a string")
    if (verdict is _PENDING) != ("pending" in c):
        raise _malformed("a PENDING check, and only one, carries pending")
    recorded = verdict
    if verdict is _PENDING:
        pending = _object(c["pending"], "pending")
        expires_to = _member(_VERDICTS, pending.get("expiresTo"), "expiresTo")
        if expires_to not in EXPIRY_VERDICTS:
            raise _malformed("a PENDING check can never expire into PASS")
        deadline = parse_time(pending.get("deadline"), "deadline")
        verdict = expires_to if decided_at >= deadline else _PENDING
    observable, expression = get("observable"), get("expression")
    if not (observable is None or type(observable) is str) or not (
        expression is None or type(expression) is str
    ):
        raise _malformed("a check's observable and expression are strings")
    minted = get("oracle", False)
    if minted is not True and minted is not False:
        raise _malformed("oracle is true or absent")
    exact = expression is not None and is_exact(expression)  # matched once, used thrice
    if minted or recorded is _MISMATCH or recorded is _PENDING:
        _require_oracle_shape(c, minted, recorded, authority, observable, exact, key)
    proof = minted and is_integrity_proof(verdict, minted, expression, subject_digest, exact=exact)
    # As in derive(): a check naming no observable and no expression keeps its verdict.
    decided = (
        verdict
        if observable is None and expression is None
        else bound(verdict, observable, expression, exact=exact)
    )
    leaned = key if leans_on_key(decided, authority, key, policy) else None
    return effective(decided, authority, key, policy), proof, leaned


def _require_oracle_shape(
    c: dict[str, Any],
    minted: bool,
    recorded: Verdict,
    authority: Authority,
    observable: object,
    exact: bool,
    key: object,
) -> None:
    """A check marked as the oracle's must be one the oracle mints, and an accusation must be
    marked: otherwise no kernel could have signed the statement (``RECEIPT_VERDICT_INVALID``)."""
    accuses = recorded is _MISMATCH or (
        recorded is _PENDING and c["pending"].get("expiresTo") == _MISMATCH.value
    )
    if accuses and not minted:
        raise ReceiptError(
            f"The check {c.get('name')!r} records a MISMATCH the oracle seam did not mint; only "
            "the oracle can author an accusation.",
            code="RECEIPT_VERDICT_INVALID",
        )
    if minted and not (
        (recorded is _PASS or recorded is _MISMATCH)
        and authority is _DETERMINISTIC
        and observable == CONTENT_DIGEST
        and exact
        and key is None
    ):
        raise ReceiptError(
            f"The check {c.get('name')!r} is marked as the oracle's, but the oracle seam mints "
            "only a deterministic PASS or MISMATCH of evidence.content-digest.",
            code="RECEIPT_VERDICT_INVALID",
        )


_T = TypeVar("_T")

# Plain lookups: a log of ten thousand receipts parses these twenty thousand times.
_VERDICTS: Final[dict[object, Verdict]] = {v.value: v for v in Verdict}
_AUTHORITIES: Final[dict[object, Authority]] = {a.value: a for a in Authority}


_EVIDENCE: Final = "a check's evidence is a list of sha256: digests"
_DIGEST_OR_NULL: Final = ("previous", "criteriaDigest")
_ABSENT: Final = object()
# Bound once: attribute lookups on an enumeration cost, and every check of a log reads these.
_PASS: Final = Verdict.PASS
_MISMATCH: Final = Verdict.MISMATCH
_PENDING: Final = Verdict.PENDING
_DETERMINISTIC: Final = Authority.DETERMINISTIC


def _member(table: dict[object, _T], value: object, what: str) -> _T:
    try:
        return table[value]
    except (KeyError, TypeError):
        raise _malformed(f"{value!r} is not a known {what}") from None


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise _malformed(f"{value!r} is not a string")
    return value


def _object(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(f"{what} is an object")
    return value


def _malformed(why: str) -> ReceiptError:
    return ReceiptError(f"Not a valid adjudge receipt: {why}.", code="RECEIPT_MALFORMED")
