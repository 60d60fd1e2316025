"""Corroborated empty answers end to end over loopback: a policy names another provider's tool
as the corroborator of its empty answers; the gateway asks it the same question as a paid call
of its own (paid by the policy's provider, bounded by the policy), records that call in the
receipt, and lets what it found decide: nothing found -> EMPTY_CONFIRMED, results -> FAIL, no
usable answer -> DEGRADED. The books are audited after each test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import update
from test_money_path import refusal, served

from adjudge.app.demo import OUTLOOK_POLICY, corroborated
from adjudge.receipts import canonical_bytes, verify
from adjudge.store import Store
from adjudge.store.calls import call_policies
from support import http, weather
from support.audit import audit
from support.harness import FUNDS
from support.loopback import AsgiServer
from support.weather import POLICY, PRICE, PROVIDER, Script, World, provider, tool, weather_world

CORROBORATOR = "nimbus"
OUTLOOK = "nimbus_outlook"
OUTLOOK_PRICE = 10_000  # 0.01 USDC
BOUND = 20_000  # the most one corroboration may cost sky
SKY_FUNDS = 1_000_000


@dataclass
class Corroborated:
    world: World
    nimbus: Script

    def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        r = self.world.call(arguments)
        assert r.status_code == 200, r.text
        return dict(r.json())


def _outlook(base_url: str) -> dict[str, Any]:
    doc = tool(base_url, provider_id=CORROBORATOR)
    return doc | {
        "name": OUTLOOK,
        "price": {"amount_minor": OUTLOOK_PRICE, "currency": "USDC"},
        "policy": {"id": "outlook-standard"},
    }


@contextmanager
def _corroborated(store: Store) -> Iterator[Corroborated]:
    """The weather world, plus nimbus's outlook (another provider) and sky's policy version 2
    naming it as the corroborator of empty answers; sky holds funds to pay for it."""
    with weather_world(store) as world:
        h = world.h
        h.keys[CORROBORATOR] = h.app.accounts.create(None, CORROBORATOR, ["provider"]).value[
            "api_key"
        ]
        nimbus = Script()
        with AsgiServer(provider(nimbus)) as server:
            h.ok(CORROBORATOR, "POST", "/tools/callable", {"tool": _outlook(server.url)})
            h.ok(CORROBORATOR, "POST", f"/tools/{OUTLOOK}/policies", {"policy": OUTLOOK_POLICY})
            h.app.accounts.deposit(h.app.accounts.authenticate(h.keys["root"]), PROVIDER, SKY_FUNDS)
            policy = corroborated(POLICY, 2, OUTLOOK, BOUND)
            h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
            yield Corroborated(world, nimbus)


@pytest.fixture
def setup(store: Store) -> Iterator[Corroborated]:
    """:func:`_corroborated`, audited after."""
    with _corroborated(store) as world:
        yield world
    audit(store)


def test_an_empty_answer_the_corroborator_shares_is_confirmed_and_paid_by_the_provider(
    setup: Corroborated,
) -> None:
    """sky and nimbus both find nothing: EMPTY_CONFIRMED, the caller charged the listed price
    only, sky paying nimbus's price for the corroboration, whose call the receipt names."""
    setup.world.script.answer = "empty"
    setup.nimbus.answer = "empty"
    got = setup.call({"city": "berlin"})
    assert (got["status"], got["verdict"], got["strike"]) == ("settled", "EMPTY_CONFIRMED", False)
    row = next(r for r in got["checks"] if r["stage"] == "empty_result")
    assert row["outcome"] == "pass" and row["declared"] and row["authority"] == "imported"
    found = got["corroboration"]
    assert found["tool"] == OUTLOOK and found["source"] == CORROBORATOR and found["empty"]
    assert found["call_id"] in row["reason"] and row["cited"] == [found["response_digest"]]
    h = setup.world.h
    assert h.balance("wallet:ann") == FUNDS - PRICE
    assert h.balance(f"wallet:{PROVIDER}") == SKY_FUNDS - OUTLOOK_PRICE
    assert h.balance(f"held:{CORROBORATOR}") == OUTLOOK_PRICE
    statement = verify(canonical_bytes(got["receipt"]), setup.world.signer.keyid)
    decision = statement.predicate["policyDecision"]
    assert decision is not None
    assert decision["corroboratingCallId"] == found["call_id"]
    assert decision["corroboratingReceiptId"] == found["receipt_id"]
    theirs = h.ok(PROVIDER, "GET", f"/gateway/calls/{found['call_id']}")
    assert theirs["caller"] == PROVIDER and theirs["receipt_id"] == found["receipt_id"]
    assert [s["city"] for s in setup.nimbus.seen] == ["berlin"]


def test_an_empty_answer_the_corroborator_contradicts_is_a_fail(setup: Corroborated) -> None:
    """sky finds nothing, nimbus finds a forecast that passes its own checks: FAIL, refunded
    to the caller, sky struck; sky still paid for the corroboration it declared."""
    setup.world.script.answer = "empty"
    setup.nimbus.answer = "good"
    got = setup.call({"city": "berlin"})
    assert (got["status"], got["verdict"], got["strike"]) == ("refunded", "FAIL", True)
    assert "declared corroborator found results" in got["decidedBy"]
    h = setup.world.h
    assert h.balance("wallet:ann") == FUNDS
    assert h.balance(f"wallet:{PROVIDER}") == SKY_FUNDS - OUTLOOK_PRICE
    statement = verify(canonical_bytes(got["receipt"]), setup.world.signer.keyid)
    assert statement.verdict.value == "FAIL"


def test_a_provider_cannot_spend_its_corroboration_key_first(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sky sees the call's id while it answers and, before its empty answer, calls the outlook
    itself under the corroboration's key (as it was, ``corroborate:<id>``, and as it is, with a
    space): the old form is now just a key of its own, the new one no caller may send; the
    gateway's corroboration still runs and its contradiction fails the call (before: refused
    ``IDEMPOTENCY_KEY_REUSED``, counted unavailable, the empty answer settled DEGRADED)."""
    squat: dict[str, Any] = {"status": []}

    def squatting(script: Script) -> Any:
        inner = provider(script)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and "service" in squat and "berlin" in scope["path"]:
                call_id = dict(scope["headers"])[b"x-assay-call-id"].decode()
                for key in (f"corroborate:{call_id}", f"corroborate {call_id}"):
                    r = await asyncio.to_thread(
                        http.post,
                        f"{squat['service']}/api/v1/gateway/calls",
                        json={"tool": OUTLOOK, "arguments": {"city": "elsewhere"}},
                        headers={"Authorization": f"Bearer {squat['key']}", "Idempotency-Key": key},
                        timeout=30,
                    )
                    squat["status"].append(
                        (r.status_code, (r.json().get("error") or {}).get("code"))
                    )
            await inner(scope, receive, send)

        return app

    monkeypatch.setattr(weather, "provider", squatting)
    with _corroborated(sqlite_store) as setup:
        h = setup.world.h
        squat |= {"service": setup.world.service, "key": h.keys[PROVIDER]}
        setup.world.script.answer = "empty"
        setup.nimbus.answer = "good"
        got = setup.call({"city": "berlin"})
    assert squat["status"] == [(200, None), (400, "INVALID_IDEMPOTENCY_KEY")]
    assert (got["status"], got["verdict"], got["strike"]) == ("refunded", "FAIL", True)
    assert h.balance("wallet:ann") == FUNDS


@pytest.mark.parametrize(
    ("nimbus", "why"),
    [
        ("error", "its call was refunded"),
        ("slow", "its call was refunded"),
        ("bad", "its call was refunded"),
        ("garbage", "its call was refunded"),
    ],
)
def test_a_corroborator_without_a_usable_answer_degrades_never_passes(
    setup: Corroborated, nimbus: str, why: str
) -> None:
    """nimbus down, timing out, answering garbage or results its own policy fails: the empty
    answer is DEGRADED (settled, no strike), never confirmed and never failed on no evidence."""
    setup.world.script.answer = "empty"
    setup.nimbus.answer = nimbus
    got = setup.call({"city": "berlin"})
    assert (got["status"], got["verdict"], got["strike"]) == ("settled", "DEGRADED", False), got
    row = next(r for r in got["checks"] if r["stage"] == "empty_result")
    assert row["outcome"] == "unavailable" and why in row["reason"], row
    assert not got["corroboration"]["available"]
    assert setup.world.h.balance("wallet:ann") == FUNDS - PRICE


def test_a_corroborator_dearer_than_the_bound_is_never_called(setup: Corroborated) -> None:
    """nimbus raises its price above the policy's bound: the corroboration is refused before
    anything is reserved or forwarded, and the empty answer is DEGRADED."""
    h = setup.world.h
    h.ok(CORROBORATOR, "POST", "/tools/callable", {"tool": _outlook_at(setup, BOUND + 1)})
    h.advance(hours=25)  # past the price notice
    setup.world.script.answer = "empty"
    got = setup.call({"city": "berlin"})
    assert got["verdict"] == "DEGRADED"
    assert "PAYMENT_PRICE_ABOVE_MAXIMUM" in got["corroboration"]["reason"]
    assert setup.nimbus.seen == [] and h.balance(f"wallet:{PROVIDER}") == SKY_FUNDS


def test_a_caller_never_corroborates_its_own_call(setup: Corroborated) -> None:
    """nimbus calls sky's tool, whose empty answers nimbus's outlook corroborates: nimbus's
    tool is not asked about nimbus's own call (its results, passed by its own policy, failed
    sky's empty answer: nimbus was refunded, sky struck, and sky paid nimbus's price besides),
    and the empty answer is DEGRADED, charged to nimbus as listed."""
    h = setup.world.h
    h.app.accounts.deposit(h.app.accounts.authenticate(h.keys["root"]), CORROBORATOR, PRICE)
    setup.world.script.answer = "empty"
    setup.nimbus.answer = "good"
    r = setup.world.call({"city": "berlin"}, who=CORROBORATOR)
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["status"], got["verdict"], got["strike"]) == ("settled", "DEGRADED", False), got
    assert "made the call it would corroborate" in got["corroboration"]["reason"]
    assert not got["corroboration"]["available"] and setup.nimbus.seen == []
    assert h.balance(f"wallet:{CORROBORATOR}") == 0
    assert h.balance(f"wallet:{PROVIDER}") == SKY_FUNDS


def _outlook_at(setup: Corroborated, price: int) -> dict[str, Any]:
    current = setup.world.h.ok(CORROBORATOR, "GET", f"/tools/{OUTLOOK}")
    doc = _outlook(current["endpoint"]["base_url"])
    return doc | {"price": {"amount_minor": price, "currency": "USDC"}}


def test_a_provider_that_cannot_pay_gets_no_corroboration(store: Store) -> None:
    """sky's wallet is empty: the corroborating call is refused (INSUFFICIENT_FUNDS), the
    caller is never charged for it, and the empty answer is DEGRADED."""
    with weather_world(store) as world:
        h = world.h
        h.keys[CORROBORATOR] = h.app.accounts.create(None, CORROBORATOR, ["provider"]).value[
            "api_key"
        ]
        nimbus = Script(answer="empty")
        with AsgiServer(provider(nimbus)) as server:
            h.ok(CORROBORATOR, "POST", "/tools/callable", {"tool": _outlook(server.url)})
            h.ok(CORROBORATOR, "POST", f"/tools/{OUTLOOK}/policies", {"policy": OUTLOOK_POLICY})
            policy = corroborated(POLICY, 2, OUTLOOK, BOUND)
            h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
            world.script.answer = "empty"
            got = world.call({"city": "berlin"}).json()
            assert got["verdict"] == "DEGRADED", got
            assert "INSUFFICIENT_FUNDS" in got["corroboration"]["reason"]
            assert h.balance("wallet:ann") == FUNDS - PRICE and nimbus.seen == []
    audit(store)


def test_an_answer_with_results_is_never_corroborated(setup: Corroborated) -> None:
    """Only empty answers are corroborated: a forecast with days settles PASS and nimbus is
    never called, so sky pays nothing."""
    got = setup.call({"city": "berlin"})
    assert got["verdict"] == "PASS" and got["corroboration"] is None
    assert setup.nimbus.seen == []
    assert setup.world.h.balance(f"wallet:{PROVIDER}") == SKY_FUNDS


def test_the_caller_sees_the_corroborator_and_its_cost_before_paying(setup: Corroborated) -> None:
    """The tool's view, its listing and MCP tools/list name the corroborator, who pays, its
    bound, and that the caller pays nothing for it."""
    h = setup.world.h
    view = h.ok("ann", "GET", "/tools/weather_forecast")["judged_by"]
    assert view["version"] == 2
    assert view["corroboration"] == {
        "tool": OUTLOOK,
        "paid_by": "provider",
        "max_price": {"amount": str(BOUND), "asset": "USDC", "decimals": 6},
        "caller_pays": {"amount": "0", "asset": "USDC", "decimals": 6},
        "on": "empty answers",
    }
    r = http.post(
        f"{setup.world.service}/",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                }
            },
        },
        headers={
            "Authorization": f"Bearer {h.keys['ann']}",
            "Accept": "application/json, text/event-stream",
            "Mcp-Method": "tools/list",
            "Mcp-Protocol-Version": "2026-07-28",
        },
        timeout=30,
    )
    listed = {t["name"]: t for t in r.json()["result"]["tools"]}
    meta = listed["weather_forecast"]["_meta"]["adjudge/policy"]
    assert meta["corroboration"]["paid_by"] == "provider"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"tool": "weather_forecast"}, "POLICY_INVALID"),  # itself
        ({"paid_by": "caller"}, "POLICY_INVALID"),  # a caller never pays for it
        ({"max_price_minor": -1}, "POLICY_INVALID"),
        ({"tool": "no_such_tool"}, "POLICY_CORROBORATOR_INVALID"),
        # run by the gateway itself, outside any judging worker: selections only
        ({"arguments": "{city: city, again: city}"}, "POLICY_CORROBORATOR_INVALID"),
        ({"path": "sort_by(days, &date)"}, "POLICY_CORROBORATOR_INVALID"),
        ({"path": " | ".join(["[@, @][]"] * 8)}, "POLICY_CORROBORATOR_INVALID"),
    ],
)
def test_a_corroborator_that_is_not_another_providers_tool_is_refused(
    setup: Corroborated, change: dict[str, Any], code: str
) -> None:
    """A policy naming itself, a tool that does not exist, a payer other than the provider, a
    negative bound, or an expression that does more than select is refused at registration."""
    policy = corroborated(POLICY, 3, OUTLOOK, BOUND)
    policy["empty_result"]["corroboration"] |= change
    status, got = setup.world.h.refused(
        PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy}
    )
    assert (status, got) == (400, code)


def test_a_providers_own_tool_cannot_corroborate_it(setup: Corroborated) -> None:
    """sky's second tool is sky's: refused as a corroborator (independence is structural)."""
    h = setup.world.h
    doc = tool(setup.world.provider_url) | {"name": "sky_again", "policy": None}
    h.ok(PROVIDER, "POST", "/tools/callable", {"tool": doc})
    policy = corroborated(POLICY, 3, "sky_again", BOUND)
    status, code = h.refused(
        PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy}
    )
    assert (status, code) == (400, "POLICY_CORROBORATOR_INVALID")


def test_a_corroborated_call_replays_to_the_same_verdict(setup: Corroborated) -> None:
    """The call's replay bundle carries the corroboration it read; replayed offline, the
    verdict is the same."""
    from adjudge.replay import from_answer, replay  # noqa: PLC0415

    setup.world.script.answer = "empty"
    setup.nimbus.answer = "empty"
    got = setup.call({"city": "berlin"})
    h = setup.world.h
    r = h.call(PROVIDER, "GET", f"/calls/{got['intentId']}/bundle")
    assert r.status_code == 200, r.text
    report = replay(from_answer(r.json()), pin=setup.world.signer.keyid)
    assert report.outcome == "same", json.dumps(report.to_dict())
    assert report.verdict is not None and "EMPTY_CONFIRMED" in "\n".join(report.lines)


def test_a_stored_corroborator_expression_that_does_more_than_select_is_never_run(
    setup: Corroborated, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy stored before its corroborator's expressions were checked at registration, whose
    arguments expression calls a function: the gateway runs it outside any judging worker, so it
    is not run, and the empty answer is DEGRADED (settled, no strike), never confirmed."""
    from adjudge.app import calls as calls_app  # noqa: PLC0415

    monkeypatch.setattr(calls_app, "plain_selection", lambda _cost: True)  # as before the check
    policy = corroborated(POLICY, 3, OUTLOOK, BOUND)
    policy["empty_result"]["corroboration"]["arguments"] = "merge(@, `{}`)"
    setup.world.h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
    monkeypatch.undo()
    setup.world.script.answer = "empty"
    setup.nimbus.answer = "empty"
    got = setup.call({"city": "berlin"})
    assert (got["status"], got["verdict"], got["strike"]) == ("settled", "DEGRADED", False), got
    row = next(r for r in got["checks"] if r["stage"] == "empty_result")
    assert row["outcome"] == "unavailable" and "does more than select" in row["reason"], row


def _operator_with_a_tool(world: World, server_url: str) -> str:
    """An admin that provides a tool of its own (``op_outlook``, no policy of its own): the tool
    it would have the weather provider pay for. The tool's name."""
    h = world.h
    h.keys["op"] = h.app.accounts.create(None, "op", ["admin", "provider"]).value["api_key"]
    doc = tool(server_url, provider_id="op") | {
        "name": "op_outlook",
        "price": {"amount_minor": OUTLOOK_PRICE, "currency": "USDC"},
        "policy": None,
    }
    assert served(world, "op", "POST", "/tools/callable", {"tool": doc}).status_code == 201
    return "op_outlook"


def test_only_the_provider_declares_a_corroborator_its_wallet_pays(store: Store) -> None:
    """Over the served REST API: an admin's policy naming a corroborator (its own tool, at a
    bound it picks) for sky's tool is refused (403 CORROBORATION_PROVIDER_ONLY), nothing stored,
    and sky's empty answers then cost sky nothing; an admin's policy without one is accepted
    and judges; sky's own policy naming the same corroborator is accepted and sky pays for it.
    (The admin's was stored, and each empty answer paid the admin's tool from sky's wallet.)"""
    with weather_world(store) as world:
        h = world.h
        h.app.accounts.deposit(h.app.accounts.authenticate(h.keys["root"]), PROVIDER, SKY_FUNDS)
        outlook = Script(answer="empty")
        with AsgiServer(provider(outlook)) as server:
            theirs = _operator_with_a_tool(world, server.url)
            path = "/tools/weather_forecast/policies"
            for admin in ("root", "op"):
                r = served(
                    world, admin, "POST", path, {"policy": corroborated(POLICY, 2, theirs, BOUND)}
                )
                assert r.status_code == 403, r.text
                assert refusal(r) == (403, "CORROBORATION_PROVIDER_ONLY")
                assert PROVIDER in r.json()["error"]["message"]
            judged = served(world, "ann", "GET", "/tools/weather_forecast").json()["judged_by"]
            assert judged["version"] == 1 and judged.get("corroboration") is None
            world.script.answer = "empty"
            got = world.answered()
            assert (got["verdict"], got["corroboration"]) == ("EMPTY_UNVERIFIED", None), got
            assert outlook.seen == [] and h.balance(f"wallet:{PROVIDER}") == SKY_FUNDS
            # The operator may still propose rules for sky, in shadow mode, without spending.
            plain = POLICY | {"version": 2, "mode": "shadow"}
            r = served(world, "root", "POST", path, {"policy": plain})
            assert r.status_code == 201 and r.json()["registered_by"] == "root", r.text
            # sky's own word: the same declaration is accepted, and sky pays for it.
            mine = corroborated(POLICY, 3, theirs, BOUND)
            r = served(world, PROVIDER, "POST", path, {"policy": mine})
            assert r.status_code == 201, r.text
            got = world.answered()
            assert got["verdict"] == "EMPTY_CONFIRMED", got
            assert got["corroboration"]["source"] == "op" and len(outlook.seen) == 1
            assert h.balance(f"wallet:{PROVIDER}") == SKY_FUNDS - OUTLOOK_PRICE
    audit(store)


def test_a_stored_corroborator_another_account_declared_is_never_paid(
    setup: Corroborated, store: Store
) -> None:
    """A policy naming a corroborator that an admin registered before that was refused (its row
    says who registered it): the corroborator is not asked, the empty answer is DEGRADED
    (settled, no strike), and sky's wallet pays nothing. (It paid nimbus for each.)"""
    policy = corroborated(POLICY, 3, OUTLOOK, BOUND)
    world = setup.world
    r = served(world, PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
    assert r.status_code == 201, r.text
    with store.write() as tx:  # as an admin's registration stored it
        tx.conn.execute(
            update(call_policies)
            .where(call_policies.c.tool == "weather_forecast", call_policies.c.version == 3)
            .values(registered_by="root")
        )
    world.script.answer = "empty"
    setup.nimbus.answer = "empty"
    got = setup.call({"city": "berlin"})
    assert (got["status"], got["verdict"], got["strike"]) == ("settled", "DEGRADED", False), got
    found = got["corroboration"]
    assert not found["available"] and "registered by root" in found["reason"], found
    assert setup.nimbus.seen == []
    assert world.h.balance(f"wallet:{PROVIDER}") == SKY_FUNDS
    assert world.h.balance("wallet:ann") == FUNDS - PRICE
    # A caller reading the tool before paying is not told of a corroboration that never runs.
    judged = served(world, "ann", "GET", "/tools/weather_forecast").json()["judged_by"]
    assert judged["version"] == 3 and judged["corroboration"] is None
