"""The market's proof: each judgment kind becomes its kernel determination, and the lifecycle
pays on that determination's verdict and nothing else."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from adjudge import Error
from adjudge.kernel import DEFAULT_POLICY, Authority, Verdict
from adjudge.kernel.oracle import INTEGRITY_CHECK
from adjudge.market import (
    Accept,
    CheckOutcome,
    Context,
    Draft,
    Finalize,
    Mode,
    Outcome,
    Review,
    Routed,
    Settlement,
    Status,
    Submit,
    Task,
    VerdictReached,
    post,
    proof,
    step,
)
from adjudge.market.signed_verdicts import DETAIL_KEY
from adjudge.market.tasks import digest_of
from adjudge.receipts import SigningKey
from support.fakes import FakeChecker
from support.verdicts import VERIFIER_KEY, verifier_verdict

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GOOD = "A long enough result."
TAMPERED = "A long enough result!"
CRITERIA = {"min_length": 10}


def ctx(at: datetime = T0) -> Context:
    return Context(now=at, checker=FakeChecker())


def delivered(mode: str, *, verifier_key: str | None = VERIFIER_KEY.keyid) -> Task:
    draft = Draft(
        poster="P",
        reward=1000,
        deadline=T0 + timedelta(days=1),
        mode=mode,
        criteria=CRITERIA,
        verifier="V" if mode == "agent" else None,
        verifier_opted_in=True,
        verifier_key=verifier_key if mode == "agent" else None,
    )
    task = post("t1", draft, ctx()).task
    for event in (Accept("A"), Submit("A", GOOD)):
        task = step(task, event, ctx()).task
    return task


def verdict_of(out: Outcome) -> VerdictReached:
    (verdict,) = [e for e in out.effects if isinstance(e, VerdictReached)]
    assert verdict.determination is not None
    return verdict


# --- each judgment kind -> its determination ----------------------------------------------------


def test_an_auto_check_is_a_deterministic_check_beside_the_integrity_proof() -> None:
    """Finalize: the oracle's integrity proof and the auto check (deterministic), under the
    default policy, binding the criteria digest; PASS pays and signs the money released."""
    out = step(delivered("auto"), Finalize("A", GOOD), ctx())
    determination = verdict_of(out).determination
    assert determination is not None
    integrity, judged = determination.checks
    assert integrity.name == INTEGRITY_CHECK and integrity.oracle
    assert integrity.verdict is Verdict.PASS
    assert (judged.name, judged.authority, judged.verdict) == (
        "auto-check",
        Authority.DETERMINISTIC,
        Verdict.PASS,
    )
    assert determination.verdict is Verdict.PASS and determination.policy == DEFAULT_POLICY
    assert determination.subject_digest == digest_of(GOOD)
    assert determination.criteria_digest == proof.criteria_digest(CRITERIA)
    assert determination.policy_decision is not None
    assert determination.policy_decision["ending"] == "paid_on_pass"
    assert out.task.status is Status.COMPLETED


def test_a_failed_auto_check_folds_to_fail_and_releases_nothing() -> None:
    """A failing check is FAIL: a lost round, no settlement, no policy decision."""
    task = delivered("auto")
    failing = replace(task, criteria={"min_length": 500})
    out = step(failing, Finalize("A", GOOD), ctx())
    determination = verdict_of(out).determination
    assert determination is not None and determination.verdict is Verdict.FAIL
    assert determination.policy_decision is None
    assert out.task.status is Status.FAILED
    assert not [e for e in out.effects if isinstance(e, Settlement)]


@pytest.mark.parametrize("passed", [True, False])
def test_a_review_is_a_human_check(passed: bool) -> None:
    """The poster's review is a human check named manual-review; its verdict is the fold's."""
    task = delivered("manual")
    check = proof.human(passed, (), "P", digest_of(GOOD))
    assert (check.name, check.authority) == (proof.REVIEW_CHECK, Authority.HUMAN)
    determination = proof.judged(task, GOOD, check, at=T0)
    assert determination.verdict is (Verdict.PASS if passed else Verdict.FAIL)
    assert determination.criteria_digest == proof.criteria_digest(CRITERIA)


def test_a_ruling_is_a_human_check_named_admin_ruling() -> None:
    """An admin's ruling is the human check admin-ruling."""
    check = proof.human(True, ("fine",), "ADM", digest_of(GOOD), ruling=True)
    assert (check.name, check.authority, check.reason) == (
        proof.RULING_CHECK,
        Authority.HUMAN,
        "ADM: fine",
    )


def test_a_verifier_is_a_semantic_check_with_its_key_and_signature() -> None:
    """The named verifier's grounded verdict is a semantic check carrying its key and the
    digest of the payload it signed; the task's trust policy names that key, and the PASS rests
    on it."""
    task = delivered("agent")
    event = verifier_verdict(task, True, stored=GOOD)
    out = step(task, event, ctx())
    verdict = verdict_of(out)
    determination = verdict.determination
    assert determination is not None and determination.verdict is Verdict.PASS
    judged = determination.checks[1]
    assert judged.authority is Authority.SEMANTIC and judged.verifier_key == VERIFIER_KEY.keyid
    assert event.signed is not None and event.signed["digest"] in judged.evidence
    assert determination.policy == DEFAULT_POLICY.with_verifier(VERIFIER_KEY.keyid)
    assert determination.trusted_verifier_key == VERIFIER_KEY.keyid
    assert verdict.detail[DETAIL_KEY]["digest"] == event.signed["digest"]


def test_a_verifier_payload_about_another_verdict_is_refused() -> None:
    """A signature over other reasons is not this verdict's (VERDICT_SIGNATURE_INVALID), and
    a verdict with no signature builds no check at all (VERDICT_SIGNATURE_REQUIRED)."""
    task = delivered("agent")
    signed = verifier_verdict(task, True, ("good",), stored=GOOD)
    with pytest.raises(Error) as err:
        step(task, replace(signed, reasons=("other",)), ctx())
    assert err.value.code == "VERDICT_SIGNATURE_INVALID"
    with pytest.raises(Error) as err:
        step(task, replace(signed, signed=None), ctx())
    assert err.value.code == "VERDICT_SIGNATURE_REQUIRED"


# --- a tampered stored result -> MISMATCH, and no pay -------------------------------------------


def test_a_tampered_stored_result_is_a_mismatch() -> None:
    """The oracle checks the stored copy against the digest recorded at submission: a changed
    copy is a MISMATCH, whatever the judgment said."""
    task = delivered("manual")
    determination = proof.judged(task, TAMPERED, proof.human(True, (), "P", digest_of(GOOD)), at=T0)
    assert determination.verdict is Verdict.MISMATCH
    assert determination.checks[0].verdict is Verdict.MISMATCH


@pytest.mark.parametrize("mode", ["auto", "manual", "agent"])
def test_a_tampered_stored_result_pays_nothing(mode: str) -> None:
    """Every judgment over a changed stored copy is refused (RESULT_DIGEST_MISMATCH): no
    verdict, no settlement, the task as it was."""
    task = delivered(mode)
    event = {
        "auto": Finalize("A", TAMPERED),
        "manual": Review("P", True, stored_result=TAMPERED),
        "agent": replace(verifier_verdict(task, True, stored=GOOD), stored_result=TAMPERED),
    }[mode]
    with pytest.raises(Error) as err:
        step(task, event, ctx())
    assert err.value.code == "RESULT_DIGEST_MISMATCH"


# --- a model's verdict without trust never passes -----------------------------------------------


def test_a_verifier_without_trust_never_passes() -> None:
    """Under a policy that does not name the verifier's key, its grounded PASS folds to
    UNKNOWN; the lifecycle pays nothing and sends the work to the poster."""
    task = delivered("agent", verifier_key=VERIFIER_KEY.keyid)
    stranger = SigningKey.from_seed(bytes(32))
    untrusted = replace(task, verifier_key=None)
    check = proof.verifier(
        task,
        passed=True,
        reasons=(),
        judge="V",
        grounding=verifier_verdict(task, True, stored=GOOD).grounding,
        signed=verifier_verdict(task, True, stored=GOOD).signed,
    )
    assert proof.trust_policy(untrusted) == DEFAULT_POLICY
    assert proof.judged(untrusted, GOOD, check, at=T0).verdict is Verdict.UNKNOWN
    # Through the lifecycle: a verifier whose key the task does not trust cannot sign for it.
    with pytest.raises(Error) as err:
        step(task, verifier_verdict(task, True, stored=GOOD, key=stranger), ctx())
    assert err.value.code == "VERDICT_SIGNATURE_INVALID"


def test_an_ungrounded_verifier_verdict_goes_to_the_poster() -> None:
    """A review that quotes nothing is UNKNOWN: no money, no lost round; the poster decides, and
    the routing's own determination records why."""
    task = delivered("agent")
    out = step(task, verifier_verdict(task, True, stored=GOOD, quotes=[]), ctx())
    assert out.task.status is Status.SUBMITTED and out.task.routed
    (routed,) = [e for e in out.effects if isinstance(e, Routed)]
    assert routed.determination is not None
    assert routed.determination.verdict is Verdict.UNKNOWN
    assert routed.determination.policy_decision is not None
    assert routed.determination.policy_decision["type"] == proof.ROUTING_TYPE
    assert not out.transfers and not [e for e in out.effects if isinstance(e, VerdictReached)]


def test_a_checker_cannot_pass_what_the_kernel_folds_otherwise() -> None:
    """The lifecycle pays on the determination, not on the checker's word: a checker saying
    passed with a tampered copy still moves nothing."""

    class Liar(FakeChecker):
        def check(
            self, result: str, criteria: object, *, withhold: frozenset[str] = frozenset()
        ) -> CheckOutcome:
            return CheckOutcome(True, 100, ())

    task = delivered("auto")
    with pytest.raises(Error) as err:
        step(task, Finalize("A", TAMPERED), Context(now=T0, checker=Liar()))
    assert err.value.code == "RESULT_DIGEST_MISMATCH"


def test_an_ending_is_not_run_and_never_passes() -> None:
    """A settlement no judgment decided is NOT_RUN over delivered work, and over work never
    delivered its subject is the task's own record."""
    task = delivered("manual")
    decision = {"type": "adjudge.task.settlement/v1", "ending": "paid_after_escalation"}
    over = proof.ending(task, GOOD, decision, result_digest=task.result_digest, at=T0)
    assert over.verdict is Verdict.NOT_RUN and over.subject_digest == task.result_digest
    undelivered = replace(task, mode=Mode.MANUAL, result_digest=None, attempts=0)
    bare = proof.ending(undelivered, None, decision, result_digest=None, at=T0)
    assert bare.checks == () and bare.subject_digest == proof.record_digest(undelivered)
    assert bare.criteria_digest == proof.criteria_digest(CRITERIA)
