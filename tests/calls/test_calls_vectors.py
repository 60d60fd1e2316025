"""Spec 003 vectors: one parametrized runner over tests/vectors/calls_*.json, ids from descriptions.

Each file names its ``kind``; the runner for that kind is one function in ``RUNNERS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from adjudge.calls import (
    CallVerdict,
    Outcome,
    PenaltyProposal,
    QualityTerms,
    assess_penalty,
    binomial_upper_tail,
    parse_corroboration,
    parse_judgment,
    parse_request,
    parse_response,
    quality_window,
    register_contract,
    register_policy,
    sampled,
    verify_call,
)
from adjudge.calls.kernel_rows import determine_call, kernel_check
from adjudge.calls.outcomes import CheckRow
from adjudge.calls.quality import Observation, QualityWindow, enforce, withdraw
from adjudge.calls.rules import judge_rule, parse_rule
from adjudge.calls.verify import digest_of, digested_bytes
from adjudge.errors import CriteriaError, Error
from adjudge.kernel import DEFAULT_POLICY, Verdict
from adjudge.kernel.determination import effective

VECTORS = Path(__file__).resolve().parent.parent / "vectors"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _cases() -> list[Any]:
    params = []
    for path in sorted(VECTORS.glob("calls_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for case in data["cases"]:
            params.append(pytest.param(data, case, id=f"{path.stem}: {case['description']}"))
    return params


# ----------------------------------------------------------------------------- rules


def run_rule(data: dict[str, Any], case: dict[str, Any]) -> None:
    rule = parse_rule(case["rule"])
    row = judge_rule(rule, case["output"], case.get("request", {}), _time(data["at"]))
    expect = case["expect"]
    assert row.outcome == Outcome(expect["outcome"]), row.reason
    if "path" in expect:
        assert row.path == expect["path"], row.reason
    if "reason_contains" in expect:
        assert expect["reason_contains"] in row.reason, row.reason
    assert row.authority == "deterministic"


# ----------------------------------------------------------------------------- whole calls


def run_verdict(data: dict[str, Any], case: dict[str, Any]) -> None:
    base = data["base"]
    contract = register_contract({**base["contract"], **case.get("contract", {})})
    policy = None
    if not case.get("no_policy"):
        policy = register_policy({**base["policy"], **case.get("policy", {})}, contract)
    request = parse_request({**base["request"], **case.get("request", {})})
    envelope = case.get("response") or {"status": "ok", "body": case.get("body", base["body"])}
    response = parse_response(envelope)
    judgment = None
    if "judgment" in case:
        raw = dict(case["judgment"])
        if raw.get("response_digest") == "@body":
            raw["response_digest"] = digest_of(envelope["body"])
        judgment = parse_judgment(raw)
    corroboration = None
    if "corroboration" in case:
        corroboration = parse_corroboration(case["corroboration"])
    at = _time(case.get("at", base["at"]))
    result = verify_call(
        contract, policy, request, response, at, judgment=judgment, corroboration=corroboration
    )
    record = result.to_dict()
    expect = case["expect"]
    assert record["verdict"] == expect["verdict"], record["decided_by"]
    for key in ("payment", "strike", "policy_verdict", "charge_minor"):
        if key in expect:
            assert record[key] == expect[key], key
    for key in ("enforced", "table_payment", "table_strike"):
        if key in expect:
            assert record["effect"][key] == expect[key], key
    if "error" in expect:
        assert record["error"]["kind"] == expect["error"]
    if "score" in expect:
        score = record["score"]
        assert [score["passed_weight"], score["applied_weight"]] == expect["score"]
    if "decided_by_contains" in expect:
        assert expect["decided_by_contains"] in record["decided_by"]
    rows = {row["name"]: row for row in record["checks"]}
    if expect.get("checks") == {}:
        assert rows == {}
    for name, outcome in expect.get("checks", {}).items():
        assert rows[name]["outcome"] == outcome, (name, rows[name]["reason"])
    for name, path in expect.get("paths", {}).items():
        assert rows[name]["path"] == path, (name, rows[name]["reason"])
    for name, declared in expect.get("declared", {}).items():
        assert rows[name]["declared"] is declared, name
    for name, text in expect.get("reasons", {}).items():
        assert text in rows[name]["reason"], (name, rows[name]["reason"])
    if "determination" in expect:
        determination = determine_call(
            result, now=at, response_bytes=digested_bytes(envelope["body"])
        )
        assert determination.verdict is Verdict(expect["determination"])


# ----------------------------------------------------------------------------- the schema stage


def run_schema(data: dict[str, Any], case: dict[str, Any]) -> None:
    document: dict[str, Any] = {"tool": "t", "version": "1", "output_schema": case["schema"]}
    if case.get("format_assertion"):
        document["format_assertion"] = True
    schema = register_contract(document).schema
    assert schema is not None
    paths = schema.paths()
    assert "reference" in paths
    for name, check in paths.items():
        violation = check(case["document"])
        assert (violation is None) is case["valid"], (name, violation)
        if violation is not None and "path" in case:
            assert violation.pointer == case["path"], (name, violation)


# ----------------------------------------------------------------------------- registration


def run_registration(data: dict[str, Any], case: dict[str, Any]) -> None:
    def register() -> None:
        if case["what"] == "contract":
            register_contract(case["document"])
            return
        contract = register_contract(data["contract"])
        document = case.get("document", {**data["policy"], **case.get("patch", {})})
        register_policy(document, contract)

    if case["expect"] == "ok":
        register()
        return
    with pytest.raises(CriteriaError) as caught:
        register()
    assert caught.value.code == case["expect"], caught.value.message


# ----------------------------------------------------------------------------- sampling


def run_sampling(data: dict[str, Any], case: dict[str, Any]) -> None:
    rate = Fraction(case["rate"])
    chosen = sampled(case["call_id"], case["policy"], case["version"], rate)
    assert chosen is case["expect"]


# ----------------------------------------------------------------------------- quality


def _terms(raw: dict[str, Any]) -> QualityTerms:
    return QualityTerms(
        declared_failure_rate=Fraction(raw["declared_failure_rate"]),
        sample_gate=raw["sample_gate"],
        window=timedelta(days=raw["window_days"]),
        confidence=Fraction(raw["confidence"]),
        penalty_minor=raw.get("penalty_minor", 0),
    )


def _proposal(at: datetime) -> PenaltyProposal:
    window = QualityWindow("prov", at - timedelta(days=30), at, passes=0, fails=20)
    terms = QualityTerms(Fraction(1, 10), 10, timedelta(days=30))
    proposal = assess_penalty(window, terms, at).proposal
    assert proposal is not None
    return proposal


def run_quality(data: dict[str, Any], case: dict[str, Any]) -> None:
    op = case["op"]
    if op == "window":
        observations = [
            Observation(
                provider=o.get("provider", "prov"),
                call_id=f"c{i}",
                at=_time(o["at"]),
                verdict=None if o["verdict"] is None else CallVerdict(o["verdict"]),
                enforced=o["enforced"],
                error_kind=o.get("error"),
            )
            for i, o in enumerate(case["observations"])
        ]
        window = quality_window(
            observations, "prov", _time(case["at"]), timedelta(days=case["window_days"])
        )
        expect = case["expect"]
        for key in ("pass", "fail", "not_counted", "request_errors", "system_errors"):
            if key in expect:
                assert window.to_dict()[key] == expect[key], key
        rate = window.failure_rate
        if expect["failure_rate"] is None:
            assert rate is None
        else:
            assert rate == Fraction(expect["failure_rate"])
    elif op == "tail":
        got = binomial_upper_tail(case["n"], case["k"], Fraction(case["p"]))
        assert got == Fraction(case["expect"])
    elif op == "assess":
        at = _time(case["at"])
        terms = _terms(case["terms"])
        window = QualityWindow(
            "prov", at - terms.window, at, passes=case["pass"], fails=case["fail"]
        )
        assessment = assess_penalty(window, terms, at)
        expect = case["expect"]
        assert (assessment.proposal is not None) is expect["proposed"], assessment.reason
        if "reason_contains" in expect:
            assert expect["reason_contains"] in assessment.reason
        if assessment.proposal is not None:
            shown = assessment.proposal.to_dict()
            for key in ("enforceable_at", "lapses_at", "penalty_minor"):
                if key in expect:
                    assert shown[key] == expect[key], key
            if "p_value" in expect:
                assert assessment.proposal.p_value == Fraction(expect["p_value"])
    else:  # lifecycle
        proposal = _proposal(_time(case["proposed_at"]))
        for step in case["steps"]:
            at = _time(step["at"])
            if "status" in step:
                assert proposal.status(at).value == step["status"], step
            for action, verb in (("enforce", enforce), ("withdraw", withdraw)):
                if action not in step:
                    continue
                if step[action] == "ok":
                    proposal = verb(proposal, at)
                else:
                    with pytest.raises(Error) as caught:
                        verb(proposal, at)
                    assert caught.value.code == step[action]


# ----------------------------------------------------------------------------- kernel checks

_RESPONSE_DIGEST = "sha256:" + "ab" * 32


def run_kernel(data: dict[str, Any], case: dict[str, Any]) -> None:
    row = CheckRow("check", "rule", case["authority"], Outcome(case["outcome"]), "why")
    check = kernel_check(row, _RESPONSE_DIGEST)
    expect = case["expect"]
    assert check.verdict is Verdict(expect["verdict"])
    assert check.authority.value == case["authority"]
    assert check.evidence == (_RESPONSE_DIGEST,)
    counted = effective(check.verdict, check.authority, None, DEFAULT_POLICY)
    assert counted is Verdict(expect["counts_as"])
    if row.outcome is not Outcome.PASS:  # a check that did not pass is never shown as passed
        assert check.verdict is not Verdict.PASS


RUNNERS: dict[str, Callable[[dict[str, Any], dict[str, Any]], None]] = {
    "rule": run_rule,
    "verdict": run_verdict,
    "schema": run_schema,
    "registration": run_registration,
    "sampling": run_sampling,
    "quality": run_quality,
    "kernel": run_kernel,
}


@pytest.mark.parametrize(("data", "case"), _cases())
def test_vector(data: dict[str, Any], case: dict[str, Any]) -> None:
    """Each spec vector holds: the runner for its file's kind checks every expectation."""
    RUNNERS[data["kind"]](data, case)


def test_every_vector_file_has_a_runner() -> None:
    """A vector file of an unknown kind would silently test nothing, so it is an error."""
    kinds = {json.loads(p.read_text())["kind"] for p in VECTORS.glob("calls_*.json")}
    assert kinds == set(RUNNERS)
