"""Evidence, typed on six axes at once (spec 002, *What counts as evidence*).

Independence is the one axis never taken from a label: it is *assessed from structure* by three
separate questions — is the actor distinct, is the execution boundary distinct, is custody
distinct — and the assessment states its basis. "A producer that declares itself independent
is not independent": an :class:`IndependenceAssessment` exists only as
:func:`assess_independence` made it, and :class:`Evidence` only as :func:`admit` made it; built
any other way (by hand, or by ``replace()`` on a genuine one) they are refused, so no label can
stand in for the structural assessment.

Names are compared as identities (:func:`identity`): two ids that differ only in case, in
surrounding whitespace or in Unicode compatibility form (full-width letters, say) are the same
party, here and in the rails.
"""

from __future__ import annotations

import unicodedata
from dataclasses import InitVar, dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from adjudge.digests import is_digest
from adjudge.errors import CriteriaError
from adjudge.kernel.verdicts import require_aware


class EvidenceType(StrEnum):
    """What the evidence is."""

    ARTIFACT = "artifact"
    OBSERVATION = "observation"
    ATTESTATION = "attestation"
    REVIEW = "review"
    IMPORT = "import"


class AdmissionSource(StrEnum):
    """Who admitted it into the bundle."""

    PRODUCER = "producer"
    COLLECTOR = "collector"
    REVIEWER = "reviewer"
    HUMAN = "human"
    IMPORTED = "imported"


class Independence(StrEnum):
    """How independent the evidence is of whoever produced the work."""

    INDEPENDENT = "independent"
    SELF_ATTESTED = "self_attested"
    DERIVED = "derived"
    UNKNOWN = "unknown"


class Mutability(StrEnum):
    """Whether the evidence can change after it is admitted."""

    IMMUTABLE = "immutable"
    VERSIONED = "versioned"
    MUTABLE = "mutable"


class Freshness(StrEnum):
    """How recent the evidence is, as at the time of the check."""

    FRESH = "fresh"
    STALE = "stale"
    EXPIRED = "expired"
    UNKNOWN = "unknown"


class Accessibility(StrEnum):
    """Whether a verifier can read the evidence."""

    ACCESSIBLE = "accessible"
    INACCESSIBLE = "inaccessible"
    REDACTED = "redacted"
    UNKNOWN = "unknown"


def identity(name: object) -> str | None:
    """The party a name stands for, or None when it names nobody (not a string, or blank).

    NFKC, case-folded (then NFKC again, as case folding can leave a string un-normalized),
    surrounding whitespace trimmed: ``"Ann"``, ``" ann\t"`` and ``"Ａｎｎ"`` are one actor.
    """
    if type(name) is not str:
        return None
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return folded.strip() or None


#: Held only by this module: an assessment or evidence built without it was not assessed here.
_ASSESSED: Final = object()


@dataclass(frozen=True, slots=True)
class Party:
    """Who did something, where, and who held the result: the structure independence reads.

    A field left ``None`` is unknown, and an unknown can never be shown distinct.
    """

    actor: str | None
    execution_boundary: str | None
    custodian: str | None


@dataclass(frozen=True, slots=True)
class IndependenceAssessment:
    """The assessed independence and its basis: the three answers and a sentence.

    Only :func:`assess_independence` builds one; any other construction is refused
    (``INDEPENDENCE_NOT_ASSESSED``).
    """

    independence: Independence
    actor_distinct: bool | None
    boundary_distinct: bool | None
    custody_distinct: bool | None
    basis: str
    assessed: InitVar[object] = None

    def __post_init__(self, assessed: object) -> None:
        if assessed is not _ASSESSED:
            raise CriteriaError(
                "Independence is assessed from structure (assess_independence or admit), never "
                "accepted as a label.",
                code="INDEPENDENCE_NOT_ASSESSED",
            )


def _distinct(a: str | None, b: str | None) -> bool | None:
    # An unnamed party is never "distinct": it could be anyone, including the producer.
    left, right = identity(a), identity(b)
    if left is None or right is None:
        return None
    return left != right


def assess_independence(
    producer: Party, source: Party, *, derived_from: tuple[str, ...] = ()
) -> IndependenceAssessment:
    """Assess how independent evidence from ``source`` is of the work's ``producer``.

    - derived from other evidence → DERIVED (it is only as good as what it came from);
    - any of the three answers unknown → UNKNOWN;
    - the same actor, boundary or custodian → SELF_ATTESTED (the producer could have shaped it);
    - all three distinct → INDEPENDENT.
    """
    actor = _distinct(producer.actor, source.actor)
    boundary = _distinct(producer.execution_boundary, source.execution_boundary)
    custody = _distinct(producer.custodian, source.custodian)
    answers = f"actor distinct: {actor}, boundary distinct: {boundary}, custody distinct: {custody}"
    if derived_from:
        verdict, why = Independence.DERIVED, f"derived from {', '.join(derived_from)}"
    elif None in (actor, boundary, custody):
        verdict, why = Independence.UNKNOWN, "a party is unnamed, so distinctness is unproven"
    elif not (actor and boundary and custody):
        verdict, why = Independence.SELF_ATTESTED, "it shares a party with the producer"
    else:
        verdict, why = Independence.INDEPENDENT, "actor, boundary and custody are all distinct"
    return IndependenceAssessment(
        verdict, actor, boundary, custody, f"{why} ({answers})", _ASSESSED
    )


def assess_freshness(
    observed_at: datetime | None, now: datetime, *, fresh_for: timedelta, valid_for: timedelta
) -> Freshness:
    """FRESH within ``fresh_for`` of observation, STALE within ``valid_for``, then EXPIRED.

    Unknown observation time → UNKNOWN; an observation from the future is UNKNOWN too.
    """
    require_aware(now, "now")
    if observed_at is None:
        return Freshness.UNKNOWN
    age = now - require_aware(observed_at, "observed_at")
    if age < timedelta(0):
        return Freshness.UNKNOWN
    if age <= fresh_for:
        return Freshness.FRESH
    return Freshness.STALE if age <= valid_for else Freshness.EXPIRED


@dataclass(frozen=True, slots=True)
class Evidence:
    """One piece of evidence: its digest and its six axes.

    Only :func:`admit` builds one, assessing independence on the way; built any other way
    (``replace()`` included) it is refused (``EVIDENCE_NOT_ADMITTED``), so there is no way to
    pass a label.
    """

    digest: str
    type: EvidenceType
    admission_source: AdmissionSource
    independence: IndependenceAssessment
    mutability: Mutability
    freshness: Freshness
    accessibility: Accessibility
    admitted: InitVar[object] = None

    def __post_init__(self, admitted: object) -> None:
        if admitted is not _ASSESSED:
            raise CriteriaError(
                "Evidence is admitted with admit(), which assesses its independence from "
                "structure; it cannot be built with an assessment of its own.",
                code="EVIDENCE_NOT_ADMITTED",
            )
        if type(self.digest) is not str or not is_digest(self.digest):
            raise CriteriaError(
                f"{self.digest!r} is not a sha256:<64 hex> digest.", code="EVIDENCE_INVALID"
            )


def admit(
    digest: str,
    *,
    type: EvidenceType,
    admission_source: AdmissionSource,
    producer: Party,
    source: Party,
    mutability: Mutability,
    freshness: Freshness,
    accessibility: Accessibility,
    derived_from: tuple[str, ...] = (),
) -> Evidence:
    """Admit evidence, assessing its independence from the structure given.

    Evidence the producer admitted itself is never independent, whatever the parties say.
    """
    assessment = assess_independence(producer, source, derived_from=derived_from)
    if admission_source is AdmissionSource.PRODUCER and (
        assessment.independence is Independence.INDEPENDENT
    ):
        assessment = IndependenceAssessment(
            Independence.SELF_ATTESTED,
            assessment.actor_distinct,
            assessment.boundary_distinct,
            assessment.custody_distinct,
            "admitted by the producer itself; " + assessment.basis,
            _ASSESSED,
        )
    return Evidence(
        digest,
        type,
        admission_source,
        assessment,
        mutability,
        freshness,
        accessibility,
        _ASSESSED,
    )
