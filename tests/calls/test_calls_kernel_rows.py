"""The call rows' mapping onto kernel checks (spec 002's verdicts and authorities)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from adjudge.calls import (
    Outcome,
    parse_request,
    parse_response,
    register_contract,
    register_policy,
    verify_call,
)
from adjudge.calls.kernel_rows import KERNEL_VERDICT, kernel_checks

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"


def test_every_outcome_has_a_kernel_verdict() -> None:
    """No outcome is left unmapped, and only a judged pass maps to PASS."""
    assert set(KERNEL_VERDICT) == set(Outcome)
    assert [o for o, v in KERNEL_VERDICT.items() if v == "PASS"] == [Outcome.PASS]
    assert set(KERNEL_VERDICT.values()) <= {"PASS", "FAIL", "UNKNOWN", "NOT_RUN"}


def test_a_call_becomes_kernel_checks() -> None:
    """Each row becomes a check with its authority and the response digest as evidence."""
    load = lambda name: json.loads((EXAMPLES / name).read_text())  # noqa: E731
    contract = register_contract(load("search.contract.json"))
    policy = register_policy(load("search.policy.json"), contract)
    result = verify_call(
        contract,
        policy,
        parse_request(load("search.request.json")),
        parse_response(load("search.good.response.json")),
        datetime(2026, 11, 29, 19, tzinfo=UTC),
    )
    checks = {c.name: c for c in kernel_checks(result)}
    assert checks["schema"].verdict == "PASS"
    assert checks["schema"].authority == "deterministic"
    assert checks["meaning"].verdict == "NOT_RUN"  # not sampled: never shown as passed
    assert checks["meaning"].authority == "semantic"
    assert all(c.evidence == (result.response_digest,) for c in checks.values())
    assert result.response_digest.startswith("sha256:")
