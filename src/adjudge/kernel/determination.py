"""A determination: a set of checks folded into one verdict under a trust policy, at a time.

The steps, in order:

1. Resolve every check as at ``now`` (a PENDING past its deadline reads as its expiry verdict).
2. Bind: a check that names an observable (or an expression) binds it, and unless it binds as
   decidable — ``evidence.content-digest`` with exactly ``(= <symbol> "sha256:<64 hex>")`` — it
   cannot decide anything and answers UNKNOWN, whatever verdict it carries. So a check naming
   the declined ``evidence.present`` neither passes nor fails a set.
3. Apply the trust policy: a PASS from an authority (or verifier key) outside the allow-list
   reads as UNKNOWN — it cannot carry the set to PASS. Nothing else changes: any authority may
   move a verdict *down*.
4. Fold with the precedence table. A PASS that a check carries only because the policy names
   its verifier key (seed 000's agent review) *rests on the poster's trust in that key*; the
   determination says so (``trusted_verifier_key``), and so does its receipt.
5. A PASS must carry the evidence-integrity proof the *oracle seam minted* from the verifying
   side's own record, ``(= result "sha256:…")`` naming the subject's own digest. A caller's
   check of the same shape is not it, whoever computed its digest. Without it the determination
   is refused outright (``INTEGRITY_PROOF_REQUIRED``), so no PASS receipt can be issued.

A determination may also record a *policy decision*: what another rulebook concluded from the
same checks (a paid call's verdict and payment, say). It is recorded and signed with the
determination, but it is never folded: it neither changes the kernel's verdict nor is derived
from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType

from adjudge.digests import is_digest
from adjudge.errors import CriteriaError, ReceiptError
from adjudge.kernel.authority import DEFAULT_POLICY, Authority, TrustPolicy
from adjudge.kernel.observables import (
    CONTENT_DIGEST,
    is_exact,
)
from adjudge.kernel.verdicts import Check, Verdict, fold, require_aware, resolve

#: A policy decision's values: plain JSON scalars that sign to the same bytes everywhere (no
#: floats; integers within the I-JSON range).
PolicyValue = str | int | bool | None
_SAFE_INTEGER = 2**53 - 1

#: The symbol that names the judged result in the integrity proof, ``(= result "sha256:…")``,
#: and the name of a receipt's subject.
SUBJECT = "result"


def bound(
    verdict: Verdict,
    observable: str | None,
    expression: str | None,
    *,
    exact: bool | None = None,
) -> Verdict:
    """The verdict a check can decide once its observable is bound (step 2).

    A check that names no observable and no expression keeps its verdict. One that names either
    decides only when it binds as decidable; otherwise it answers UNKNOWN. ``exact`` says
    whether ``expression`` is the exact form, when the caller has matched it already.
    """
    if observable is None and expression is None:
        return verdict
    if observable == CONTENT_DIGEST and (is_exact(expression) if exact is None else exact):
        return verdict
    return Verdict.UNKNOWN


def effective(
    verdict: Verdict, authority: Authority, verifier_key: str | None, policy: TrustPolicy
) -> Verdict:
    """The verdict a check contributes to a fold under ``policy`` (step 3).

    An untrusted PASS becomes UNKNOWN; every other verdict stands.
    """
    if verdict is Verdict.PASS and not policy.trusts(authority, verifier_key):
        return Verdict.UNKNOWN
    return verdict


def leans_on_key(
    verdict: Verdict, authority: Authority, verifier_key: str | None, policy: TrustPolicy
) -> bool:
    """Whether a bound, resolved PASS counts only because ``policy`` names its verifier key."""
    return (
        verdict is Verdict.PASS
        and authority not in policy.authorities
        and verifier_key is not None
        and verifier_key in policy.verifier_keys
    )


def is_integrity_proof(
    verdict: Verdict,
    minted: bool,
    expression: str | None,
    subject_digest: str,
    *,
    exact: bool | None = None,
) -> bool:
    """Whether a resolved check proves the judged result is the one named by ``subject_digest``:
    a PASS the oracle seam ``minted``, of ``(= result "<subject_digest>")``. ``exact`` says
    whether ``expression`` is the exact form, when the caller has matched it already."""
    if verdict is not Verdict.PASS or not minted:
        return False
    # The exact form is literal around its symbol and digest, so it parses to (SUBJECT,
    # subject_digest) exactly when it is that text and is the exact form; the comparison first,
    # because a replayed receipt runs this on every proof.
    if expression != f'(= {SUBJECT} "{subject_digest}")':
        return False
    return is_exact(expression) if exact is None else exact


def derive(
    subject_digest: str, checks: tuple[Check, ...], policy: TrustPolicy, now: datetime
) -> Verdict:
    """Steps (1)-(5): the verdict of ``checks`` about the subject as at ``now``.

    Raises ``INTEGRITY_PROOF_REQUIRED`` (a ReceiptError) for a PASS without its proof.
    """
    resolved = [resolve(check, now) for check in checks]  # (1)
    verdict = fold(  # (2), (3) and (4); most checks name no observable, so bind only those
        effective(
            v
            if c.observable is None and c.expression is None
            else bound(v, c.observable, c.expression),
            c.authority,
            c.verifier_key,
            policy,
        )
        for v, c in zip(resolved, checks, strict=True)
    )
    if verdict is Verdict.PASS and not any(  # (5)
        c.oracle and is_integrity_proof(v, True, c.expression, subject_digest)
        for v, c in zip(resolved, checks, strict=True)
    ):
        raise ReceiptError(
            "A PASS needs the evidence-integrity proof the oracle seam mints from the verifying "
            f'side\'s own record: (= result "{subject_digest}") from oracle.integrity(). A '
            "caller's check of that shape does not count. The determination is refused.",
            code="INTEGRITY_PROOF_REQUIRED",
        )
    return verdict


@dataclass(frozen=True, slots=True)
class Determination:
    """One judged subject, its checks, the policy they were folded under, and the verdict.

    Usually built with :func:`determine`. Built directly, it re-derives its verdict and refuses
    one that does not follow (``DETERMINATION_INVALID``) or a PASS without its integrity proof
    (``INTEGRITY_PROOF_REQUIRED``): an invalid determination cannot exist, so none is signed.
    """

    subject_digest: str
    checks: tuple[Check, ...]
    policy: TrustPolicy
    verdict: Verdict
    decided_at: datetime
    criteria_digest: str | None = None
    policy_decision: Mapping[str, PolicyValue] | None = None

    def __post_init__(self) -> None:
        require_aware(self.decided_at, "decided_at")
        if self.policy_decision is not None:
            # Frozen: a read-only copy, so the signed record cannot change under the holder.
            decision = MappingProxyType(dict(policy_decision(self.policy_decision)))
            object.__setattr__(self, "policy_decision", decision)
        if not isinstance(self.policy, TrustPolicy):
            raise CriteriaError(
                "A determination carries a TrustPolicy.",
                code="DETERMINATION_INVALID",
            )
        for name, value in (("subject", self.subject_digest), ("criteria", self.criteria_digest)):
            if value is None and name == "criteria":
                continue
            if not is_digest(value):
                raise CriteriaError(
                    f"The {name} digest {value!r} is not of the form sha256:<64 lowercase hex>.",
                    code="DIGEST_INVALID",
                )
        if not isinstance(self.checks, tuple) or not all(isinstance(c, Check) for c in self.checks):
            raise CriteriaError(
                "A determination's checks are a tuple of Check.", code="CHECK_INVALID"
            )
        derived = derive(self.subject_digest, self.checks, self.policy, self.decided_at)
        if derived is not self.verdict:
            raise CriteriaError(
                f"The checks fold to {derived.value}, not {self.verdict!r}.",
                code="DETERMINATION_INVALID",
            )

    @property
    def trusted_verifier_key(self) -> str | None:
        """The verifier key this PASS rests on, when it rests on the poster's trust in one.

        None for any other verdict, and for a PASS that deterministic and human checks carry on
        their own (a trusted check that also names a key does not lean on it).
        """
        if self.verdict is not Verdict.PASS:
            return None
        for check in self.checks:
            verdict = bound(resolve(check, self.decided_at), check.observable, check.expression)
            if leans_on_key(verdict, check.authority, check.verifier_key, self.policy):
                return check.verifier_key
        return None


def policy_decision(value: object) -> Mapping[str, PolicyValue]:
    """Check a policy decision's shape: an object of string keys and plain scalar values.

    Nested values, floats and integers outside the I-JSON range are refused
    (``POLICY_DECISION_INVALID``): the decision is signed, so it must have one canonical form.
    """
    if not isinstance(value, Mapping):
        raise CriteriaError("A policy decision is an object.", code="POLICY_DECISION_INVALID")
    for key, item in value.items():
        if not isinstance(key, str):
            raise CriteriaError(
                f"A policy decision's keys are strings, not {key!r}.",
                code="POLICY_DECISION_INVALID",
            )
        plain = item is None or isinstance(item, str | bool)
        whole = type(item) is int and -_SAFE_INTEGER <= item <= _SAFE_INTEGER
        if not (plain or whole):
            raise CriteriaError(
                f"A policy decision's {key!r} must be a string, a whole number within "
                f"±(2^53−1), true, false or null, not {item!r}.",
                code="POLICY_DECISION_INVALID",
            )
    return value


def determine(
    subject_digest: str,
    checks: Iterable[Check],
    *,
    now: datetime,
    policy: TrustPolicy = DEFAULT_POLICY,
    criteria_digest: str | None = None,
    policy_decision: Mapping[str, PolicyValue] | None = None,
) -> Determination:
    """Fold ``checks`` about the subject into a :class:`Determination` as at ``now``.

    ``policy_decision`` records what another rulebook decided from the same checks (a paid
    call's verdict and payment); it is signed with the determination but never folded.
    An empty set folds to NOT_RUN. Raises ``INTEGRITY_PROOF_REQUIRED`` (a ReceiptError) when the
    fold is PASS but no deterministic check proves ``(= result "<subject_digest>")``, and
    ``DIGEST_INVALID`` for a subject or criteria digest that is not ``sha256:<64 hex>``.
    """
    require_aware(now, "now")
    if not is_digest(subject_digest):
        raise CriteriaError(
            f"{subject_digest!r} is not a digest of the form sha256:<64 lowercase hex>.",
            code="DIGEST_INVALID",
        )
    checks = tuple(checks)
    verdict = derive(subject_digest, checks, policy, now)
    return Determination(
        subject_digest=subject_digest,
        checks=checks,
        policy=policy,
        verdict=verdict,
        decided_at=now,
        criteria_digest=criteria_digest,
        policy_decision=policy_decision,
    )
