"""A policy's declared corroborator, in the pure core: how an empty answer's verdict reads what
the corroborator found, and how a declaration is refused at registration."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adjudge.calls import (
    Corroboration,
    parse_request,
    parse_response,
    register_contract,
    register_policy,
    verify_call,
)
from adjudge.calls.kernel_rows import call_decision, determine_call
from adjudge.calls.verify import parse_corroboration, wants_corroboration
from adjudge.errors import CriteriaError

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "calls"
AT = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)
DIGEST = "sha256:" + "ab" * 32


def _load(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


def _policy(**corroboration: Any) -> dict[str, Any]:
    policy = copy.deepcopy(_load("search.policy.json"))
    policy["checks"] = ["schema", "quality_rules"]
    del policy["meaning"]
    if corroboration is not None:
        policy["empty_result"]["corroboration"] = {
            "tool": "web.search.other",
            "paid_by": "provider",
            "max_price_minor": 3,
        } | corroboration
    return policy


def _empty_call(policy: dict[str, Any], corroboration: Corroboration | None) -> Any:
    contract = register_contract(_load("search.contract.json"))
    response = _load("search.good.response.json")
    response["body"]["web"]["results"] = []
    return verify_call(
        contract,
        register_policy(policy, contract),
        parse_request(_load("search.request.json")),
        parse_response(response),
        AT,
        corroboration=corroboration,
    )


def _declared(empty: bool, available: bool = True, source: str = "seekr") -> Corroboration:
    return Corroboration(
        source=source,
        empty=empty,
        reason="",
        tool="web.search.other",
        call_id="c-2",
        receipt_id="rcpt_2",
        response_digest=DIGEST,
        available=available,
    )


@pytest.mark.parametrize(
    ("found", "verdict", "outcome", "payment", "strike"),
    [
        (_declared(empty=True), "EMPTY_CONFIRMED", "pass", "settle", False),
        (_declared(empty=False), "FAIL", "fail", "refund", True),
        (_declared(empty=False, available=False), "DEGRADED", "unavailable", "settle", False),
        (None, "DEGRADED", "unavailable", "settle", False),
        (
            _declared(empty=True, source="findly"),
            "EMPTY_UNVERIFIED",
            "not_applicable",
            "settle",
            False,
        ),
    ],
)
def test_a_declared_corroborator_decides_an_empty_answer(
    found: Corroboration | None, verdict: str, outcome: str, payment: str, strike: bool
) -> None:
    """Shared emptiness confirms; results contradict (FAIL, refund, strike); no usable answer
    is DEGRADED; the provider corroborating itself counts for nothing."""
    result = _empty_call(_policy(), found)
    row = next(r for r in result.rows if r.stage == "empty_result")
    assert (result.verdict.value, row.outcome.value) == (verdict, outcome)
    assert (result.effect.payment.value, result.effect.strike) == (payment, strike)
    assert row.declared


def test_an_undeclared_source_that_found_results_does_not_fail_the_call() -> None:
    """Without a declared corroborator, another index having results is not evidence: the call
    stays EMPTY_UNVERIFIED, as before."""
    policy = _policy()
    del policy["empty_result"]["corroboration"]
    found = Corroboration(source="seekr", empty=False)
    result = _empty_call(policy, found)
    assert result.verdict is not None and result.verdict.value == "EMPTY_UNVERIFIED"
    assert not next(r for r in result.rows if r.stage == "empty_result").declared


def test_a_corroboration_from_another_tool_than_the_declared_one_is_unavailable() -> None:
    """A corroboration from a source the policy did not name cannot confirm or fail the call."""
    found = Corroboration(source="seekr", empty=False, tool="elsewhere", call_id="c-3")
    result = _empty_call(_policy(), found)
    assert result.verdict is not None and result.verdict.value == "DEGRADED"


def test_the_receipt_names_the_corroborating_call() -> None:
    """The determination's policy decision names the corroborating call and its receipt; the
    empty-result check carries its response digest as evidence."""
    result = _empty_call(_policy(), _declared(empty=True))
    decision = call_decision(result)
    assert decision["corroboratingCallId"] == "c-2"
    assert decision["corroboratingReceiptId"] == "rcpt_2"
    assert decision["corroboratingResponseDigest"] == DIGEST
    determination = determine_call(result, now=AT)
    check = next(c for c in determination.checks if c.name == "empty_result")
    assert DIGEST in check.evidence and check.authority.value == "imported"
    assert not wants_corroboration(result)
    assert wants_corroboration(_empty_call(_policy(), None))


def test_a_corroboration_round_trips_through_its_wire_shape() -> None:
    """What the gateway stores for a replay parses back to the same corroboration."""
    found = _declared(empty=False, available=False)
    assert parse_corroboration(found.to_dict()) == found
    with pytest.raises(CriteriaError):
        parse_corroboration(found.to_dict() | {"response_digest": "md5:x"})


@pytest.mark.parametrize(
    "change",
    [
        {"tool": "web.search"},
        {"paid_by": "caller"},
        {"paid_by": None},
        {"max_price_minor": -1},
        {"max_price_minor": 1.5},
        {"arguments": "["},
        {"surprise": 1},
    ],
)
def test_a_malformed_declaration_is_refused(change: dict[str, Any]) -> None:
    """The tool itself, a payer other than the provider, a bound that is not a whole number of
    minor units, a bad expression or an unknown field: POLICY_INVALID at registration."""
    contract = register_contract(_load("search.contract.json"))
    with pytest.raises(CriteriaError) as refused:
        register_policy(_policy(**change), contract)
    assert refused.value.code == "POLICY_INVALID"


def test_corroboration_needs_an_accepted_empty_answer() -> None:
    """Under `on_empty: judge` an empty answer is judged by the rules: nothing to corroborate."""
    policy = _policy()
    policy["empty_result"]["on_empty"] = "judge"
    with pytest.raises(CriteriaError):
        register_policy(policy, register_contract(_load("search.contract.json")))
