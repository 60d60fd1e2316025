"""Replay one bundle offline and compare what it gives with the signed receipt.

The steps:

1. Read the bundle (``BUNDLE_UNUSABLE`` for one no replay can run on: exit 2).
2. Every file against the manifest's sha256: a file changed after the bundle was made.
3. The key: ``key.json``'s public key, its keyid, and the pinned key when one is given.
4. The receipt: a DSSE envelope, signed by that key, whose statement verifies (its verdict
   re-derives from its own checks); its id is the one the manifest names; it is about the
   bundle's subject.
5. The engine: the adjudge that signed the receipt, the Unicode versions the bundle records, and
   this replay's own.
6. The re-run (:mod:`adjudge.replay.rerun`): each input bound to the receipt, the check run
   again, its determination rebuilt as a statement at the receipt's place on its log.
7. The rebuilt statement against the signed one, leaf by leaf: the same when it is byte for
   byte the signed payload.
8. What the manifest says the verdict depended on, recomputed from the files.

Nothing here reads a file, the network or the clock: the CLI hands in the bundle's bytes.
"""

from __future__ import annotations

import json
from typing import Any

from adjudge.errors import BadInput, ReceiptError
from adjudge.receipts import VerifyingKey, receipt_id, verify
from adjudge.receipts.canonical import canonical_bytes
from adjudge.receipts.envelope import Envelope
from adjudge.replay import bundle as format_
from adjudge.replay import rerun
from adjudge.replay.engine import MEANING, PARTS, engine
from adjudge.replay.report import Difference, Report, statement_differences


def replay(data: bytes, pin: VerifyingKey | str | None = None) -> Report:
    """Replay the bundle ``data``; ``pin`` is the receipt key an auditor pinned (a public key or
    its fingerprint), checked against the bundle's. Raises ``BUNDLE_UNUSABLE`` for a bundle no
    replay can run on; every other finding is a :class:`Difference` in the report."""
    bundle = format_.read(data)  # (1)
    differences: list[Difference] = [
        Difference(
            f"manifest files.{name}.sha256",
            listed,
            actual,
            "the file was changed after the bundle was made: its sha256 is not the manifest's",
        )
        for name, listed, actual in format_.changed_files(bundle)  # (2)
    ]
    differences += [
        Difference(
            name,
            None,
            None,
            f"a {bundle.kind} bundle's replay does not read {name}: nothing binds what it says",
        )
        for name in format_.unread(bundle)
    ]
    key = _key(bundle, pin, differences)  # (3)
    signed, payload = _receipt(bundle, key, differences)  # (4)
    p = signed["predicate"]
    here = engine()  # (5)
    recorded = {part: str(bundle.manifest["engine"].get(part)) for part in PARTS}
    differences += _engine_differences(p, recorded, here)
    again = rerun.task(bundle, signed) if bundle.kind == "task" else rerun.call(bundle, signed)
    differences += again.differences  # (6)
    digest = None
    if again.statement is not None:  # (7)
        differences += statement_differences(signed, again.statement)
        if canonical_bytes(again.statement) == payload:
            digest = receipt_id(payload)
    elif not again.differences:
        differences.append(
            Difference("statement", None, None, "the signed statement cannot be rebuilt")
        )
    stated = bundle.manifest["depends_on"]  # (8)
    for name, value in format_.depends_on(bundle.kind, bundle.files).items():
        if stated.get(name) != value:
            differences.append(
                Difference(
                    f"manifest depends_on.{name}",
                    _str(stated.get(name)),
                    _str(value),
                    "the manifest does not name the input the bundle holds",
                )
            )
    return Report(
        kind=bundle.kind,
        subject=str(bundle.manifest["subject"]),
        receipt_id=receipt_id(payload),
        receipt_label=_str(bundle.manifest["receipt"].get("id")),
        keyid=None if key is None else key.keyid,
        recorded_engine=recorded,
        engine=here,
        signed_verdict=_str(p.get("verdict")),
        verdict=again.verdict,
        lines=tuple(again.lines),
        differences=tuple(differences),
        notes=tuple(again.notes),
        statement_digest=digest,
        detail=again.detail,
    )


def _key(
    bundle: format_.Bundle, pin: VerifyingKey | str | None, differences: list[Difference]
) -> VerifyingKey | None:
    held = bundle.json("key.json")
    if not isinstance(held, dict):
        raise format_.unusable("key.json is not a JSON object")
    try:
        key = VerifyingKey.from_base64(str(held.get("publicKey")))
    except (ReceiptError, BadInput) as exc:  # BadInput: not a key at all
        raise format_.unusable(f"key.json holds no public key ({exc.message})") from exc
    if held.get("keyid") != key.keyid:
        differences.append(
            Difference(
                "key.json keyid",
                _str(held.get("keyid")),
                key.keyid,
                "the keyid is not the fingerprint of the public key beside it",
            )
        )
    pinned = pin.keyid if isinstance(pin, VerifyingKey) else pin
    if pinned is not None and pinned.lower() != key.keyid:
        differences.append(
            Difference(
                "key",
                pinned.lower(),
                key.keyid,
                "the bundle's key is not the key you pinned: its receipt proves nothing to you",
            )
        )
    return key


def _receipt(
    bundle: format_.Bundle, key: VerifyingKey | None, differences: list[Difference]
) -> tuple[dict[str, Any], bytes]:
    """The receipt's statement (trusted or not: a failure to verify is a difference) and its
    payload bytes."""
    try:
        envelope = Envelope.from_bytes(bundle.files["receipt.json"].strip())
    except (ReceiptError, BadInput) as exc:
        raise format_.unusable(f"receipt.json is not a DSSE envelope ({exc.message})") from exc
    try:
        signed = json.loads(envelope.payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise format_.unusable("the receipt's payload is not JSON") from exc
    if not isinstance(signed, dict) or not isinstance(signed.get("predicate"), dict):
        raise format_.unusable("the receipt's payload is not an adjudge statement")
    if key is not None:
        try:
            verify(envelope, key)
        except ReceiptError as exc:
            differences.append(
                Difference(
                    "receipt.json",
                    None,
                    None,
                    f"{exc.code}: {exc.message} Nothing this receipt says can be relied on",
                )
            )
    named = bundle.manifest["receipt"].get("digest")
    actual = receipt_id(envelope.payload)
    if named != actual:
        differences.append(
            Difference(
                "manifest receipt.digest",
                _str(named),
                actual,
                "the receipt's id (the sha256 of its statement) is not the one the manifest names",
            )
        )
    about = signed["predicate"].get("about")
    if about != bundle.manifest["subject"]:
        differences.append(
            Difference(
                "manifest subject",
                _str(about),
                _str(bundle.manifest["subject"]),
                "the receipt is about another subject than the bundle says",
            )
        )
    return signed, envelope.payload


def _engine_differences(
    p: dict[str, Any], recorded: dict[str, str], here: dict[str, str]
) -> list[Difference]:
    """The engine that decided against the bundle's record and this replay's engine."""
    found: list[Difference] = []
    engine_field = p.get("engine")
    signed = str(engine_field.get("version")) if isinstance(engine_field, dict) else None
    if recorded["adjudge"] != signed:
        found.append(
            Difference(
                "manifest engine.adjudge",
                signed,
                recorded["adjudge"],
                "the manifest's engine is not the adjudge the receipt signs: the bundle was "
                "edited, or made by a service upgraded since the verdict (so its Unicode "
                "versions may not be the verdict's either)",
            )
        )
    if signed != here["adjudge"]:
        found.append(
            Difference(
                "engine.adjudge",
                signed,
                here["adjudge"],
                "another engine version: this replay runs another adjudge than the one that "
                "decided, whose rules may differ",
            )
        )
    for part in PARTS[1:]:
        if recorded[part] != here[part]:
            found.append(
                Difference(
                    f"engine.{part}",
                    recorded[part],
                    here[part],
                    f"another Unicode table: the {MEANING[part]} differs, so text may be read "
                    "differently",
                )
            )
    return found


def _str(value: object) -> str | None:
    return None if value is None else str(value)
