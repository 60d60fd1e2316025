"""What judging an answer costs on the event loop and apart, and what a bound's worst case costs.

Run: python benchmarks/judging.py [--calls 2000]. Prints, in one run:

- the demo weather tool's answer judged here (``verify_call``) and the same answer judged in a
  worker process (``adjudge.app.isolation``), each per answer, and their ratio: what an answer
  whose judging has no bound pays for its worker;
- the worst case the bound lets onto the event loop: a schema of plain nodes that all apply to
  every value of an answer sized so that its bound is exactly ``IN_PROCESS_STEPS``, and the
  time one step costs there; then each kind of rule at its worst per byte (the figures the
  bound's rule costs come from);
- the case the bound sends apart that would have held the loop: ``^(a|a)*$`` on 22 ``a`` and a
  ``!`` judged here (its time doubles with every ``a``), beside the same answer stopped apart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from datetime import UTC, datetime
from functools import partial
from typing import Any

from adjudge.app.demo import WEATHER_POLICY, weather_tool
from adjudge.app.isolation import Isolation, JudgingFailed
from adjudge.calls import parse_tool, register_contract, register_policy, verify_call
from adjudge.calls.bounds import IN_PROCESS_STEPS
from adjudge.calls.judging import JudgingJob, judge
from adjudge.calls.verify import CallRequest, ProviderResponse, judging_weight

AT = datetime(2026, 12, 6, tzinfo=UTC)
SLOW = "^(a|a)*$"
CRAFTED = "a" * 40 + "!"
FORECAST = {
    "latitude": 52.52,
    "longitude": 13.41,
    "issued": "2026-12-06T06:00:00Z",
    "daily": [
        {
            "date": f"2026-12-{6 + d:02d}",
            "temperature_2m_max": 5.0 + d,
            "temperature_2m_min": -1.0,
            "precipitation_probability_max": 40,
        }
        for d in range(7)
    ],
}


def per_answer_us(fn: Any, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


async def apart_us(isolation: Isolation, job: JudgingJob, calls: int) -> float:
    await isolation.run("bench", judge, job)  # the worker started and the documents parsed
    started = time.perf_counter()
    for _ in range(calls):
        await isolation.run("bench", judge, job)
    return (time.perf_counter() - started) / calls * 1e6


def demo(calls: int) -> None:
    """The demo's answer judged here and apart."""
    doc = weather_tool("https://weather.example/v1")
    tool = parse_tool(doc)
    policy = register_policy(WEATHER_POLICY, tool.contract)
    request = CallRequest("bench-1", "sky", "weather_forecast", {"city": "berlin"}, 1, "USDC", AT)
    response = ProviderResponse(status="ok", body=FORECAST)
    here = per_answer_us(lambda: verify_call(tool.contract, policy, request, response, AT), calls)
    contract = doc["contract"] | {"tool": "weather_forecast"}
    job = JudgingJob(contract, WEATHER_POLICY, request, response, AT)
    isolation = Isolation(workers=2, seconds=5.0)
    try:
        apart = asyncio.run(apart_us(isolation, job, calls))
    finally:
        isolation.close()
    weight = judging_weight(tool.contract, policy)
    print(f"demo answer ({len(json.dumps(FORECAST))} bytes, bound {weight} steps a value):")
    print(f"  judged here   {here:8.1f} µs")
    print(f"  judged apart  {apart:8.1f} µs  ({apart / here:.1f}× here)")


def worst_bounded() -> None:
    """The worst a bound lets onto the loop: every node applies to every value."""
    schema = {"type": "array", "items": {"allOf": [{"type": "number"}] * 40}}
    contract = register_contract({"tool": "t", "version": "1", "output_schema": schema})
    bound = judging_weight(contract, None)
    assert bound is not None
    values = IN_PROCESS_STEPS // bound // 2  # "1," is two bytes a value
    answer = ProviderResponse(status="ok", body=[1] * values)
    worst = per_answer_us(lambda: verify_call(contract, None, request_for(), answer, AT), 20)
    print(f"worst case on the loop ({values} values × {bound} steps a value):")
    print(f"  {worst / 1000:8.2f} ms, {worst * 1000 / IN_PROCESS_STEPS:.2f} ns a bounded step")


RULE_KINDS: dict[str, tuple[dict[str, Any], list[Any]]] = {
    "min_results": ({"min": 1}, [1] * 30_000),
    "valid_url": ({}, ["a"] * 30_000),
    "numeric_range": ({"min": 0, "max": 5}, [1] * 30_000),
    "freshness": ({"max_age_seconds": 10**9}, ["2026-12-06T00:00:00Z"] * 30_000),
    "no_duplicates": ({}, list(range(30_000))),
}


def rules_worst() -> None:
    """Each kind of rule at its worst per byte: ten rules of the kind over a list of small
    values, against the steps the bound counts for them (the figure ``_RULE_STEPS`` holds)."""
    contract = register_contract({"tool": "t", "version": "1", "output_schema": {"type": "object"}})
    print("rules, ten of a kind over a list of small values:")
    for kind, (params, items) in RULE_KINDS.items():
        rules = [{"kind": kind, "name": f"r{n}", "path": "items", **params} for n in range(10)]
        policy = register_policy(
            {
                "policy": "p",
                "version": 1,
                "tool": "t",
                "checks": ["quality_rules"],
                "clauses": [{"match": "failures_at_least", "count": 1, "verdict": "FAIL"}],
                "rules": rules,
            },
            contract,
        )
        body = {"items": items}
        answer = ProviderResponse(status="ok", body=body)
        steps = (judging_weight(contract, policy) or 0) * len(
            json.dumps(body, separators=(",", ":"))
        )
        took = per_answer_us(partial(verify_call, contract, policy, request_for(), answer, AT), 3)
        print(f"  {kind:14} {took / 1000:8.1f} ms, {took * 1000 / steps:5.2f} ns a bounded step")


def unbounded() -> None:
    """A backtracking pattern: judged here, its time doubles with each character; apart, it
    is stopped at its limit."""
    slow_doc = {"tool": "t", "version": "1", "output_schema": {"type": "string", "pattern": SLOW}}
    slow = register_contract(slow_doc)
    text = ProviderResponse(status="ok", body="a" * 22 + "!")
    held = per_answer_us(lambda: verify_call(slow, None, request_for(), text, AT), 1)
    stopped = Isolation(workers=2, seconds=0.2)
    quick = JudgingJob(slow_doc, None, request_for(), ProviderResponse("ok", body="aa"), AT)
    crafted = JudgingJob(slow_doc, None, request_for(), ProviderResponse("ok", body=CRAFTED), AT)
    try:
        asyncio.run(stopped.run("bench", judge, quick))  # started, as in a running service
        started = time.perf_counter()
        with contextlib.suppress(JudgingFailed):
            asyncio.run(stopped.run("bench", judge, crafted))
        cut = time.perf_counter() - started
    finally:
        stopped.close()
    print("a backtracking pattern (no bound):")
    print(f"  22 a judged here: {held / 1000:8.1f} ms (doubling with each a; 40: days)")
    print(f"  40 a judged apart, stopped at its limit of 0.2 s: {cut:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    calls = parser.parse_args().calls
    demo(calls)
    worst_bounded()
    rules_worst()
    unbounded()


def request_for() -> CallRequest:
    return CallRequest("bench-2", "p", "t", {}, 1, "USDC", AT)


if __name__ == "__main__":
    main()
