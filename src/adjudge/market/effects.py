"""What the caller must apply, in the same transaction as the new task state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from adjudge.kernel import Determination
from adjudge.market.money import Transfer
from adjudge.market.tasks import Ending, Vote


@dataclass(frozen=True)
class VerdictReached:
    """A determination on one submission; the caller records it and signs its receipt.

    ``authority`` says who decided: ``deterministic`` (the auto check), ``human`` (the poster or
    an admin) or ``verifier`` (the agent the poster named and trusted at posting).
    ``determination`` is the kernel's (:mod:`adjudge.market.proof`): ``passed`` is its verdict
    being PASS, and its policy decision is the money the verdict releases. The caller signs it
    as it is; nothing downstream decides again.
    """

    task_id: str
    attempt: int
    passed: bool
    score: int | None
    reasons: tuple[str, ...]
    authority: str
    judge: str
    result_digest: str | None
    at: datetime
    detail: Mapping[str, Any] = field(default_factory=dict)
    verifier_key: str | None = None  # the named verifier's key, for agent review
    determination: Determination | None = field(default=None, compare=False, repr=False)

    def statement(self) -> dict[str, Any]:
        """The determination as plain JSON data (money-free; integers and strings only)."""
        return {
            "type": "adjudge.task.verdict/v1",
            "task_id": self.task_id,
            "attempt": self.attempt,
            "passed": self.passed,
            "score": self.score,
            "reasons": list(self.reasons),
            "authority": self.authority,
            "judge": self.judge,
            "result_digest": self.result_digest,
            "at": self.at.isoformat(),
        }


@dataclass(frozen=True)
class Settlement:
    """Money leaving a task's escrow, and why: the payout and its fee, or the refund.

    The caller moves it only against a receipt it signs in the same transaction: the receipt of
    the verdict or ruling in the same outcome, or one of its own that records the ending (a
    refund of undelivered work, a payout after escalation), so no money leaves an escrow without
    a signed record of the rule that released it.
    """

    task_id: str
    attempt: int
    ending: Ending
    transfers: tuple[Transfer, ...]
    result_digest: str | None
    at: datetime

    def decision(self) -> dict[str, str | int | None]:
        """What the receipt signs about the money (amounts as decimal strings)."""
        decision: dict[str, str | int | None] = {
            "type": "adjudge.task.settlement/v1",
            "task": self.task_id,
            "attempt": self.attempt,
            "ending": self.ending.value,
        }
        for t in self.transfers:
            decision[t.memo or "transfer"] = str(t.amount)
            decision[f"{t.memo or 'transfer'}To"] = t.credit
        return decision


@dataclass(frozen=True)
class Routed:
    """An agent review that decided nothing (ungrounded, or a PASS the task's trust policy does
    not carry): recorded with its determination's receipt, and the submission waits for the
    poster's decision. No money moves."""

    task_id: str
    attempt: int
    judge: str
    reason: str
    result_digest: str | None
    at: datetime
    verifier_key: str | None = None
    determination: Determination | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class VoteCast:
    """A panel verifier's vote on a submission (agent review by a quorum): the caller keeps it
    with the task's votes. The decision it may complete comes as its own effects."""

    task_id: str
    attempt: int
    vote: Vote


@dataclass(frozen=True)
class SealBroken:
    """A reveal that does not open the task's seal: refused, and the task escalated (an admin
    rules). ``revealed`` is the digest of what was sent. No money moves."""

    task_id: str
    attempt: int
    commitment: str
    revealed: str
    reason: str
    at: datetime


@dataclass(frozen=True)
class RevealRequested:
    """The agent asked for the check of a sealed task the poster has not revealed: the poster
    must reveal by ``due``. No money moves."""

    task_id: str
    attempt: int
    due: datetime


@dataclass(frozen=True)
class AgentPenalized:
    """A failed round: the agent's reputation drops by 10 and its dispute count rises by one."""

    agent: str


@dataclass(frozen=True)
class DisputeFiled:
    """A dispute to record: who, about which round, when, and why."""

    task_id: str
    attempt: int
    by: str
    reason: str
    at: datetime


@dataclass(frozen=True)
class TakeHeld:
    """An agent now holds this task undelivered: its count of held takes rises by one, and the
    caller refuses the event (``TAKE_LIMIT_REACHED``) when it already holds ``limit``."""

    agent: str
    task_id: str
    limit: int


@dataclass(frozen=True)
class TakeEnded:
    """An agent's take of this task stopped counting (a submission, a release, a lapse, the
    deadline, a reclaim): its count of held takes falls by one."""

    agent: str
    task_id: str


@dataclass(frozen=True)
class TakeLapsed:
    """A take's window ended with nothing submitted and the task is open again: a record for
    the task's history (who held it, since when, and when the window ended). No money moves."""

    task_id: str
    agent: str
    taken_at: datetime
    at: datetime


Effect = (
    Transfer
    | VerdictReached
    | Settlement
    | Routed
    | VoteCast
    | SealBroken
    | RevealRequested
    | AgentPenalized
    | DisputeFiled
    | TakeHeld
    | TakeEnded
    | TakeLapsed
)
