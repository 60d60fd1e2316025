"""The anti-gaming rails (spec 002, *Anti-gaming*). Each is a pure function with a stable code.

A rail returns ``None`` when it holds and a :class:`Refusal` (a stable code and a sentence)
when it does not. The change-manifest and baseline rails do not refuse: they answer UNKNOWN
with a reason, as the spec says. Unnamed actors never count as distinct from anyone, and names
are compared as identities (:func:`adjudge.kernel.evidence.identity`): ids that differ only in
case, surrounding whitespace or compatibility form are the same actor (or boundary, or store).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from adjudge.errors import CriteriaError
from adjudge.kernel.evidence import identity
from adjudge.kernel.verdicts import Verdict, format_time, require_aware


class RailCode(StrEnum):
    """The stable refusal and reason codes of the rails."""

    SELF_VERIFICATION = "self-verification"
    VERIFIER_AUTHORED_WORK = "verifier-authored-work"
    WORKER_SELF_VERIFICATION = "worker-self-verification"
    SHARED_EXECUTION_BOUNDARY = "shared-execution-boundary"
    CONTRACT_SELF_ACCEPTANCE = "contract-self-acceptance"
    CHANGE_MANIFEST_NOT_INDEPENDENTLY_OBSERVED = "change-manifest-not-independently-observed"
    BASELINE_MISSING = "baseline-missing"
    BASELINE_INVALID = "baseline-invalid"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A rail that did not hold: its stable code and why."""

    code: RailCode
    reason: str


# -- 1. An agent cannot verify its own work ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """An actor claimed the task in a cycle (a cycle starts anew at each reopen)."""

    actor: str | None
    cycle: int


@dataclass(frozen=True, slots=True)
class Verification:
    """An actor verified the task in a cycle."""

    actor: str | None
    cycle: int


def no_self_verification(
    claims: Iterable[Claim], verifications: Iterable[Verification], *, current_cycle: int
) -> Refusal | None:
    """A completion is legitimate only if a named actor who never claimed the task verified it
    in the current cycle. Stale approvals from earlier cycles and unnamed verifiers never count,
    and a claim by an unnamed actor refuses outright: no verifier can be shown distinct from it.
    """
    claimers = {identity(c.actor) for c in claims}
    if None in claimers:
        return Refusal(
            RailCode.SELF_VERIFICATION,
            "an unnamed actor claimed the task, so no verifier can be shown distinct from it",
        )
    for v in verifications:
        verifier = identity(v.actor)
        if v.cycle == current_cycle and verifier is not None and verifier not in claimers:
            return None
    return Refusal(
        RailCode.SELF_VERIFICATION,
        "no named actor who never claimed the task verified it in the current cycle",
    )


# -- 2. An agent cannot verify code it wrote --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Link:
    """A link anchoring the work (a commit, a change): who committed it, and whether superseded."""

    committer: str | None
    superseded: bool = False


def verifier_not_author(verifier: str | None, links: Iterable[Link]) -> Refusal | None:
    """The verifier must not be the committing actor of any link anchoring the work,
    superseded links included (a rebase does not erase the original author).
    """
    who = identity(verifier)
    if who is None:
        return Refusal(RailCode.VERIFIER_AUTHORED_WORK, "the verifier is unnamed")
    for link in links:
        committer = identity(link.committer)
        if committer is None:
            return Refusal(
                RailCode.VERIFIER_AUTHORED_WORK,
                "a link anchoring the work has no named committer; it could be the verifier's",
            )
        if committer == who:
            state = "a superseded" if link.superseded else "a"
            return Refusal(
                RailCode.VERIFIER_AUTHORED_WORK,
                f"the verifier committed {state} link anchoring the work",
            )
    return None


# -- 3. The verifier must not share the worker's execution boundary ---------------------------


@dataclass(frozen=True, slots=True)
class Boundary:
    """An execution boundary (a container, a sandbox) and whether it is mutable."""

    boundary_id: str | None
    mutable: bool


def separate_boundary(
    worker: str | None,
    worker_boundary: Boundary,
    verifier: str | None,
    verifier_boundary: Boundary,
) -> Refusal | None:
    """Same actor → ``worker-self-verification``; same mutable boundary →
    ``shared-execution-boundary``. An unnamed actor or boundary cannot be shown separate.
    """
    who, checker = identity(worker), identity(verifier)
    if who is None or checker is None or who == checker:
        return Refusal(RailCode.WORKER_SELF_VERIFICATION, "the verifier is the worker (or unnamed)")
    here, there = identity(worker_boundary.boundary_id), identity(verifier_boundary.boundary_id)
    if here is None or there is None:
        return Refusal(
            RailCode.SHARED_EXECUTION_BOUNDARY,
            "an execution boundary is unnamed; not provably apart",
        )
    if here == there and (worker_boundary.mutable or verifier_boundary.mutable):
        return Refusal(
            RailCode.SHARED_EXECUTION_BOUNDARY,
            "the verifier runs in the worker's mutable execution boundary",
        )
    return None


def no_contract_self_acceptance(worker: str | None, acceptor: str | None) -> Refusal | None:
    """A worker cannot accept the contract for its own attempt (nor can an unnamed acceptor)."""
    accepted_by = identity(acceptor)
    if accepted_by is None or accepted_by == identity(worker):
        return Refusal(
            RailCode.CONTRACT_SELF_ACCEPTANCE,
            "the contract for an attempt is accepted by someone other than its worker",
        )
    return None


# -- 4. A producer's account of what changed is not evidence ----------------------------------


@dataclass(frozen=True, slots=True)
class ChangeManifest:
    """A manifest of what changed, and where it was computed."""

    digest: str
    observed_in_store: str | None  # the store the diff was computed in; None: producer-declared
    producer_mounts: frozenset[str]  # stores mounted into the container that made the change


@dataclass(frozen=True, slots=True)
class RailAnswer:
    """A rail that answers rather than refuses: UNKNOWN with a code, or None when admitted."""

    verdict: Verdict
    code: RailCode
    reason: str


def change_manifest(manifest: ChangeManifest) -> RailAnswer | None:
    """Admit a manifest only if independently observed: computed in a store that is never
    mounted into the producer's container. Otherwise UNKNOWN — never FAIL, never PASS.
    """
    store = identity(manifest.observed_in_store)
    if store is not None and store not in {identity(m) for m in manifest.producer_mounts}:
        return None
    return RailAnswer(
        Verdict.UNKNOWN,
        RailCode.CHANGE_MANIFEST_NOT_INDEPENDENTLY_OBSERVED,
        "the change manifest was not computed in a store the producer never mounts",
    )


# -- 5. The baseline is captured before the work starts ---------------------------------------


@dataclass(frozen=True, slots=True)
class Baseline:
    """A pre-mutation baseline and the correlation token that only the capture step mints."""

    work_id: str
    state_digest: str
    captured_at: datetime
    token: str


class BaselineCapture:
    """The capture step. It alone holds the key, so it alone mints a valid correlation token
    (an HMAC-SHA256 of the work, the state digest and the capture time).
    """

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes) or len(key) < 32:
            raise CriteriaError("A capture key is at least 32 bytes.", code="CAPTURE_KEY_INVALID")
        self._key = key

    def __repr__(self) -> str:
        return "BaselineCapture(<key withheld>)"

    def _mac(self, work_id: str, state_digest: str, captured_at: datetime) -> str:
        # Each field as a JSON string in a list: a separator joining them could be moved from
        # one field into the next ("w\nsha256:…" + "…") with the same bytes, and the same token.
        fields = [work_id, state_digest, format_time(captured_at)]
        message = json.dumps(fields, ensure_ascii=False).encode("utf-8", "surrogatepass")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def capture(self, work_id: str, state_digest: str, captured_at: datetime) -> Baseline:
        """Record the baseline of ``work_id`` as at ``captured_at``, with its token."""
        require_aware(captured_at, "captured_at")
        token = self._mac(work_id, state_digest, captured_at)
        return Baseline(work_id, state_digest, captured_at, token)

    def authentic(self, baseline: Baseline) -> bool:
        """Whether ``baseline``'s token was minted by this capture step for exactly its fields."""
        expected = self._mac(baseline.work_id, baseline.state_digest, baseline.captured_at)
        return hmac.compare_digest(expected, baseline.token)


def before_after(
    baseline: Baseline | None, capture: BaselineCapture, *, work_id: str, work_started_at: datetime
) -> RailAnswer | None:
    """A before/after predicate needs an authentic baseline of this work, captured before the
    work started; otherwise UNKNOWN with the reason.
    """
    require_aware(work_started_at, "work_started_at")
    if baseline is None:
        return RailAnswer(
            Verdict.UNKNOWN, RailCode.BASELINE_MISSING, "no pre-mutation baseline was captured"
        )
    if baseline.work_id != work_id or not capture.authentic(baseline):
        return RailAnswer(
            Verdict.UNKNOWN,
            RailCode.BASELINE_INVALID,
            "the baseline's correlation token was not minted by the capture step for this work",
        )
    if baseline.captured_at >= work_started_at:
        return RailAnswer(
            Verdict.UNKNOWN,
            RailCode.BASELINE_INVALID,
            "the baseline was captured after the work started, so it is not pre-mutation",
        )
    return None
