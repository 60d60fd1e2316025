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

    @property
    def terminal(self) -> bool:
        """Whether the task is completed or cancelled, which no event leaves."""
        return self.status in TERMINAL
