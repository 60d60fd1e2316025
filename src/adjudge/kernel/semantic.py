"""Grounding and routing of model judgments (spec 002, *When model output counts as evidence*).

"It counts. It just cannot be the thing that says yes." A model's judgment can move a verdict
down (a cited conflict is FAIL) or route it to a person; it can never move one up. The routing
table has six outcomes; every one resolves to UNKNOWN except a cited conflict, which is FAIL.
So an attacker who fully controls the model's output can, at worst, cause a human review.

A judgment is considered only when grounded: bound to a frozen evaluation case, with every
citation resolving to an admitted artifact whose bytes contain the quote and whose ``sha256:``
quote hash matches the quoted bytes. A judgment with no typed predicate is not refused: it
resolves NOT_RUN, which aggregates to UNKNOWN.

Two roads lead here:

- :func:`route` — any model's judgment (a meaning check, an unnamed reviewer). It can move a
  verdict down or route it to a person, never up.
- :func:`ground_review` — seed 000's agent review: the one verifier a poster named for a task.
  Its grounded PASS is a PASS that counts only because the task's trust policy names its key
  (and the receipt says so); ungrounded, it is UNKNOWN and the submission goes to the poster.
  The case it is bound to is frozen by construction: the verifying side's own records
  (:class:`adjudge.kernel.oracle.Record`) of the brief and of the result, named by digest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

from adjudge.digests import is_digest, sha256_digest
from adjudge.errors import CriteriaError
from adjudge.kernel.authority import Authority
from adjudge.kernel.oracle import Record
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

    def __post_init__(self) -> None:
        if not all(type(v) is str for v in (self.artifact_id, self.quote, self.quote_hash)):
            raise CriteriaError(
                "A citation's artifact, quote and quote hash are strings.",
                code="JUDGMENT_INVALID",
            )


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
    if not is_digest(citation.quote_hash):
        return f"the quote hash of {citation.artifact_id} is not a sha256: hash"
    if sha256_digest(quoted) != citation.quote_hash:
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
        evidence=tuple(c.quote_hash for c in judgment.citations if is_digest(c.quote_hash)),
        reason=f"{outcome}: {routed.reason}",
    )


# -- Agent review: the named verifier's verdict, grounded in the brief and the result ---------

#: The two artifacts an agent review may quote.
BRIEF: Final = "brief"
RESULT: Final = "result"
#: The most quotes one review may carry; more is a refusal, not a longer search.
MAX_QUOTES: Final = 64
AGENT_REVIEW: Final = "agent-review"
_FINGERPRINT: Final = re.compile(r"[0-9a-f]{64}")


def _invalid(why: str) -> CriteriaError:
    return CriteriaError(f"Unusable review: {why}.", code="REVIEW_INVALID")


@dataclass(frozen=True, slots=True)
class Quote:
    """One citation of an agent review: a span of the ``brief`` or of the ``result``.

    ``start`` and ``end`` are offsets in Unicode code points (not UTF-16 units, not bytes) into
    the artifact's text, its stored bytes decoded as UTF-8; the span is ``[start, end)``.
    ``text`` is the quoted text and ``quote_hash`` the ``sha256:`` of its UTF-8 bytes — which,
    for a quote that resolves, are exactly the artifact's bytes at those offsets. Only the types
    are checked here (``REVIEW_INVALID``); whether the quote resolves is grounding's question.
    """

    artifact: str
    start: int
    end: int
    text: str
    quote_hash: str

    def __post_init__(self) -> None:
        if type(self.artifact) is not str or type(self.text) is not str:
            raise _invalid("a quote's artifact and text are strings")
        if type(self.start) is not int or type(self.end) is not int:
            raise _invalid("a quote's start and end are whole numbers (code-point offsets)")
        if type(self.quote_hash) is not str:
            raise _invalid("a quote's hash is a string, sha256:<64 lowercase hex>")

    @classmethod
    def of(cls, artifact: str, text: str, start: int, end: int) -> Quote:
        """The quote of ``text[start:end]`` (``text`` being the artifact's whole text), with its
        hash: how a verifier builds a quote that grounds."""
        quoted = text[start:end]
        return cls(artifact, start, end, quoted, sha256_digest(quoted))

    def to_dict(self) -> dict[str, Any]:
        """The wire shape: ``{"artifact", "start", "end", "text", "quoteHash"}``."""
        return {
            "artifact": self.artifact,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "quoteHash": self.quote_hash,
        }

    @classmethod
    def from_dict(cls, data: object) -> Quote:
        """Parse the wire shape; a missing field or a wrong type is ``REVIEW_INVALID``."""
        if not isinstance(data, Mapping):
            raise _invalid("a quote is an object")
        try:
            return cls(
                data["artifact"], data["start"], data["end"], data["text"], data["quoteHash"]
            )
        except KeyError as exc:
            raise _invalid(f"a quote has no {exc.args[0]!r}") from None


@dataclass(frozen=True, slots=True)
class Review:
    """A named verifier's verdict on one submission, as received: untrusted in every field.

    ``brief_digest`` and ``result_digest`` name the case the verifier judged (the brief as
    posted, the submission's result); ``quotes`` are what it relied on; ``reasons`` are recorded
    as it gave them. Built, it has the right types (else ``REVIEW_INVALID``): a verifier key of
    64 lowercase hex, a boolean verdict, at most :data:`MAX_QUOTES` quotes. Whether it grounds
    is :func:`ground_review`'s question.
    """

    verifier_key: str
    passed: bool
    brief_digest: str
    result_digest: str
    quotes: tuple[Quote, ...]
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if type(self.verifier_key) is not str or not _FINGERPRINT.fullmatch(self.verifier_key):
            raise _invalid("the verifier key is a fingerprint (64 lowercase hex characters)")
        if type(self.passed) is not bool:
            raise _invalid("passed is true or false")
        if type(self.brief_digest) is not str or type(self.result_digest) is not str:
            raise _invalid("the brief and result digests are strings")
        if not isinstance(self.quotes, tuple) or not all(isinstance(q, Quote) for q in self.quotes):
            raise _invalid("quotes are a tuple of Quote")
        if len(self.quotes) > MAX_QUOTES:
            raise _invalid(f"a review carries at most {MAX_QUOTES} quotes")
        if not isinstance(self.reasons, tuple) or not all(type(r) is str for r in self.reasons):
            raise _invalid("reasons are a tuple of strings")

    @classmethod
    def from_dict(cls, data: object) -> Review:
        """Parse ``{"verifierKey", "passed", "briefDigest", "resultDigest", "quotes",
        "reasons"?}``; anything unusable is ``REVIEW_INVALID``."""
        if not isinstance(data, Mapping):
            raise _invalid("a review is an object")
        quotes, reasons = data.get("quotes"), data.get("reasons", [])
        if not isinstance(quotes, Sequence) or isinstance(quotes, str):
            raise _invalid("quotes is a list")
        if not isinstance(reasons, Sequence) or isinstance(reasons, str):
            raise _invalid("reasons is a list of strings")
        if len(quotes) > MAX_QUOTES:
            raise _invalid(f"a review carries at most {MAX_QUOTES} quotes")
        return cls(
            verifier_key=data.get("verifierKey"),  # type: ignore[arg-type]  # checked when built
            passed=data.get("passed"),  # type: ignore[arg-type]
            brief_digest=data.get("briefDigest"),  # type: ignore[arg-type]
            result_digest=data.get("resultDigest"),  # type: ignore[arg-type]
            quotes=tuple(Quote.from_dict(q) for q in quotes),
            reasons=tuple(reasons),
        )


@dataclass(frozen=True, slots=True)
class Grounding:
    """What :func:`ground_review` decided: grounded or not, why, and the check to fold.

    ``route_to_poster`` is True exactly when the review is not grounded: the service sends the
    submission to the poster for a manual decision instead of paying on it.
    """

    grounded: bool
    reason: str
    check: Check

    @property
    def route_to_poster(self) -> bool:
        """An ungrounded review decides nothing; a person must."""
        return not self.grounded


def quote_problem(number: int, quote: Quote, texts: Mapping[str, str | None]) -> str | None:
    """Why quote ``number`` (from 1) does not resolve in ``texts`` (artifact -> its text, None
    when its bytes are not UTF-8), or None when it does."""
    where = f"quote {number}"
    if quote.artifact not in texts:
        return f"{where} cites {quote.artifact!r}, which is neither the brief nor the result"
    text = texts[quote.artifact]
    if text is None:
        return f"{where} cites the {quote.artifact}, whose stored bytes are not UTF-8 text"
    if not is_digest(quote.quote_hash):
        return f"{where}'s hash is not of the form sha256:<64 lowercase hex>"
    if not 0 <= quote.start < quote.end <= len(text):
        return (
            f"{where}'s span [{quote.start}, {quote.end}) is empty or outside the "
            f"{quote.artifact} ({len(text)} code points)"
        )
    held = text[quote.start : quote.end]
    if held != quote.text:
        return (
            f"{where}'s text is not what the {quote.artifact} holds at [{quote.start}, {quote.end})"
        )
    if sha256_digest(held) != quote.quote_hash:
        return (
            f"{where}'s hash is not the sha256 of the {quote.artifact}'s bytes at "
            f"[{quote.start}, {quote.end})"
        )
    return None


def _text(record: Record) -> str | None:
    try:
        return record.content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def ground_review(
    review: Review, *, brief: Record, result: Record, name: str = AGENT_REVIEW
) -> Grounding:
    """Ground the named verifier's ``review`` in the verifying side's own records of the
    ``brief`` and the ``result``, and make the check a determination folds.

    The steps: (1) bound to the frozen case — the review names exactly the records' digests;
    (2) cited — it quotes at least once from the brief and once from the result
    (``unknown_uncited`` otherwise); (3) every quote resolves — its artifact is the brief or the
    result, its span lies inside the artifact's text, its text is what the artifact holds there,
    and its hash is the ``sha256:`` of those bytes. All three: the check is PASS (``passed``) or
    FAIL (a cited conflict), authority ``semantic``, carrying the verifier key — so a PASS counts
    only where the trust policy names that key. Any failing: the check is UNKNOWN, with the first
    problem as its reason, and ``route_to_poster`` is set. Never raises for a review's content;
    refuses records that are not :class:`Record` (``ORACLE_RECORD_REQUIRED``).
    """
    if not isinstance(review, Review):
        raise _invalid("ground_review reads a Review")
    if not isinstance(brief, Record) or not isinstance(result, Record):
        raise CriteriaError(
            "A review is grounded in the verifying side's own records of the brief and the "
            "result (oracle.Record), not in anything the verifier sent.",
            code="ORACLE_RECORD_REQUIRED",
        )
    problem = _review_problem(review, brief, result)
    hashes = [q.quote_hash for q in review.quotes if is_digest(q.quote_hash)]
    evidence = tuple(dict.fromkeys([result.digest, brief.digest, *hashes]))
    who = f"verifier key {review.verifier_key}"
    if problem is not None:
        reason = f"ungrounded review by {who}, for the poster to decide: {problem}"
        verdict = Verdict.UNKNOWN
    else:
        counts = {a: sum(q.artifact == a for q in review.quotes) for a in (BRIEF, RESULT)}
        outcome = "passed" if review.passed else "failed (a cited conflict)"
        reason = (
            f"grounded review by {who}: {outcome}, quoting the brief {counts[BRIEF]} and the "
            f"result {counts[RESULT]} time(s)"
        )
        if review.reasons:
            reason += ": " + "; ".join(review.reasons)
        verdict = Verdict.PASS if review.passed else Verdict.FAIL
    check = Check(
        name=name,
        verdict=verdict,
        authority=Authority.SEMANTIC,
        evidence=evidence,
        reason=reason,
        verifier_key=review.verifier_key,
    )
    return Grounding(problem is None, reason, check)


def _review_problem(review: Review, brief: Record, result: Record) -> str | None:
    if review.result_digest != result.digest:  # (1)
        return f"it names result {review.result_digest!r}, but the stored result is {result.digest}"
    if review.brief_digest != brief.digest:
        return f"it names brief {review.brief_digest!r}, but the stored brief is {brief.digest}"
    cited = {q.artifact for q in review.quotes}  # (2)
    if not review.quotes:
        return "unknown_uncited: it quotes nothing; a verifier cites the brief and the result"
    for artifact in (BRIEF, RESULT):
        if artifact not in cited:
            return f"it quotes nothing from the {artifact}; a verifier cites both"
    texts = {BRIEF: _text(brief), RESULT: _text(result)}
    for number, quote in enumerate(review.quotes, start=1):  # (3)
        problem = quote_problem(number, quote, texts)
        if problem is not None:
            return problem
    return None
