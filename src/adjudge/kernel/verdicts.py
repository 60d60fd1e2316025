"""The six verdicts, their precedence, ``fold``, and read-time resolution of PENDING (spec 002).

A check is one verdict, the authority that decided it, and the evidence it relied on. Two
verdicts are guarded at construction, so that an invalid check cannot exist:

- PENDING carries a deadline and the verdict it expires into. The expiry verdict's type excludes
  PASS, and construction re-checks it at run time. ``resolve(check, now)`` reads it; nothing
  ever writes a resolution back (a receipt is signed and append-only).
- MISMATCH needs the oracle's seal. The seal is a single object that ``adjudge.kernel.oracle``
  takes once when the package loads; an evaluator has no way to obtain or construct another, so
  it cannot author an accusation. A check built with the seal is marked ``oracle`` — the mark a
  determination looks for in its integrity proof, so a caller's look-alike proof counts for
  nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import InitVar, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final, Literal, NoReturn, cast

from adjudge.digests import is_digest
from adjudge.errors import CriteriaError
from adjudge.kernel.authority import Authority


class Verdict(StrEnum):
    """The six states a verification resolves to."""

    PASS = "PASS"
    FAIL = "FAIL"
    MISMATCH = "MISMATCH"
    UNKNOWN = "UNKNOWN"
    NOT_RUN = "NOT_RUN"
    PENDING = "PENDING"


#: The one precedence table: a higher rank wins a fold. PASS is last, so one unresolved check
#: is enough to sink an otherwise clean set.
PRECEDENCE: Final[Mapping[Verdict, int]] = {
    # The submitter's claim disagrees with the verifying side's own record: the strongest finding.
    Verdict.MISMATCH: 6,
    # A check looked and the work is wrong.
    Verdict.FAIL: 5,
    # A check ran and could not decide; not knowing is worse than not having looked yet.
    Verdict.UNKNOWN: 4,
    # A check that should have run did not; an empty set also folds here.
    Verdict.NOT_RUN: 3,
    # Still waiting for a deadline; outranks only PASS, so waiting never reads as done.
    Verdict.PENDING: 2,
    # Every check passed.
    Verdict.PASS: 1,
}

#: What a PENDING may expire into. PASS is excluded by the type and re-checked at run time.
ExpiryVerdict = Literal[Verdict.UNKNOWN, Verdict.FAIL, Verdict.MISMATCH, Verdict.NOT_RUN]
EXPIRY_VERDICTS: Final[frozenset[Verdict]] = frozenset(
    {Verdict.UNKNOWN, Verdict.FAIL, Verdict.MISMATCH, Verdict.NOT_RUN}
)


def fold(verdicts: Iterable[Verdict]) -> Verdict:
    """Fold verdicts into one by :data:`PRECEDENCE`; an empty set folds to NOT_RUN, never PASS."""
    result: Verdict | None = None
    for verdict in verdicts:
        if result is None or PRECEDENCE[verdict] > PRECEDENCE[result]:
            result = verdict
    return Verdict.NOT_RUN if result is None else result


def require_aware(moment: datetime, what: str) -> datetime:
    """Refuse a naive datetime: a deadline without a time zone means nothing."""
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise CriteriaError(f"{what} must be a time-zone-aware datetime.", code="TIME_INVALID")
    return moment


@dataclass(frozen=True, slots=True)
class Pending:
    """A deadline and the verdict a PENDING check expires into once the deadline is reached."""

    deadline: datetime
    expires_to: ExpiryVerdict

    def __post_init__(self) -> None:
        require_aware(self.deadline, "A pending deadline")
        # The type already excludes PASS; this is the run-time half of the guarantee, for
        # callers that pass a plain value (parsed input, Any, a cast). A bare string is refused
        # too, even "MISMATCH": it compares equal to the verdict but is not it, so it would slip
        # past the seal's identity test and crash whatever later reads ``.value``.
        if not isinstance(self.expires_to, Verdict) or self.expires_to not in EXPIRY_VERDICTS:
            raise CriteriaError(
                f"A PENDING check can expire only into the verdict UNKNOWN, FAIL, MISMATCH or "
                f"NOT_RUN (a Verdict, not a string), not {self.expires_to!r}.",
                code="PENDING_EXPIRY_INVALID",
            )

    def resolve(self, now: datetime) -> Verdict:
        """PENDING before the deadline; the expiry verdict from the deadline on."""
        require_aware(now, "now")
        return self.expires_to if now >= self.deadline else Verdict.PENDING


class _OracleSeal:
    """The capability to mint a MISMATCH. Exactly one exists; ``oracle`` takes it once."""

    __slots__ = ()

    def __new__(cls) -> NoReturn:
        raise TypeError("The oracle seal cannot be constructed.")

    def __init_subclass__(cls, **kwargs: Any) -> NoReturn:
        raise TypeError("The oracle seal cannot be subclassed.")

    def __reduce__(self) -> NoReturn:
        raise TypeError("The oracle seal cannot be pickled or copied.")

    def __copy__(self) -> _OracleSeal:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> _OracleSeal:
        return self


def _seal_dispenser() -> Any:
    box: list[_OracleSeal] = [cast(_OracleSeal, object.__new__(cast(type, _OracleSeal)))]

    def take() -> _OracleSeal:
        if not box:
            raise PermissionError("The oracle seal has already been taken by the oracle seam.")
        return box.pop()

    return take


#: Called once, by ``adjudge.kernel.oracle`` as the package loads; every later call raises.
_take_oracle_seal = _seal_dispenser()


@dataclass(frozen=True, slots=True)
class Check:
    """One check: its verdict, the authority that decided it, and the evidence it relied on.

    ``evidence`` holds ``sha256:`` digests of what the check read. ``observable`` and
    ``expression`` name the decidable observable a deterministic check evaluated, if any.
    ``verifier_key`` is the fingerprint of the named verifier agent that decided it, if any.
    A PENDING check carries ``pending``; no other check does. A MISMATCH (or a PENDING that
    expires into one) cannot be built without the oracle's seal. ``oracle`` is True exactly for
    a check the oracle seam minted with its seal; it is never an argument, and ``replace()``
    drops it (the copy was not minted).
    """

    name: str
    verdict: Verdict
    authority: Authority
    evidence: tuple[str, ...] = ()
    reason: str = ""
    observable: str | None = None
    expression: str | None = None
    verifier_key: str | None = None
    pending: Pending | None = None
    seal: InitVar[_OracleSeal | None] = None
    oracle: bool = field(init=False, default=False)

    def __post_init__(self, seal: _OracleSeal | None) -> None:
        if not isinstance(self.verdict, Verdict):
            raise CriteriaError(f"{self.verdict!r} is not a verdict.", code="CHECK_INVALID")
        if type(self.name) is not str or type(self.reason) is not str:
            raise CriteriaError("A check's name and reason are strings.", code="CHECK_INVALID")
        for optional in (self.observable, self.expression, self.verifier_key):
            if optional is not None and type(optional) is not str:
                raise CriteriaError(
                    "A check's observable, expression and verifier key are strings.",
                    code="CHECK_INVALID",
                )
        if not isinstance(self.authority, Authority):
            raise CriteriaError(f"{self.authority!r} is not an authority.", code="CHECK_INVALID")
        if not isinstance(self.evidence, tuple) or not all(is_digest(e) for e in self.evidence):
            raise CriteriaError(
                "A check's evidence is a tuple of sha256:<64 lowercase hex> digests.",
                code="CHECK_INVALID",
            )
        if self.pending is not None and not isinstance(self.pending, Pending):
            raise CriteriaError(
                "A check's pending is a Pending(deadline, expires_to).", code="CHECK_INVALID"
            )
        if (self.verdict is Verdict.PENDING) != (self.pending is not None):
            raise CriteriaError(
                "A PENDING check carries a deadline and an expiry verdict; no other check does.",
                code="CHECK_INVALID",
            )
        accuses = self.verdict is Verdict.MISMATCH or (
            self.pending is not None and self.pending.expires_to is Verdict.MISMATCH
        )
        sealed = isinstance(seal, _OracleSeal)
        if accuses and not sealed:
            raise CriteriaError(
                "Only the oracle seam can mint a MISMATCH: an evaluator reads the bundle the "
                "submitter chose, so it can never author an accusation.",
                code="MISMATCH_ORACLE_ONLY",
            )
        if sealed:
            object.__setattr__(self, "oracle", True)

    def to_dict(self) -> dict[str, Any]:
        """The wire shape inside a receipt (absent optional fields are left out)."""
        data: dict[str, Any] = {
            "name": self.name,
            "verdict": self.verdict.value,
            "authority": self.authority.value,
            "evidence": list(self.evidence),
            "reason": self.reason,
        }
        if self.observable is not None:
            data["observable"] = self.observable
        if self.expression is not None:
            data["expression"] = self.expression
        if self.verifier_key is not None:
            data["verifierKey"] = self.verifier_key
        if self.oracle:
            data["oracle"] = True
        if self.pending is not None:
            data["pending"] = {
                "deadline": format_time(self.pending.deadline),
                "expiresTo": self.pending.expires_to.value,
            }
        return data


def resolve(check: Check, now: datetime) -> Verdict:
    """The verdict ``check`` reads as at ``now``: a PENDING past its deadline reads as its expiry.

    Never PASS for a PENDING check, by type and by construction. Nothing is written back.
    """
    if check.pending is not None:
        return check.pending.resolve(now)
    return check.verdict


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, to the microsecond when there is one."""
    text = require_aware(moment, "A time").astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


def parse_time(text: object, what: str) -> datetime:
    """Parse an RFC 3339 time with a zone; anything else is ``TIME_INVALID``."""
    if not isinstance(text, str):
        raise CriteriaError(f"{what} must be an RFC 3339 string.", code="TIME_INVALID")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise CriteriaError(
            f"{what} is not an RFC 3339 time: {text!r}.", code="TIME_INVALID"
        ) from exc
    return require_aware(moment, what)
