"""The call's check rows as kernel checks (spec 002): verdict, authority, evidence.

The kernel's types (``adjudge.kernel.Verdict`` and its authorities) land separately; until
then this module speaks the kernel's vocabulary as its exact names, so the adapter is one
lookup (``Verdict[check.verdict]``) once the kernel is importable. The call's own verdict is
decided by its policy (``verdicts.apply_clauses``), not by a kernel fold; these rows are the
evidence a receipt carries for it.

Outcome -> kernel verdict, and why:

- ``pass`` -> PASS and ``fail`` -> FAIL: the check judged the data (a semantic FAIL only
  arises from a cited conflict, the one semantic outcome the kernel routes to FAIL);
- ``misapplied`` -> UNKNOWN: the check ran and could not judge;
- ``no_conflict`` and ``uncited`` -> UNKNOWN: the kernel's routing sends every semantic outcome
  other than a cited conflict to UNKNOWN (a model never says yes);
- ``not_applicable``, ``not_run``, ``skipped``, ``unavailable`` -> NOT_RUN: nothing was judged.
"""

from __future__ import annotations

from typing import NamedTuple

from adjudge.calls.outcomes import Outcome
from adjudge.calls.verify import CallResult

__all__ = ["KERNEL_VERDICT", "KernelCheck", "kernel_checks"]

KERNEL_VERDICT: dict[Outcome, str] = {
    Outcome.PASS: "PASS",
    Outcome.FAIL: "FAIL",
    Outcome.MISAPPLIED: "UNKNOWN",
    Outcome.NO_CONFLICT: "UNKNOWN",
    Outcome.UNCITED: "UNKNOWN",
    Outcome.NOT_APPLICABLE: "NOT_RUN",
    Outcome.NOT_RUN: "NOT_RUN",
    Outcome.SKIPPED: "NOT_RUN",
    Outcome.UNAVAILABLE: "NOT_RUN",
}


class KernelCheck(NamedTuple):
    """One call check in the kernel's terms."""

    name: str
    verdict: str  # a kernel Verdict name: PASS, FAIL, UNKNOWN or NOT_RUN
    authority: str  # "deterministic", "semantic" or "imported"
    evidence: tuple[str, ...]  # sha256 digests the check relied on
    declared: bool  # whether the call's policy counted it


def kernel_checks(result: CallResult) -> tuple[KernelCheck, ...]:
    """Every row of a verified call as a kernel check; a request or system error has none."""
    evidence = (result.response_digest,) if result.response_digest else ()
    return tuple(
        KernelCheck(row.name, KERNEL_VERDICT[row.outcome], row.authority, evidence, row.declared)
        for row in result.rows
    )
