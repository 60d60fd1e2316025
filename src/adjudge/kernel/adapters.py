"""Turning other parts' results into kernel checks, typed against protocols (no imports of them).

The auto check (seed 000) is deterministic: it re-runs rules over the result and observes the
outcome. Its result becomes one ``deterministic`` check; together with the oracle's
evidence-integrity check over the stored bytes it makes a complete determination.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from adjudge.kernel.authority import DEFAULT_POLICY, Authority, TrustPolicy
from adjudge.kernel.determination import Determination, determine
from adjudge.kernel.oracle import Record, integrity
from adjudge.kernel.verdicts import Check, Verdict

AUTO_CHECK = "auto-check"


class VerificationResultLike(Protocol):
    """What the kernel reads from an auto check's ``VerificationResult``."""

    @property
    def passed(self) -> bool: ...

    @property
    def score(self) -> int | float: ...

    @property
    def reasons(self) -> Sequence[str]: ...


def auto_check_check(result: VerificationResultLike, result_digest: str) -> Check:
    """The auto check's outcome as a deterministic kernel check over ``result_digest``.

    ``passed`` maps to PASS, anything else to FAIL; the reason records the score and the
    checker's reasons in order, so the same result always yields the same check.
    """
    verdict = Verdict.PASS if result.passed is True else Verdict.FAIL
    score = result.score
    shown = str(int(score)) if float(score).is_integer() else repr(float(score))
    reasons = "; ".join(str(r) for r in result.reasons)
    outcome = "passed" if verdict is Verdict.PASS else "failed"
    reason = f"auto check {outcome} with score {shown}" + (f": {reasons}" if reasons else "")
    return Check(
        name=AUTO_CHECK,
        verdict=verdict,
        authority=Authority.DETERMINISTIC,
        evidence=(result_digest,),
        reason=reason,
    )


def determine_auto_check(
    stored_result: Record,
    result: VerificationResultLike,
    *,
    now: datetime,
    declared_digest: str | None = None,
    criteria_digest: str | None = None,
    policy: TrustPolicy = DEFAULT_POLICY,
) -> Determination:
    """The determination of one standalone auto check over ``stored_result``.

    ``stored_result`` is the verifying side's own record of the result it checked (built by the
    IO side from the bytes it holds). Two checks: the oracle's evidence-integrity check (the
    record against the digest the submitter declared; with no declaration the record's own
    digest is used, since the verifying side holds the bytes itself) and the auto check. The
    subject is the declared digest.
    """
    declared = stored_result.digest if declared_digest is None else declared_digest
    checks = (integrity(stored_result, declared), auto_check_check(result, declared))
    return determine(declared, checks, now=now, policy=policy, criteria_digest=criteria_digest)
