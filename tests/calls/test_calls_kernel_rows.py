"""Call rows as kernel checks, and the kernel determination of a call (spec 002 and 003)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adjudge.calls import (
    CallResult,
    CallVerdict,
    Outcome,
    determine_call,
    kernel_checks,
    parse_judgment,
    parse_request,
    parse_response,
    register_contract,
    register_policy,
    verify_call,
)
from adjudge.calls.kernel_rows import AUTHORITY, KERNEL_VERDICT, call_decision, kernel_verdict
from adjudge.calls.outcomes import CheckRow
from adjudge.calls.verify import digest_of, digested_bytes
from adjudge.digests import sha256_digest
from adjudge.errors import CriteriaError, Error, ReceiptError
from adjudge.kernel import Authority, TrustPolicy, Verdict, determine, oracle
from adjudge.receipts import SigningKey, issue, verify
from adjudge.receipts.canonical import encode_plain
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE, sign

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"
VECTORS = Path(__file__).resolve().parents[1] / "vectors"
AT = datetime(2026, 11, 29, 19, tzinfo=UTC)
NOW = datetime(2026, 11, 29, 20, tzinfo=UTC)
KEY = SigningKey.from_seed(bytes(range(32)))


def _load(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text())


def _call(
    tool: str, kind: str, *, policy: dict[str, Any] | None = None, **extra: Any
) -> tuple[CallResult, bytes]:
    """A shipped example verified, and the bytes its response digest covers."""
    contract = register_contract(_load(f"{tool}.contract.json"))
    document = policy if policy is not None else _load(f"{tool}.policy.json")
    governing = register_policy(document, contract)
    envelope = _load(f"{tool}.{kind}.response.json")
    response = parse_response(envelope)
    request = parse_request(_load(f"{tool}.request.json"))
    result = verify_call(contract, governing, request, response, AT, **extra)
    return result, digested_bytes(envelope["body"])


# ----------------------------------------------------------------------------- the mapping


def test_every_outcome_has_a_kernel_verdict() -> None:
    """No outcome is left unmapped, and only a judged pass maps to PASS."""
    assert set(KERNEL_VERDICT) == set(Outcome)
    assert [o for o, v in KERNEL_VERDICT.items() if v is Verdict.PASS] == [Outcome.PASS]
    assert set(KERNEL_VERDICT.values()) <= {
        Verdict.PASS,
        Verdict.FAIL,
        Verdict.UNKNOWN,
        Verdict.NOT_RUN,
    }
    assert set(AUTHORITY.values()) == set(Authority)


@given(st.sampled_from(list(Outcome)), st.sampled_from(list(Authority)))
def test_only_a_judged_pass_by_a_non_model_maps_to_pass(
    outcome: Outcome, authority: Authority
) -> None:
    """Over every outcome and authority: PASS only for a pass not decided by a model."""
    verdict = kernel_verdict(outcome, authority)
    assert (verdict is Verdict.PASS) == (
        outcome is Outcome.PASS and authority is not Authority.SEMANTIC
    )
    if not outcome.is_vote:  # nothing was judged, or it could not judge: never PASS or FAIL
        assert verdict in (Verdict.UNKNOWN, Verdict.NOT_RUN)


def test_the_vectors_cover_every_outcome_and_authority() -> None:
    """calls_kernel.json holds one case for each outcome × authority, no more, no less."""
    cases = json.loads((VECTORS / "calls_kernel.json").read_text())["cases"]
    pairs = [(c["outcome"], c["authority"]) for c in cases]
    assert sorted(pairs) == sorted((o.value, a.value) for o in Outcome for a in Authority)


_ROWS = st.lists(
    st.builds(
        CheckRow,
        name=st.sampled_from(["schema", "some", "urls", "quality_rules", "meaning", "empty"]),
        stage=st.sampled_from(["schema", "rule", "quality_rules", "meaning", "empty_result"]),
        authority=st.sampled_from(sorted(AUTHORITY)),
        outcome=st.sampled_from(list(Outcome)),
        reason=st.text(max_size=20),
        declared=st.booleans(),
        path=st.just(""),
        weight=st.none(),
        cited=st.lists(st.sampled_from([digest_of("a"), digest_of("b")]), max_size=2).map(tuple),
    ),
    max_size=8,
)
_BASE, _BASE_BYTES = _call("weather", "good")


@given(_ROWS, st.booleans())
def test_a_row_that_did_not_pass_never_reads_as_passed(rows: list[CheckRow], held: bool) -> None:
    """Over any rows: every check keeps its row's outcome; the fold is PASS only if all passed.

    And determining never fails with anything but an adjudge error code.
    """
    result = dataclasses.replace(_BASE, rows=tuple(rows))
    for row, check in zip(rows, kernel_checks(result), strict=True):
        if row.outcome is not Outcome.PASS:
            assert check.verdict is not Verdict.PASS
    all_trusted_passes = all(
        r.outcome is Outcome.PASS and r.authority in ("deterministic", "human") for r in rows
    )
    try:
        determination = determine_call(
            result, now=NOW, response_bytes=_BASE_BYTES if held else None
        )
    except ReceiptError as exc:
        # Refused only for a PASS that has no bytes to prove, never otherwise.
        assert exc.code == "INTEGRITY_PROOF_REQUIRED"
        assert not held and rows and all_trusted_passes
        return
    expected_pass = bool(rows or held) and all_trusted_passes
    assert (determination.verdict is Verdict.PASS) == expected_pass
    if not rows and not held:
        assert determination.verdict is Verdict.NOT_RUN  # nothing ran: never PASS


def test_a_call_becomes_kernel_checks() -> None:
    """Each row becomes a check with its kernel authority and the response digest as evidence."""
    result, _ = _call("search", "good")
    checks = {c.name: c for c in kernel_checks(result)}
    assert checks["schema"].verdict is Verdict.PASS
    assert checks["schema"].authority is Authority.DETERMINISTIC
    assert checks["meaning"].verdict is Verdict.NOT_RUN  # not sampled: never shown as passed
    assert checks["meaning"].authority is Authority.SEMANTIC
    assert "skipped" in checks["meaning"].reason
    assert all(c.evidence == (result.response_digest,) for c in checks.values())
    assert result.response_digest.startswith("sha256:")
    assert [c.name for c in kernel_checks(result)] == [r.name for r in result.rows]


def test_a_cited_conflict_carries_its_quote_hashes() -> None:
    """A semantic FAIL's evidence is the response digest plus the quotes that resolved."""
    body = _load("search.good.response.json")["body"]
    policy = _load("search.policy.json") | {"meaning": {"sample_rate": "1"}}
    title = body["web"]["results"][2]["title"]
    judgment = parse_judgment(
        {
            "call_id": "call-search-0007",
            "response_digest": digest_of(body),
            "status": "judged",
            "conflict": True,
            "reason": "not a comparison",
            "citations": [
                {"path": "/results/2/title", "quote_sha256": digest_of(title)},
                {"path": "/results/99/title", "quote_sha256": digest_of("nowhere")},
            ],
        }
    )
    result, stored = _call("search", "good", policy=policy, judgment=judgment)
    meaning = {c.name: c for c in kernel_checks(result)}["meaning"]
    assert meaning.verdict is Verdict.FAIL
    assert meaning.authority is Authority.SEMANTIC
    assert meaning.evidence == (result.response_digest, digest_of(title))  # only what resolved
    assert {r.name: r for r in result.rows}["meaning"].to_dict()["cited"] == [digest_of(title)]
    assert determine_call(result, now=NOW, response_bytes=stored).verdict is Verdict.FAIL


# ----------------------------------------------------------------------------- determinations


def test_a_passing_call_is_a_pass_with_its_integrity_proof() -> None:
    """With the response bytes, the oracle's proof leads the checks and the fold is PASS."""
    result, stored = _call("weather", "good")
    determination = determine_call(
        result, now=NOW, response_bytes=stored, policy_digest=sha256_digest(b"policy")
    )
    assert determination.verdict is Verdict.PASS
    assert determination.checks[0].name == oracle.INTEGRITY_CHECK
    assert determination.subject_digest == result.response_digest
    assert determination.criteria_digest == sha256_digest(b"policy")
    assert determination.decided_at == NOW
    assert determination.policy_decision == call_decision(result)
    assert determination.policy_decision is not None
    assert determination.policy_decision["verdict"] == "PASS"
    assert determination.policy_decision["payment"] == "settle"


def test_a_pass_without_the_bytes_is_refused_with_a_code() -> None:
    """No bytes, no integrity proof: a PASS is refused (INTEGRITY_PROOF_REQUIRED), not signed."""
    result, _ = _call("weather", "good")
    with pytest.raises(ReceiptError) as caught:
        determine_call(result, now=NOW)
    assert caught.value.code == "INTEGRITY_PROOF_REQUIRED"


def test_bytes_that_do_not_match_the_digest_are_a_mismatch() -> None:
    """The oracle compares the held bytes with the response digest: other bytes, MISMATCH."""
    result, _ = _call("weather", "good")
    determination = determine_call(result, now=NOW, response_bytes=b"something else")
    assert determination.verdict is Verdict.MISMATCH


def test_a_failing_call_needs_no_bytes() -> None:
    """A FAIL receipt needs no integrity proof; the policy's FAIL and refund are recorded."""
    result, _ = _call("weather", "bad")
    determination = determine_call(result, now=NOW)
    assert determination.verdict is Verdict.FAIL
    decision = determination.policy_decision
    assert decision is not None
    assert (decision["verdict"], decision["payment"], decision["strike"]) == (
        "FAIL",
        "refund",
        True,
    )


def test_the_fold_and_the_policy_verdict_answer_different_questions() -> None:
    """An unsampled meaning check: the evidence is NOT_RUN, the call is SKIPPED and settles."""
    result, stored = _call("search", "good")
    determination = determine_call(result, now=NOW, response_bytes=stored)
    assert determination.verdict is Verdict.NOT_RUN
    assert result.verdict is CallVerdict.SKIPPED
    assert determination.policy_decision is not None
    assert determination.policy_decision["verdict"] == "SKIPPED"
    assert determination.policy_decision["payment"] == "settle"


def test_an_unverified_call_never_carries_a_pass_headline() -> None:
    """With no policy the call is UNVERIFIED: its shape evidence is kept, but the determination
    says NOT_RUN (no decision policy ran), never PASS."""
    contract = register_contract(_load("weather.contract.json"))
    envelope = _load("weather.good.response.json")
    request = parse_request(_load("weather.request.json"))
    result = verify_call(contract, None, request, parse_response(envelope), AT)
    determination = determine_call(result, now=NOW, response_bytes=digested_bytes(envelope["body"]))
    assert determination.verdict is Verdict.NOT_RUN
    names = {c.name: c.verdict for c in determination.checks}
    assert names["schema"] is Verdict.PASS  # the evidence is still there
    assert names["decision_policy"] is Verdict.NOT_RUN
    assert determination.criteria_digest is None
    decision = determination.policy_decision
    assert decision is not None
    assert (decision["verdict"], decision["policy"], decision["enforced"]) == (
        "UNVERIFIED",
        None,
        False,
    )
    # Without the bytes nothing is refused either: there is no PASS to prove.
    assert determine_call(result, now=NOW).verdict is Verdict.NOT_RUN


def test_an_error_call_has_nothing_to_determine() -> None:
    """A request error has no response: refused with CALL_NO_RESPONSE, never a crash."""
    contract = register_contract(_load("weather.contract.json"))
    request = parse_request(_load("weather.request.json"))
    response = parse_response({"status": "request_error", "error": {"code": "HTTP_503"}})
    result = verify_call(contract, None, request, response, AT)
    assert kernel_checks(result) == ()
    with pytest.raises(CriteriaError) as caught:
        determine_call(result, now=NOW)
    assert caught.value.code == "CALL_NO_RESPONSE"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"response_digest": "sha256:ABC"}, "DIGEST_INVALID"),
        ({"rows": (CheckRow("x", "rule", "oracle", Outcome.PASS),)}, "CALL_ROW_INVALID"),
        (
            {"rows": (CheckRow("x", "rule", "deterministic", Outcome.PASS, cited=("q",)),)},
            "DIGEST_INVALID",
        ),
        ({"price_minor": 2**60}, "POLICY_DECISION_INVALID"),
    ],
)
def test_unusable_results_are_refused_with_a_code(change: dict[str, Any], code: str) -> None:
    """A hand-built result the kernel cannot type is refused with a stable code."""
    result = dataclasses.replace(_BASE, **change)
    with pytest.raises(Error) as caught:
        determine_call(result, now=NOW, response_bytes=_BASE_BYTES)
    assert caught.value.code == code


def test_other_digests_are_checked() -> None:
    """The policy and contract digests must be sha256: digests too."""
    for name in ("policy_digest", "contract_digest"):
        with pytest.raises(CriteriaError) as caught:
            determine_call(_BASE, now=NOW, response_bytes=_BASE_BYTES, **{name: "md5:00"})
        assert caught.value.code == "DIGEST_INVALID"


def test_a_trust_policy_is_applied() -> None:
    """Under a policy that trusts nothing, the same checks cannot carry the call to PASS."""
    determination = determine_call(
        _BASE, now=NOW, response_bytes=_BASE_BYTES, trust=TrustPolicy(frozenset())
    )
    assert determination.verdict is Verdict.UNKNOWN


def test_a_declared_digest_must_be_a_digest() -> None:
    """A response's declared digest is sha256:<64 lowercase hex>, else the input is refused."""
    with pytest.raises(CriteriaError) as caught:
        parse_response({"status": "ok", "body": {}, "digest": "sha256:XYZ"})
    assert caught.value.code == "CALL_INPUT_INVALID"
    digest = "sha256:" + "0" * 64
    assert parse_response({"status": "ok", "body": {}, "digest": digest}).digest == digest


# ----------------------------------------------------------------------------- receipts


def test_a_call_receipt_verifies_and_records_the_policy_decision() -> None:
    """The receipt's verdict is the fold; its policyDecision is the policy's, signed with it."""
    result, stored = _call("search", "good")
    receipt = issue(determine_call(result, now=NOW, response_bytes=stored), KEY)
    verified = verify(receipt.to_bytes(), KEY.keyid)
    assert verified.verdict is Verdict.NOT_RUN
    predicate = verified.predicate
    assert predicate["policyDecision"] == call_decision(result)
    assert predicate["policyDecision"]["verdict"] == "SKIPPED"
    names = [c["name"] for c in predicate["checks"]]
    assert names == [oracle.INTEGRITY_CHECK, *(r.name for r in result.rows)]
    meaning = predicate["checks"][-1]
    assert (meaning["verdict"], meaning["authority"]) == ("NOT_RUN", "semantic")


def test_a_receipt_without_a_policy_decision_is_unchanged() -> None:
    """Determinations that record no policy decision sign exactly as before (no new key)."""
    checks = [oracle.integrity(oracle.Record(b"r"), sha256_digest(b"r"))]
    receipt = issue(determine(sha256_digest(b"r"), checks, now=NOW), KEY)
    assert "policyDecision" not in receipt.predicate


def _resigned(predicate_edit: dict[str, Any]) -> bytes:
    result, stored = _call("weather", "good")
    body = json.loads(
        issue(determine_call(result, now=NOW, response_bytes=stored), KEY).envelope.payload
    )
    body["predicate"].update(predicate_edit)
    return sign(encode_plain(body), IN_TOTO_PAYLOAD_TYPE, KEY).to_bytes()


def test_a_malformed_policy_decision_is_refused_even_when_signed() -> None:
    """A nested or non-object policyDecision is RECEIPT_MALFORMED, though the signature holds."""
    for bad in ({"verdict": {"nested": True}}, ["PASS"], {"score": "0.5", "x": [1]}):
        with pytest.raises(ReceiptError) as caught:
            verify(_resigned({"policyDecision": bad}), KEY.keyid)
        assert caught.value.code == "RECEIPT_MALFORMED"


def test_a_policy_decision_is_never_folded() -> None:
    """Editing the recorded decision (re-signed) changes nothing the kernel re-derives."""
    data = _resigned({"policyDecision": {"verdict": "FAIL", "payment": "refund"}})
    assert verify(data, KEY.keyid).verdict is Verdict.PASS


def test_a_policy_decision_is_plain_json() -> None:
    """Floats, nested values and non-string keys cannot be recorded: one canonical form."""
    checks = [oracle.integrity(oracle.Record(b"r"), sha256_digest(b"r"))]
    for bad in ({"score": 0.5}, {"x": [1]}, {1: "a"}, {"n": 2**53}, "PASS"):
        with pytest.raises(CriteriaError) as caught:
            determine(sha256_digest(b"r"), checks, now=NOW, policy_decision=bad)  # type: ignore[arg-type]
        assert caught.value.code == "POLICY_DECISION_INVALID"
    ok = determine(sha256_digest(b"r"), checks, now=NOW, policy_decision={"n": 2**53 - 1})
    assert ok.policy_decision == {"n": 2**53 - 1}
