"""Grounding and routing of model judgments (spec 002, *When model output counts as evidence*).

"It counts. It just cannot be the thing that says yes." A model's judgment can move a verdict
down (a cited conflict is FAIL) or route it to a person; it can never move one up. The routing
table has six outcomes; every one resolves to UNKNOWN except a cited conflict, which is FAIL.
So an attacker who fully controls the model's output can, at worst, cause a human review.

A judgment is considered only when grounded: bound to a frozen evaluation case, with every
citation resolving to an admitted artifact whose bytes contain the quote and whose ``sha256:``
quote hash matches the quoted bytes. A judgment with no typed predicate is not refused: it
resolves NOT_RUN, which aggregates to UNKNOWN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal

from adjudge.kernel.authority import Authority
from adjudge.kernel.observables import SHA256_DIGEST, content_digest
from adjudge.kernel.verdicts import Check, Verdict


class Stance(StrEnum):
    """What the model said about the claim."""

    SUPPORTS = "supports"
    CONFLICTS = "conflicts"
    INSUFFICIENT = "insufficient"
    ESCALATE = "escalate"


class Outcome(StrEnum):
    """The six routing outcomes."""

    CONSISTENT = "consistent"
    CITED_CONFLICT = "cited_conflict"
    INSUFFICIENT = "insufficient"
    UNKNOWN_UNCITED = "unknown_uncited"
    UNGROUNDED = "ungrounded"
    ROUTE_TO_HUMAN = "route_to_human"


SemanticVerdict = Literal[Verdict.UNKNOWN, Verdict.FAIL]

#: The routing table. Its value type has no PASS in it: a model cannot say yes.
ROUTING: Final[Mapping[Outcome, SemanticVerdict]] = {
    # Grounded support: still not a yes; the strongest a model's agreement reaches is UNKNOWN.
    Outcome.CONSISTENT: Verdict.UNKNOWN,
    # A grounded, cited conflict: the one way a model moves a verdict, and only down.
    Outcome.CITED_CONFLICT: Verdict.FAIL,
    # Grounded, but the cited evidence does not settle it.
    Outcome.INSUFFICIENT: Verdict.UNKNOWN,
    # No citation at all: "must cite the evidence it relied on or return unknown_uncited".
    Outcome.UNKNOWN_UNCITED: Verdict.UNKNOWN,
    # Not bound to the frozen case, or a citation that does not resolve or does not match.
    Outcome.UNGROUNDED: Verdict.UNKNOWN,
    # The model asks for a person; the check waits on a human review.
    Outcome.ROUTE_TO_HUMAN: Verdict.UNKNOWN,
}


@dataclass(frozen=True, slots=True)
class EvaluationCase:
    """The case a judgment is bound to; only a frozen case can ground one."""

    case_id: str
    digest: str
    frozen: bool


@dataclass(frozen=True, slots=True)
class Citation:
    """A quote from an admitted artifact, with the ``sha256:`` hash of the quoted bytes."""

    artifact_id: str
    quote: str
    quote_hash: str


@dataclass(frozen=True, slots=True)
class Judgment:
    """A model's judgment as received: untrusted in every field."""

    case_id: str
    case_digest: str
    stance: Stance
    citations: tuple[Citation, ...]
    predicate: str | None
    rationale: str = ""


@dataclass(frozen=True, slots=True)
class Routed:
    """Where a judgment went: the outcome (None when NOT_RUN), its verdict, and why."""

    outcome: Outcome | None
    verdict: Literal[Verdict.UNKNOWN, Verdict.FAIL, Verdict.NOT_RUN]
    route_to_human: bool
    reason: str


def citation_problem(citation: Citation, admitted: Mapping[str, bytes]) -> str | None:
    """Why ``citation`` does not ground, or None when it resolves and matches."""
    content = admitted.get(citation.artifact_id)
    if content is None:
        return f"{citation.artifact_id} is not an admitted artifact"
    quoted = citation.quote.encode("utf-8")
    if not citation.quote_hash.startswith("sha256:"):
        return f"the quote hash of {citation.artifact_id} is not a sha256: hash"
    if content_digest(quoted) != citation.quote_hash:
        return f"the quote hash of {citation.artifact_id} does not match the quoted bytes"
    if not quoted or quoted not in content:
        return f"the quote does not occur in {citation.artifact_id}"
    return None


def route(judgment: Judgment, case: EvaluationCase, admitted: Mapping[str, bytes]) -> Routed:
    """Ground ``judgment`` against ``case`` and the admitted artifacts, then route it.

    The steps: (1) no typed predicate → NOT_RUN; (2) not bound to this frozen case →
    UNGROUNDED; (3) no citation → UNKNOWN_UNCITED; (4) a citation that does not resolve →
    UNGROUNDED; (5) the stance picks the outcome from the routing table.
    """
    if judgment.predicate is None or not judgment.predicate.strip():  # (1)
        return Routed(None, Verdict.NOT_RUN, False, "the judgment has no typed predicate")
    if not case.frozen or (judgment.case_id, judgment.case_digest) != (  # (2)
        case.case_id,
        case.digest,
    ):
        return _routed(Outcome.UNGROUNDED, "the judgment is not bound to the frozen case")
    if not judgment.citations:  # (3)
        return _routed(Outcome.UNKNOWN_UNCITED, "the judgment cites no evidence")
    for citation in judgment.citations:  # (4)
        problem = citation_problem(citation, admitted)
        if problem is not None:
            return _routed(Outcome.UNGROUNDED, problem)
    outcome = {  # (5)
        Stance.SUPPORTS: Outcome.CONSISTENT,
        Stance.CONFLICTS: Outcome.CITED_CONFLICT,
        Stance.INSUFFICIENT: Outcome.INSUFFICIENT,
        Stance.ESCALATE: Outcome.ROUTE_TO_HUMAN,
    }[judgment.stance]
    return _routed(outcome, f"grounded judgment: {judgment.stance.value}")


def _routed(outcome: Outcome, reason: str) -> Routed:
    return Routed(outcome, ROUTING[outcome], outcome is Outcome.ROUTE_TO_HUMAN, reason)


def semantic_check(name: str, judgment: Judgment, routed: Routed) -> Check:
    """The kernel check of a routed judgment: authority ``semantic``, never PASS.

    NOT_RUN aggregates to UNKNOWN here, as the spec says; the evidence is the cited quote hashes.
    """
    verdict = Verdict.UNKNOWN if routed.verdict is Verdict.NOT_RUN else routed.verdict
    outcome = routed.outcome.value if routed.outcome is not None else "not_run"
    return Check(
        name=name,
        verdict=verdict,
        authority=Authority.SEMANTIC,
        # Only well-formed hashes are recorded; a malformed one already made it ungrounded.
        evidence=tuple(
            c.quote_hash for c in judgment.citations if SHA256_DIGEST.fullmatch(c.quote_hash)
        ),
        reason=f"{outcome}: {routed.reason}",
    )
