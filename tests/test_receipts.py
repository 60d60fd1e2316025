"""Receipts: exact signed bytes, verification, the hash chain, and interop with securesystemslib."""

from __future__ import annotations

import base64
import json
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.signer import SSlibKey

from adjudge.digests import sha256_digest
from adjudge.errors import BadInput, CriteriaError, ReceiptError
from adjudge.kernel import Authority, Check, Pending, TrustPolicy, Verdict, determine, fold, oracle
from adjudge.kernel.adapters import determine_auto_check
from adjudge.kernel.determination import Determination
from adjudge.receipts import (
    Envelope,
    ReceiptLog,
    SigningKey,
    VerifyingKey,
    as_of,
    canonical_bytes,
    fingerprint,
    issue,
    pae,
    statement,
    verify,
    verify_chain,
)
from adjudge.receipts.canonical import canonical_json, encode_plain, parse_exact
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE, sign
from adjudge.receipts.statement import PREDICATE_TYPE, STATEMENT_TYPE

KNOWN = json.loads(
    (Path(__file__).parent / "vectors" / "receipts_known_answers.json").read_text("utf-8")
)
NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY = SigningKey.from_seed(bytes(range(32)))
ATTACKER = SigningKey.from_seed(bytes(range(1, 33)))


def _determination(text: bytes = b"result", verdict: Verdict = Verdict.PASS) -> Any:
    checks = [
        oracle.integrity(oracle.Record(text), sha256_digest(text)),
        Check("auto-check", verdict, Authority.DETERMINISTIC, (sha256_digest(text),)),
    ]
    return determine(sha256_digest(text), checks, now=NOW)


RECEIPT = issue(_determination(), KEY)


@pytest.mark.parametrize("case", KNOWN["pae"], ids=lambda c: c["description"])
def test_pae_known_answers(case: dict[str, str]) -> None:
    """PAE is byte-exact to the DSSE v1 definition."""
    assert pae(case["payloadType"], case["payload"].encode()) == case["pae"].encode()


@pytest.mark.parametrize("case", KNOWN["ed25519"], ids=lambda c: c["description"])
def test_ed25519_known_answers(case: dict[str, str]) -> None:
    """Signing is RFC 8032 Ed25519, and the fingerprint is sha256 of the raw public key."""
    key = SigningKey.from_seed(bytes.fromhex(case["seed"]))
    assert key.public_key.raw.hex() == case["public"]
    assert key.sign(bytes.fromhex(case["message"])).hex() == case["signature"]
    assert key.keyid == fingerprint(bytes.fromhex(case["public"]))


@pytest.mark.parametrize("case", KNOWN["envelopes"], ids=lambda c: c["description"])
def test_envelope_known_answers(case: dict[str, str]) -> None:
    """A fixed key and statement sign to a fixed envelope (a regression pin), which verifies."""
    key = SigningKey.from_seed(bytes.fromhex(case["seed"]))
    envelope = sign(case["payload"].encode(), IN_TOTO_PAYLOAD_TYPE, key)
    assert envelope.to_bytes().decode() == case["envelope"]
    receipt = verify(case["envelope"].encode(), case["fingerprint"])
    assert receipt.receipt_id == case["receiptId"]
    assert receipt.verdict is Verdict.PASS


@dataclass(frozen=True)
class _Passed:
    passed: bool = True
    score: int = 90
    reasons: tuple[str, ...] = ()


def test_issue_builds_the_pinned_statement() -> None:
    """The pinned statement is what issue() builds for its inputs (a passing auto check with
    score 90 over "hello world", decided 2026-01-01), so the pin covers the statement builder,
    not only the signer. The engine version is the one field allowed to differ."""
    case = KNOWN["envelopes"][0]
    key = SigningKey.from_seed(bytes.fromhex(case["seed"]))
    built = issue(determine_auto_check(oracle.Record(b"hello world"), _Passed(), now=NOW), key)
    body, pinned = json.loads(built.envelope.payload), json.loads(case["payload"])
    body["predicate"]["engine"] = pinned["predicate"]["engine"]
    assert canonical_bytes(body) == case["payload"].encode()


def test_receipt_is_an_in_toto_statement_in_dsse() -> None:
    """The payload is an in-toto Statement v1 naming the result's digest as its subject."""
    body = json.loads(RECEIPT.envelope.payload)
    assert RECEIPT.envelope.payload_type == "application/vnd.in-toto+json"
    assert body["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert body["predicateType"] == PREDICATE_TYPE
    assert body["subject"] == [
        {"name": "result", "digest": {"sha256": sha256_digest(b"result")[7:]}}
    ]
    predicate = body["predicate"]
    assert predicate["verdict"] == "PASS"
    assert predicate["trustPolicy"] == {
        "authorities": ["deterministic", "human"],
        "verifierKeys": [],
    }
    assert [c["authority"] for c in predicate["checks"]] == ["deterministic", "deterministic"]
    assert predicate["sequence"] == 0 and predicate["previous"] is None
    assert "supersedesReceiptId" not in predicate
    assert RECEIPT.envelope.signatures[0].keyid == KEY.keyid


def test_verify_round_trip_by_fingerprint_and_by_key() -> None:
    """A receipt verifies against its pinned fingerprint, and against the public key itself."""
    assert verify(RECEIPT.to_bytes(), KEY.keyid).receipt_id == RECEIPT.receipt_id
    assert verify(RECEIPT.to_bytes(), KEY.public_key).verdict is Verdict.PASS


def test_wrong_pinned_key_is_refused() -> None:
    """Pinned to another fingerprint, a genuine receipt does not verify."""
    with pytest.raises(ReceiptError) as err:
        verify(RECEIPT.to_bytes(), ATTACKER.keyid)
    assert err.value.code == "RECEIPT_KEY_MISMATCH"


def test_resigned_forgery_verifies_only_under_the_attackers_key() -> None:
    """Why the fingerprint must be pinned out of band: a forgery re-signed under an attacker's key
    verifies cleanly against that key, and fails against the genuine one."""
    forged = issue(_determination(b"forged"), ATTACKER)
    assert verify(forged.to_bytes(), ATTACKER.keyid).verdict is Verdict.PASS
    with pytest.raises(ReceiptError):
        verify(forged.to_bytes(), KEY.keyid)


def test_swapping_the_carried_key_is_refused() -> None:
    """Replacing the statement's public key breaks the signature or the pin."""
    body = json.loads(RECEIPT.envelope.payload)
    body["predicate"]["signer"]["publicKey"] = ATTACKER.public_key.to_base64()
    env = Envelope(canonical_bytes(body), IN_TOTO_PAYLOAD_TYPE, RECEIPT.envelope.signatures)
    with pytest.raises(ReceiptError):
        verify(env.to_bytes(), KEY.keyid)


def _signed(body: dict[str, Any]) -> bytes:
    return sign(canonical_bytes(body), IN_TOTO_PAYLOAD_TYPE, KEY).to_bytes()


def test_signed_pass_without_integrity_proof_is_invalid() -> None:
    """Even correctly signed, a PASS receipt without an integrity proof does not verify."""
    body = json.loads(RECEIPT.envelope.payload)
    body["predicate"]["checks"] = body["predicate"]["checks"][1:]
    with pytest.raises(ReceiptError) as err:
        verify(_signed(body), KEY.keyid)
    assert err.value.code == "RECEIPT_VERDICT_INVALID"


def test_signed_verdict_that_does_not_follow_is_invalid() -> None:
    """A recorded verdict the kernel does not derive from the recorded checks is refused."""
    body = json.loads(issue(_determination(verdict=Verdict.FAIL), KEY).envelope.payload)
    body["predicate"]["verdict"] = "PASS"
    with pytest.raises(ReceiptError) as err:
        verify(_signed(body), KEY.keyid)
    assert err.value.code == "RECEIPT_VERDICT_INVALID"


def test_signed_model_pass_is_invalid() -> None:
    """A receipt claiming PASS from a semantic check under the default policy is refused."""
    body = json.loads(RECEIPT.envelope.payload)
    body["predicate"]["checks"][1]["authority"] = "semantic"
    with pytest.raises(ReceiptError) as err:
        verify(_signed(body), KEY.keyid)
    assert err.value.code == "RECEIPT_VERDICT_INVALID"


def test_non_canonical_payload_is_refused() -> None:
    """The signed payload must be RFC 8785 canonical JSON."""
    body = json.loads(RECEIPT.envelope.payload)
    loose = json.dumps(body, indent=1).encode()
    with pytest.raises(ReceiptError) as err:
        verify(sign(loose, IN_TOTO_PAYLOAD_TYPE, KEY).to_bytes(), KEY.keyid)
    assert err.value.code == "RECEIPT_MALFORMED"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_flipping_any_byte_breaks_verification(data: st.DataObject) -> None:
    """Any single byte changed anywhere in a serialized envelope: it no longer verifies."""
    raw = bytearray(RECEIPT.to_bytes())
    at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    flip = data.draw(st.integers(min_value=1, max_value=255))
    raw[at] ^= flip
    with pytest.raises(ReceiptError):
        verify(bytes(raw), KEY.keyid)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(st.dictionaries(st.text(), json_values), st.randoms())
def test_canonical_bytes_ignore_key_order(value: dict[str, Any], rnd: Any) -> None:
    """The same mapping in any key order canonicalizes to the same bytes."""
    items = list(value.items())
    rnd.shuffle(items)
    assert canonical_bytes(dict(items)) == canonical_bytes(value)


def test_canonical_refuses_floats() -> None:
    """Signed documents hold no floats (money is integer minor units): bad input to sign."""
    with pytest.raises(BadInput) as err:
        canonical_bytes({"amount": 1.5})
    assert err.value.code == "RECEIPT_UNSIGNABLE"


def test_a_statement_past_the_safe_integers_is_refused_as_it_is_signed() -> None:
    """A receipt's statement is written without the type walk (its values are built typed), so
    its encoder itself refuses an integer past I-JSON: signed, the verifier would refuse it."""
    assert encode_plain({"sequence": 2**53 - 1}) == b'{"sequence":9007199254740991}'
    for big in (2**53, -(2**53), 2**70):
        with pytest.raises(BadInput) as err:
            encode_plain({"sequence": big})
        assert err.value.code == "RECEIPT_UNSIGNABLE"


def test_canonical_json_writes_what_cannot_be_signed_too() -> None:
    """Any parsed JSON value has canonical bytes: RFC 8785's for a float, sorted compact JSON
    for an integer RFC 8785 has no form for; a signable value the same as when signed."""
    assert canonical_json({"b": 1.0, "a": "é"}) == bytes(rfc8785.dumps({"a": "é", "b": 1}))
    assert canonical_json({"n": 2**60, "a": [True]}) == b'{"a":[true],"n":1152921504606846976}'
    assert canonical_json({"k": [1, "x"]}) == canonical_bytes({"k": [1, "x"]})


def _log(n: int) -> ReceiptLog:
    log = ReceiptLog()
    for i in range(n):
        log.append(_determination(b"r%d" % i), KEY)
    return log


def test_chain_links_each_receipt_to_the_previous_head() -> None:
    """Each receipt's previous is the id of the one before it; the report names the head."""
    log = _log(3)
    receipts = list(log)
    assert receipts[0].previous is None
    assert receipts[1].previous == receipts[0].receipt_id
    assert receipts[2].previous == receipts[1].receipt_id
    report = verify_chain(log.lines(), KEY.keyid, expected_head=receipts[2].receipt_id)
    assert report.count == 3 and report.head == receipts[2].head


def test_truncation_is_detected_against_a_pinned_head() -> None:
    """A log cut short verifies on its own, but not against the head pinned before the cut."""
    log = _log(3)
    head = log.receipts[-1].receipt_id
    verify_chain(log.lines()[:2], KEY.keyid)
    with pytest.raises(ReceiptError) as err:
        verify_chain(log.lines()[:2], KEY.keyid, expected_head=head)
    assert err.value.code == "RECEIPT_CHAIN_BROKEN"


def test_insertion_is_detected() -> None:
    """A receipt inserted from another log breaks the chain."""
    log, other = _log(2), _log(3)
    lines = log.lines()
    lines.insert(1, other.lines()[1])
    with pytest.raises(ReceiptError) as err:
        verify_chain(lines, KEY.keyid)
    assert err.value.code == "RECEIPT_CHAIN_BROKEN"


def test_supersession_rules() -> None:
    """A receipt supersedes only an earlier one on its log, and each at most once: the log
    refuses a fork, and so does the chain verifier when one is signed anyway."""
    log = ReceiptLog()
    first = log.append(_determination(b"r0", Verdict.FAIL), KEY, about="t")
    with pytest.raises(ReceiptError):
        log.append(_determination(), KEY, supersedes="sha256:" + "0" * 64, about="t")
    second = log.append(_determination(b"fixed"), KEY, supersedes=first.receipt_id, about="t")
    assert second.supersedes == first.receipt_id
    with pytest.raises(ReceiptError) as refused:
        log.append(_determination(b"again"), KEY, supersedes=first.receipt_id, about="t")
    assert "already superseded" in refused.value.message
    fork = issue(_determination(b"again"), KEY, log.head, supersedes=first, about="t")
    with pytest.raises(ReceiptError) as err:
        verify_chain([*log.lines(), fork.to_bytes()], KEY.keyid)
    assert "already superseded" in err.value.message


def test_chain_of_other_signers_is_refused() -> None:
    """Every receipt of a log must be signed by the pinned key."""
    lines = _log(1).lines()
    lines.append(issue(_determination(), ATTACKER, _log(1).receipts[0].head).to_bytes())
    with pytest.raises(ReceiptError):
        verify_chain(lines, KEY.keyid)


def test_public_key_text_forms() -> None:
    """A public key file may be PEM or 64 hex characters; both give the same key. Anything
    else is bad input (``KEY_INVALID``): the check cannot run, which says nothing of a receipt."""
    assert VerifyingKey.from_text(KEY.public_key.to_pem()) == KEY.public_key
    assert VerifyingKey.from_text(KEY.public_key.raw.hex().encode()) == KEY.public_key
    with pytest.raises(BadInput) as err:
        VerifyingKey.from_text(b"not a key")
    assert err.value.code == "KEY_INVALID" and not isinstance(err.value, ReceiptError)


def test_a_damaged_signer_key_is_a_receipt_that_does_not_verify() -> None:
    """The key a receipt carries is part of what is checked: a damaged one makes the receipt
    malformed (a ``ReceiptError``), never bad input of the one verifying it."""
    envelope = json.loads(RECEIPT.to_bytes())
    body = json.loads(base64.b64decode(envelope["payload"]))
    body["predicate"]["signer"]["publicKey"] = "not base64 !"
    envelope["payload"] = base64.b64encode(canonical_bytes(body)).decode()
    with pytest.raises(ReceiptError) as err:
        verify(canonical_bytes(envelope), KEY.keyid)
    assert err.value.code == "RECEIPT_MALFORMED"


def test_private_key_round_trips_through_pem() -> None:
    """A key written as PKCS#8 PEM loads back to the same signer."""
    assert SigningKey.from_pem(KEY.to_pem()).keyid == KEY.keyid


def test_securesystemslib_verifies_an_adjudge_envelope() -> None:
    """Interop: securesystemslib's own DSSE implementation verifies adjudge's envelope."""
    theirs = SslibEnvelope.from_dict(json.loads(RECEIPT.to_bytes()))
    assert theirs.pae() == pae(RECEIPT.envelope.payload_type, RECEIPT.envelope.payload)
    key = SSlibKey.from_crypto(
        Ed25519PublicKey.from_public_bytes(KEY.public_key.raw), keyid=KEY.keyid
    )
    accepted = theirs.verify([key], 1)
    assert set(accepted) == {KEY.keyid}
    assert base64.b64decode(json.loads(RECEIPT.to_bytes())["payload"]) == theirs.payload


def test_a_hand_built_determination_cannot_exist_invalid() -> None:
    """Built around determine(), a PASS without its proof, or a verdict that does not follow from
    the checks, is refused at construction — so it can never be signed."""
    with pytest.raises(ReceiptError) as err:
        Determination(
            sha256_digest(b"x"),
            (Check("auto-check", Verdict.PASS, Authority.DETERMINISTIC),),
            TrustPolicy(),
            Verdict.PASS,
            NOW,
        )
    assert err.value.code == "INTEGRITY_PROOF_REQUIRED"
    with pytest.raises(CriteriaError) as bad:
        Determination(
            sha256_digest(b"x"),
            (Check("auto-check", Verdict.FAIL, Authority.DETERMINISTIC),),
            TrustPolicy(),
            Verdict.NOT_RUN,
            NOW,
        )
    assert bad.value.code == "DETERMINATION_INVALID"


ascii_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.text(st.characters(max_codepoint=127)),
    lambda children: (
        st.lists(children) | st.dictionaries(st.text(st.characters(max_codepoint=127)), children)
    ),
    max_leaves=25,
)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(ascii_json | json_values)
def test_canonical_bytes_are_rfc8785(value: Any) -> None:
    """The fast path and the rfc8785 package agree byte for byte, control characters included."""
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert parse_exact(canonical_bytes(value)) == value


def test_verification_needs_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline means offline: with sockets disabled, issuing and verifying still work."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("verification tried to open a socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    log = _log(3)
    assert verify_chain(log.lines(), KEY.keyid).count == 3
    assert verify(log.receipts[0].to_bytes(), KEY.keyid).sequence == 0


def test_non_ascii_receipts_round_trip() -> None:
    """A statement with non-ASCII text takes the rfc8785 path and still verifies."""
    text = b"r\xc3\xa9sum\xc3\xa9"
    checks = [
        oracle.integrity(oracle.Record(text), sha256_digest(text)),
        Check("revue — 検証", Verdict.PASS, Authority.HUMAN, reason="looks right 👍"),
    ]
    receipt = issue(determine(sha256_digest(text), checks, now=NOW), KEY)
    assert not receipt.envelope.payload.isascii()
    assert receipt.envelope.payload == rfc8785.dumps(json.loads(receipt.envelope.payload))
    assert verify(receipt.to_bytes(), KEY.keyid).verdict is Verdict.PASS


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*prefix, i))
    return found


STATEMENT = json.loads(RECEIPT.envelope.payload)
STATEMENT_PATHS = _paths(STATEMENT)[1:]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(STATEMENT_PATHS), json_values | st.just("<delete>"))
def test_any_signed_statement_edit_is_refused_cleanly(path: tuple[Any, ...], new: Any) -> None:
    """Any field of a statement replaced (or deleted), then correctly signed: verification either
    accepts a still-coherent receipt or refuses with a ReceiptError — it never crashes."""
    body = json.loads(json.dumps(STATEMENT))
    parent = body
    for step in path[:-1]:
        parent = parent[step]
    if new == "<delete>":
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    try:
        signed = _signed(body)
    except ReceiptError:
        return  # not even signable (an integer out of range): nothing to verify
    try:
        receipt = verify(signed, KEY.keyid)
    except ReceiptError:
        return
    # Accepted: then a PASS still carries its deterministic integrity proof for its subject.
    if receipt.verdict is Verdict.PASS:
        assert any(
            c["authority"] == "deterministic"
            and c["verdict"] == "PASS"
            and c.get("observable") == "evidence.content-digest"
            and c.get("expression") == f'(= result "{receipt.subject_digest}")'
            and c.get("oracle") is True
            for c in receipt.predicate["checks"]
        )


def test_base64_must_be_canonical() -> None:
    """Stray padding bits or missing padding in the envelope's base64 are refused."""
    data = json.loads(RECEIPT.to_bytes())
    sig = data["signatures"][0]["sig"]  # 64 bytes: ends in one data char and "=="
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = sig[-3]
    stray = alphabet[alphabet.index(last) ^ 1]  # same decoded byte, different unused bits
    for bad in (sig[:-3] + stray + "==", sig.rstrip("=")):
        data["signatures"][0]["sig"] = bad
        with pytest.raises(ReceiptError) as err:
            Envelope.from_dict(json.loads(json.dumps(data)))
        assert err.value.code == "RECEIPT_MALFORMED"


def _self_written_proof(subject: str) -> dict[str, Any]:
    return {
        "name": "evidence-integrity",
        "verdict": "PASS",
        "authority": "deterministic",
        "evidence": [subject],
        "reason": "I computed the digest myself",
        "observable": "evidence.content-digest",
        "expression": f'(= result "{subject}")',
    }


def test_a_signed_pass_on_a_self_written_proof_is_invalid() -> None:
    """A PASS receipt whose only integrity proof is a caller's look-alike (not the oracle's)
    does not verify, even correctly signed: verification counts what determine() counts."""
    body = json.loads(RECEIPT.envelope.payload)
    body["predicate"]["checks"][0] = _self_written_proof(RECEIPT.subject_digest)
    with pytest.raises(ReceiptError) as err:
        verify(_signed(body), KEY.keyid)
    assert err.value.code == "RECEIPT_VERDICT_INVALID"


def test_a_signed_pass_on_a_declined_observable_is_invalid() -> None:
    """A recorded PASS check naming evidence.present answers UNKNOWN on replay, so a PASS
    receipt resting on it does not verify."""
    body = json.loads(RECEIPT.envelope.payload)
    body["predicate"]["checks"][1]["observable"] = "evidence.present"
    body["predicate"]["checks"][1]["expression"] = "(present result)"
    with pytest.raises(ReceiptError) as err:
        verify(_signed(body), KEY.keyid)
    assert err.value.code == "RECEIPT_VERDICT_INVALID"


def test_a_signed_mismatch_not_minted_by_the_oracle_is_invalid() -> None:
    """A MISMATCH in a statement that is not the oracle's is an accusation no evaluator could
    have authored: the receipt does not verify."""
    body = json.loads(RECEIPT.envelope.payload)
    body["predicate"]["checks"][1].update(verdict="MISMATCH")
    body["predicate"]["verdict"] = "MISMATCH"
    with pytest.raises(ReceiptError) as err:
        verify(_signed(body), KEY.keyid)
    assert err.value.code == "RECEIPT_VERDICT_INVALID"


VERIFIER = "1" * 64


def _agent_review_receipt() -> Any:
    """A PASS that rests on the poster's trust in one named verifier key."""
    text = b"result"
    checks = [
        oracle.integrity(oracle.Record(text), sha256_digest(text)),
        Check("agent-review", Verdict.PASS, Authority.SEMANTIC, verifier_key=VERIFIER),
    ]
    policy = TrustPolicy().with_verifier(VERIFIER)
    return issue(determine(sha256_digest(text), checks, now=NOW, policy=policy), KEY)


def test_a_signed_policy_trusting_a_model_class_is_refused() -> None:
    """A receipt whose recorded trust policy lists semantic (so a model's PASS would fold to
    PASS under it) does not verify: the recorded policy is checked against what the kernel
    allows, not merely re-read."""
    body = json.loads(RECEIPT.envelope.payload)
    body["predicate"]["checks"][1]["authority"] = "semantic"
    body["predicate"]["trustPolicy"]["authorities"] = ["deterministic", "human", "semantic"]
    with pytest.raises(ReceiptError) as err:
        verify(_signed(body), KEY.keyid)
    assert err.value.code == "RECEIPT_POLICY_INVALID"


def test_a_pass_on_a_named_verifier_says_so() -> None:
    """The receipt of a PASS resting on the named verifier's key records that key as what the
    PASS rests on, and verification re-derives it: dropping or forging the field is refused."""
    receipt = _agent_review_receipt()
    assert receipt.predicate["trustedVerifierKey"] == VERIFIER
    assert verify(receipt.to_bytes(), KEY.keyid).verdict is Verdict.PASS
    body = json.loads(receipt.envelope.payload)
    del body["predicate"]["trustedVerifierKey"]
    with pytest.raises(ReceiptError) as err:
        verify(_signed(body), KEY.keyid)
    assert err.value.code == "RECEIPT_VERDICT_INVALID"
    plain = json.loads(RECEIPT.envelope.payload)
    plain["predicate"]["trustedVerifierKey"] = VERIFIER
    with pytest.raises(ReceiptError) as err:
        verify(_signed(plain), KEY.keyid)
    assert err.value.code == "RECEIPT_VERDICT_INVALID"


def test_the_chain_verifier_refuses_a_supersession_about_another_subject() -> None:
    """A PASS about result B signed as superseding a FAIL about result A (the log bypassed, as a
    forger would) is refused by the chain verifier, not only by the log."""
    first = issue(_determination(b"result A", Verdict.FAIL), KEY)
    with pytest.raises(ReceiptError) as refused:  # issue() itself will not sign it
        issue(_determination(b"result B"), KEY, first.head, supersedes=first)
    assert refused.value.code == "RECEIPT_SUPERSESSION_INVALID"
    body = statement.build(
        _determination(b"result B"),
        KEY.public_key,
        sequence=1,
        previous=first.receipt_id,
        supersedes=first.receipt_id,
    )
    second = _signed(body)
    with pytest.raises(ReceiptError) as err:
        verify_chain([first.to_bytes(), second], KEY.keyid)
    assert err.value.code == "RECEIPT_SUPERSESSION_INVALID"
    assert "line 2" in err.value.message


def test_a_repair_supersedes_across_results_when_both_name_the_subject() -> None:
    """The same task and round named on both receipts: the repaired PASS supersedes the FAIL,
    though the results differ, and both stay on the record."""
    log = ReceiptLog()
    failed = log.append(_determination(b"draft", Verdict.FAIL), KEY, about="task:t-1/round:1")
    fixed = log.append(
        _determination(b"repaired"), KEY, supersedes=failed.receipt_id, about="task:t-1/round:1"
    )
    assert fixed.about == "task:t-1/round:1" and fixed.supersedes == failed.receipt_id
    report = verify_chain(log.lines(), KEY.keyid)
    assert report.superseded == frozenset({failed.receipt_id})


def test_about_must_be_a_plain_name() -> None:
    """A subject name is 1 to 256 characters, no control characters, no surrounding blanks:
    anything else is bad input to issue (not a receipt that fails to verify)."""
    for bad in ("", " task:1", "task:\n1", "x" * 257):
        with pytest.raises(BadInput) as err:
            issue(_determination(), KEY, about=bad)
        assert err.value.code == "ABOUT_INVALID"


subjects = st.tuples(
    st.sampled_from([None, "task:t-1/round:1", "call:c-1"]), st.sampled_from([b"a", b"b"])
)


@settings(max_examples=50, deadline=None)
@given(subjects, subjects)
def test_a_receipt_supersedes_only_one_about_the_same_subject(
    old: tuple[str | None, bytes], new: tuple[str | None, bytes]
) -> None:
    """Whatever two subjects: the log lets one receipt supersede the other exactly when they are
    about the same subject (the same name, or no name and the same result), and what it lets
    through verifies."""
    log = ReceiptLog()
    first = log.append(_determination(old[1], Verdict.FAIL), KEY, about=old[0])
    same = new[0] == old[0] and (new[0] is not None or new[1] == old[1])
    try:
        log.append(_determination(new[1]), KEY, supersedes=first.receipt_id, about=new[0])
    except ReceiptError as exc:
        assert not same and exc.code == "RECEIPT_SUPERSESSION_INVALID"
        return
    assert same
    assert verify_chain(log.lines(), KEY.keyid).superseded == frozenset({first.receipt_id})


moments = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)


@settings(max_examples=60, deadline=None)
@given(
    moments,
    st.sampled_from([Verdict.UNKNOWN, Verdict.FAIL, Verdict.NOT_RUN]),
    moments,
    st.sampled_from([Verdict.PASS, Verdict.FAIL]),
)
def test_a_receipt_read_at_any_time_never_turns_into_pass(
    deadline: datetime, expires_to: Verdict, at: datetime, other: Verdict
) -> None:
    """A receipt with a PENDING check, read at any moment: never PASS, PENDING only before the
    deadline, the expiry's fold after it — and the signed bytes never change."""
    text = b"result"
    pending = Pending(deadline, expires_to)  # type: ignore[arg-type]
    checks = [
        oracle.integrity(oracle.Record(text), sha256_digest(text)),
        Check("review", Verdict.PENDING, Authority.HUMAN, pending=pending),
        Check("auto-check", other, Authority.DETERMINISTIC),
    ]
    receipt = issue(determine(sha256_digest(text), checks, now=NOW), KEY)
    before = receipt.to_bytes()
    standing = as_of(receipt, at)
    assert standing.verdict is not Verdict.PASS
    reached = max(at, NOW) >= deadline
    expected = fold([expires_to if reached else Verdict.PENDING, other])
    assert standing.verdict is expected
    assert [d.passed for d in standing.deadlines] == [reached]
    assert receipt.to_bytes() == before and verify(before, KEY.keyid).verdict is standing.signed


def test_a_standing_has_a_view_shape() -> None:
    """Standing.to_dict is the shape a receipt view shows beside the signed record."""
    deadline = datetime(2026, 1, 15, tzinfo=UTC)
    checks = [
        oracle.integrity(oracle.Record(b"r"), sha256_digest(b"r")),
        Check("review", Verdict.PENDING, Authority.HUMAN, pending=Pending(deadline, Verdict.FAIL)),
    ]
    receipt = issue(determine(sha256_digest(b"r"), checks, now=NOW), KEY)
    view = as_of(receipt.to_dict(), datetime(2026, 12, 1, tzinfo=UTC)).to_dict()
    assert view == {
        "verdict": "FAIL",
        "asOf": "2026-12-01T00:00:00Z",
        "signedVerdict": "PENDING",
        "decidedAt": "2026-01-01T00:00:00Z",
        "deadlines": [
            {
                "check": "review",
                "deadline": "2026-01-15T00:00:00Z",
                "expiresTo": "FAIL",
                "passed": True,
            }
        ],
    }
    with pytest.raises(CriteriaError) as err:
        as_of(receipt, datetime(2026, 12, 1))
    assert err.value.code == "TIME_INVALID"


_K = "1" * 64
_SUBJECT = sha256_digest(b"result")
signed_checks = st.one_of(
    st.just(oracle.integrity(oracle.Record(b"result"), _SUBJECT)),
    st.just(oracle.integrity(oracle.Record(b"other"), _SUBJECT)),
    st.builds(
        Check,
        name=st.sampled_from(["auto-check", "review", "present"]),
        verdict=st.sampled_from([Verdict.PASS, Verdict.FAIL, Verdict.UNKNOWN, Verdict.NOT_RUN]),
        authority=st.sampled_from(list(Authority)),
        observable=st.sampled_from([None, "evidence.content-digest", "evidence.present"]),
        expression=st.sampled_from([None, f'(= result "{_SUBJECT}")', "(present result)"]),
        verifier_key=st.sampled_from([None, _K]),
    ),
    st.builds(
        lambda deadline, expiry: Check(
            "wait", Verdict.PENDING, Authority.HUMAN, pending=Pending(deadline, expiry)
        ),
        st.sampled_from([NOW, datetime(2027, 1, 1, tzinfo=UTC)]),
        st.sampled_from([Verdict.UNKNOWN, Verdict.FAIL]),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(signed_checks, max_size=4),
    st.sampled_from([TrustPolicy(), TrustPolicy().with_verifier(_K)]),
)
def test_verifying_a_receipt_derives_what_determine_derived(
    checks: list[Check], policy: TrustPolicy
) -> None:
    """Whatever the checks and policy, a determination the kernel accepts signs into a receipt
    that verifies with the same verdict and the same trusted verifier key: the replay on the
    verifying side and determine() are one rule."""
    try:
        d = determine(_SUBJECT, checks, now=NOW, policy=policy)
    except ReceiptError as exc:
        assert exc.code == "INTEGRITY_PROOF_REQUIRED"
        return
    receipt = verify(issue(d, KEY).to_bytes(), KEY.keyid)
    assert receipt.verdict is d.verdict
    assert receipt.predicate.get("trustedVerifierKey") == d.trusted_verifier_key
