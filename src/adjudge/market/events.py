"""What can happen to a task. Each event names the account that acts (``actor``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Accept:
    """An agent takes a funded task."""

    actor: str


@dataclass(frozen=True)
class Release:
    """The poster takes back a task an agent accepted but never delivered, after the grace."""

    actor: str


@dataclass(frozen=True)
class Lapse:
    """A take's time is up with nothing submitted: its window ended (the task opens again) or
    its deadline came (the take stops counting toward the agent's limit). The service applies
    it; :func:`~adjudge.market.step` also applies a due lapse before any other event."""

    actor: str = "service"


@dataclass(frozen=True)
class Submit:
    """The agent holding the task delivers a result (one attempt)."""

    actor: str
    result: str


@dataclass(frozen=True)
class Finalize:
    """The agent asks for the auto check of its latest submission (auto mode only).

    ``result`` is the stored copy of that submission; its digest must match the one recorded at
    submission, which is the integrity proof a pass needs.
    """

    actor: str
    result: str


@dataclass(frozen=True)
class Review:
    """The poster approves or rejects a submitted result (manual mode), with up to 20 reasons.

    ``stored_result`` is the server's stored copy of the submission judged: the oracle checks it
    against the digest recorded at submission (:mod:`adjudge.market.proof`).
    """

    actor: str
    passed: bool
    reasons: tuple[str, ...] = ()
    stored_result: str = field(default="", kw_only=True, repr=False)


@dataclass(frozen=True)
class VerifierVerdict:
    """The named verifier's judgment (agent mode), with up to 10 reasons.

    ``grounding`` is the kernel's :class:`~adjudge.kernel.semantic.Grounding` of the verifier's
    review against the verifying side's records (the brief and the result); ``signed`` is the
    verifier's verified signature of the verdict (:func:`adjudge.market.signed_verdicts.
    check_signature`'s record); ``stored_result`` is the server's stored copy of the submission
    judged. The market's proof folds them: a grounded verdict under the task's trust policy
    decides, anything else sends the submission to the poster.
    """

    actor: str
    passed: bool
    reasons: tuple[str, ...] = ()
    grounding: Any = None
    signed: Mapping[str, Any] | None = field(default=None, kw_only=True)
    stored_result: str = field(default="", kw_only=True, repr=False)


@dataclass(frozen=True)
class Dispute:
    """The poster or the agent asks an admin to rule."""

    actor: str
    reason: str = ""


@dataclass(frozen=True)
class Reclaim:
    """The poster asks for the reward back after the deadline."""

    actor: str


@dataclass(frozen=True)
class Collect:
    """The agent collects an escalated reward 14 days after escalation."""

    actor: str


@dataclass(frozen=True)
class Cancel:
    """The poster withdraws a task nobody has accepted."""

    actor: str


@dataclass(frozen=True)
class Rule:
    """An admin rules on a disputed or escalated task: pay the agent or refund the poster."""

    actor: str
    pay_agent: bool
    note: str = ""
    #: The server's stored copy of the latest submission (the ruling's integrity check).
    stored_result: str = field(default="", kw_only=True, repr=False)


Event = (
    Accept
    | Release
    | Lapse
    | Submit
    | Finalize
    | Review
    | VerifierVerdict
    | Dispute
    | Reclaim
    | Collect
    | Cancel
    | Rule
)
