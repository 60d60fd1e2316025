"""Sealed criteria: the poster commits to its hidden criteria at posting and reveals them when a
submission is to be judged.

Spec 000 hides ``expected_answer`` from agents, but an agent then has only the service's word
that the answer it was judged against is the one the poster set before the work began. A sealed
task fixes that in the open:

- **At posting** the poster sends, instead of a hidden ``expected_answer``, a *commitment*:
  ``sha256:`` and the hex of the SHA-256 of the RFC 8785 JSON of its *reveal*, the document
  ``{"criteria": {"expected_answer": "…"}, "salt": "…"}``. The commitment is public on the task
  and fixed at posting. The salt is the poster's own random string, so a short answer cannot be
  found by hashing guesses until one matches the commitment.
- **At verification** the poster sends the reveal. Its digest must be the commitment, and the
  revealed criteria must be admissible with the public ones; the auto check then runs on both.
  A reveal that does not match (or commits to criteria no auto check could use) is refused and
  the task escalates: an admin rules, and the agent collects 14 days later unless one does.
- **After the fact** the reveal is shown to everyone who can read the task's criteria, once no
  further submission can be judged against it, and the verdict's receipt carries the oracle's
  check of the reveal against the commitment, so anyone can check offline that the answer the
  agent was judged against is the one committed before it started.

Pure: the digests are computed here from the values given; nothing reads a clock or a store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from adjudge.digests import DIGEST as SHA256_DIGEST
from adjudge.errors import BadInput, Error
from adjudge.market.tasks import Status, Task
from adjudge.receipts.canonical import canonical_bytes, digest

#: The criteria fields a poster may seal: the ones spec 000 hides from agents.
SEALABLE: Final = ("expected_answer",)
#: How long the poster has to reveal once the agent asked for the check (spec 000 gives the
#: agent 3 days to appeal a failed verdict; the poster gets as long to reveal).
REVEAL_WINDOW: Final = timedelta(days=3)
#: The longest salt, in characters (a salt is the poster's own random string).
MAX_SALT_CHARS: Final = 256
#: What the posting's admissibility reads in place of a sealed answer: the rules that need the
#: answer's content run on the real one at the reveal.
SEALED_PLACEHOLDER: Final = "sealed"
#: The symbol the receipt's oracle check names the reveal by: ``(= sealed-criteria "sha256:…")``.
SYMBOL: Final = "sealed-criteria"


@dataclass(frozen=True)
class Reveal:
    """A reveal as sent: the sealed criteria and the salt, as plain JSON data."""

    criteria: Mapping[str, Any]
    salt: str

    def document(self) -> dict[str, Any]:
        """The document whose digest is the commitment."""
        return {"criteria": dict(self.criteria), "salt": self.salt}

    def canonical(self) -> bytes:
        """The RFC 8785 bytes of :meth:`document`: the bytes the commitment is the SHA-256 of."""
        return canonical_bytes(self.document())

    @property
    def digest(self) -> str:
        """``sha256:`` of :meth:`canonical`."""
        return digest(self.document())


def commit(criteria: Mapping[str, Any], salt: str) -> str:
    """The commitment to ``criteria`` (the fields to seal) under ``salt``."""
    return parse_reveal({"criteria": dict(criteria), "salt": salt}).digest


def parse_commitment(value: object) -> str:
    """A commitment as sent at posting: ``sha256:<64 lowercase hex>`` (``SEAL_INVALID``)."""
    if not isinstance(value, str) or not SHA256_DIGEST.fullmatch(value):
        raise BadInput(
            f"A seal is a commitment of the form sha256:<64 lowercase hex>, not {value!r}.",
            code="SEAL_INVALID",
        )
    return value


def parse_reveal(value: object) -> Reveal:
    """A reveal's shape: an object of exactly ``criteria`` (an object) and ``salt`` (a string of
    1 to :data:`MAX_SALT_CHARS` characters), plain JSON throughout (``SEAL_REVEAL_INVALID``).

    Only the shape: whether it matches the commitment, and whether what it reveals may be
    sealed, is decided against the task (:func:`refusal`)."""
    if not isinstance(value, Mapping) or set(value) != {"criteria", "salt"}:
        raise _invalid('A reveal is an object of exactly "criteria" and "salt".')
    criteria, salt = value["criteria"], value["salt"]
    if not isinstance(criteria, Mapping):
        raise _invalid('A reveal\'s criteria are an object, such as {"expected_answer": "42"}.')
    if not isinstance(salt, str) or not 0 < len(salt) <= MAX_SALT_CHARS:
        raise _invalid(f"A reveal's salt is a string of 1 to {MAX_SALT_CHARS} characters.")
    reveal = Reveal(dict(criteria), salt)
    try:
        reveal.canonical()
    except Error as exc:  # a float, a key that is not a string…: no canonical form to digest
        raise _invalid(f"A reveal is plain JSON: {exc.message}") from None
    return reveal


def refusal(task: Task, reveal: Reveal) -> str | None:
    """Why ``reveal`` does not open ``task``'s seal, or None when it does: its digest is not the
    commitment, or it reveals a field that may not be sealed (one an agent must see) or none."""
    if reveal.digest != task.seal:
        return (
            f"the reveal's digest {reveal.digest} is not the commitment {task.seal} made at posting"
        )
    fields = set(reveal.criteria)
    if not fields or not fields <= set(SEALABLE):
        return (
            f"the reveal matches the commitment but seals {sorted(fields) or 'nothing'}: only "
            f"{', '.join(SEALABLE)} can be sealed (every other rule is public)"
        )
    return None


def judged_criteria(task: Task) -> Mapping[str, Any]:
    """The criteria a submission of ``task`` is judged against: the public ones, with the
    revealed ones once the seal is open (a sealed task is never judged before)."""
    if task.reveal is None:
        return task.criteria
    return {**task.criteria, **task.reveal["criteria"]}


def admissible_form(criteria: Mapping[str, Any]) -> dict[str, Any]:
    """The public criteria of a sealed task as posting checks them: with a stand-in for the
    sealed answer, so a sealed answer counts as the real check it will be (spec 000: "or
    ``expected_answer``"); the rules that read its content run on the real one at the reveal."""
    return {**criteria, "expected_answer": SEALED_PLACEHOLDER}


def reveal_due(task: Task, now: datetime) -> bool:
    """Whether the reveal is overdue: the agent asked for the check, and the poster has not
    revealed within :data:`REVEAL_WINDOW`; the task is then escalated."""
    return (
        task.status is Status.AWAITING_VERIFICATION
        and task.reveal_due_at is not None
        and now >= task.reveal_due_at
    )


def disclosed(task: Task, now: datetime) -> bool:
    """Whether the reveal is shown to everyone who reads the task's criteria: once no further
    submission can be judged against it — the task ended, is disputed or escalated (only a
    ruling follows), all its submissions are used, or its deadline passed."""
    from adjudge.market.lifecycle import MAX_ATTEMPTS  # noqa: PLC0415 (it imports this module)

    return (
        task.terminal
        or task.status in (Status.DISPUTED, Status.ESCALATED)
        or task.attempts >= MAX_ATTEMPTS
        or now >= task.deadline
    )


def _invalid(why: str) -> BadInput:
    return BadInput(why, code="SEAL_REVEAL_INVALID")
