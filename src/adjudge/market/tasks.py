"""A task as the market sees it: who, how it is judged, its escrow state and its history."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from adjudge.digests import sha256_digest


class Mode(enum.StrEnum):
    """Who decides whether a result passes; chosen at posting and never changed."""

    AUTO = "auto"  # the auto check, run only when the agent finalizes
    AGENT = "agent"  # the verifier agent the poster named
    MANUAL = "manual"  # the poster approves or rejects


class Status(enum.StrEnum):
    """The escrow states of the reference escrow plus the service's own two."""

    FUNDED = "funded"  # posted and funded; open for an agent to accept
    ASSIGNED = "assigned"  # an agent holds it and has not delivered (again) yet
    SUBMITTED = "submitted"  # delivered; auto waits for finalize, manual for the poster
    AWAITING_VERIFICATION = "awaiting_verification"  # delivered; agent mode waits for the verifier
    FAILED = "failed"  # judged and failed (the reference's status 3)
    COMPLETED = "completed"  # paid out to the agent and the platform
    CANCELLED = "cancelled"  # the reward went back to the poster
    DISPUTED = "disputed"  # waiting for an admin ruling
    ESCALATED = "escalated"  # delivered, never judged, reclaimed after the deadline


#: States no event leaves.
TERMINAL = frozenset({Status.COMPLETED, Status.CANCELLED})
#: States in which delivered work waits for a judgment.
DELIVERED = frozenset({Status.SUBMITTED, Status.AWAITING_VERIFICATION})


class Ending(enum.StrEnum):
    """How a terminal task ended: three ways to pay, five ways to refund."""

    PAID_ON_PASS = "paid_on_pass"
    PAID_BY_RULING = "paid_by_ruling"
    PAID_AFTER_ESCALATION = "paid_after_escalation"
    REFUNDED_ON_CANCEL = "refunded_on_cancel"
    REFUNDED_UNDELIVERED = "refunded_undelivered"
    REFUNDED_AFTER_FAIL = "refunded_after_fail"
    REFUNDED_BY_RULING = "refunded_by_ruling"
    REFUNDED_UNACCEPTED = "refunded_unaccepted"


def digest_of(result: str) -> str:
    """The integrity digest of a result: ``sha256:`` and the hex of its UTF-8 bytes."""
    return sha256_digest(result)


#: The most verifiers a task may name (as the meaning check's judges of a paid call).
MAX_VERIFIERS = 9


@dataclass(frozen=True)
class Seat:
    """One verifier of a task's panel: its account and its key's fingerprint, fixed at posting.

    ``opted_in`` is the caller's reading of the verifier directory when the draft is posted
    (the market reads no directory); a posted task's seats were all opted in.
    """

    verifier: str
    key: str | None
    opted_in: bool = True


@dataclass(frozen=True)
class Vote:
    """One panel verifier's signed vote on the task's latest submission.

    ``check`` is its kernel check as built when the vote arrived (:func:`adjudge.market.proof.
    verifier`), in its wire form, so a later vote can fold it with the others without
    re-grounding it; ``verdict`` is that check's kernel verdict (PASS, FAIL or UNKNOWN).
    """

    verifier: str
    key: str
    passed: bool
    verdict: str
    check: Mapping[str, Any]
    at: datetime
    #: The verified signature of the vote (:func:`adjudge.market.signed_verdicts.check_signature`'s
    #: record: payload, signature, public key, digest), which a replay re-verifies.
    signed: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Draft:
    """What a poster sends to post a task, already parsed from the wire.

    ``verifier_opted_in`` and ``verifier_key`` (the fingerprint of the verifier's public key,
    which the task's trust policy will name) are looked up by the caller (the market reads no
    directory).
    """

    poster: str
    reward: int
    deadline: datetime
    mode: str = Mode.MANUAL.value
    criteria: Mapping[str, Any] = field(default_factory=dict)
    verifier: str | None = None
    verifier_opted_in: bool = False
    verifier_key: str | None = None
    private: bool = False
    take_window_hours: int | None = None  # None: a take never lapses (it ends at the deadline)
    seal: str | None = None  # a commitment to sealed criteria (adjudge.market.seal), auto only
    #: A panel of verifiers (agent mode, two or more) instead of ``verifier``, and how many of
    #: them must agree; None: a majority of the panel (one verifier: 1).
    panel: tuple[Seat, ...] = ()
    quorum: int | None = None
    #: A secret the caller draws (the market draws nothing) for criteria that hold an
    #: ``expected_answer``: the receipts' criteria digest is salted with it (``criteria_salt``).
    criteria_salt: str | None = None


@dataclass(frozen=True)
class Task:
    """One task's whole market state; build new ones with :func:`dataclasses.replace`."""

    id: str
    poster: str
    mode: Mode
    reward: int
    posted_at: datetime
    deadline: datetime
    criteria: Mapping[str, Any] = field(default_factory=dict)
    verifier: str | None = None
    verifier_key: str | None = None  # the named verifier's key fingerprint, fixed at posting
    private: bool = False
    status: Status = Status.FUNDED
    agent: str | None = None
    accepted_at: datetime | None = None  # when the agent holding it took it
    released: tuple[str, ...] = ()  # agents the poster released, who cannot take it again
    take_window_hours: int | None = None  # how long a take may go without a submission
    #: When the current take stops counting toward its agent's limit (the end of its window, or
    #: the deadline); None once it has ended or when nobody holds the task undelivered.
    take_ends_at: datetime | None = None
    lapsed: tuple[str, ...] = ()  # agents whose take lapsed, who cannot take it again
    attempts: int = 0
    result_digest: str | None = None  # of the latest submission
    submitted_at: datetime | None = None
    failed_at: datetime | None = None  # of the latest failed verdict
    escalated_at: datetime | None = None
    disputed_by: str | None = None
    routed: bool = False  # an ungrounded agent review sent this submission to the poster
    ending: Ending | None = None
    closed_at: datetime | None = None
    #: The commitment to sealed criteria made at posting (:mod:`adjudge.market.seal`); fixed.
    seal: str | None = None
    #: The reveal that opened the seal, as JSON data (``criteria`` and ``salt``); None until then.
    reveal: Mapping[str, Any] | None = None
    #: The secret the receipts' criteria digest is salted with when the public criteria hold an
    #: ``expected_answer`` (a sealed one is salted with its reveal's salt): unsalted, the digest
    #: of criteria holding a short answer would let whoever reads a receipt hash guesses until
    #: one matched. Fixed at posting; shown to the poster and admins only. None: not hidden, or
    #: a task posted before digests were salted.
    criteria_salt: str | None = None
    #: When the poster must have revealed by: set when the agent asks for the check of a sealed
    #: task not yet revealed; past it, the task escalates.
    reveal_due_at: datetime | None = None
    #: Why a reveal was refused and the task escalated (a broken seal), for the admin who rules.
    seal_broken: str | None = None
    #: A panel of verifiers (agent mode with two or more; ``verifier`` is then None), each
    #: voting on every submission, and how many of them must agree (k of n). Fixed at posting.
    panel: tuple[Seat, ...] = ()
    quorum: int = 1
    #: The panel's votes on the latest submission (at most one per verifier; reset by a new
    #: submission).
    votes: tuple[Vote, ...] = ()

    @property
    def verifiers(self) -> tuple[str, ...]:
        """Every verifier the task names: its panel, or its one verifier, or none."""
        if self.panel:
            return tuple(seat.verifier for seat in self.panel)
        return (self.verifier,) if self.verifier else ()

    @property
    def terminal(self) -> bool:
        """Whether the task is completed or cancelled, which no event leaves."""
        return self.status in TERMINAL
