"""Invariants of paid-call verification, checked with hypothesis over generated calls."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import jmespath
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.calls import (
    CallVerdict,
    Outcome,
    Payment,
    binomial_tail_test,
    binomial_upper_tail,
    determine_call,
    parse_request,
    parse_response,
    quality,
    quality_window,
    register_contract,
    register_policy,
    sampled,
    verify_call,
)
from adjudge.calls.contract import (
    DroppedElement,
    Expression,
    ExpressionError,
    compile_expression,
)
from adjudge.calls.judging import JudgingJob, judge
from adjudge.calls.quality import EXACT_BITS, Observation, _exact_tail_test
from adjudge.calls.verify import digested_bytes
from adjudge.kernel import Verdict

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

CONTRACT_DOCUMENT: dict[str, Any] = {
    "tool": "t",
    "version": "1",
    "response_mapping": {"items": "data.items", "meta": "meta"},
    "output_schema": {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "object"}}},
    },
}
CONTRACT = register_contract(CONTRACT_DOCUMENT)

# Rules that can pass, fail, not apply or be misapplied, depending on the generated data.
RULES: list[dict[str, Any]] = [
    {"kind": "min_results", "name": "some", "path": "items", "min": 2},
    {"kind": "valid_url", "name": "urls", "path": "items", "field": "url"},
    {
        "kind": "numeric_range",
        "name": "scores",
        "path": "items",
        "field": "score",
        "min": 0,
        "max": 1,
    },
    {"kind": "numeric_range", "name": "titles", "path": "items", "field": "title", "max": 5},
    {"kind": "freshness", "name": "fresh", "path": "items", "field": "at", "max_age_seconds": 3600},
    {"kind": "no_duplicates", "name": "distinct", "path": "items", "key": "url"},
    {"kind": "required_values", "name": "ids", "path": "items", "fields": ["id"]},
    {"kind": "min_results", "name": "hits", "path": "hits", "min": 1, "when": "request.strict"},
]
CLAUSES: list[dict[str, Any]] = [
    {"match": "veto", "check": "schema", "verdict": "FAIL"},
    {"match": "failures_at_least", "count": 1, "verdict": "FAIL"},
    {"match": "failure_fraction_at_least", "fraction": "1/2", "verdict": "FAIL"},
    {"match": "votes_fewer_than", "count": 2, "verdict": "DEGRADED"},
    {"match": "failures_at_least", "count": 1, "verdict": "PASS"},
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["", "x", "https://a.example/1", "https://a.example/2", "not a url"]),
    st.sampled_from(["2026-11-29T11:30:00Z", "2026-11-01T00:00:00Z", "2026-11-29T11:30:00"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "id", "url"]), inner, max_size=4),
    ),
    max_leaves=12,
)
items = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "id": scalars,
            "url": scalars,
            "score": scalars,
            "title": scalars,
            "at": scalars,
        },
    ),
    max_size=5,
)
bodies = st.one_of(
    st.fixed_dictionaries({"data": st.fixed_dictionaries({"items": items})}),
    st.fixed_dictionaries({"data": st.fixed_dictionaries({"items": scalars})}),
)


@st.composite
def calls(draw: st.DrawFn, mode: str = "enforce") -> dict[str, Any]:
    """A whole call: a policy drawn from the rule and clause tables, a body, a request."""
    rules = draw(
        st.lists(st.sampled_from(RULES), min_size=1, max_size=5, unique_by=lambda r: r["name"])
    )
    checks = draw(st.sampled_from([["schema", "quality_rules"], ["quality_rules"]]))
    clauses = draw(st.lists(st.sampled_from(CLAUSES), min_size=1, max_size=4))
    clauses = [c for c in clauses if c.get("check", "schema") in checks or c["match"] != "veto"]
    if not clauses:
        clauses = [CLAUSES[1]]
    policy = {
        "policy": "p",
        "version": draw(st.integers(1, 3)),
        "tool": "t",
        "mode": mode,
        "checks": checks,
        "threshold": draw(st.sampled_from(["1", "0.5", "2/3"])),
        "rules": rules,
        "clauses": clauses,
    }
    if draw(st.booleans()):
        policy["empty_result"] = {
            "path": "items",
            "on_empty": draw(st.sampled_from(["accept", "judge"])),
        }
    request = {
        "call_id": draw(st.text("abc123", min_size=1, max_size=6)),
        "provider": "prov",
        "tool": "t",
        "arguments": {"strict": draw(st.booleans())},
        "price": {"amount_minor": draw(st.integers(0, 10_000)), "currency": "EUR"},
    }
    return {"policy": policy, "request": request, "body": draw(bodies)}


def _verify(call: dict[str, Any]) -> Any:
    policy = register_policy(call["policy"], CONTRACT)
    request = parse_request(call["request"])
    response = parse_response({"status": "ok", "body": call["body"]})
    return verify_call(CONTRACT, policy, request, response, AT)


@settings(max_examples=300, deadline=None)
@given(calls())
def test_a_misapplied_rule_never_causes_a_refund(call: dict[str, Any]) -> None:
    """Whenever a rule is misapplied, the call is MISAPPLIED and never refunded or struck."""
    result = _verify(call)
    if any(row.outcome is Outcome.MISAPPLIED for row in result.rows):
        assert result.verdict is CallVerdict.MISAPPLIED
        assert result.effect.payment is not Payment.REFUND
        assert result.effect.strike is False


@settings(max_examples=200, deadline=None)
@given(calls(mode="shadow"))
def test_a_shadow_policy_never_strikes(call: dict[str, Any]) -> None:
    """A shadow policy records its verdict but always settles and never strikes."""
    result = _verify(call)
    assert result.effect.strike is False
    assert result.effect.payment is Payment.SETTLE
    assert result.effect.enforced is False


@settings(max_examples=200, deadline=None)
@given(calls(), st.sampled_from(["root", "other", "prov ", "Prov"]))
def test_a_policy_not_on_the_providers_word_judges_as_shadow(
    call: dict[str, Any], registrant: str
) -> None:
    """An enforcing policy another account registered over the provider's tool records the
    verdict, rows and what it would have carried that the provider's own gives, but settles and
    never strikes; the record says it acted as shadow, and who registered it. Registered by the
    provider itself, it acts as when no registrant is named."""
    policy = register_policy(call["policy"], CONTRACT)
    request = parse_request(call["request"])
    response = parse_response({"status": "ok", "body": call["body"]})
    own = verify_call(CONTRACT, policy, request, response, AT, registered_by="prov")
    assert own.to_dict() == _verify(call).to_dict()
    stead = verify_call(CONTRACT, policy, request, response, AT, registered_by=registrant)
    assert (stead.verdict, stead.rows, stead.decided_by) == (own.verdict, own.rows, own.decided_by)
    assert (stead.effect.payment, stead.effect.strike, stead.effect.enforced) == (
        Payment.SETTLE,
        False,
        False,
    )
    assert (stead.effect.table_payment, stead.effect.table_strike) == (
        own.effect.payment,
        own.effect.strike,
    )
    named = stead.to_dict()["policy"]
    assert (named["mode"], named["acts_as"], named["registered_by"]) == (
        "enforce",
        "shadow",
        registrant,
    )


@settings(max_examples=50, deadline=None)
@given(calls(), st.sampled_from(["root", "prov"]))
def test_a_judging_worker_reads_who_registered_the_policy(
    call: dict[str, Any], registrant: str
) -> None:
    """An answer judged apart, from the documents a worker is sent, acts on who registered the
    policy as when judged in the service's own process."""
    policy = register_policy(call["policy"], CONTRACT)
    request = parse_request(call["request"])
    response = parse_response({"status": "ok", "body": call["body"]})
    here = verify_call(CONTRACT, policy, request, response, AT, registered_by=registrant)
    job = JudgingJob(
        CONTRACT_DOCUMENT, call["policy"], request, response, AT, registered_by=registrant
    )
    apart, _shape = judge(job)
    assert replace(apart, policy=policy).to_dict() == here.to_dict()


@settings(max_examples=100, deadline=None)
@given(calls())
def test_a_withdrawn_policy_never_penalizes(call: dict[str, Any]) -> None:
    """A withdrawn policy's calls are DEGRADED: settled, never refunded or struck."""
    call["policy"]["withdrawn_at"] = "2026-01-01T00:00:00Z"
    result = _verify(call)
    assert result.verdict is CallVerdict.DEGRADED
    assert (result.effect.payment, result.effect.strike) == (Payment.SETTLE, False)


@settings(max_examples=200, deadline=None)
@given(calls())
def test_the_verdict_is_deterministic(call: dict[str, Any]) -> None:
    """The same inputs give the same record, whatever the order of the body's keys."""
    first = _verify(call).to_dict()
    reordered = dict(call, body=dict(reversed(list(call["body"].items()))))
    assert _verify(call).to_dict() == first
    assert _verify(reordered).to_dict() == first


@settings(max_examples=200, deadline=None)
@given(calls())
def test_only_deterministic_passes_carry_pass_and_nothing_unrun_is_passed(
    call: dict[str, Any],
) -> None:
    """A PASS has a deterministic pass vote; after a shape failure no later check passes."""
    result = _verify(call)
    if result.verdict is CallVerdict.PASS:
        assert any(
            r.declared and r.authority == "deterministic" and r.outcome is Outcome.PASS
            for r in result.rows
        )
    shape = result.rows[0]
    if shape.outcome is Outcome.FAIL and shape.declared:
        assert all(r.outcome is Outcome.NOT_RUN for r in result.rows[1:])


CONTRACT_WITHOUT_SCHEMA = register_contract(
    {"tool": "t", "version": "1", "response_mapping": {"items": "data.items", "meta": "meta"}}
)


@settings(max_examples=300, deadline=None)
@given(calls())
def test_an_undeclared_schema_never_changes_the_verdict(call: dict[str, Any]) -> None:
    """Only declared checks count: a schema the policy does not declare can neither pass, fail
    nor suppress anything, so the call is decided exactly as if the contract had no schema."""
    call["policy"]["checks"] = ["quality_rules"]
    call["policy"]["clauses"] = [c for c in call["policy"]["clauses"] if c["match"] != "veto"] or [
        CLAUSES[1]
    ]
    with_schema = _verify(call)
    policy = register_policy(call["policy"], CONTRACT_WITHOUT_SCHEMA)
    without = verify_call(
        CONTRACT_WITHOUT_SCHEMA,
        policy,
        parse_request(call["request"]),
        parse_response({"status": "ok", "body": call["body"]}),
        AT,
    )
    assert with_schema.verdict is without.verdict
    assert with_schema.effect == without.effect
    assert with_schema.rows[1:] == without.rows[1:]
    assert not with_schema.rows[0].declared


@settings(max_examples=200, deadline=None)
@given(bodies)
def test_an_unverified_call_never_reads_as_pass(body: Any) -> None:
    """A call with no policy is UNVERIFIED, and its kernel determination is never PASS."""
    request = parse_request(
        {
            "call_id": "c",
            "provider": "prov",
            "tool": "t",
            "price": {"amount_minor": 1, "currency": "EUR"},
        }
    )
    result = verify_call(
        CONTRACT, None, request, parse_response({"status": "ok", "body": body}), AT
    )
    assert result.verdict is CallVerdict.UNVERIFIED
    determination = determine_call(result, now=AT, response_bytes=digested_bytes(body))
    assert determination.verdict is not Verdict.PASS


observations = st.builds(
    Observation,
    provider=st.sampled_from(["prov", "other"]),
    call_id=st.just("c"),
    at=st.integers(-40, 5).map(lambda d: AT + timedelta(days=d)),
    verdict=st.one_of(st.none(), st.sampled_from(list(CallVerdict))),
    enforced=st.booleans(),
    error_kind=st.sampled_from([None, None, "request_error", "system_error"]),
)


@given(st.lists(observations, max_size=30))
def test_the_failure_rate_formula(obs: list[Observation]) -> None:
    """Rate = FAIL / (PASS + FAIL) over enforced observations; no observations, no rate."""
    window = quality_window(obs, "prov", AT, timedelta(days=30))
    counted = [
        o
        for o in obs
        if o.provider == "prov"
        and AT - timedelta(days=30) < o.at <= AT
        and o.error_kind is None
        and o.enforced
        and o.verdict in (CallVerdict.PASS, CallVerdict.FAIL)
    ]
    fails = sum(1 for o in counted if o.verdict is CallVerdict.FAIL)
    if not counted:
        assert window.failure_rate is None
    else:
        assert window.failure_rate == Fraction(fails, len(counted))


@given(
    st.lists(
        observations.filter(
            lambda o: o.verdict not in (CallVerdict.PASS, CallVerdict.FAIL) or not o.enforced
        ),
        max_size=30,
    )
)
def test_no_observations_never_yield_a_rate(obs: list[Observation]) -> None:
    """Calls that are not enforced PASS or FAIL never produce a rate, not even 0."""
    assert quality_window(obs, "prov", AT, timedelta(days=30)).failure_rate is None


@given(st.integers(0, 60), st.data())
def test_the_binomial_tail_matches_a_direct_sum(n: int, data: st.DataObject) -> None:
    """The exact tail agrees with a floating-point sum of the binomial terms."""
    k = data.draw(st.integers(0, n + 1))
    p = Fraction(data.draw(st.integers(0, 100)), 100)
    direct = sum(
        math.comb(n, i) * float(p) ** i * (1 - float(p)) ** (n - i) for i in range(k, n + 1)
    )
    assert math.isclose(float(binomial_upper_tail(n, k, p)), direct, abs_tol=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 80), st.data())
def test_the_early_stopping_test_decides_like_the_full_sum(n: int, data: st.DataObject) -> None:
    """Stopping early never changes the decision, and the bounds hold the exact p-value."""
    k = data.draw(st.integers(0, n + 1))
    p = Fraction(data.draw(st.integers(0, 50)), 50)
    alpha = Fraction(data.draw(st.integers(0, 20)), 100)
    exact = binomial_upper_tail(n, k, p)
    test = binomial_tail_test(n, k, p, alpha)
    assert test.rejected is (exact <= alpha)
    assert test.p_low <= float(exact) * (1 + 1e-12) + 1e-300
    assert float(exact) <= test.p_high * (1 + 1e-12) + 1e-300


def test_a_large_window_is_decided_quickly() -> None:
    """A busy provider's window (200,000 calls) is decided exactly without summing every term."""
    test = binomial_tail_test(200_000, 4_600, Fraction(1, 50), Fraction(1, 20))
    assert test.rejected
    assert test.p_high < 0.05
    not_enough = binomial_tail_test(200_000, 4_020, Fraction(1, 50), Fraction(1, 20))
    assert not not_enough.rejected


@settings(max_examples=60, deadline=None)
@given(st.integers(5_000, 12_000), st.integers(16, 200), st.data())
def test_a_busy_windows_estimate_decides_like_the_exact_sum(
    n: int, denominator: int, data: st.DataObject
) -> None:
    """Past EXACT_BITS the floating-point estimate decides; it decides as the integer sum does,
    and its bounds hold the exact p-value."""
    p = Fraction(data.draw(st.integers(1, denominator - 1)), denominator)
    mode = math.floor((n + 1) * p)
    k = data.draw(st.integers(min(n, mode + 1), min(n, mode + 4 * math.isqrt(n) + 2)))
    alpha = Fraction(data.draw(st.integers(1, 999)), 1000)
    test = binomial_tail_test(n, k, p, alpha)
    exact = _exact_tail_test(n, k, p, alpha)
    assert test.rejected is exact.rejected
    assert test.p_low <= exact.p_high and exact.p_low <= test.p_high


@pytest.mark.parametrize(
    ("n", "k", "p"), [(5_000, 280, Fraction(1, 20)), (4_000, 60, Fraction(1, 100))]
)
def test_a_p_value_at_alpha_is_decided_by_the_exact_sum(n: int, k: int, p: Fraction) -> None:
    """Where the estimate cannot tell (alpha the p-value itself, or a hair below it), the exact
    sum decides: at alpha, rejected; below it by one part in 10^30, not."""
    assert n * p.denominator.bit_length() > EXACT_BITS  # the estimate is tried first
    tail = binomial_upper_tail(n, k, p)
    assert binomial_tail_test(n, k, p, tail).rejected
    assert not binomial_tail_test(n, k, p, tail * (1 - Fraction(1, 10**30))).rejected


def test_a_busy_windows_test_costs_no_megabit_arithmetic() -> None:
    """A window of a million observations is decided from the estimate: the integer sum is
    not run (it multiplied numbers of 4.3 million bits, once per term)."""
    ran = []
    real = quality._exact_tail_test

    def exact(*args: Any) -> Any:
        ran.append(args)
        return real(*args)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(quality, "_exact_tail_test", exact)
        assert not binomial_tail_test(1_000_000, 50_200, Fraction(1, 20), Fraction(1, 20)).rejected
        assert binomial_tail_test(1_000_000, 50_600, Fraction(1, 20), Fraction(1, 20)).rejected
    assert ran == []


def test_sampling_selects_about_the_rate() -> None:
    """Over many call ids the reproducible draw selects close to the configured rate."""
    chosen = sum(sampled(f"call-{i}", "p", 1, Fraction(1, 4)) for i in range(8000))
    assert abs(chosen / 8000 - 0.25) < 0.02


EXPRESSIONS = [
    "a",
    "a.b",
    "a[0]",
    "a[-1].b",
    "a[*].b",
    "a[*].{x: b, y: id}",
    "{x: a, y: b.url}",
    "[a, b]",
    "a[]",
    "*.a",
    "a[?b]",
    "a[?id == 'x'].url",
    "a == b",
    "a != `1`",
    "a < `1`",
    "a || b",
    "a && b",
    "!a",
    "a[1:3]",
    "a | [0]",
    "@",
    "`true`",
]


@pytest.mark.parametrize("source", EXPRESSIONS)
@settings(max_examples=60, deadline=None)
@given(data=json_values)
def test_compiled_expressions_answer_like_the_interpreter(source: str, data: Any) -> None:
    """The compiled closures give the interpreter's answer, or both fail."""
    expression = compile_expression(source, what="x", code="X")
    assert isinstance(expression, Expression)
    assert expression.compiled
    try:
        expected: Any = ("ok", jmespath.search(source, data))
    except Exception as exc:
        expected = ("error", type(exc).__name__)
    try:
        got: Any = ("ok", expression.search(data))
    except Exception:
        got = ("error", expected[1] if expected[0] == "error" else "unexpected")
    assert got == expected


@pytest.mark.parametrize("source", EXPRESSIONS)
@settings(max_examples=60, deadline=None)
@given(data=json_values)
def test_strict_mapping_expressions_drop_like_the_strict_interpreter(
    source: str, data: Any
) -> None:
    """At the mapping boundary a projection that drops a null element is refused, and the
    compiled closures refuse exactly where the interpreter, made strict, refuses."""
    strict = compile_expression(source, what="x", code="X", strict=True)
    assert strict.compiled
    lenient = compile_expression(source, what="x", code="X")

    def answer(run: Any) -> Any:
        try:
            return ("ok", run(data))
        except DroppedElement:
            return ("dropped",)
        except ExpressionError:
            return ("error",)

    compiled = answer(strict.search)
    interpreted = answer(strict.interpret)
    assert compiled == interpreted
    if compiled[0] == "ok":  # nothing was dropped: the strict answer is JMESPath's own
        assert compiled == answer(lenient.search)


@pytest.mark.parametrize(
    ("source", "data"),
    [
        ("a[*]", {"a": [1, None]}),
        ("a[*].b", {"a": [{"b": 1}, {"c": 2}]}),
        ("a[]", {"a": [[1], None]}),
        ("*.b", {"x": {"b": 1}, "y": {}}),
        ("a[?k].b", {"a": [{"k": True, "b": 1}, {"k": True}]}),
        ("sort_by(a, &k)[*].b", {"a": [{"k": 2, "b": 1}, {"k": 1}]}),
    ],
)
def test_a_projection_that_drops_an_element_is_refused(source: str, data: Any) -> None:
    """`[null, x]` projected is `[x]` in JMESPath; at the mapping boundary that is refused."""
    expression = compile_expression(source, what="x", code="X", strict=True)
    with pytest.raises(DroppedElement):
        expression.search(data)
    assert compile_expression(source, what="x", code="X").search(data) is not None


def test_a_filter_is_not_a_drop() -> None:
    """Elements a filter leaves out were selected out, not lost: no refusal."""
    expression = compile_expression("a[?k].b", what="x", code="X", strict=True)
    assert expression.search({"a": [{"k": False}, {"k": True, "b": 2}]}) == [2]


any_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(any_json)
def test_the_digest_fast_path_gives_rfc8785s_bytes(value: Any) -> None:
    """A document's digest bytes are RFC 8785's whatever path they take (the receipts' encoder
    for float-free I-JSON, ``rfc8785`` for the rest), and sorted compact JSON only where RFC 8785
    has no form (an integer beyond I-JSON)."""
    try:
        expected = bytes(rfc8785.dumps(value))
    except rfc8785.CanonicalizationError:
        expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        expected = expected.encode()
    assert digested_bytes(value) == (value.encode() if isinstance(value, str) else expected)
