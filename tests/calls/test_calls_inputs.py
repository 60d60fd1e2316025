"""Inputs at the edge of the calls package: responses, judgments and the report window."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adjudge.calls import (
    ProviderResponse,
    parse_judgment,
    parse_request,
    parse_response,
    register_contract,
    register_policy,
    verify_call,
)
from adjudge.calls.policy import DEFAULT_REPORT_WINDOW
from adjudge.errors import CriteriaError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"
AT = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)


def _load(name: str) -> Any:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize(
    "where",
    [
        lambda v: v,
        lambda v: {"latitude": v},
        lambda v: {"daily": [{"t": 1.0}, {"t": v}]},
        lambda v: [[[v]]],
    ],
)
def test_a_non_finite_number_in_a_body_is_refused(bad: float, where: Any) -> None:
    """NaN and Infinity are not JSON: parse_response refuses them at any depth."""
    with pytest.raises(CriteriaError) as caught:
        parse_response({"status": "ok", "body": where(bad)})
    assert caught.value.code == "CALL_INPUT_INVALID"
    assert "finite" in caught.value.message


def test_a_non_finite_number_cannot_reach_the_schema_through_the_python_api() -> None:
    """Built directly, a response carrying NaN is refused too: it never passes `maximum`."""
    with pytest.raises(CriteriaError) as caught:
        ProviderResponse(status="ok", body={"latitude": math.nan})
    assert caught.value.code == "CALL_INPUT_INVALID"


def test_a_body_of_plain_json_values_is_accepted() -> None:
    """Finite floats, big integers, nested containers and null are plain JSON."""
    body = {"a": [1.5, -0.0, 10**30, None, True, "x", {"b": []}]}
    assert parse_response({"status": "ok", "body": body}).body == body


def test_a_body_that_is_not_json_is_refused() -> None:
    """A Python value JSON has no form for (a set, bytes) is refused, not judged."""
    for body in ({1, 2}, b"bytes", {"a": object()}):
        with pytest.raises(CriteriaError):
            parse_response({"status": "ok", "body": body})


def test_request_arguments_refuse_non_finite_numbers() -> None:
    """A rule's condition reads the arguments; NaN there is refused like in a body."""
    request = _load("weather.request.json")
    request["arguments"]["lat"] = math.nan
    with pytest.raises(CriteriaError) as caught:
        parse_request(request)
    assert caught.value.code == "CALL_INPUT_INVALID"


@pytest.mark.parametrize("path", ["$.results[2].title", "results/2", "/results/~2", "#/results"])
def test_a_citation_path_must_be_a_json_pointer(path: str) -> None:
    """A citation names its value by an RFC 6901 JSON Pointer; anything else is refused."""
    judgment = {
        "call_id": "c",
        "response_digest": "sha256:" + "0" * 64,
        "status": "judged",
        "conflict": True,
        "citations": [{"path": path, "quote_sha256": "sha256:" + "1" * 64}],
    }
    with pytest.raises(CriteriaError) as caught:
        parse_judgment(judgment)
    assert caught.value.code == "CALL_INPUT_INVALID"
    assert "JSON Pointer" in caught.value.message


@pytest.mark.parametrize("path", ["", "/results/2/title", "/a~1b/~0c", "/"])
def test_json_pointer_citations_parse(path: str) -> None:
    """The root, members with escapes and the empty key are all pointers."""
    judgment = {
        "call_id": "c",
        "response_digest": "sha256:" + "0" * 64,
        "status": "judged",
        "conflict": True,
        "citations": [{"path": path, "quote_sha256": "sha256:" + "1" * 64}],
    }
    assert parse_judgment(judgment).citations[0].path == path


def test_a_policy_has_a_report_window_with_a_default() -> None:
    """Without `report_window_hours` a caller may report a call for 72 hours after it."""
    contract = register_contract(_load("weather.contract.json"))
    policy = register_policy(_load("weather.policy.json"), contract)
    assert policy.report_window == DEFAULT_REPORT_WINDOW == timedelta(hours=72)
    assert policy.report_deadline(AT) == AT + timedelta(hours=72)
    assert policy.reportable(AT, AT + timedelta(hours=72))
    assert not policy.reportable(AT, AT + timedelta(hours=72, seconds=1))
    assert not policy.reportable(AT, AT - timedelta(seconds=1))


def test_a_policy_sets_its_own_report_window() -> None:
    """`report_window_hours` sets the filing deadline; the call record carries it."""
    contract = register_contract(_load("weather.contract.json"))
    policy = register_policy({**_load("weather.policy.json"), "report_window_hours": 24}, contract)
    assert policy.report_window == timedelta(hours=24)
    result = verify_call(
        contract,
        policy,
        parse_request(_load("weather.request.json")),
        parse_response(_load("weather.good.response.json")),
        AT,
    )
    assert result.report_deadline == AT + timedelta(hours=24)
    assert result.to_dict()["report_deadline"] == (AT + timedelta(hours=24)).isoformat()


def test_a_call_without_a_policy_is_reportable_for_the_default_window() -> None:
    """An UNVERIFIED call was checked by nobody: it can be reported for the default window."""
    contract = register_contract(_load("weather.contract.json"))
    result = verify_call(
        contract,
        None,
        parse_request(_load("weather.request.json")),
        parse_response(_load("weather.good.response.json")),
        AT,
    )
    assert result.report_deadline == AT + DEFAULT_REPORT_WINDOW


def test_an_error_call_has_no_report_deadline() -> None:
    """A request or system error has no result to report: no deadline."""
    contract = register_contract(_load("weather.contract.json"))
    result = verify_call(
        contract,
        None,
        parse_request(_load("weather.request.json")),
        parse_response({"status": "request_error", "error": {"code": "TIMEOUT"}}),
        AT,
    )
    assert result.report_deadline is None
    assert result.to_dict()["report_deadline"] is None


def test_a_requests_sampling_seed_is_32_hex_digits_or_absent() -> None:
    """``sample_seed`` (drawn by the service, kept with a call's request so a replay draws its
    sampling again) is 32 lowercase hex digits; anything else is ``CALL_INPUT_INVALID``."""
    from adjudge.calls import parse_request  # noqa: PLC0415

    base = {
        "call_id": "c1",
        "provider": "p",
        "tool": "t",
        "price": {"amount_minor": 1, "currency": "USDC"},
    }
    assert parse_request(base).sample_seed is None
    assert parse_request({**base, "sample_seed": "ab" * 16}).sample_seed == "ab" * 16
    for bad in ("AB" * 16, "ab" * 15, "ab" * 17, 7, ["ab" * 16], "zz" * 16):
        with pytest.raises(CriteriaError) as refused:
            parse_request({**base, "sample_seed": bad})
        assert refused.value.code == "CALL_INPUT_INVALID"


def test_a_seeded_draw_samples_its_rate_and_is_not_the_call_ids_alone() -> None:
    """With a seed, about ``rate`` of calls are sampled (1,000 seeds of one call: 40-60% at a
    half), the same seed draws the same, and what the call id alone draws says nothing of it
    (both ways occur)."""
    from fractions import Fraction  # noqa: PLC0415

    from adjudge.calls.policy import sampled  # noqa: PLC0415

    half = Fraction(1, 2)
    draws = [sampled("c1", "p", 1, half, f"{n:032x}") for n in range(1000)]
    assert 400 <= sum(draws) <= 600
    assert draws == [sampled("c1", "p", 1, half, f"{n:032x}") for n in range(1000)]
    alone = sampled("c1", "p", 1, half)
    assert alone in draws and (not alone) in draws
