"""A receipt's verdict as of a moment: PENDING resolved at read time, never written back.

"PENDING is resolved at read time, never by writing back — a receipt is signed and
append-only." A receipt records the verdict at its decision time; a check that was PENDING then
carries its deadline and the verdict it expires into. :func:`as_of` re-derives the verdict from
the recorded checks and trust policy at the moment asked (as the kernel's ``resolve`` does) and
lists every deadline with what it resolved to, so the CLI, the receipt API and the UI can show a
receipt eleven months past its deadline as what it now is — without touching the signed bytes.
It can never read PASS for a receipt not signed PASS: a PENDING never expires into PASS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from adjudge.digests import from_hex
from adjudge.errors import ReceiptError
from adjudge.kernel.verdicts import Verdict, format_time, parse_time, require_aware
from adjudge.receipts import statement
from adjudge.receipts.canonical import parse_exact
from adjudge.receipts.chain import Receipt
from adjudge.receipts.envelope import Envelope


@dataclass(frozen=True, slots=True)
class Deadline:
    """One check that was PENDING when signed: its deadline, and what it expires into."""

    check: str
    deadline: datetime
    expires_to: Verdict
    passed: bool  # the deadline is reached at the moment read

    def describe(self) -> str:
        """``name: <deadline>, passed: resolved to X`` or ``…, not yet reached: X from then on``."""
        when = format_time(self.deadline)
        if self.passed:
            return f"{self.check}: {when}, passed: resolved to {self.expires_to.value}"
        return f"{self.check}: {when}, not yet reached: {self.expires_to.value} from then on"


@dataclass(frozen=True, slots=True)
class Standing:
    """A receipt's verdict as of ``at``, beside the verdict it was signed with."""

    signed: Verdict  # the verdict the receipt records, at ``decided_at``
    decided_at: datetime
    at: datetime  # the moment read (never earlier than ``decided_at``)
    verdict: Verdict  # the verdict in force at ``at``
    deadlines: tuple[Deadline, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape a view shows: ``{"verdict", "asOf", "signedVerdict", "decidedAt",
        "deadlines": [{"check", "deadline", "expiresTo", "passed"}]}``."""
        return {
            "verdict": self.verdict.value,
            "asOf": format_time(self.at),
            "signedVerdict": self.signed.value,
            "decidedAt": format_time(self.decided_at),
            "deadlines": [
                {
                    "check": d.check,
                    "deadline": format_time(d.deadline),
                    "expiresTo": d.expires_to.value,
                    "passed": d.passed,
                }
                for d in self.deadlines
            ],
        }


def as_of(source: Receipt | Envelope | Mapping[str, Any], at: datetime) -> Standing:
    """The verdict of a receipt as of ``at``, re-derived from what it records.

    ``source`` is a verified :class:`Receipt`, an :class:`Envelope`, or an envelope's JSON
    object (as the service stores it). This does not check a signature — :func:`verify` does —
    but it does re-derive the signed verdict first, so a statement the kernel could not have
    signed is refused (``RECEIPT_MALFORMED``, ``RECEIPT_POLICY_INVALID``,
    ``RECEIPT_VERDICT_INVALID``). ``at`` must be time-zone aware (``TIME_INVALID``); a moment
    before the decision reads as the decision.
    """
    require_aware(at, "at")
    body = _statement(source)
    p = statement.check_statement(body)
    subject = from_hex(body["subject"][0]["digest"]["sha256"])
    replayed = statement.replay(p, subject, at)
    when = max(at, replayed.decided_at)
    deadlines = []
    for check in p["checks"]:
        pending = check.get("pending")
        if pending is None:
            continue
        deadline = parse_time(pending["deadline"], "deadline")
        expires_to = Verdict(pending["expiresTo"])
        name = str(check.get("name", "(unnamed)"))  # the kernel does not require one
        deadlines.append(Deadline(name, deadline, expires_to, when >= deadline))
    return Standing(
        signed=replayed.recorded,
        decided_at=replayed.decided_at,
        at=when,
        verdict=replayed.verdict,
        deadlines=tuple(deadlines),
    )


def _statement(source: Receipt | Envelope | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(source, Receipt):
        source = source.envelope
    elif isinstance(source, Mapping):
        source = Envelope.from_dict(dict(source))
    if not isinstance(source, Envelope):
        raise ReceiptError("as_of reads a Receipt or an envelope.", code="RECEIPT_MALFORMED")
    body = parse_exact(source.payload)
    if not isinstance(body, dict):
        raise ReceiptError("The payload is not a JSON object.", code="RECEIPT_MALFORMED")
    return body
