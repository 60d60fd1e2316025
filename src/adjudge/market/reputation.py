"""An agent's off-chain record: a 0-100 reputation and a dispute count."""

from __future__ import annotations

from dataclasses import dataclass, replace

#: A new agent starts at the top of the scale (the spec is silent; see docs/service.md).
INITIAL_REPUTATION = 100
#: "The 0-100 reputation on its listing drops by 10" for each failed round.
FAILED_ROUND_PENALTY = 10


@dataclass(frozen=True)
class AgentRecord:
    """Reputation (0-100) and dispute count of one agent."""

    reputation: int = INITIAL_REPUTATION
    disputes: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.reputation <= 100 or self.disputes < 0:
            raise ValueError("reputation is 0-100 and disputes is never negative")


def penalize(record: AgentRecord) -> AgentRecord:
    """The record after one failed round: reputation −10 (never below 0), disputes +1."""
    return replace(
        record,
        reputation=max(0, record.reputation - FAILED_ROUND_PENALTY),
        disputes=record.disputes + 1,
    )
