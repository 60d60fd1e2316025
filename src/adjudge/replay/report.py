"""What a replay found: the verdict re-derived, what it shows, and each difference with its cause.

A replay is *the same* when nothing differs: every file is the one the manifest lists, the
receipt verifies under the bundle's key (and the pinned one), every input is the one the receipt
binds, the engine is the one that decided, and the statement re-derived from the inputs is byte
for byte the signed one. Anything else is a :class:`Difference`, which says what differs, the
two values, and why that matters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

#: The outcomes and the exit status the CLI gives each (an unusable bundle exits 2).
SAME: Final = "same"
DIFFERENT: Final = "different"
EXIT: Final = {SAME: 0, DIFFERENT: 1}


@dataclass(frozen=True)
class Difference:
    """One thing that is not as the receipt says: where, the two values, and why it matters."""

    what: str
    recorded: str | None
    replayed: str | None
    why: str

    def to_dict(self) -> dict[str, str | None]:
        """The JSON shape (``adjudge replay --json``)."""
        return {
            "what": self.what,
            "recorded": self.recorded,
            "replayed": self.replayed,
            "why": self.why,
        }

    def describe(self) -> str:
        """One line: ``what: recorded X, replayed Y — why``."""
        values = ""
        if self.recorded is not None or self.replayed is not None:
            values = f": recorded {_shown(self.recorded)}, replayed {_shown(self.replayed)}"
        return f"{self.what}{values} ({self.why})"


@dataclass(frozen=True)
class Report:
    """The replay of one bundle."""

    kind: str
    subject: str
    #: The receipt's id: the sha256 of the statement in its envelope, the bytes its key signs.
    receipt_id: str
    keyid: str | None
    recorded_engine: dict[str, str]
    engine: dict[str, str]
    #: The kernel's verdict as signed, and as re-derived (None when it could not be).
    signed_verdict: str | None
    verdict: str | None
    #: What the check said, line by line, as this replay re-derived it (the reasons of an auto
    #: check; each row of a call's verification, and its payment).
    lines: tuple[str, ...]
    differences: tuple[Difference, ...]
    #: What the replay could not establish and says so (an input the receipt does not bind).
    notes: tuple[str, ...] = ()
    #: The re-derived statement's digest when it is byte for byte the signed one.
    statement_digest: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    #: The service's id of the receipt (``rcpt_…``), as the manifest says: nothing signs it.
    receipt_label: str | None = None

    @property
    def outcome(self) -> str:
        """``same`` when nothing differs, else ``different``."""
        return DIFFERENT if self.differences else SAME

    @property
    def exit_status(self) -> int:
        """0 the same verdict, 1 a difference (an unusable bundle never makes a report: 2)."""
        return EXIT[self.outcome]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (``adjudge replay --json``)."""
        return {
            "outcome": self.outcome,
            "kind": self.kind,
            "subject": self.subject,
            "receipt": self.receipt_id,
            "receipt_label": self.receipt_label,
            "keyid": self.keyid,
            "engine": {"recorded": self.recorded_engine, "replay": self.engine},
            "signed_verdict": self.signed_verdict,
            "verdict": self.verdict,
            "lines": list(self.lines),
            "differences": [d.to_dict() for d in self.differences],
            "notes": list(self.notes),
            "statement_digest": self.statement_digest,
            **self.detail,
        }


def statement_differences(
    recorded: Any, replayed: Any, where: str = "", why: str | None = None
) -> Iterator[Difference]:
    """Each leaf where two statements differ, named by its path (``predicate.checks[1].reason``).

    A check is named by its ``name`` too, so a reader sees which check changed; a value one side
    lacks is shown as ``(absent)``. ``why`` gives every difference one cause (for a stored record
    compared the same way); by default each says what a difference at its path means.
    """
    because = _why if why is None else (lambda _path: why)
    if isinstance(recorded, dict) and isinstance(replayed, dict):
        for key in sorted(set(recorded) | set(replayed), key=_order(recorded, replayed)):
            path = f"{where}.{key}" if where else str(key)
            if key not in recorded or key not in replayed:
                yield Difference(
                    path,
                    _text(recorded[key]) if key in recorded else None,
                    _text(replayed[key]) if key in replayed else None,
                    because(path),
                )
            else:
                yield from statement_differences(recorded[key], replayed[key], path, why)
        return
    if isinstance(recorded, list) and isinstance(replayed, list):
        for index in range(max(len(recorded), len(replayed))):
            left = recorded[index] if index < len(recorded) else None
            right = replayed[index] if index < len(replayed) else None
            name = next(
                (x["name"] for x in (left, right) if isinstance(x, dict) and "name" in x), None
            )
            path = f"{where}[{index}]" + (f" ({name})" if name else "")
            if left is None or right is None:
                yield Difference(
                    path,
                    None if left is None else _text(left),
                    None if right is None else _text(right),
                    because(where),
                )
            else:
                yield from statement_differences(left, right, path, why)
        return
    if recorded != replayed or type(recorded) is not type(replayed):
        yield Difference(where, _text(recorded), _text(replayed), because(where))


def _why(path: str) -> str:
    if path.startswith("subject"):
        return "the judged bytes are not the ones the receipt's subject names"
    if ".checks" in path:
        return "re-running the check on the bundle's inputs does not give the signed check"
    if path.endswith("verdict"):
        return "the re-derived verdict is not the signed one"
    if path.endswith("criteriaDigest"):
        return "the criteria (or policy) are not the ones the receipt binds"
    if ".policyDecision" in path:
        return "the re-derived policy decision (payment, strike) is not the signed one"
    return "the re-derived statement differs from the signed one here"


def _order(*sides: dict[str, Any]) -> Any:
    # Keys in the order the signed statement has them, then any only the replay has.
    seen: dict[str, int] = {}
    for side in sides:
        for key in side:
            seen.setdefault(key, len(seen))
    return seen.__getitem__


def _text(value: Any) -> str:
    """A value as a difference shows it: a string as itself, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _shown(value: str | None) -> str:
    return "(absent)" if value is None else repr(value)
