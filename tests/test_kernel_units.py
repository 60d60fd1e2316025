"""Kernel behaviour that vectors cannot express: the oracle's seal, types, and wire shapes."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import grimp
import pytest

from adjudge.digests import sha256_digest
from adjudge.errors import CriteriaError, Error, ReceiptError
from adjudge.kernel import (
    DEFAULT_POLICY,
    PRECEDENCE,
    Authority,
    Check,
    Pending,
    TrustPolicy,
    Verdict,
    determine,
    fold,
    oracle,
    resolve,
    semantic,
)
from adjudge.kernel import evidence as ev
from adjudge.kernel import verdicts as verdicts_module
from adjudge.kernel.adapters import auto_check_check, determine_auto_check

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _mismatch() -> Check:
    return oracle.integrity(oracle.Record(b"stored"), sha256_digest(b"claimed"))


def test_oracle_mints_mismatch() -> None:
    """The oracle seam compares stored bytes with the declared digest and mints MISMATCH."""
    check = _mismatch()
    assert check.verdict is Verdict.MISMATCH
    assert check.authority is Authority.DETERMINISTIC


def test_evaluator_cannot_construct_mismatch() -> None:
    """A Check(MISMATCH) without the seal is refused with MISMATCH_ORACLE_ONLY."""
    with pytest.raises(CriteriaError) as err:
        Check("evil", Verdict.MISMATCH, Authority.DETERMINISTIC)
    assert err.value.code == "MISMATCH_ORACLE_ONLY"


def test_evaluator_cannot_take_or_build_the_seal() -> None:
    """The seal was taken by the oracle at import; it cannot be taken again, built or subclassed."""
    with pytest.raises(PermissionError):
        verdicts_module._take_oracle_seal()
    with pytest.raises(TypeError):
        verdicts_module._OracleSeal()
    with pytest.raises(TypeError):
        type("Forged", (verdicts_module._OracleSeal,), {})


def test_mismatch_cannot_be_rewritten_or_its_seal_reused() -> None:
    """A minted MISMATCH does not hold the seal, and replace() on it is refused."""
    check = _mismatch()
    assert not any(
        isinstance(getattr(check, f.name), verdicts_module._OracleSeal)
        for f in dataclasses.fields(check)
    )
    with pytest.raises(CriteriaError):
        dataclasses.replace(check, reason="edited")
    fail = Check("f", Verdict.FAIL, Authority.DETERMINISTIC)
    with pytest.raises(CriteriaError):
        dataclasses.replace(fail, verdict=Verdict.MISMATCH)


def test_seal_cannot_be_pickled() -> None:
    """The seal refuses pickling, so it cannot be smuggled out and back in as bytes."""
    seal = cast(Any, object.__new__(cast(type, verdicts_module._OracleSeal)))
    with pytest.raises(TypeError):
        pickle.dumps(seal)
    assert copy.copy(_mismatch()).verdict is Verdict.MISMATCH  # copying an accusation is fine


def test_pending_expiring_into_pass_is_refused_at_run_time() -> None:
    """Even past the type checker (a cast), a PENDING cannot expire into PASS."""
    with pytest.raises(CriteriaError) as err:
        Pending(NOW, cast(Any, Verdict.PASS))
    assert err.value.code == "PENDING_EXPIRY_INVALID"


def test_pending_needs_aware_times() -> None:
    """A naive deadline or a naive now is refused: a deadline without a zone means nothing."""
    with pytest.raises(CriteriaError):
        Pending(datetime(2026, 1, 1), Verdict.UNKNOWN)
    check = Check("p", Verdict.PENDING, Authority.HUMAN, pending=Pending(NOW, Verdict.UNKNOWN))
    with pytest.raises(CriteriaError):
        resolve(check, datetime(2026, 1, 1))


def test_only_pending_carries_pending() -> None:
    """PENDING without a deadline, or a deadline on another verdict, cannot exist."""
    with pytest.raises(CriteriaError):
        Check("p", Verdict.PENDING, Authority.HUMAN)
    with pytest.raises(CriteriaError):
        Check("p", Verdict.FAIL, Authority.HUMAN, pending=Pending(NOW, Verdict.UNKNOWN))


def test_resolve_does_not_write_back() -> None:
    """Reading a PENDING past its deadline leaves the check itself PENDING."""
    check = Check("p", Verdict.PENDING, Authority.HUMAN, pending=Pending(NOW, Verdict.FAIL))
    assert resolve(check, NOW + timedelta(days=1)) is Verdict.FAIL
    assert check.verdict is Verdict.PENDING


def test_precedence_table_is_total_and_pass_is_last() -> None:
    """Every verdict has one rank; PASS is the lowest."""
    assert set(PRECEDENCE) == set(Verdict)
    assert len(set(PRECEDENCE.values())) == len(Verdict)
    assert min(PRECEDENCE, key=PRECEDENCE.__getitem__) is Verdict.PASS
    assert fold([Verdict.PASS, Verdict.PENDING]) is Verdict.PENDING


def test_default_policy_trusts_exactly_deterministic_and_human() -> None:
    """Membership, not exclusion: every authority not listed is untrusted."""
    assert {a for a in Authority if DEFAULT_POLICY.trusts(a)} == {
        Authority.DETERMINISTIC,
        Authority.HUMAN,
    }
    assert not TrustPolicy(frozenset()).trusts(Authority.DETERMINISTIC)


def test_named_verifier_policy_round_trips() -> None:
    """A policy with a named verifier survives its wire shape."""
    policy = DEFAULT_POLICY.with_verifier("a" * 64)
    assert TrustPolicy.from_dict(policy.to_dict()) == policy
    assert policy.trusts(Authority.SEMANTIC, "a" * 64)
    assert not policy.trusts(Authority.SEMANTIC, "b" * 64)
    assert not policy.trusts(Authority.SEMANTIC)


@dataclasses.dataclass(frozen=True)
class _Result:
    passed: bool
    score: int | float
    reasons: tuple[str, ...]


def test_auto_check_adapter_is_deterministic() -> None:
    """The auto check becomes one deterministic check over the result's digest, reproducibly."""
    digest = sha256_digest(b"answer")
    check = auto_check_check(_Result(False, 40.0, ("too short",)), digest)
    assert check == auto_check_check(_Result(False, 40.0, ("too short",)), digest)
    assert check.verdict is Verdict.FAIL
    assert check.authority is Authority.DETERMINISTIC
    assert check.evidence == (digest,)
    assert check.reason == "auto check failed with score 40: too short"


def test_determine_auto_check_pass_carries_the_integrity_proof() -> None:
    """A passing auto check over stored bytes folds to PASS with its integrity proof."""
    d = determine_auto_check(oracle.Record(b"answer"), _Result(True, 90, ()), now=NOW)
    assert d.verdict is Verdict.PASS
    assert d.subject_digest == sha256_digest(b"answer")
    assert [c.name for c in d.checks] == ["evidence-integrity", "auto-check"]


def test_determine_auto_check_declared_digest_disagreeing_is_mismatch() -> None:
    """When the submitter declared another digest than the stored bytes have: MISMATCH."""
    d = determine_auto_check(
        oracle.Record(b"answer"),
        _Result(True, 90, ()),
        now=NOW,
        declared_digest=sha256_digest(b"other"),
    )
    assert d.verdict is Verdict.MISMATCH


def test_errors_share_the_family() -> None:
    """Kernel refusals are adjudge errors with stable codes."""
    with pytest.raises(Error):
        oracle.integrity(oracle.Record(b"x"), "md5:abc")


def test_exactly_six_verdicts_and_no_flake_state() -> None:
    """Six verdicts; flaky tests are not modelled, so there is no quarantine or flake state."""
    assert {v.value for v in Verdict} == {
        "PASS",
        "FAIL",
        "MISMATCH",
        "UNKNOWN",
        "NOT_RUN",
        "PENDING",
    }


def test_check_evidence_is_digests() -> None:
    """A check's evidence is sha256 digests; anything else is refused."""
    with pytest.raises(CriteriaError) as err:
        Check("c", Verdict.FAIL, Authority.HUMAN, evidence=("not a digest",))
    assert err.value.code == "CHECK_INVALID"


def test_evidence_is_typed_on_six_axes_and_independence_is_assessed() -> None:
    """Evidence carries the six axes; its independence comes with the basis it was assessed on."""
    item = ev.admit(
        sha256_digest(b"log"),
        type=ev.EvidenceType.OBSERVATION,
        admission_source=ev.AdmissionSource.COLLECTOR,
        producer=ev.Party("worker", "box-1", "store-1"),
        source=ev.Party("ci", "box-2", "store-2"),
        mutability=ev.Mutability.IMMUTABLE,
        freshness=ev.Freshness.FRESH,
        accessibility=ev.Accessibility.ACCESSIBLE,
    )
    axes = {"type", "admission_source", "independence", "mutability", "freshness", "accessibility"}
    assert axes <= {f.name for f in dataclasses.fields(item)}
    assessment = item.independence
    assert assessment.independence is ev.Independence.INDEPENDENT
    assert (assessment.actor_distinct, assessment.boundary_distinct) == (True, True)
    assert "custody distinct: True" in assessment.basis


def test_a_plain_string_expiry_never_reaches_issue() -> None:
    """Pending(deadline, "UNKNOWN") with a bare string is refused with a code when built, so
    issuing a receipt never meets it (it used to crash issue() with an AttributeError)."""
    with pytest.raises(CriteriaError) as err:
        Pending(NOW, cast(Any, "UNKNOWN"))
    assert err.value.code == "PENDING_EXPIRY_INVALID"


def test_a_pending_must_be_a_pending() -> None:
    """A look-alike object in ``pending`` (no validation of its own) is refused, so it cannot
    carry a MISMATCH expiry past the seal."""
    fake = SimpleNamespace(deadline=NOW, expires_to="MISMATCH", resolve=lambda now: "MISMATCH")
    with pytest.raises(CriteriaError) as err:
        Check("p", Verdict.PENDING, Authority.HUMAN, pending=cast(Any, fake))
    assert err.value.code == "CHECK_INVALID"


def test_the_oracle_reads_a_record_not_bytes_handed_to_it() -> None:
    """The oracle's public function no longer takes caller-supplied bytes: it reads the verifying
    side's Record, and refuses anything else with ORACLE_RECORD_REQUIRED."""
    with pytest.raises(CriteriaError) as err:
        oracle.integrity(cast(Any, b"stored"), sha256_digest(b"claimed"))
    assert err.value.code == "ORACLE_RECORD_REQUIRED"
    record = oracle.Record(b"stored")
    assert record.digest == sha256_digest(b"stored") and record.name == "result"
    assert "stored" not in repr(record)  # a record's repr names its digest, not its bytes
    assert oracle.integrity(record, sha256_digest(b"claimed")).verdict is Verdict.MISMATCH


def test_a_record_holds_bytes_and_a_symbol() -> None:
    """A Record of text, or named by something that is not a symbol, is refused (RECORD_INVALID)."""
    for content, name in ((cast(Any, "text"), "result"), (b"x", "not a symbol"), (b"x", "")):
        with pytest.raises(CriteriaError) as err:
            oracle.Record(content, name)
        assert err.value.code == "RECORD_INVALID"


def test_only_the_oracles_own_proof_counts() -> None:
    """The oracle's PASS is marked as minted; a replace() copy of it is not, and counts for
    nothing, so no caller can launder a look-alike into the proof."""
    digest = sha256_digest(b"answer")
    proof = oracle.integrity(oracle.Record(b"answer"), digest)
    assert proof.oracle and proof.to_dict()["oracle"] is True
    copied = dataclasses.replace(proof)
    assert not copied.oracle and "oracle" not in copied.to_dict()
    auto = Check("auto-check", Verdict.PASS, Authority.DETERMINISTIC, (digest,))
    assert determine(digest, [proof, auto], now=NOW).verdict is Verdict.PASS
    with pytest.raises(ReceiptError) as err:
        determine(digest, [copied, auto], now=NOW)
    assert err.value.code == "INTEGRITY_PROOF_REQUIRED"


def _admitted() -> ev.Evidence:
    return ev.admit(
        sha256_digest(b"log"),
        type=ev.EvidenceType.OBSERVATION,
        admission_source=ev.AdmissionSource.COLLECTOR,
        producer=ev.Party("worker", "box-1", "store-1"),
        source=ev.Party("ci", "box-2", "store-2"),
        mutability=ev.Mutability.IMMUTABLE,
        freshness=ev.Freshness.FRESH,
        accessibility=ev.Accessibility.ACCESSIBLE,
    )


def test_independence_cannot_be_forged_by_building_evidence_directly() -> None:
    """Evidence built by hand with an INDEPENDENT assessment (skipping admit()), or an
    assessment built by hand, is refused: independence comes only from the structural one."""
    with pytest.raises(CriteriaError) as err:
        ev.IndependenceAssessment(ev.Independence.INDEPENDENT, True, True, True, "trust me")
    assert err.value.code == "INDEPENDENCE_NOT_ASSESSED"
    genuine = _admitted().independence
    with pytest.raises(CriteriaError) as err:
        ev.Evidence(
            sha256_digest(b"mine"),
            ev.EvidenceType.ATTESTATION,
            ev.AdmissionSource.PRODUCER,
            genuine,
            ev.Mutability.MUTABLE,
            ev.Freshness.FRESH,
            ev.Accessibility.ACCESSIBLE,
        )
    assert err.value.code == "EVIDENCE_NOT_ADMITTED"


def test_admitted_evidence_cannot_be_relabelled() -> None:
    """replace() on admitted evidence (a producer's own evidence keeping an INDEPENDENT
    assessment, say) is refused, as is replace() on an assessment."""
    item = _admitted()
    assert item.independence.independence is ev.Independence.INDEPENDENT
    with pytest.raises(CriteriaError):
        dataclasses.replace(item, admission_source=ev.AdmissionSource.PRODUCER)
    with pytest.raises(CriteriaError):
        dataclasses.replace(item.independence, basis="relabelled")


_BRIEF = oracle.Record(b"Summarise the report in one line.", "brief")
_RESULT = oracle.Record("The report finds sales rose 4% — mostly abroad.".encode())


def _review(quotes: tuple[semantic.Quote, ...], **changes: Any) -> semantic.Review:
    fields: dict[str, Any] = {
        "verifier_key": "1" * 64,
        "passed": True,
        "brief_digest": _BRIEF.digest,
        "result_digest": _RESULT.digest,
        "quotes": quotes,
    }
    return semantic.Review(**(fields | changes))


def _both() -> tuple[semantic.Quote, semantic.Quote]:
    brief, result = _BRIEF.content.decode(), _RESULT.content.decode()
    return (
        semantic.Quote.of("brief", brief, 0, 9),
        semantic.Quote.of("result", result, result.index("sales"), result.index(" —")),
    )


def test_a_grounded_review_records_what_it_rests_on() -> None:
    """A grounded review's check names both records and every quote hash as its evidence, and
    the verifier key; its reason says it was grounded."""
    grounding = semantic.ground_review(_review(_both()), brief=_BRIEF, result=_RESULT)
    assert grounding.grounded and not grounding.route_to_poster
    check = grounding.check
    assert check.evidence[:2] == (_RESULT.digest, _BRIEF.digest)
    assert {q.quote_hash for q in _both()} <= set(check.evidence)
    assert check.verifier_key == "1" * 64 and check.reason.startswith("grounded review")


def test_a_result_that_is_not_utf8_cannot_be_quoted() -> None:
    """Stored bytes that are not UTF-8 have no code-point offsets: a quote of them is ungrounded."""
    raw = oracle.Record(b"\xff\xfe not text")
    quotes = (_both()[0], semantic.Quote("result", 0, 2, "xx", sha256_digest(b"xx")))
    grounding = semantic.ground_review(
        _review(quotes, result_digest=raw.digest), brief=_BRIEF, result=raw
    )
    assert not grounding.grounded and "not UTF-8" in grounding.reason
    assert grounding.check.verdict is Verdict.UNKNOWN


def test_a_review_round_trips_and_refuses_bad_types() -> None:
    """Review.from_dict reads the wire shape; wrong types are REVIEW_INVALID, never a crash."""
    wire = {
        "verifierKey": "1" * 64,
        "passed": True,
        "briefDigest": _BRIEF.digest,
        "resultDigest": _RESULT.digest,
        "quotes": [q.to_dict() for q in _both()],
        "reasons": ["it is one line"],
    }
    review = semantic.Review.from_dict(wire)
    assert review == _review(_both(), reasons=("it is one line",))
    bad: list[Any] = [
        None,
        wire | {"passed": "yes"},
        wire | {"verifierKey": "A" * 64},
        wire | {"quotes": "none"},
        wire | {"quotes": [{"artifact": "brief"}]},
        wire | {"quotes": [q | {"start": True} for q in wire["quotes"]]},
        wire | {"quotes": [wire["quotes"][0]] * (semantic.MAX_QUOTES + 1)},
        wire | {"reasons": [1]},
    ]
    for data in bad:
        with pytest.raises(CriteriaError) as err:
            semantic.Review.from_dict(data)
        assert err.value.code == "REVIEW_INVALID"


def test_grounding_reads_records_not_bytes() -> None:
    """The brief and result a review is grounded in are the verifying side's Records."""
    with pytest.raises(CriteriaError) as err:
        semantic.ground_review(
            _review(_both()), brief=cast(Any, _BRIEF.content), result=cast(Any, _RESULT.content)
        )
    assert err.value.code == "ORACLE_RECORD_REQUIRED"


def test_no_evaluator_reaches_for_the_oracle_seam() -> None:
    """The evaluators — the auto check, the market, a call's rules, the kernel's own routing and
    observables — never import the oracle seam: only the IO side and the assemblers of a
    determination build a Record and call it, so no evaluator can author an accusation."""
    graph = grimp.build_graph("adjudge", cache_dir=None)
    importers = graph.find_modules_that_directly_import("adjudge.kernel.oracle")
    evaluators = [
        m
        for m in importers
        if m.startswith(("adjudge.autocheck", "adjudge.market", "adjudge.calls"))
        # the assemblers of a determination: a call's (kernel_rows) and a task verdict's (proof,
        # from the server's own stored copy of the result, never a caller's word)
        and m not in {"adjudge.calls.kernel_rows", "adjudge.market.proof"}
    ]
    evaluators += [
        m
        for m in importers
        if m in {"adjudge.kernel.observables", "adjudge.kernel.rails", "adjudge.kernel.evidence"}
    ]
    assert evaluators == []
    assert "adjudge.kernel.adapters" in importers  # the seam is found at all (the scan works)


def test_a_baseline_token_admits_only_the_fields_it_was_minted_for() -> None:
    """A token minted for one work and state is not one for the same characters split into
    another work and state (a separator moved across the boundary)."""
    from adjudge.kernel.rails import Baseline, BaselineCapture, before_after  # noqa: PLC0415

    capture = BaselineCapture(b"k" * 32)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    genuine = capture.capture("job-1\nsha256:" + "a" * 64, "sha256:" + "b" * 64, at)
    assert capture.authentic(genuine)
    moved = "sha256:" + "a" * 64 + "\n" + genuine.state_digest
    forged = Baseline("job-1", moved, at, genuine.token)
    assert not capture.authentic(forged)
    answer = before_after(forged, capture, work_id="job-1", work_started_at=at + timedelta(hours=1))
    assert answer is not None and answer.verdict is Verdict.UNKNOWN
