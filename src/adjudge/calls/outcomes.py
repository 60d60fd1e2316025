"""Check outcomes and the check rows a call's record lists.

A row is one check that was considered for the call: its name, what kind of authority decided it
(``deterministic`` for the schema and the rules, ``semantic`` for the meaning check), its outcome,
and why. Only ``PASS`` and ``FAIL`` are votes; every other outcome says why there is no vote, so a
check that did not run is never shown as passed.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

__all__ = ["DETERMINISTIC", "IMPORTED", "SEMANTIC", "CheckRow", "Outcome"]

DETERMINISTIC = "deterministic"  # a machine re-ran something: the schema, the rules
SEMANTIC = "semantic"  # a model judged: the meaning check
IMPORTED = "imported"  # relayed from elsewhere: an independent source's corroboration


class Outcome(enum.StrEnum):
    """What one check concluded."""

    PASS = "pass"  # a vote: the check judged the data and it met the rule
    FAIL = "fail"  # a vote: the check judged the data and it broke the rule
    NOT_APPLICABLE = "not_applicable"  # its condition excluded it, or there was nothing to judge
    MISAPPLIED = "misapplied"  # pointed at data it cannot judge: the policy is wrong
    NOT_RUN = "not_run"  # an earlier stage made it moot (the response had the wrong shape)
    SKIPPED = "skipped"  # a sampled check whose sample did not select this call
    UNAVAILABLE = "unavailable"  # needed and selected, but no usable judgment arrived
    PENDING = "pending"  # selected, and judged after the answer: no judgment yet
    NO_CONFLICT = "no_conflict"  # a model found no conflict: a model cannot vote PASS
    UNCITED = "uncited"  # a model claimed a conflict without citing evidence: no vote

    @property
    def is_vote(self) -> bool:
        """True for PASS and FAIL, the only outcomes a policy counts."""
        return self in (Outcome.PASS, Outcome.FAIL)


class CheckRow(NamedTuple):
    """One check considered for a call, as the record lists it (immutable).

    A named tuple rather than a frozen dataclass: a call builds a dozen of these, and a frozen
    dataclass costs several times more to construct.
    """

    name: str
    stage: str  # "schema", "empty_result", "quality_rules", "rule", "meaning"
    authority: str
    outcome: Outcome
    reason: str = ""
    path: str = ""
    weight: int | None = None
    declared: bool = True  # False: recorded for the reader, but the policy does not count it
    cited: tuple[str, ...] = ()  # sha256 quote hashes a cited conflict relied on (meaning only)

    def to_dict(self) -> dict[str, Any]:
        """The row's wire shape (keys always present, so readers never guess)."""
        return {
            "name": self.name,
            "stage": self.stage,
            "authority": self.authority,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "path": self.path,
            "weight": self.weight,
            "declared": self.declared,
            "cited": list(self.cited),
        }
