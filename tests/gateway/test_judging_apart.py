"""A provider's programs cannot hold the gateway: an answer whose judging has no bound on its
work is judged in a worker process killed at a time limit, and judged there exactly as at home.

Before, a contract's pattern ``^(a|a)*$`` and an answer of forty ``a`` and a ``!`` held the
service's event loop (the engine cannot be interrupted) for 2^40 steps: every other request of
every account waited. Each test drives the served gateway over loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from copy import deepcopy
from typing import Any

import pytest

from adjudge.app.isolation import Isolation
from adjudge.calls import parse_response, parse_tool, register_policy, verify_call
from adjudge.calls.verify import CallRequest, judging_weight
from adjudge.store import Store
from support import http
from support.audit import audit
from support.harness import FUNDS
from support.weather import POLICY, World, forecast, tool, weather_world

#: A pattern that backtracks exponentially on a run of "a" that ends in "!".
SLOW = "^(a|a)*$"


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    with weather_world(store) as w:
        isolation = Isolation(workers=2, seconds=1.0, queue_seconds=5.0)
        w.h.app.gateway.isolation = isolation
        try:
            yield w
        finally:
            isolation.close()
    audit(store)


def patterned(world: World, wsgi_server: Any, issued: str, *, city: str | None = None) -> str:
    """A provider whose contract asks ``issued`` to match :data:`SLOW`, answering ``issued``
    (and whose input schema asks the city to match ``city``, if given)."""
    data = json.dumps({**forecast(world.script, 3), "issued": issued}).encode()

    def answer(_environ: Any, start: Any) -> list[bytes]:
        start("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    made = world.h.app.accounts.create(None, "regexy", ["provider"]).value["api_key"]
    world.h.keys["regexy"] = made
    doc = tool(wsgi_server(answer) + "/v1", provider_id="regexy")
    doc["name"] = "regexy_forecast"
    schema = deepcopy(doc["contract"]["output_schema"])
    schema["properties"]["issued_at"] = {"type": "string", "pattern": SLOW}
    doc["contract"] = {**doc["contract"], "tool": "regexy_forecast", "output_schema": schema}
    if city is not None:
        doc["input_schema"]["properties"]["city"]["pattern"] = city
    auth = {"Authorization": f"Bearer {made}"}
    base = f"{world.service}/api/v1/tools"
    r = http.post(f"{base}/callable", json={"tool": doc}, headers=auth, timeout=30)
    assert r.status_code == 201, r.text
    policy = {**deepcopy(POLICY), "tool": "regexy_forecast"}
    r = http.post(f"{base}/regexy_forecast/policies", json={"policy": policy}, headers=auth)
    assert r.status_code == 201, r.text
    return "regexy_forecast"


def call(world: World, name: str) -> Any:
    return http.post(
        f"{world.service}/api/v1/gateway/calls",
        json={"tool": name, "arguments": {"city": "berlin"}},
        headers={"Authorization": f"Bearer {world.h.keys['ann']}"},
        timeout=60,
    )


def test_a_backtracking_pattern_ends_its_call_as_the_gateways_own(
    world: World, wsgi_server: Any
) -> None:
    """The answer runs out its time limit in a worker: the call is voided and refunded with a
    receipt, the provider not struck, and the service answers others meanwhile."""
    name = patterned(world, wsgi_server, "a" * 40 + "!")
    answered: list[Any] = []
    caller = threading.Thread(target=lambda: answered.append(call(world, name)))
    caller.start()
    health = [http.get(f"{world.service}/health", timeout=30).status_code for _ in range(3)]
    caller.join(60)
    assert health == [200, 200, 200]
    [r] = answered
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["status"], got["strike"]) == ("voided", False), got
    assert got["receipt"] and world.h.balance("wallet:ann") == FUNDS


def test_an_answer_judged_apart_is_judged_as_at_home(world: World, wsgi_server: Any) -> None:
    """A matching answer under the same contract settles, with the verdict the pure verifier
    gives in this process."""
    name = patterned(world, wsgi_server, "a" * 12)
    r = call(world, name)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["status"] == "settled", got
    stored = world.h.app.gateway.isolation
    assert stored._pool is not None  # it was judged apart

    doc = tool("http://127.0.0.1:1/v1", provider_id="regexy")
    doc["name"] = name
    schema = deepcopy(doc["contract"]["output_schema"])
    schema["properties"]["issued_at"] = {"type": "string", "pattern": SLOW}
    doc["contract"] = {**doc["contract"], "tool": name, "output_schema": schema}
    parsed = parse_tool(doc)
    policy = register_policy({**deepcopy(POLICY), "tool": name}, parsed.contract)
    assert judging_weight(parsed.contract, policy) is None
    body = {**forecast(world.script, 3), "issued": "a" * 12}
    at = parse_response({"status": "ok", "http_status": 200, "body": body})
    request = CallRequest("call-1", "regexy", name, {"city": "berlin"}, 1, "USDC", None)
    here = verify_call(parsed.contract, policy, request, at, world.h.clock.now())
    assert here.verdict is not None
    assert got["verdict"] == here.verdict.value == "PASS"


def test_a_bounded_contract_is_judged_on_the_loop(world: World) -> None:
    """The demo's tool (fields, a multi-select of different members, a plain schema) has a
    bound, so its answers never leave the event loop: no worker is started."""
    r = world.call({"city": "berlin"})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "settled"
    assert world.h.app.gateway.isolation._pool is None


def test_arguments_whose_check_has_no_bound_are_checked_apart(
    world: World, wsgi_server: Any
) -> None:
    """A tool's input schema is its provider's, the arguments its caller's: a caller's crafted
    arguments against a backtracking pattern are refused once their time is up (nothing
    reserved or charged), and arguments that match are checked there and called."""
    name = patterned(world, wsgi_server, "2026-12-06T00:00:00Z", city=SLOW)

    def called(city: str) -> Any:
        return http.post(
            f"{world.service}/api/v1/gateway/calls",
            json={"tool": name, "arguments": {"city": city}},
            headers={"Authorization": f"Bearer {world.h.keys['ann']}"},
            timeout=60,
        )

    r = called("a" * 40 + "!")
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "TOOL_ARGUMENTS_NOT_CHECKED"
    assert world.h.balance("wallet:ann") == FUNDS
    r = called("a" * 12)
    assert r.status_code == 200, r.text
    assert r.json()["receipt"]
