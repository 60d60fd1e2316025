"""The live money path is bound to the word of the party it binds: a tool's rules are its
provider's, a call is charged the price it was quoted, a settled charge waits in the provider's
hold until the report window closes, and a refunded call hands over no free data.

Each test drives the served gateway over loopback, against the provider behind the unmodified
``goassay-provider-verify`` middleware, and the books are audited after each."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from copy import deepcopy
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from adjudge.app import settlement
from adjudge.app.gateway import parsed
from adjudge.app.maintenance import run_once
from adjudge.calls.kept import Kept
from adjudge.calls.verify import digest_of
from adjudge.receipts import canonical_bytes, verify
from adjudge.replay import from_answer, replay
from adjudge.store import Store, calls, gateway
from support import http
from support.audit import audit
from support.bundles import edited
from support.harness import FUNDS
from support.weather import POLICY, PRICE, PROVIDER, World, forecast, tool, weather_world


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    """A served adjudge with a provider behind the real middleware, its tool and policy."""
    with weather_world(store) as w:
        yield w
    audit(store)


def served(
    world: World, who: str, method: str, path: str, body: Any = None, *, key: str | None = None
) -> httpx.Response:
    """Call the served service's REST API as ``who`` (with ``key`` as its Idempotency-Key)."""
    headers = {"Authorization": f"Bearer {world.h.keys[who]}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return http.request(
        method, f"{world.service}/api/v1{path}", json=body, headers=headers, timeout=30
    )


def refusal(r: httpx.Response) -> tuple[int, str]:
    return r.status_code, r.json()["error"]["code"]


def strict(version: int) -> dict[str, Any]:
    """A version of the weather policy that no honest forecast passes (a high above 500 °C)."""
    doc = deepcopy(POLICY)
    doc["version"] = version
    doc["rules"] = [
        {
            "kind": "numeric_range",
            "name": "impossible_highs",
            "path": "days",
            "field": "temp_max_c",
            "min": 500,
            "max": 600,
        }
    ]
    return doc


def new_provider(world: World, name: str) -> str:
    made = world.h.app.accounts.create(None, name, ["provider", "poster"]).value["api_key"]
    world.h.keys[name] = made
    return made


def mcp(
    world: World,
    method: str,
    params: dict[str, Any],
    who: str = "ann",
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One stateless MCP request to the served gateway, as the goassay client sends it (with
    ``headers`` besides)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                **params.get("_meta", {}),
            },
        },
    }
    r = http.post(
        f"{world.service}/",
        json=body,
        headers={
            "Authorization": f"Bearer {world.h.keys[who]}",
            "Accept": "application/json, text/event-stream",
            "Mcp-Method": method,
            "Mcp-Protocol-Version": "2026-07-28",
            **({"Mcp-Name": params["name"]} if "name" in params else {}),
            **(headers or {}),
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


# --- 1. who sets the rules ------------------------------------------------------------------


def test_a_stranger_cannot_set_the_rules_that_judge_a_provider(world: World) -> None:
    """A poster, or another provider, registering a policy no honest answer passes for
    someone else's tool is refused; the tool's own provider and an admin may; calls stay judged
    by the provider's rules, settle, and strike nobody."""
    new_provider(world, "rival")
    path = "/tools/weather_forecast/policies"
    assert refusal(served(world, "pat", "POST", path, {"policy": strict(2)})) == (
        403,
        "ROLE_REQUIRED",
    )
    assert refusal(served(world, "rival", "POST", path, {"policy": strict(2)})) == (
        403,
        "NOT_TOOL_PROVIDER",
    )
    for _ in range(3):
        answer = world.call({"city": "berlin"}).json()
        assert (answer["status"], answer["verdict"]) == ("settled", "PASS"), answer
    quality = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    assert quality["window"]["fail"] == 0
    # The provider itself may register new versions.
    own = served(world, PROVIDER, "POST", path, {"policy": {**POLICY, "version": 2}})
    assert own.status_code == 201, own.text


def test_an_admin_proposes_the_rules_that_judge_a_provider_but_cannot_enforce_them(
    world: World,
) -> None:
    """An enforcing policy refunds a provider's failing calls and strikes it: an admin's is
    refused (403 POLICY_ENFORCE_PROVIDER_ONLY, nothing stored), so the operator's word alone
    never takes a provider's pay (before, an admin registered a policy no honest answer passes
    and every call of the provider was refunded and struck). The same rules in shadow mode are
    registered: calls are judged by them and recorded FAIL, but settle and strike nobody,
    until the provider registers them itself."""
    path = "/tools/weather_forecast/policies"
    r = served(world, "root", "POST", path, {"policy": strict(2)})
    assert refusal(r) == (403, "POLICY_ENFORCE_PROVIDER_ONLY")
    assert PROVIDER in r.json()["error"]["message"]
    assert (
        served(world, "ann", "GET", "/tools/weather_forecast").json()["judged_by"]["version"] == 1
    )
    shadow = {**strict(2), "mode": "shadow"}
    assert served(world, "root", "POST", path, {"policy": shadow}).status_code == 201
    for _ in range(2):
        answer = world.call({"city": "berlin"}).json()
        assert answer["status"] == "settled", answer
        assert (answer["verdict"], answer["payment"], answer["strike"]) == (
            "FAIL",
            "settle",
            False,
        ), answer
    quality = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    assert quality["window"]["fail"] == 0
    # A withdrawal enforces nothing either: an admin may register one.
    gone = {**POLICY, "version": 3, "withdrawn_at": "2020-01-01T00:00:00Z"}
    assert served(world, "root", "POST", path, {"policy": gone}).status_code == 201
    # The provider adopting the strict rules enforces them: its next call is refunded.
    mine = served(world, PROVIDER, "POST", path, {"policy": strict(4)})
    assert mine.status_code == 201, mine.text
    answer = world.call({"city": "berlin"}).json()
    assert (answer["status"], answer["verdict"]) == ("refunded", "FAIL"), answer


def _registered_by(store: Store, version: int, account: str) -> None:
    """Who registered the weather policy's ``version``, rewritten to ``account``: as a
    registration in the provider's stead stored it, before such a registration was refused."""
    with store.write() as tx:
        tx.conn.execute(
            update(calls.call_policies)
            .where(
                calls.call_policies.c.tool == "weather_forecast",
                calls.call_policies.c.version == version,
            )
            .values(registered_by=account)
        )


def test_an_enforcing_policy_stored_in_the_providers_stead_acts_as_shadow(
    world: World, store: Store
) -> None:
    """An enforcing policy an admin registered over sky's tool before that was refused (its row
    names the admin) moves none of sky's money: a call failing it is recorded FAIL and settles,
    nothing refunded or struck, its receipt signing `enforced: false`, and the tool's view says
    the policy acts as shadow and who registered it; its bundle replays the same. The same
    policy on sky's own word refunds and strikes. (The admin's policy refunded and struck.)"""
    path = "/tools/weather_forecast/policies"
    assert served(world, PROVIDER, "POST", path, {"policy": strict(2)}).status_code == 201
    _registered_by(store, 2, "root")
    judged = served(world, "ann", "GET", "/tools/weather_forecast").json()["judged_by"]
    assert (judged["version"], judged["mode"]) == (2, "enforce")
    assert (judged["acts_as"], judged["registered_by"]) == ("shadow", "root"), judged
    listed = mcp(world, "tools/list", {})
    [forecast] = [t for t in listed["tools"] if t["name"] == "weather_forecast"]
    assert forecast["_meta"]["adjudge/policy"] == judged
    answer = world.call({"city": "berlin"}).json()
    assert (answer["status"], answer["verdict"], answer["payment"], answer["strike"]) == (
        "settled",
        "FAIL",
        "settle",
        False,
    ), answer
    assert world.h.balance("wallet:ann") == FUNDS - PRICE
    quality = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    assert quality["window"]["fail"] == 0
    record = served(world, "ann", "GET", f"/calls/{answer['intentId']}").json()["record"]
    assert record["policy"] == {
        "policy": POLICY["policy"],
        "version": 2,
        "mode": "enforce",
        "acts_as": "shadow",
        "registered_by": "root",
    }
    assert record["effect"] == {
        "payment": "settle",
        "strike": False,
        "enforced": False,
        "table_payment": "refund",
        "table_strike": True,
    }
    signed = verify(canonical_bytes(answer["receipt"]), world.signer.keyid)
    decision = signed.predicate["policyDecision"]
    assert (decision["mode"], decision["payment"], decision["enforced"]) == (
        "enforce",
        "settle",
        False,
    )
    asked = served(world, PROVIDER, "GET", f"/calls/{answer['intentId']}/bundle")
    bundle = from_answer(asked.json())
    assert replay(bundle, world.signer.keyid).outcome == "same"

    def unnamed(data: bytes) -> bytes:
        how = json.loads(data)
        assert how.pop("policy_registered_by") == "root"
        return json.dumps(how).encode()

    # A bundle that hides who registered the policy re-derives a refund the receipt never signed.
    assert replay(edited(bundle, "call.json", unnamed), world.signer.keyid).outcome != "same"
    # On sky's own word the same policy enforces.
    _registered_by(store, 2, PROVIDER)
    judged = served(world, "ann", "GET", "/tools/weather_forecast").json()["judged_by"]
    assert "acts_as" not in judged and "registered_by" not in judged
    answer = world.call({"city": "berlin"}).json()
    assert (answer["status"], answer["verdict"], answer["strike"]) == ("refunded", "FAIL", True)
    assert world.h.balance("wallet:ann") == FUNDS - PRICE
    quality = world.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")
    assert quality["window"]["fail"] == 1


def test_a_policy_id_belongs_to_its_tool(world: World) -> None:
    """Policy ids are scoped to their tool: another provider's tool may use the same id for its
    own policy, which never judges this tool's calls, and nobody can take this tool's ids."""
    new_provider(world, "rival")
    rival = tool(world.provider_url, provider_id="rival")
    rival["name"] = "rival_forecast"
    rival["contract"] = {**rival["contract"], "tool": "rival_forecast"}
    assert served(world, "rival", "POST", "/tools/callable", {"tool": rival}).status_code == 201
    squat = {**strict(7), "tool": "rival_forecast", "policy": POLICY["policy"]}
    r = served(world, "rival", "POST", "/tools/rival_forecast/policies", {"policy": squat})
    assert r.status_code == 201, r.text
    view = served(world, "ann", "GET", "/tools/weather_forecast").json()
    assert (view["judged_by"]["id"], view["judged_by"]["version"]) == (POLICY["policy"], 1)
    answer = world.call({"city": "berlin"}).json()
    assert (answer["status"], answer["verdict"]) == ("settled", "PASS")


def test_a_caller_sees_which_policy_judges_before_paying(world: World) -> None:
    """The tool's view and ``tools/list`` name the policy version, its digest, mode and report
    window that would judge a call starting now; the tool's own view (REST and ``get_tool``)
    gives the policy's document, whose rules a caller can read and whose digest it can check."""
    view = served(world, "ann", "GET", "/tools/weather_forecast").json()
    judged = view["judged_by"]
    assert (judged["id"], judged["version"], judged["mode"]) == (POLICY["policy"], 1, "enforce")
    assert judged["digest"].startswith("sha256:") and judged["report_window_hours"] == 72
    listed = mcp(world, "tools/list", {})
    [forecast] = [t for t in listed["tools"] if t["name"] == "weather_forecast"]
    assert forecast["_meta"]["adjudge/policy"] == judged
    got = mcp(world, "tools/call", {"name": "get_tool", "arguments": {"name": "weather_forecast"}})
    assert got["structuredContent"]["judgedBy"] == judged
    # The rules themselves, as the provider registered them: their digest is the one named.
    assert view["policy_document"] == POLICY and digest_of(POLICY) == judged["digest"]
    assert got["structuredContent"]["policyDocument"] == POLICY


def test_a_policy_change_judges_only_calls_that_start_after_it(world: World) -> None:
    """An unpinned tool is judged by its policy's highest version in force when the call
    starts: the view shows the change once it is registered, and later calls follow it."""
    doc = tool(world.provider_url)
    doc["policy"] = {"id": POLICY["policy"], "version": None}
    r = served(world, PROVIDER, "POST", "/tools/callable", {"tool": doc})
    assert r.status_code == 201, r.text
    before = world.call({"city": "berlin"}).json()
    assert before["verdict"] == "PASS"
    world.h.clock.advance(minutes=5)
    r = served(world, PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": strict(2)})
    assert r.status_code == 201, r.text
    view = served(world, "ann", "GET", "/tools/weather_forecast").json()
    assert view["judged_by"]["version"] == 2
    after = world.call({"city": "berlin"}).json()
    assert (after["status"], after["verdict"]) == ("refunded", "FAIL"), after
    first = served(world, "ann", "GET", f"/gateway/calls/{before['intentId']}").json()
    assert first["record"]["policy"]["version"] == 1
    second = served(world, "ann", "GET", f"/gateway/calls/{after['intentId']}").json()
    assert second["record"]["policy"]["version"] == 2


def test_a_policy_withdrawn_while_a_call_runs_still_judges_it(world: World) -> None:
    """A call is judged by the policy in force when it starts, withdrawal included: a provider
    whose enforcing version is withdrawn five seconds on, and who answers a call started before
    then only ten seconds later, has its failing answer refunded (before, the withdrawal was
    read when the answer was judged: DEGRADED, and the caller paid for it); a call started
    after the withdrawal is DEGRADED and settles, as a withdrawn policy cannot penalize."""
    doc = tool(world.provider_url)
    doc["policy"] = {"id": POLICY["policy"], "version": None}
    r = served(world, PROVIDER, "POST", "/tools/callable", {"tool": doc})
    assert r.status_code == 201, r.text
    ending = world.h.clock.now() + timedelta(seconds=5)
    ended = deepcopy(POLICY) | {"version": 2, "withdrawn_at": ending.isoformat()}
    r = served(world, PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": ended})
    assert r.status_code == 201, r.text
    world.script.answer = "hot"
    world.script.answering = lambda: world.h.clock.advance(seconds=10)
    before = world.h.balance("wallet:ann")
    answer = world.call({"city": "berlin"}).json()
    assert (answer["status"], answer["verdict"]) == ("refunded", "FAIL"), answer
    assert world.h.balance("wallet:ann") == before
    world.script.answering = None
    later = world.call({"city": "berlin"}).json()
    assert (later["status"], later["verdict"]) == ("settled", "DEGRADED"), later
    assert world.h.balance("wallet:ann") == before - PRICE


def test_a_call_retried_with_its_idempotency_key_header_is_charged_once_through_mcp(
    world: World,
) -> None:
    """A ``tools/call`` whose key is the request's Idempotency-Key header, as every REST route
    takes it, not ``_meta["assay/idempotency-key"]``: sent again (a retry after a lost answer),
    it is answered from the first call, on either face, and charged once (the endpoint read
    the key from ``_meta`` only: each retry called the provider and charged the caller
    again)."""
    params = {"name": "weather_forecast", "arguments": {"city": "berlin"}}
    keyed = {"Idempotency-Key": "retry-7"}
    first = mcp(world, "tools/call", params, headers=keyed)
    again = mcp(world, "tools/call", params, headers=keyed)
    assert first["_meta"]["assay/receipt"]["status"] == "settled"
    assert (first["_meta"]["assay/replayed"], again["_meta"]["assay/replayed"]) == (False, True)
    intent = first["_meta"]["assay/receipt"]["intentId"]
    assert again["_meta"]["assay/receipt"]["intentId"] == intent
    rest = world.call({"city": "berlin"}, key="retry-7")
    assert rest.headers.get("Idempotent-Replayed") == "true" and rest.json()["intentId"] == intent
    # The key in _meta is the call's own, whatever a header says.
    named = {**params, "_meta": {"assay/idempotency-key": "retry-8"}}
    other = mcp(world, "tools/call", named, headers=keyed)
    assert other["_meta"]["assay/replayed"] is False
    assert other["_meta"]["assay/receipt"]["intentId"] != intent
    assert len(world.script.seen) == 2
    assert world.h.balance("wallet:ann") == FUNDS - 2 * PRICE


def test_a_refunded_call_hands_over_no_output(world: World) -> None:
    """A refunded call answers its check rows and the failing pointers, not the provider's
    data — over REST, in the stored call, through MCP, and in its record — unless the tool
    opts in to returning it."""
    world.script.answer = "hot"
    answer = world.call({"city": "berlin"}).json()
    assert (answer["status"], answer["verdict"]) == ("refunded", "FAIL")
    assert answer["output"] is None and answer["outputWithheld"] is True
    assert answer["checks"] and answer["failing"]
    stored = served(world, "ann", "GET", f"/gateway/calls/{answer['intentId']}").json()
    assert stored["answer"]["output"] is None
    record = served(world, "ann", "GET", f"/calls/{answer['intentId']}").json()
    assert record["response"]["output"] is None
    result = mcp(world, "tools/call", {"name": "weather_forecast", "arguments": {"city": "x"}})
    assert result["isError"] is True and "structuredContent" not in result
    assert result["_meta"]["assay/receipt"]["output"] is None
    assert "52.52" not in json.dumps(result) and "300" not in json.dumps(result["content"])
    # A provider may choose to return the output of a refunded call.
    opted = {**tool(world.provider_url), "refunded_output": "return"}
    assert served(world, PROVIDER, "POST", "/tools/callable", {"tool": opted}).status_code == 201
    given = world.call({"city": "berlin"}).json()
    assert given["status"] == "refunded" and given["output"]["days"][0]["temp_max_c"] == 300
    assert given["outputWithheld"] is False


# --- 2. the price is the quote ----------------------------------------------------------------


def test_a_price_increase_waits_out_its_notice(world: World) -> None:
    """A provider re-pricing its tool at 100 times: the listing shows the price still charged
    and the increase with its date; calls are charged the old price until then, the new one
    after. A decrease applies at once."""
    dearer = tool(world.provider_url)
    dearer["price"] = {"amount_minor": PRICE * 100, "currency": "USDC"}
    r = served(world, PROVIDER, "POST", "/tools/callable", {"tool": dearer})
    assert r.status_code == 201, r.text
    view = served(world, "ann", "GET", "/tools/weather_forecast").json()
    assert view["price"]["amount"] == str(PRICE)
    assert view["pending_price"]["amount"] == str(PRICE * 100)
    assert view["pending_price"]["from"] == "2026-01-02T12:00:00+00:00"  # 24 hours' notice
    listed = mcp(world, "tools/list", {})
    [forecast] = [t for t in listed["tools"] if t["name"] == "weather_forecast"]
    assert forecast["_meta"]["assay/price"]["maxAmount"] == str(PRICE)
    assert forecast["_meta"]["adjudge/pending-price"]["maxAmount"] == str(PRICE * 100)
    answer = world.call({"city": "berlin"}).json()
    assert answer["chargedPrice"]["amount"] == str(PRICE)
    assert world.h.balance("wallet:ann") == FUNDS - PRICE
    world.h.clock.advance(hours=24)
    answer = world.call({"city": "berlin"}).json()
    assert answer["chargedPrice"]["amount"] == str(PRICE * 100)
    assert world.h.balance("wallet:ann") == FUNDS - PRICE - PRICE * 100
    # Cheaper again: at once.
    cheaper = tool(world.provider_url)
    cheaper["price"] = {"amount_minor": PRICE // 5, "currency": "USDC"}
    assert served(world, PROVIDER, "POST", "/tools/callable", {"tool": cheaper}).status_code == 201
    view = served(world, "ann", "GET", "/tools/weather_forecast").json()
    assert view["price"]["amount"] == str(PRICE // 5) and view["pending_price"] is None


def test_a_call_above_the_most_its_caller_accepts_is_refused(world: World) -> None:
    """``max_price_minor`` (REST) and ``_meta["adjudge/max-price"]`` (MCP): above it the call
    is refused before the provider is called, with nothing charged; at it, the call goes on."""
    body = {"tool": "weather_forecast", "arguments": {"city": "berlin"}}
    r = served(world, "ann", "POST", "/gateway/calls", {**body, "max_price_minor": PRICE - 1})
    assert refusal(r) == (409, "PAYMENT_PRICE_ABOVE_MAXIMUM")
    assert "0.25 USDC" in r.json()["error"]["message"]
    most = {"maxAmount": str(PRICE - 1), "asset": "USDC"}
    result = mcp(
        world,
        "tools/call",
        {
            "name": "weather_forecast",
            "arguments": {"city": "x"},
            "_meta": {"adjudge/max-price": most},
        },
    )
    assert result["isError"] is True
    assert result["_meta"]["assay/error"]["code"] == "PAYMENT_PRICE_ABOVE_MAXIMUM"
    bad = {"maxAmount": "-1", "asset": "USDC"}
    result = mcp(
        world,
        "tools/call",
        {
            "name": "weather_forecast",
            "arguments": {"city": "x"},
            "_meta": {"adjudge/max-price": bad},
        },
    )
    assert result["_meta"]["assay/error"]["code"] == "PAYMENT_MAX_INVALID"
    assert world.script.seen == [] and world.h.balance("wallet:ann") == FUNDS
    r = served(world, "ann", "POST", "/gateway/calls", {**body, "max_price_minor": PRICE})
    assert r.status_code == 200 and r.json()["status"] == "settled", r.text


def test_a_retry_naming_another_most_its_caller_accepts_is_another_call(world: World) -> None:
    """The most a caller accepts is part of what its Idempotency-Key names: a retry with the
    same key and another ``max_price_minor`` (or none) is ``IDEMPOTENCY_KEY_REUSED``, not the
    first call's charge replayed on a limit its caller never gave it; the same limit replays."""
    body = {"tool": "weather_forecast", "arguments": {"city": "berlin"}}
    first = served(
        world, "ann", "POST", "/gateway/calls", {**body, "max_price_minor": PRICE}, key="k"
    )
    assert first.status_code == 200, first.text
    for other in ({**body, "max_price_minor": PRICE - 1}, body):
        r = served(world, "ann", "POST", "/gateway/calls", other, key="k")
        assert refusal(r) == (409, "IDEMPOTENCY_KEY_REUSED")
    again = served(
        world, "ann", "POST", "/gateway/calls", {**body, "max_price_minor": PRICE}, key="k"
    )
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    assert len(world.script.seen) == 1 and world.h.balance("wallet:ann") == FUNDS - PRICE


# --- 3. settled is not paid: the hold -----------------------------------------------------------


def test_a_settled_charge_waits_in_the_providers_hold(world: World) -> None:
    """A settled call's charge is held until its report deadline: the provider's account shows
    it held, not spendable; the upkeep pays it in once the deadline passes, against the call's
    receipt, and the call's money reads held, then paid."""
    answer = world.call({"city": "berlin"}).json()
    call_id = answer["intentId"]
    me = served(world, PROVIDER, "GET", "/accounts/me").json()
    assert (me["balance"], me["held"]) == ("0", str(PRICE))
    money = served(world, "ann", "GET", f"/gateway/calls/{call_id}").json()["money"]
    assert money["state"] == "held" and money["held_until"] == "2026-01-04T12:00:00+00:00"
    assert money["charged"]["amount"] == str(PRICE)
    assert run_once(world.h.app)["matured"] == 0
    world.h.clock.advance(hours=72, seconds=1)
    assert run_once(world.h.app)["matured"] == 1
    assert world.h.balance(f"wallet:{PROVIDER}") == PRICE
    assert world.h.balance(f"held:{PROVIDER}") == 0
    money = served(world, "ann", "GET", f"/gateway/calls/{call_id}").json()["money"]
    assert money["state"] == "paid" and money["paid_at"] == "2026-01-04T12:00:01+00:00"
    assert run_once(world.h.app)["matured"] == 0  # once


def test_a_providers_own_account_read_pays_in_what_matured(world: World) -> None:
    """A provider reading its account after the deadline sees the charge in its balance,
    without waiting for the upkeep."""
    world.call({"city": "berlin"})
    world.h.clock.advance(hours=73)
    me = served(world, PROVIDER, "GET", "/accounts/me").json()
    assert (me["balance"], me["held"]) == (str(PRICE), "0")


def test_a_providers_own_account_read_pays_in_all_that_matured(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However many are due, a batch of them at a time (two here), until none is: the balance
    is never behind the clock (one batch of 500 left the rest to the upkeep; a single batch of
    two here pays half)."""
    monkeypatch.setattr(settlement, "MATURE_BATCH", 2)
    for city in ("berlin", "paris", "rome", "oslo"):
        world.call({"city": city})
    world.h.clock.advance(hours=73)
    me = served(world, PROVIDER, "GET", "/accounts/me").json()
    assert (me["balance"], me["held"]) == (str(4 * PRICE), "0")


def test_an_upheld_report_is_refunded_from_the_hold_whatever_the_provider_spent(
    world: World,
) -> None:
    """The provider cannot spend a held charge, so an upheld report always refunds: the
    charge comes back from the hold, the call's money reads refunded after report, and the
    upkeep pays the provider nothing for it, even after the deadline."""
    answer = world.call({"city": "berlin"}).json()
    call_id = answer["intentId"]
    r = served(world, "ann", "POST", f"/calls/{call_id}/report", {"reason": "stale"})
    assert r.status_code == 201, r.text
    world.h.clock.advance(hours=100)  # past the deadline: a report in time keeps the hold
    assert run_once(world.h.app)["matured"] == 0
    ruling = {"upheld": True, "reasons": ["The forecast was issued a week earlier."]}
    ruled = served(world, "root", "POST", f"/calls/{call_id}/report/ruling", ruling)
    assert ruled.status_code == 200, ruled.text
    assert world.h.balance("wallet:ann") == FUNDS
    assert world.h.balance(f"held:{PROVIDER}") == 0
    assert world.h.balance(f"wallet:{PROVIDER}") == 0
    money = served(world, "ann", "GET", f"/gateway/calls/{call_id}").json()["money"]
    assert money["state"] == "refunded_after_report"
    assert money["charged"]["amount"] == "0" and money["refunded"]["amount"] == str(PRICE)


def test_a_dismissed_report_lets_the_charge_mature(world: World) -> None:
    """Dismissed after the deadline: the charge is paid to the provider at the next upkeep."""
    call_id = world.call({"city": "berlin"}).json()["intentId"]
    assert served(world, "ann", "POST", f"/calls/{call_id}/report", {"reason": "x"}).is_success
    world.h.clock.advance(hours=80)
    body = {"upheld": False, "reasons": ["It matches."]}
    assert served(world, "root", "POST", f"/calls/{call_id}/report/ruling", body).is_success
    assert run_once(world.h.app)["matured"] == 1
    assert world.h.balance(f"wallet:{PROVIDER}") == PRICE


def test_a_report_cannot_claim_a_charge_already_paid(world: World) -> None:
    """If the upkeep of a process whose clock ran ahead paid the charge out, a report filed in
    the last instant is refused as late, never left with nothing to refund."""
    call_id = world.call({"city": "berlin"}).json()["intentId"]
    world.h.clock.advance(hours=72, seconds=1)
    assert run_once(world.h.app)["matured"] == 1
    world.h.clock.advance(seconds=-1)  # this process's clock: still inside the window
    r = served(world, "ann", "POST", f"/calls/{call_id}/report", {"reason": "late"})
    assert refusal(r) == (409, "REPORT_WINDOW_CLOSED")


def test_a_charge_is_held_through_the_last_instant_a_report_may_be_filed(world: World) -> None:
    """The deadline is the window's last instant (a report filed then is in time), so the
    upkeep pays the charge out only after it: at the deadline itself it pays nothing and the
    caller's report there claims the hold (the upkeep paid it out at the deadline, and the
    report filed in the same instant was refused REPORT_WINDOW_CLOSED)."""
    call_id = world.call({"city": "berlin"}).json()["intentId"]
    world.h.clock.advance(hours=72)  # the call's report deadline, to the microsecond
    assert run_once(world.h.app)["matured"] == 0
    me = served(world, PROVIDER, "GET", "/accounts/me").json()
    assert (me["balance"], me["held"]) == ("0", str(PRICE))
    r = served(world, "ann", "POST", f"/calls/{call_id}/report", {"reason": "stale"})
    assert r.status_code == 201, r.text
    world.h.clock.advance(seconds=1)
    assert run_once(world.h.app)["matured"] == 0  # claimed by the report, left to its ruling


def test_list_totals_add_up_after_refunds(world: World) -> None:
    """The calls list reads each call's money as it stands: summing ``money.charged`` gives what
    the caller paid, an upheld report included."""
    first = world.call({"city": "berlin"}).json()["intentId"]
    world.call({"city": "paris"})
    world.script.answer = "bad"
    world.call({"city": "rome"})
    assert served(world, "ann", "POST", f"/calls/{first}/report", {"reason": "x"}).is_success
    ruling = {"upheld": True, "reasons": ["stale"]}
    assert served(world, "root", "POST", f"/calls/{first}/report/ruling", ruling).is_success
    calls = served(world, "ann", "GET", "/gateway/calls").json()["calls"]
    charged = sum(int(c["money"]["charged"]["amount"]) for c in calls)
    assert charged == FUNDS - world.h.balance("wallet:ann") == PRICE
    assert sorted(c["money"]["state"] for c in calls) == [
        "held",
        "refunded",
        "refunded_after_report",
    ]


def test_a_hold_never_outlives_a_restart_unpaid(world: World) -> None:
    """The upkeep at start pays in holds that matured while the service was down."""
    world.call({"city": "berlin"})
    world.h.clock.advance(days=4)
    done = run_once(world.h.app)
    assert (done["recovered"], done["lapsed"], done["escalated"], done["matured"]) == (0, 0, 0, 1)
    assert world.h.balance(f"wallet:{PROVIDER}") == PRICE


def test_a_held_charge_cannot_be_spent(world: World) -> None:
    """Held money is not the provider's yet: a call it makes with only held money is refused."""
    world.call({"city": "berlin"})
    assert world.h.balance(f"held:{PROVIDER}") == PRICE
    r = http.post(
        f"{world.service}/api/v1/gateway/calls",
        json={"tool": "weather_forecast", "arguments": {"city": "berlin"}},
        headers={"Authorization": f"Bearer {world.h.keys[PROVIDER]}"},
        timeout=30,
    )
    assert refusal(r) == (409, "INSUFFICIENT_FUNDS")
    assert world.h.balance(f"held:{PROVIDER}") == PRICE


def test_upkeep_is_a_small_step_each_time(world: World) -> None:
    """Maturity reads the holds that are due, not the history: a second pass with nothing due
    pays nothing and changes no balance."""
    for _ in range(3):
        world.call({"city": "berlin"})
    world.h.clock.advance(hours=73)
    assert run_once(world.h.app)["matured"] == 3
    before = world.h.balance(f"wallet:{PROVIDER}")
    assert run_once(world.h.app)["matured"] == 0
    assert world.h.balance(f"wallet:{PROVIDER}") == before == 3 * PRICE


def test_a_reported_call_cannot_take_the_id_of_a_call_in_flight(world: World) -> None:
    """The provider sees a forwarded call's id while it answers: a call reported under that id
    (by the provider's accomplice, a poster) is refused while the call is in flight, and the call
    still ends on its own terms (here a time-out: the caller gets its money back)."""
    new_provider(world, "accomplice")
    world.script.answer = "slow"
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(world.call, {"city": "paris"})
        deadline = time.monotonic() + 10
        while not world.script.seen and time.monotonic() < deadline:
            time.sleep(0.02)
        call_id = world.script.seen[-1]["call_id"]
        squat = {
            "request": {
                "call_id": call_id,
                "provider": PROVIDER,
                "tool": "weather_forecast",
                "arguments": {"city": "paris"},
                "price": {"amount_minor": 0, "currency": "USDC"},
            },
            "response": {"status": "ok", "body": forecast(world.script, 3)},
        }
        assert refusal(served(world, "accomplice", "POST", "/calls", squat)) == (
            409,
            "CALL_EXISTS",
        )
        ended = answer.result().json()
    assert ended["intentId"] == call_id and ended["status"] != "settled"
    assert world.h.balance("wallet:ann") == FUNDS


def test_a_call_that_cannot_be_ended_keeps_no_other_money_waiting(world: World) -> None:
    """A pending call the upkeep cannot end (here: its id taken by a record written around the
    service) is logged and put back until its retry: the other calls' holds still mature at the
    same pass."""
    honest = world.call({"city": "berlin"}).json()["intentId"]
    with world.h.app.store.write() as tx:
        forwarded, record = gateway.call(tx, honest), calls.call(tx, honest)
        assert forwarded is not None and record is not None
        stuck = f"{honest}-stuck"
        pending = replace(forwarded, id=stuck, state="pending", status=None, verdict=None)
        assert gateway.start_call(tx, replace(pending, receipt_id=None, answer=None))
        calls.add_call(
            tx,
            record={**record.record, "call_id": stuck},
            contract_version=record.contract_version,
            submitted_by="pat",
            at=record.at,
            request=record.request,
            response=record.response,
            receipt_id=None,
            source="reported",
        )
    world.h.clock.advance(hours=73)
    done = run_once(world.h.app)
    assert (done["recovered"], done["matured"], done["failed"]) == (0, 1, 0)
    assert world.h.balance(f"wallet:{PROVIDER}") == PRICE


def test_a_tool_cannot_be_registered_over_another_providers_contract(world: World) -> None:
    """A name's first contract says whose rules judge its calls: a provider registering a
    callable tool over a contract another provider registered first under that name (the same
    bytes, from one shared OpenAPI document, say) is refused, and nothing is registered."""
    new_provider(world, "rival")
    doc = tool(world.provider_url)
    doc["name"] = "shared_api"
    doc["contract"] = {**doc["contract"], "tool": "shared_api", "version": "1"}
    r = served(world, "rival", "POST", "/tools", {"contract": doc["contract"]})
    assert r.status_code == 201, r.text
    r = served(world, PROVIDER, "POST", "/tools/callable", {"tool": doc})
    assert refusal(r) == (403, "NOT_TOOL_PROVIDER")
    assert "rival's tool" in r.json()["error"]["message"]
    assert served(world, "ann", "GET", "/tools/shared_api").status_code == 404


#: A provider's answer made of the forecast's JSON with one crafted piece: a half of a
#: surrogate pair (escaped, or as raw bytes), a number too large for a float, and two that are
#: plain JSON all the same (a surrogate pair whole, a number too small to be told from 0); a
#: NUL in a string as a raw byte (not JSON) and escaped (plain JSON, stored on each database);
#: members nested past the 100 levels an answer is read as JSON with (text on any stack: the
#: parser took 900 deep on some stacks and not on others, the mapping's walk at 900 not at all,
#: a 500 with the price reserved), and one just within them (99 in the forecast's object).
CRAFTED = {
    "lone surrogate": (b'"issued": "', b'"issued": "\\ud800'),
    "encoded surrogate": (b'"issued": "', b'"issued": "\xed\xa0\x80'),
    "infinite number": (b'"latitude": 52.52', b'"latitude": 1e999'),
    "surrogate pair": (b'"issued": "', b'"issued": "\\ud83d\\ude00'),
    "vanishing number": (b'"latitude": 52.52', b'"latitude": 1e-999'),
    "nested 600 deep": (b'"latitude"', b'"extra": ' + b"[" * 600 + b"]" * 600 + b', "latitude"'),
    "nested 150 deep": (b'"latitude"', b'"extra": ' + b"[" * 150 + b"]" * 150 + b', "latitude"'),
    "nested 99 deep": (b'"latitude"', b'"extra": ' + b"[" * 99 + b"]" * 99 + b', "latitude"'),
    "raw nul": (b'"issued": "', b'"issued": "\x00'),
    "escaped nul": (b'"issued": "', b'"issued": "\\u0000'),
    "mapped nested 900 deep": (b'"latitude": 52.52', b'"latitude": ' + b"[" * 900 + b"]" * 900),
}


@pytest.mark.parametrize("kind", list(CRAFTED))
def test_a_crafted_answer_ends_its_call_with_a_receipt(
    world: World, wsgi_server: Any, kind: str
) -> None:
    """Whatever bytes a provider answers, its call ends with a receipt and an answer (never a
    5xx, never the caller blamed for the provider's bytes), and both parties' listings read:
    bytes whose JSON is no plain value, or nests past the bound, are judged as the text they
    are."""
    old, crafted = CRAFTED[kind]
    text = json.dumps(forecast(world.script, 3)).encode()
    assert old in text
    data = text.replace(old, crafted, 1)

    def answer(_environ: Any, start: Any) -> list[bytes]:
        start("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    new_provider(world, "crafty")
    doc = tool(wsgi_server(answer) + "/v1", provider_id="crafty")
    doc["name"] = "crafty_forecast"
    doc["contract"] = {**doc["contract"], "tool": "crafty_forecast"}
    assert served(world, "crafty", "POST", "/tools/callable", {"tool": doc}).status_code == 201
    policy = {**deepcopy(POLICY), "tool": "crafty_forecast"}
    r = served(world, "crafty", "POST", "/tools/crafty_forecast/policies", {"policy": policy})
    assert r.status_code == 201, r.text
    r = http.post(
        f"{world.service}/api/v1/gateway/calls",
        json={"tool": "crafty_forecast", "arguments": {"city": "berlin"}},
        headers={"Authorization": f"Bearer {world.h.keys['ann']}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert r.json()["receipt"]
    for who in ("ann", "crafty"):
        listed = served(world, who, "GET", "/gateway/calls")
        assert listed.status_code == 200, listed.text
        assert {c["state"] for c in listed.json()["calls"]} == {"done"}
    plain = kind in ("surrogate pair", "vanishing number", "nested 99 deep", "escaped nul")
    assert (r.json()["status"] == "settled") is plain, r.json()


def test_an_answer_the_gateway_fails_to_judge_ends_its_call_refunded(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure of the gateway's own while it judges an answer (a bug: here the verifier
    raising on every answer) ends the call at once as the gateway's failure: voided, the
    caller refunded with a receipt, the provider not struck (before: a 500, the call left
    pending with its price reserved until the upkeep ended it minutes later)."""
    from adjudge.app.gateway import calls as gateway_calls  # noqa: PLC0415

    real = gateway_calls.verify_call

    def failing(contract: Any, policy: Any, request: Any, response: Any, *a: Any, **k: Any) -> Any:
        if response.status == "ok":
            raise RecursionError("maximum recursion depth exceeded")
        return real(contract, policy, request, response, *a, **k)

    monkeypatch.setattr(gateway_calls, "verify_call", failing)
    r = world.call({"city": "berlin"})
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["status"], got["strike"]) == ("voided", False), got
    assert got["receipt"] and world.h.balance("wallet:ann") == FUNDS
    [listed] = served(world, "ann", "GET", "/gateway/calls").json()["calls"]
    assert listed["state"] == "done"


# --- 2b. spending limits on API keys ----------------------------------------------------------


def limited_key(world: World, per_call: int | None, per_day: int | None) -> str:
    """An extra key of ann's with these limits; its secret is stored as ``ann-agent``."""
    body = {"label": "agent 1", "max_per_call_minor": per_call, "max_per_day_minor": per_day}
    r = served(world, "ann", "POST", "/accounts/me/api-keys", body)
    assert r.status_code == 201, r.text
    world.h.keys["ann-agent"] = r.json()["api_key"]
    return str(r.json()["key"]["id"])


def test_a_key_past_its_limit_per_call_pays_nothing(world: World) -> None:
    """A key limited below the price: refused before the provider is called, nothing charged;
    the goassay client raises it as a payment error."""
    limited_key(world, PRICE - 1, None)
    r = world.call({"city": "berlin"}, who="ann-agent")
    assert refusal(r) == (409, "PAYMENT_LIMIT_EXCEEDED")
    from goassay import Assay  # noqa: PLC0415
    from goassay.errors import PaymentError  # noqa: PLC0415

    with (
        Assay(
            api_key=world.h.keys["ann-agent"],
            mcp_url=f"{world.service}/",
            api_url=f"{world.service}/assay/v1",
            web_url=world.service,
        ) as client,
        pytest.raises(PaymentError) as raised,
    ):
        client.tools.call("weather_forecast", {"city": "berlin"})
    assert raised.value.code == "PAYMENT_LIMIT_EXCEEDED"
    assert world.script.seen == [] and world.h.balance("wallet:ann") == FUNDS


def test_a_key_spends_at_most_its_day(world: World) -> None:
    """A day's limit of two calls: the third is refused; a refunded call gives its price back
    to the day; the next UTC day starts afresh. The key's day reads what it spent."""
    key_id = limited_key(world, None, 2 * PRICE)
    assert world.call({"city": "a"}, who="ann-agent").json()["status"] == "settled"
    world.script.answer = "hot"
    assert world.call({"city": "b"}, who="ann-agent").json()["status"] == "refunded"
    world.script.answer = "good"
    assert world.call({"city": "c"}, who="ann-agent").json()["status"] == "settled"
    assert refusal(world.call({"city": "d"}, who="ann-agent")) == (409, "PAYMENT_LIMIT_EXCEEDED")
    [key] = served(world, "ann", "GET", "/accounts/me/api-keys").json()["keys"]
    assert (key["id"], key["spent_today_minor"]) == (key_id, 2 * PRICE)
    assert world.h.balance("wallet:ann") == FUNDS - 2 * PRICE
    world.h.clock.advance(hours=12)  # 2026-01-02 UTC
    assert world.call({"city": "e"}, who="ann-agent").json()["status"] == "settled"


def test_a_lowered_limit_and_a_revoked_key_hold_at_once(world: World) -> None:
    """The owner lowers a key's limit, then revokes it: each holds from the next call, even
    while the key is remembered by the process that checks keys."""
    key_id = limited_key(world, None, None)
    first = world.call({"city": "a"}, who="ann-agent").json()
    assert first["status"] == "settled", first
    limits = {"max_per_call_minor": PRICE - 1, "max_per_day_minor": None}
    r = served(world, "ann", "PATCH", f"/accounts/me/api-keys/{key_id}", limits)
    assert r.status_code == 200 and r.json()["max_per_call_minor"] == PRICE - 1, r.text
    assert refusal(world.call({"city": "b"}, who="ann-agent")) == (409, "PAYMENT_LIMIT_EXCEEDED")
    assert served(world, "ann", "POST", f"/accounts/me/api-keys/{key_id}/revoke").is_success
    assert refusal(world.call({"city": "c"}, who="ann-agent"))[0] == 401


def test_an_extra_key_cannot_raise_its_own_limits_or_fund_tasks(world: World) -> None:
    """An extra key's budget is for calls: it cannot make, limit or revoke keys, nor post and
    fund a task (which would spend around its limits)."""
    key_id = limited_key(world, PRICE, PRICE)
    limits = {"max_per_call_minor": None, "max_per_day_minor": None}
    r = served(world, "ann-agent", "PATCH", f"/accounts/me/api-keys/{key_id}", limits)
    assert refusal(r) == (403, "PRIMARY_KEY_REQUIRED")
    r = served(world, "ann-agent", "POST", "/accounts/me/api-keys", {"label": "more"})
    assert refusal(r) == (403, "PRIMARY_KEY_REQUIRED")
    world.h.keys["pat-agent"] = served(
        world, "pat", "POST", "/accounts/me/api-keys", {"label": "bot"}
    ).json()["api_key"]
    task = {
        "title": "t",
        "brief": "b",
        "reward": "1000000",
        "mode": "manual",
        "criteria": {},
        "deadline_hours": 24,
    }
    r = served(world, "pat-agent", "POST", "/tasks", task)
    assert refusal(r) == (403, "PRIMARY_KEY_REQUIRED")
    r = served(world, "ann", "PATCH", "/accounts/me/api-keys/key_0000000000000000", limits)
    assert refusal(r) == (404, "KEY_NOT_FOUND")


def test_superseded_receipts_link_both_ways(world: World) -> None:
    """After an upheld report, the call's own receipt names the ruling that superseded it, and
    the ruling names the receipt it replaced."""
    answer = world.call({"city": "berlin"}).json()
    call_id, original = answer["intentId"], answer["receiptId"]
    assert served(world, "ann", "GET", f"/receipts/{original}").json()["superseded_by"] is None
    assert served(world, "ann", "POST", f"/calls/{call_id}/report", {"reason": "x"}).is_success
    ruling = {"upheld": True, "reasons": ["stale"]}
    ruled = served(world, "root", "POST", f"/calls/{call_id}/report/ruling", ruling).json()
    first = served(world, "ann", "GET", f"/receipts/{original}").json()
    assert first["superseded_by"] == ruled["receipt_id"]
    second = served(world, "ann", "GET", f"/receipts/{ruled['receipt_id']}").json()
    assert second["supersedes"] == original and second["superseded_by"] is None
    assert first["supersedes"] is None


def _decided(envelope: dict[str, Any], world: World) -> dict[str, Any]:
    """What a signed receipt decided about money (its statement's policy decision)."""
    signed = verify(canonical_bytes(envelope), world.signer.keyid)
    decision: dict[str, Any] = signed.predicate["policyDecision"]
    return decision


def test_a_calls_receipts_name_whose_money_they_move(world: World) -> None:
    """The receipt that refunds a call, and the ruling that refunds a settled one from the
    hold, name the caller the money goes back to; the call's bundle replays the same, and a
    bundle naming another caller, or none, replays as different."""
    world.script.answer = "hot"
    refunded = world.call({"city": "berlin"}).json()
    assert refunded["status"] == "refunded"
    assert _decided(refunded["receipt"], world)["caller"] == "ann"
    world.script.answer = "good"
    call_id = world.call({"city": "berlin"}).json()["intentId"]
    assert served(world, "ann", "POST", f"/calls/{call_id}/report", {"reason": "x"}).is_success
    ruling = {"upheld": True, "reasons": ["stale"]}
    ruled = served(world, "root", "POST", f"/calls/{call_id}/report/ruling", ruling).json()
    found = served(world, "root", "GET", f"/receipts/{ruled['receipt_id']}").json()
    assert found["statement"]["predicate"]["policyDecision"]["caller"] == "ann"
    asked = served(world, PROVIDER, "GET", f"/calls/{refunded['intentId']}/bundle")
    bundle = from_answer(asked.json())
    assert replay(bundle, world.signer.keyid).outcome == "same"

    def named(caller: str | None) -> Callable[[bytes], bytes]:
        def edit(data: bytes) -> bytes:
            how = json.loads(data)
            how.pop("caller")
            return json.dumps(how if caller is None else how | {"caller": caller}).encode()

        return edit

    for caller in ("pat", None):
        forged = replay(edited(bundle, "call.json", named(caller)), world.signer.keyid)
        assert forged.outcome != "same", caller


def test_a_call_parses_its_tool_and_policy_apart_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool and policy not kept parsed are parsed on the gateway's parsing thread, once for
    four calls waiting on them, never in a call's read (on SQLite, the event loop: a tool at
    the registration bound compiles for 0.3-0.5 s, and a caller with no money calling 200 of
    them in turn kept another account's requests at 1 s)."""
    monkeypatch.setattr(parsed, "_TOOLS", Kept())
    monkeypatch.setattr(parsed, "_POLICIES", Kept())
    seen: list[tuple[str, str]] = []

    def slowly(what: str, parse: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            seen.append((what, threading.current_thread().name))
            time.sleep(0.2)  # the four calls wait on it together
            return parse(*args)

        return run

    monkeypatch.setattr(parsed, "parse_tool", slowly("tool", parsed.parse_tool))
    monkeypatch.setattr(parsed, "register_policy", slowly("policy", parsed.register_policy))
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: world.call({"city": "berlin"}), range(4)))
    assert [a.json()["status"] for a in answers] == ["settled"] * 4
    assert seen == [("tool", "adjudge-gateway-parse_0"), ("policy", "adjudge-gateway-parse_0")]


def _parsed_slowly(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Nothing kept parsed, and each tool's parse taking ``seconds``."""
    monkeypatch.setattr(parsed, "_TOOLS", Kept())
    monkeypatch.setattr(parsed, "_POLICIES", Kept())
    parse = parsed.parse_tool

    def slowly(*args: Any) -> Any:
        time.sleep(seconds)
        return parse(*args)

    monkeypatch.setattr(parsed, "parse_tool", slowly)


def test_many_calls_of_one_account_on_one_document_join_its_one_parse(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve calls of one account at once on a tool not kept parsed wait on its one parse and
    all settle: joining a parse already running takes none of the account's places (counted per
    call waiting, all but four were refused ``CHECKS_AT_ONCE_EXCEEDED``, as a busy caller's first
    calls after a restart were)."""
    _parsed_slowly(monkeypatch, 0.5)
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda _: world.call({"city": "berlin"}), range(12)))
    assert [a.json().get("status") for a in answers] == ["settled"] * 12, answers[-1].text


def test_an_account_starts_at_most_four_parses_at_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls of five tools at once, none kept parsed, start four parses; the fifth is refused
    ``429 CHECKS_AT_ONCE_EXCEEDED`` with nothing reserved, and once the parses end the account
    has its places back."""
    names = [f"forecast_{n}" for n in range(4)]
    for name in names:
        made = tool(world.provider_url)
        made["name"] = name
        made["contract"] = {**made["contract"], "tool": name}
        r = served(world, PROVIDER, "POST", "/tools/callable", {"tool": made})
        assert r.status_code == 201, r.text
        policy = {"policy": {**POLICY, "tool": name}}
        r = served(world, PROVIDER, "POST", f"/tools/{name}/policies", policy)
        assert r.status_code == 201, r.text
    _parsed_slowly(monkeypatch, 1.0)

    def called(name: str) -> httpx.Response:
        body = {"tool": name, "arguments": {"city": "berlin"}}
        return served(world, "ann", "POST", "/gateway/calls", body)

    names.append("weather_forecast")
    with ThreadPoolExecutor(5) as pool:
        answers = dict(zip(names, pool.map(called, names), strict=True))
    [(left, no)] = [(name, a) for name, a in answers.items() if a.status_code == 429]
    assert refusal(no) == (429, "CHECKS_AT_ONCE_EXCEEDED")
    assert [a.json()["status"] for a in answers.values() if a is not no] == ["settled"] * 4
    assert world.h.balance("wallet:ann") == FUNDS - 4 * PRICE
    assert called(left).json()["status"] == "settled"  # parsed now, the places given back


def test_a_call_ended_twice_at_once_ends_once_and_the_second_is_told_so(world: World) -> None:
    """A pending call past its time ended by the upkeep and, at once, by a retry with its key
    (both read it pending): the second end finds the reservation already emptied and reports a
    lost race (the retry then replays the first end's answer) instead of raising
    ``INSUFFICIENT_FUNDS`` at a caller whose wallet is fine."""
    first = world.call({"city": "berlin"}).json()["intentId"]
    with world.h.app.store.write() as tx:
        done = gateway.call(tx, first)
        assert done is not None
        stuck = replace(
            done, id=f"{first}-stuck", state="pending", status=None, verdict=None, key_hash=None
        )
        assert gateway.start_call(tx, replace(stuck, receipt_id=None, answer=None))
        settlement.reserve(tx, "ann", f"hold:call:{stuck.id}", PRICE, at=stuck.started_at)
    with world.h.app.store.read() as tx:
        stale = gateway.call(tx, stuck.id)
    assert stale is not None and stale.state == "pending"
    assert world.h.app.gateway._interrupted(stale) is True
    assert world.h.app.gateway._interrupted(stale) is False
    assert world.h.balance("wallet:ann") == FUNDS - PRICE  # the first call's; the stuck one's back


@pytest.mark.parametrize(("answer", "price"), [("good", PRICE), ("hot", PRICE), ("good", 0)])
def test_a_call_ended_by_its_retry_while_out_answers_that_end(
    world: World, answer: str, price: int
) -> None:
    """A call still out past its time (its provider took three minutes by the clock) is ended
    by a retry with its key as interrupted, its price back to the caller. When its answer is
    judged at last, the first request finds the call ended and answers that end, as a replay,
    and nothing more moves (it answered 409 INSUFFICIENT_FUNDS, the emptied reservation of the
    call, to a caller whose wallet was whole; a free call, 409 CALL_EXISTS)."""
    if price != PRICE:
        free = {**tool(world.provider_url), "price": {"amount_minor": price, "currency": "USDC"}}
        assert served(world, PROVIDER, "POST", "/tools/callable", {"tool": free}).status_code == 201
    retried: list[httpx.Response] = []

    def out_too_long() -> None:
        world.script.answering = None
        world.h.clock.advance(minutes=3)
        retried.append(world.call({"city": "berlin"}, key="late-1"))

    world.script.answer = answer
    world.script.answering = out_too_long
    first = world.call({"city": "berlin"}, key="late-1")
    [retry] = retried
    assert retry.status_code == 200 and retry.json()["status"] == "voided", retry.text
    assert first.status_code == 200, first.text
    assert first.headers.get("Idempotent-Replayed") == "true"
    assert first.json() == retry.json()
    assert len(world.script.seen) == 1
    assert world.h.balance("wallet:ann") == FUNDS
