"""Meaning judges asked after the answer (``meaning.when: after_answer``), end to end over
loopback with the fake OpenAI-compatible judges: a sampled call is answered and settled into
the provider's hold at once, its receipt saying the meaning check is pending; the upkeep judges
it later in a receipt that supersedes the first. A quorum of cited conflicts refunds from the
hold; a split goes to review; a yes-man casts no PASS; a hold waits for its judgment whatever its
deadline; a call judged twice is refunded once."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from test_meaning_judges import fake_models
from typer.testing import CliRunner

from adjudge.app import App
from adjudge.app import calls as app_calls
from adjudge.app.gateway import posthoc
from adjudge.app.gateway.posthoc import judge_one
from adjudge.app.maintenance import run_once
from adjudge.calls.meaning import judgment_payload
from adjudge.calls.pointers import resolve
from adjudge.cli import app
from adjudge.client import Client
from adjudge.receipts import SigningKey, canonical_bytes, verify, verify_chain
from adjudge.replay import from_answer, replay
from adjudge.store import Store, ledger, meaning_queue, receipt_log, records
from adjudge.store import calls as calls_db
from adjudge.store.meaning_queue import QueuedJudgment
from adjudge.workers import ChatCompletionsCallJudge
from support import http
from support.audit import audit
from support.bundles import edited, without
from support.deliveries import add_endpoint, events_to
from support.harness import FUNDS
from support.live import serving
from support.loopback import AsgiServer
from support.weather import POLICY, PRICE, PROVIDER, World, check_row, weather_world

runner = CliRunner()


@pytest.fixture
def world(store: Store) -> Iterator[tuple[World, str, list[dict[str, Any]]]]:
    """The weather world with a fake model endpoint on loopback (its base URL)."""
    seen: list[dict[str, Any]] = []
    with weather_world(store) as w, AsgiServer(fake_models(seen)) as models:
        yield w, f"{models.url}/v1", seen
    audit(store)


def _later(
    w: World, base: str, judges: dict[str, str], quorum: int, *, only_meaning: bool = False
) -> None:
    """Configure the judges and register sky's policy judging after the answer."""
    w.h.app.gateway.judges = {
        key: ChatCompletionsCallJudge(base, model, timeout=10) for key, model in judges.items()
    }
    w.h.app.gateway.judge_timeout = 10.0
    meaning = {"sample_rate": "1", "judges": list(judges), "quorum": quorum, "when": "after_answer"}
    policy = copy.deepcopy(POLICY) | {
        "version": 2,
        "checks": ["schema", "quality_rules", "meaning"],
        "meaning": meaning,
    }
    if only_meaning:
        policy |= {
            "checks": ["meaning"],
            "rules": [],
            "clauses": [{"match": "failures_at_least", "count": 1, "verdict": "FAIL"}],
        }
    w.h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})


def _chain_verifies(w: World) -> Any:
    """The whole log, as exported, verifies as one chain under the service's key."""
    through = w.h.ok("root", "POST", "/receipts/checkpoint")["id"]
    exported = w.h.ok("root", "GET", f"/receipts?limit=1000&through={through}")["receipts"]
    return verify_chain(
        [canonical_bytes(r["receipt"]["envelope"]) for r in exported], w.signer.keyid
    )


def _final(w: World, call_id: str) -> Any:
    """The call's view, and its current receipt verified under the service's key."""
    view = w.h.ok("ann", "GET", f"/gateway/calls/{call_id}")
    envelope = w.h.ok("root", "GET", f"/receipts/{view['receipt_id']}/envelope")
    return view, verify(canonical_bytes(envelope), w.signer.keyid)


def test_a_sampled_call_is_answered_at_once_and_its_receipt_says_pending(world: Any) -> None:
    """No judge is asked before the answer: the meaning check is pending (a non-vote, never a
    PASS), the call DEGRADED and settled into the provider's hold, its judgment queued."""
    w, base, seen = world
    _later(w, base, {"model-a": "honest"}, quorum=1)
    got = w.answered()
    assert seen == []
    assert (got["verdict"], got["status"]) == ("DEGRADED", "settled")
    assert check_row(got, "meaning")["outcome"] == "pending"
    statement = verify(canonical_bytes(got["receipt"]), w.signer.keyid)
    meaning = next(c for c in statement.predicate["checks"] if c["name"] == "meaning")
    assert meaning["verdict"] == "NOT_RUN" and "pending" in meaning["reason"]
    view = w.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    assert view["meaning"]["state"] == "pending" and view["money"]["state"] == "held"
    assert w.h.balance(f"held:{PROVIDER}") == PRICE
    panel = w.h.ok("ann", "GET", "/tools/weather_forecast")["judged_by"]["judges"]
    assert panel["when"] == "after the answer"


def test_a_quorum_of_cited_conflicts_later_refunds_from_the_hold(world: Any) -> None:
    """Judged later: 2 of 2 cited conflicts fail the call; a superseding receipt (its signature
    verifies, the chain too) refunds the charge from the provider's hold in one transaction."""
    w, base, seen = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    got = w.answered()
    assert w.h.balance("wallet:ann") == FUNDS - PRICE
    assert w.h.app.gateway.judge_pending() == 1
    assert len(seen) == 2
    view, receipt = _final(w, got["intentId"])
    assert (view["verdict"], view["status"]) == ("FAIL", "refunded")
    assert view["meaning"]["state"] == "judged" and view["meaning"]["outcome"] == "fail"
    original = verify(canonical_bytes(got["receipt"]), w.signer.keyid)
    assert receipt.verdict.value == "FAIL" and receipt.supersedes == original.receipt_id
    checks = {c["name"]: c["verdict"] for c in receipt.predicate["checks"]}
    assert checks["meaning:model-a"] == checks["meaning:model-b"] == "FAIL"
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.balance(f"held:{PROVIDER}") == 0
    assert view["money"]["state"] == "refunded"
    assert original.receipt_id in _chain_verifies(w).superseded
    # The first receipt's view names the judgment's as its successor (it named none).
    assert (
        w.h.ok("ann", "GET", f"/receipts/{got['receiptId']}")["superseded_by"]
        == (view["receipt_id"])
    )
    assert w.h.app.gateway.judge_pending() == 0  # nothing left
    # Refunded since it was answered: nothing was charged for it, so there is nothing to report
    # (it was refused as past its deadline, days before the deadline).
    r = w.h.refused("ann", "POST", f"/calls/{got['intentId']}/report", {"reason": "bad"})
    assert r == (409, "REPORT_NOT_ALLOWED")


def _hooked(w: World, store: Store) -> None:
    """An endpoint for every event of the caller's (``ep_ann``) and the provider's
    (``ep_sky``)."""
    with store.write() as tx:
        add_endpoint(tx, "ann", "ep_ann", w.h.clock.now())
        add_endpoint(tx, PROVIDER, "ep_sky", w.h.clock.now())


def test_both_parties_hear_of_a_refund_judged_later(world: Any, store: Store) -> None:
    """The judgment that refunds a settled call tells the caller and the provider
    (``call.rejudged``): the final verdict, what went back, the receipt that superseded the
    one their ``call.settled`` named. Their books would otherwise keep a charge that was
    given back."""
    w, base, _ = world
    _hooked(w, store)
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    got = w.answered()
    assert w.h.app.gateway.judge_pending() == 1
    view = w.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    for endpoint in ("ep_ann", "ep_sky"):
        settled, rejudged = events_to(store, endpoint)
        assert settled["type"] == "call.settled"
        first = settled["data"]["receipt_id"]
        assert first.startswith("rcpt_") and first != view["receipt_id"]
        assert rejudged["type"] == "call.rejudged"
        assert rejudged["data"] == {
            "call_id": got["intentId"],
            "tool": "weather_forecast",
            "provider": PROVIDER,
            "caller": "ann",
            "verdict": "FAIL",
            "payment": "refund",
            "strike": rejudged["data"]["strike"],
            "money_state": "refunded",
            "refund": str(PRICE),
            "receipt_id": view["receipt_id"],
            "supersedes": first,
        }


def test_a_judgment_that_keeps_the_charge_says_so(world: Any, store: Store) -> None:
    """No conflict found: the charge stays, and the event says nothing went back."""
    w, base, _ = world
    _hooked(w, store)
    _later(w, base, {"model-a": "honest"}, quorum=1)
    got = w.answered()
    assert w.h.app.gateway.judge_pending() == 1
    event = events_to(store, "ep_ann")[-1]
    assert (event["type"], event["data"]["call_id"]) == ("call.rejudged", got["intentId"])
    assert (event["data"]["payment"], event["data"]["refund"]) == ("settle", "0")
    assert event["data"]["money_state"] == "held"
    assert w.h.balance("wallet:ann") == FUNDS - PRICE


def test_a_judgment_after_an_upheld_report_says_the_charge_went_back(
    world: Any, store: Store
) -> None:
    """The caller reports while the judgment is pending and an admin upholds the report (the
    charge back from the hold); then the judges find nothing wrong. The event says where the
    charge is, the caller's again by the ruling, and that nothing more went back (it said
    "settle" and nothing of the ruling: a receiver correcting its books from it booked the
    charge again). Its receipt says it moves no money: the charge it would keep went back."""
    w, base, _ = world
    _hooked(w, store)
    _later(w, base, {"model-a": "honest"}, quorum=1)
    call_id = w.answered()["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "The wrong city."})
    ruling = {"upheld": True, "reasons": ["The wrong city."]}
    w.h.ok("root", "POST", f"/calls/{call_id}/report/ruling", ruling)
    assert w.h.app.gateway.judge_pending() == 1
    view, receipt = _final(w, call_id)
    assert view["money"]["state"] == "refunded_after_report"
    decision = receipt.predicate["policyDecision"]
    assert (decision["payment"], decision["chargeMinor"]) == ("none", 0)
    data = events_to(store, "ep_ann")[-1]["data"]
    assert (data["payment"], data["refund"]) == ("settle", "0")
    assert data["money_state"] == "refunded_after_report"
    assert w.h.balance("wallet:ann") == FUNDS


def test_the_final_verdict_judged_later_counts_in_the_providers_window(world: Any) -> None:
    """A call judged after its answer is measured as its final verdict: its first receipt's
    DEGRADED counts in no window, then the judge's cited conflict, FAIL, counts as a fail (and
    a call the judge found nothing wrong with as a pass)."""
    w, base, _ = world
    quality = {"declared_failure_rate": "1/2", "sample_gate": 50, "window_days": 7}
    contract = {"tool": "weather_unused", "version": "1"}
    w.h.ok(PROVIDER, "POST", "/tools", {"contract": contract, "quality": quality})
    _later(w, base, {"model-a": "strict"}, quorum=1)
    w.answered()
    window = w.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")["window"]
    assert (window["pass"], window["fail"]) == (0, 0)
    assert w.h.app.gateway.judge_pending() == 1
    window = w.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")["window"]
    assert (window["pass"], window["fail"]) == (0, 1)
    w.h.app.gateway.judges = {"model-a": ChatCompletionsCallJudge(base, "honest", timeout=10)}
    w.answered()
    assert w.h.app.gateway.judge_pending() == 1
    window = w.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")["window"]
    assert (window["pass"], window["fail"]) == (1, 1)


def test_a_judge_told_to_say_yes_casts_no_pass_later_either(world: Any) -> None:
    """A yes-man judged after the answer: no vote; under a policy that counts only the meaning
    check the final verdict is DEGRADED, the call stays charged, never PASS."""
    w, base, _ = world
    _later(w, base, {"model-a": "yes-man"}, quorum=1, only_meaning=True)
    got = w.answered()
    assert got["verdict"] == "DEGRADED"
    assert w.h.app.gateway.judge_pending() == 1
    view, receipt = _final(w, got["intentId"])
    assert view["verdict"] == "DEGRADED" and view["meaning"]["outcome"] == "no_conflict"
    assert receipt.verdict.value != "PASS"
    checks = {c["name"]: c["verdict"] for c in receipt.predicate["checks"]}
    assert checks["meaning:model-a"] == "UNKNOWN"
    assert w.h.balance(f"held:{PROVIDER}") == PRICE


def test_a_split_later_goes_to_the_review_queue(world: Any) -> None:
    """One of two cites a conflict, quorum 2: the charge stays held under an open report."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "honest"}, quorum=2)
    got = w.answered()
    assert w.h.app.gateway.judge_pending() == 1
    view = w.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    assert view["money"]["state"] == "reported" and view["meaning"]["outcome"] == "unavailable"
    queue = w.h.ok("root", "GET", "/call-reports?status=open")
    assert got["intentId"] in str(queue)


def test_both_parties_hear_of_a_review_a_split_opened_later(world: Any, store: Store) -> None:
    """The report a split opens is an event like a caller's (``call.reported``, opened by the
    meaning judges), then the judgment's own (``call.rejudged``)."""
    w, base, _ = world
    _hooked(w, store)
    _later(w, base, {"model-a": "strict", "model-b": "honest"}, quorum=2)
    got = w.answered()
    assert w.h.app.gateway.judge_pending() == 1
    for endpoint in ("ep_ann", "ep_sky"):
        kinds = [e["type"] for e in events_to(store, endpoint)]
        assert kinds == ["call.settled", "call.reported", "call.rejudged"]
        reported = events_to(store, endpoint)[1]["data"]
        assert reported["call_id"] == got["intentId"]
        assert reported["opened_by"] == "meaning_judges"


def test_a_split_after_a_dismissed_report_leaves_the_ruling_standing(world: Any) -> None:
    """The caller reported the call while its judgment was pending and an admin dismissed the
    report; the judges then split: the call is not sent to review again (a call has one report),
    nothing fails, and the hold matures at the same pass, as the ruling said."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "honest"}, quorum=2)
    call_id = w.answered()["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "wrong city"})
    ruling = {"upheld": False, "reasons": ["the forecast is for the city asked"]}
    w.h.ok("root", "POST", f"/calls/{call_id}/report/ruling", ruling)
    w.h.clock.advance(hours=24 * 30)  # past the report deadline
    done = run_once(w.h.app)
    assert (done["judged"], done["matured"], done["failed"]) == (1, 1, 0)
    view = w.h.ok("ann", "GET", f"/gateway/calls/{call_id}")
    assert view["meaning"]["outcome"] == "unavailable" and view["money"]["state"] == "paid"
    assert w.h.balance(f"wallet:{PROVIDER}") == PRICE


def test_a_judged_fail_refunds_a_charge_an_open_report_holds(world: Any) -> None:
    """The caller reported the call while its judgment was pending; the judges then FAIL it:
    the superseding receipt refunds the charge from the hold the report claimed, in its own
    transaction, and the report's ruling after it moves nothing more (dismissed: nothing is
    paid out; the receipt in force is the FAIL)."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    call_id = w.answered()["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "wrong city"})
    assert w.h.app.gateway.judge_pending() == 1
    view, receipt = _final(w, call_id)
    assert receipt.verdict.value == "FAIL"
    assert (view["status"], view["money"]["state"]) == ("refunded", "refunded")
    assert w.h.balance("wallet:ann") == FUNDS
    ruling = {"upheld": False, "reasons": ["the reporter gave no evidence"]}
    w.h.ok("root", "POST", f"/calls/{call_id}/report/ruling", ruling)
    w.h.clock.advance(hours=24 * 30)
    assert w.h.app.gateway.mature_holds() == 0
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.balance(f"wallet:{PROVIDER}") == w.h.balance(f"held:{PROVIDER}") == 0


def test_an_upheld_report_after_a_judged_fail_refunds_once(world: Any) -> None:
    """The same FAIL, then the report upheld: the caller is refunded once, by the judgment."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    call_id = w.answered()["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "wrong city"})
    assert w.h.app.gateway.judge_pending() == 1
    ruling = {"upheld": True, "reasons": ["the judges found the conflict"]}
    assert w.h.ok("root", "POST", f"/calls/{call_id}/report/ruling", ruling)["refunded_minor"] == 0
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.balance(f"wallet:{PROVIDER}") == w.h.balance(f"held:{PROVIDER}") == 0


def _strictly_queued(w: World, base: str) -> QueuedJudgment:
    """A call answered under one strict judge after the answer, and its queued judgment."""
    _later(w, base, {"model-a": "strict"}, quorum=1)
    got = w.answered()
    row = w.h.app.unit.read(lambda tx: meaning_queue.get(tx, got["intentId"]))
    assert row is not None, f"not queued: {got['verdict']} {got.get('checks')}"
    return row


def test_a_call_judged_twice_is_refunded_once(world: Any) -> None:
    """Two workers took the same queued call (or one died after asking its judges): only the
    first transaction writes a receipt and a refund; the second writes nothing."""
    w, base, _ = world
    row = _strictly_queued(w, base)
    gateway = w.h.app.gateway
    receipts = w.h.app.unit.read(lambda tx: len(receipt_log.chain(tx)))
    assert judge_one(gateway, row) is True
    assert judge_one(gateway, row) is False  # the same stale row again
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.balance(f"held:{PROVIDER}") == 0
    assert w.h.app.unit.read(lambda tx: len(receipt_log.chain(tx))) == receipts + 1
    refunds = w.h.app.unit.read(
        lambda tx: [leg for leg in ledger.releases(tx) if leg["memo"] == "refund"]
    )
    assert len(refunds) == 1


def test_a_hold_waits_for_its_judgment_past_the_report_deadline(world: Any) -> None:
    """The report deadline passes before the judges are asked: the hold does not mature while
    the judgment is pending, so a later FAIL still refunds from it; a call judged without a
    conflict matures at the next pass."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict"}, quorum=1)
    failed = w.answered()
    w.h.app.gateway.judges = {"model-a": ChatCompletionsCallJudge(base, "honest", timeout=10)}
    w.h.clock.advance(hours=1)
    kept = w.h.app.unit.read(lambda tx: meaning_queue.get(tx, failed["intentId"]))
    assert kept is not None
    fine = w.answered()
    w.h.clock.advance(hours=24 * 30)
    assert w.h.app.gateway.mature_holds() == 0
    assert w.h.ok(PROVIDER, "GET", "/accounts/me")["balance"] == "0"  # a read matures nothing
    w.h.app.gateway.judges = {"model-a": ChatCompletionsCallJudge(base, "strict", timeout=10)}
    assert judge_one(w.h.app.gateway, kept) is True
    w.h.app.gateway.judges = {"model-a": ChatCompletionsCallJudge(base, "honest", timeout=10)}
    assert w.h.app.gateway.judge_pending() == 1
    assert w.h.app.gateway.mature_holds() == 1
    assert w.h.balance(f"wallet:{PROVIDER}") == PRICE
    assert w.h.balance("wallet:ann") == FUNDS - PRICE
    view = w.h.ok("ann", "GET", f"/gateway/calls/{fine['intentId']}")
    assert view["meaning"]["outcome"] == "no_conflict" and view["money"]["state"] == "paid"


def test_a_call_judged_later_is_judged_by_the_version_it_recorded(world: Any) -> None:
    """A policy version stamped a moment before the call's start but committed after the call
    read its policy (another process, its clock half a second behind) does not strand the
    call: the later judgment rebuilds it from the version it recorded, and the provider is
    paid once the report window has passed (before, the judgment looked the policy up again by
    the call's start, found the newer version's digest, and gave up on every pass: the hold
    never matured, nor was the caller refunded)."""
    w, base, _ = world
    _later(w, base, {"model-a": "honest"}, quorum=1)
    w.h.clock.advance(minutes=1)
    got = w.answered()
    view = w.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    assert view["record"]["policy"]["version"] == 2 and view["meaning"]["state"] == "pending"
    w.h.clock.advance(seconds=-0.5)
    behind = copy.deepcopy(POLICY) | {"version": 3}
    w.h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": behind})
    w.h.clock.advance(seconds=0.5)
    assert w.h.app.gateway.judge_pending() == 1
    w.h.clock.advance(hours=80)
    assert w.h.app.gateway.mature_holds() == 1
    assert w.h.balance(f"wallet:{PROVIDER}") == PRICE
    view = w.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    assert view["meaning"]["outcome"] == "no_conflict" and view["money"]["state"] == "paid"


def test_judging_after_the_answer_needs_named_judges(world: Any) -> None:
    """A policy that judges after the answer without naming judges, or says another `when`, is
    refused at registration."""
    w, _, _ = world
    for meaning in (
        {"sample_rate": "1", "when": "after_answer"},
        {"sample_rate": "1", "judges": ["model-a"], "when": "tomorrow"},
    ):
        policy = copy.deepcopy(POLICY) | {
            "version": 2,
            "checks": ["schema", "quality_rules", "meaning"],
            "meaning": meaning,
        }
        code = w.h.refused(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
        assert code == (400, "POLICY_INVALID"), code


def _keyed(w: World, base: str) -> str:
    """Judges: the model ``strict`` and vic's verifier key, quorum 2, after the answer; the
    key's judge name."""
    key = f"key:{w.h.signers['vic'].keyid}"
    w.h.app.gateway.judges = {"model-a": ChatCompletionsCallJudge(base, "strict", timeout=10)}
    w.h.app.gateway.judge_timeout = 10.0
    meaning = {"sample_rate": "1", "judges": ["model-a", key], "quorum": 2, "when": "after_answer"}
    policy = copy.deepcopy(POLICY) | {
        "version": 2,
        "checks": ["schema", "quality_rules", "meaning"],
        "meaning": meaning,
    }
    w.h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
    return key


def _signed(
    signer: Any, shown: dict[str, Any], *, conflict: bool = True, **override: Any
) -> dict[str, Any]:
    """A judgment of the call ``shown`` citing its first day's date, signed by ``signer``."""
    found, value = resolve(shown["output"], "/days/0/date")
    assert found
    quote = "sha256:" + hashlib.sha256(str(value).encode()).hexdigest()
    citations = [{"pointer": "/days/0/date", "quote_sha256": quote}]
    payload = judgment_payload(
        call_id=shown["call_id"],
        response_digest=shown["response_digest"],
        judge_key=shown["judge_key"],
        conflict=conflict,
        reason="another day than asked",
        citations=citations,
    )
    body = {
        "judge_key": shown["judge_key"],
        "response_digest": shown["response_digest"],
        "conflict": True,
        "reason": "another day than asked",
        "citations": citations,
        "signature": base64.b64encode(signer.sign(canonical_bytes(payload))).decode(),
        "public_key": signer.public_key.to_base64(),
    }
    return body | override


def test_a_policy_judged_before_settling_cannot_name_a_key(world: Any) -> None:
    """A key cannot be asked synchronously: naming one without `after_answer` is refused."""
    w, _, _ = world
    key = f"key:{w.h.signers['vic'].keyid}"
    policy = copy.deepcopy(POLICY) | {
        "version": 2,
        "checks": ["schema", "quality_rules", "meaning"],
        "meaning": {"sample_rate": "1", "judges": [key]},
    }
    code = w.h.refused(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
    assert code == (400, "MEANING_KEY_JUDGE_NEEDS_AFTER_ANSWER")


def test_a_key_judgment_folds_with_a_model_under_one_quorum(world: Any) -> None:
    """The call waits for the key: the worker leaves it pending; vic lists it, signs a cited
    conflict, and the worker folds it with the model's: 2 of 2, FAIL, refunded from the hold.
    The same judgment again is a replay."""
    w, base, _ = world
    key = _keyed(w, base)
    got = w.answered()
    assert w.h.app.gateway.judge_pending() == 0  # the key has not signed yet
    listed = w.h.ok("vic", "GET", "/meaning/judgments")["judgments"]
    assert [j["call_id"] for j in listed] == [got["intentId"]] and listed[0]["judge_key"] == key
    assert w.h.ok("ann", "GET", "/meaning/judgments")["judgments"] == []
    body = _signed(w.h.signers["vic"], listed[0])
    path = f"/meaning/judgments/{got['intentId']}"
    assert w.h.ok("vic", "POST", path, body)["kept"] is True
    assert w.h.refused("vic", "POST", path, body) == (409, "MEANING_JUDGMENT_REPLAYED")
    assert w.h.ok("vic", "GET", "/meaning/judgments")["judgments"] == []
    assert w.h.app.gateway.judge_pending() == 1
    view, receipt = _final(w, got["intentId"])
    assert (view["verdict"], view["status"]) == ("FAIL", "refunded")
    checks = {c["name"]: c["verdict"] for c in receipt.predicate["checks"]}
    assert checks[f"meaning:{key}"] == checks["meaning:model-a"] == "FAIL"
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.refused("vic", "POST", path, body) == (409, "MEANING_JUDGMENT_LATE")


def _sent(w: World, who: str, path: str, body: Any = None, key: str | None = None) -> Any:
    """``who`` posts ``body`` to the served service's REST API (with ``key`` as its
    Idempotency-Key)."""
    headers = {"Authorization": f"Bearer {w.h.keys[who]}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return http.post(f"{w.service}/api/v1{path}", json=body, headers=headers, timeout=30)


def test_a_key_judgment_sent_again_with_its_key_is_answered_as_the_first(world: Any) -> None:
    """Over the served REST API: vic's judgment, sent again with its Idempotency-Key because its
    answer was lost, is answered as the first time (201, the same answer, marked a replay), kept
    once and folded once: one refund, and a resend after the judgment moves nothing. The same
    key with another body is refused (IDEMPOTENCY_KEY_REUSED); without a key, a second judgment
    is still MEANING_JUDGMENT_REPLAYED. (The resend was refused as a second judgment.)"""
    w, base, _ = world
    key = _keyed(w, base)
    got = w.answered()
    call_id = got["intentId"]
    listed = w.h.ok("vic", "GET", "/meaning/judgments")["judgments"]
    body = _signed(w.h.signers["vic"], listed[0])
    path = f"/meaning/judgments/{call_id}"
    first = _sent(w, "vic", path, body, key="judgment-berlin")
    assert first.status_code == 201 and "idempotent-replayed" not in first.headers, first.text
    again = _sent(w, "vic", path, body, key="judgment-berlin")
    assert again.status_code == 201, again.text
    assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
    other = body | {"reason": "another reason"}
    r = _sent(w, "vic", path, other, key="judgment-berlin")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "IDEMPOTENCY_KEY_REUSED")
    r = _sent(w, "vic", path, body)
    assert (r.status_code, r.json()["error"]["code"]) == (409, "MEANING_JUDGMENT_REPLAYED")
    kept = w.h.app.unit.read(lambda tx: meaning_queue.key_judgments(tx, call_id))
    assert [j["judge"] for j in kept] == [key]
    assert w.h.balance("wallet:ann") == FUNDS - PRICE  # nothing moves until it is folded
    assert w.h.app.gateway.judge_pending() == 1
    view, receipt = _final(w, call_id)
    assert (view["verdict"], view["status"]) == ("FAIL", "refunded")
    assert [c["name"] for c in receipt.predicate["checks"]].count(f"meaning:{key}") == 1
    assert w.h.balance("wallet:ann") == FUNDS and w.h.balance(f"held:{PROVIDER}") == 0
    late = _sent(w, "vic", path, body, key="judgment-berlin")  # its answer lost once more
    assert late.status_code == 201 and late.json() == first.json(), late.text
    assert w.h.app.gateway.judge_pending() == 0
    assert w.h.balance("wallet:ann") == FUNDS and w.h.balance(f"held:{PROVIDER}") == 0


class _LosesFirstJudgmentAnswer(httpx.BaseTransport):
    """A connection whose first answer to a posted judgment is lost after the service has it
    (a reset): the Idempotency-Keys each judgment was sent with."""

    def __init__(self) -> None:
        self.real = httpx.HTTPTransport()
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and "/meaning/judgments/" in request.url.path:
            self.keys.append(request.headers.get("idempotency-key"))
            if len(self.keys) == 1:
                self.real.handle_request(request).close()
                raise httpx.ReadError("connection reset by peer", request=request)
        return self.real.handle_request(request)

    def close(self) -> None:
        self.real.close()


def test_the_client_sends_a_judgment_again_with_its_key_and_it_counts_once(world: Any) -> None:
    """The client library's judgment whose answer is lost is sent again with the same
    Idempotency-Key and answered as kept, kept once; sent again with that key given, the same
    answer. (The client's resend was refused MEANING_JUDGMENT_REPLAYED, its judgment kept.)"""
    w, base, _ = world
    key = _keyed(w, base)
    call_id = w.answered()["intentId"]
    transport = _LosesFirstJudgmentAnswer()
    with Client(w.service, w.h.keys["vic"], transport=transport) as client:
        shown = client.meaning_judgments()["judgments"][0]
        body = _signed(w.h.signers["vic"], shown)
        kept = client.judge_meaning(call_id, body)
        assert kept["kept"] is True and kept["judge_key"] == key
        sent = transport.keys
        assert len(sent) == 2 and sent[0] is not None and sent[0] == sent[1]
        again = client.judge_meaning(call_id, body, idempotency_key=sent[0])
        assert again == kept and transport.keys[-1] == sent[0]
    judged = w.h.app.unit.read(lambda tx: meaning_queue.key_judgments(tx, call_id))
    assert [j["judge"] for j in judged] == [key]
    assert w.h.app.gateway.judge_pending() == 1
    assert w.h.balance("wallet:ann") == FUNDS


def test_a_key_sees_its_calls_behind_a_thousand_pending_for_another_key(
    world: Any, store: Store
) -> None:
    """A key owner's list reads the calls its own keys are asked for, by index: a thousand
    and one calls queued before, all asking another key, hide nothing (the list read the
    oldest thousand pending calls of every key and kept its own)."""
    w, base, _ = world
    key = _keyed(w, base)
    early = datetime(2025, 1, 1, tzinfo=UTC)
    with store.write() as tx:
        for i in range(1001):
            meaning_queue.add(
                tx,
                call_id=f"call_other_{i}",
                provider=PROVIDER,
                policy_digest="sha256:" + "0" * 64,
                response_digest="sha256:" + "1" * 64,
                receipt_id="rcpt_other",
                at=early + timedelta(seconds=i),
                key_judges=["key:someone-else"],
            )
    got = w.answered()
    listed = w.h.ok("vic", "GET", "/meaning/judgments")["judgments"]
    assert [(j["call_id"], j["judge_key"]) for j in listed] == [(got["intentId"], key)]
    body = _signed(w.h.signers["vic"], listed[0])
    assert w.h.ok("vic", "POST", f"/meaning/judgments/{got['intentId']}", body)["kept"] is True
    assert w.h.ok("vic", "GET", "/meaning/judgments")["judgments"] == []  # asked no more


def test_forged_and_misbound_key_judgments_are_refused(world: Any) -> None:
    """Another key's signature, a signature over another vote, another response's digest, or
    someone else posting vic's key: refused, nothing kept; once the report deadline passes the
    key's silence is an unavailable judgment (1 of 2 cited: a split, sent to review)."""
    w, base, _ = world
    _keyed(w, base)
    got = w.answered()
    shown = w.h.ok("vic", "GET", "/meaning/judgments")["judgments"][0]
    path = f"/meaning/judgments/{got['intentId']}"
    stranger = SigningKey.generate()
    forged = _signed(stranger, shown)
    assert w.h.refused("vic", "POST", path, forged) == (403, "MEANING_JUDGMENT_KEY_INVALID")
    flipped = _signed(w.h.signers["vic"], shown, conflict=False)
    assert w.h.refused("vic", "POST", path, flipped) == (403, "MEANING_JUDGMENT_SIGNATURE_INVALID")
    other = _signed(w.h.signers["vic"], shown, response_digest="sha256:" + "0" * 64)
    assert w.h.refused("vic", "POST", path, other) == (409, "MEANING_JUDGMENT_DIGEST_MISMATCH")
    good = _signed(w.h.signers["vic"], shown)
    assert w.h.refused("ann", "POST", path, good) == (403, "MEANING_JUDGMENT_KEY_INVALID")
    w.h.clock.advance(hours=24 * 30)
    assert w.h.refused("vic", "POST", path, good) == (409, "MEANING_JUDGMENT_LATE")
    assert w.h.app.gateway.judge_pending() == 1
    view = w.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    assert view["money"]["state"] == "reported" and view["meaning"]["outcome"] == "unavailable"


def test_a_key_judgment_kept_while_the_worker_judges_is_never_read_as_silence(
    world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vic's cited conflict is stamped a second before the deadline and reaches the store just
    as the worker, at the deadline, has read the call without it and asks the model: the
    worker's receipt is not written over the kept judgment (it judged vic's key as one that
    signed nothing, so the call settled PASS and vic was told "kept"); the next pass judges the
    call with it, and its conflict (a quorum of 1) refunds the call."""
    w, base, _ = world
    key = _keyed(w, base)
    w.h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": _quorum_one(key)})
    w.h.app.gateway.judges = {"model-a": ChatCompletionsCallJudge(base, "honest", timeout=10)}
    call_id = w.answered()["intentId"]
    shown = w.h.ok("vic", "GET", "/meaning/judgments")["judgments"][0]
    deadline = datetime.fromisoformat(shown["due_at"])
    w.h.clock.current = deadline - timedelta(seconds=1)
    body = _signed(w.h.signers["vic"], shown)
    gateway, unit = w.h.app.gateway, w.h.app.gateway.unit
    row = unit.read(lambda tx: meaning_queue.get(tx, call_id))
    assert row is not None
    write, ask = unit.write, posthoc.ask_judges
    kept: list[Any] = []

    def late_write(fn: Any, **kw: Any) -> Any:  # the key's write, delayed past the worker's read
        monkeypatch.setattr(unit, "write", write)
        w.h.clock.current = deadline

        async def asked(*args: Any, **kwargs: Any) -> Any:
            kept.append(write(fn, **kw))
            return await ask(*args, **kwargs)

        monkeypatch.setattr(posthoc, "ask_judges", asked)
        assert judge_one(gateway, row) is False  # its judgment is not written
        monkeypatch.setattr(posthoc, "ask_judges", ask)
        return kept[0]

    monkeypatch.setattr(unit, "write", late_write)
    vic = w.h.app.accounts.authenticate(w.h.keys["vic"])
    assert gateway.submit_key_judgment(vic, call_id, body).value["kept"] is True
    assert gateway.judge_pending() == 1
    view, receipt = _final(w, call_id)
    assert (view["verdict"], view["status"]) == ("FAIL", "refunded")
    assert {c["name"]: c["verdict"] for c in receipt.predicate["checks"]}[f"meaning:{key}"] == (
        "FAIL"
    )
    assert w.h.balance("wallet:ann") == FUNDS


def _quorum_one(key: str) -> dict[str, Any]:
    """sky's policy after the answer: the model and vic's key, either one's cited conflict a
    FAIL (quorum 1)."""
    meaning = {"sample_rate": "1", "judges": ["model-a", key], "quorum": 1, "when": "after_answer"}
    return copy.deepcopy(POLICY) | {
        "version": 3,
        "checks": ["schema", "quality_rules", "meaning"],
        "meaning": meaning,
    }


def test_a_caller_cannot_judge_its_own_call(world: Any) -> None:
    """ann is a verifier too, and sky's policy names her key (a cited conflict fails a call on
    its own): her own call is not listed for her key and her judgment of it is refused
    (CONFLICT_OF_INTEREST, nothing kept), so her key is silent on it and her charge stands. Her
    signed conflict refunded her own call and struck the provider."""
    w, _, _ = world
    key = f"key:{w.h.signers['ann'].keyid}"
    meaning = {"sample_rate": "1", "judges": [key], "quorum": 1, "when": "after_answer"}
    policy = copy.deepcopy(POLICY) | {
        "version": 2,
        "checks": ["schema", "quality_rules", "meaning"],
        "meaning": meaning,
    }
    w.h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
    call_id = w.answered()["intentId"]
    assert w.h.ok("ann", "GET", "/meaning/judgments")["judgments"] == []
    # Not asked at all: her own calls never fill the page of those her key is asked about.
    assert w.h.app.unit.read(lambda tx: meaning_queue.asked_of(tx, [key], limit=10)) == []
    record = w.h.ok("ann", "GET", f"/calls/{call_id}")
    shown = {  # what ann signs over, as her key would have been shown it
        "call_id": call_id,
        "judge_key": key,
        "response_digest": record["record"]["response_digest"],
        "output": record["response"]["output"],
    }
    body = _signed(w.h.signers["ann"], shown)
    path = f"/meaning/judgments/{call_id}"
    assert w.h.refused("ann", "POST", path, body) == (403, "CONFLICT_OF_INTEREST")
    w.h.clock.advance(hours=24 * 30)
    assert w.h.app.gateway.judge_pending() == 1
    view = w.h.ok("ann", "GET", f"/gateway/calls/{call_id}")
    assert view["status"] == "settled" and view["meaning"]["outcome"] == "unavailable"
    assert w.h.balance("wallet:ann") == FUNDS - PRICE


def test_the_cli_lists_and_signs_a_key_judgment(world: Any, tmp_path: Path) -> None:
    """`adjudge calls judgments` lists what waits for vic's key; `adjudge calls judge` signs a
    cited conflict with the key file; `adjudge calls show` says the meaning check is pending,
    then its final outcome."""
    w, base, _ = world
    _keyed(w, base)
    got = w.answered()
    pem = tmp_path / "vic.pem"
    pem.write_bytes(w.h.signers["vic"].to_pem())
    pem.chmod(0o600)
    with serving(w.h.app) as url:

        def cli(who: str, *args: str) -> Any:
            done = runner.invoke(app, ["calls", "--url", url, "--key", w.h.keys[who], *args])
            assert done.exit_code == 0, done.output
            return done.output

        assert "meaning: pending" in cli("ann", "show", got["intentId"])
        assert got["intentId"] in cli("vic", "judgments")
        said = cli(
            "vic",
            "judge",
            got["intentId"],
            "--verifier-key",
            str(pem),
            "--conflict",
            "--cite",
            "/days/0/date",
            "--reason",
            "another day than asked",
        )
        assert "a cited conflict" in said
        assert "No call waits" in cli("vic", "judgments")
        assert w.h.app.gateway.judge_pending() == 1
        assert "meaning: fail" in cli("ann", "show", got["intentId"])
    assert w.h.balance("wallet:ann") == FUNDS


def test_two_workers_at_once_refund_once(world: Any) -> None:
    """Two workers judge the same queued call at the same moment, on two threads: one
    superseding receipt and one refund, whichever commits first."""
    w, base, _ = world
    row = _strictly_queued(w, base)
    gateway = w.h.app.gateway
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda _: judge_one(gateway, row), range(2)))
    assert sorted(done) == [False, True]
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.balance(f"held:{PROVIDER}") == 0
    refunds = w.h.app.unit.read(
        lambda tx: [leg for leg in ledger.releases(tx) if leg["memo"] == "refund"]
    )
    assert len(refunds) == 1


def test_a_policy_cannot_name_a_key_nobody_registered(world: Any) -> None:
    """A key judge must be a registered, active verifier key."""
    w, _, _ = world
    meaning = {
        "sample_rate": "1",
        "judges": ["key:" + "0" * 64],
        "when": "after_answer",
    }
    policy = copy.deepcopy(POLICY) | {
        "version": 2,
        "checks": ["schema", "quality_rules", "meaning"],
        "meaning": meaning,
    }
    code = w.h.refused(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": policy})
    assert code == (404, "MEANING_JUDGE_KEY_UNKNOWN")


def _key_policy(key: str, version: int = 2) -> dict[str, Any]:
    """sky's policy judged after the answer by ``key`` alone, its cited conflict a FAIL."""
    meaning = {"sample_rate": "1", "judges": [key], "quorum": 1, "when": "after_answer"}
    return copy.deepcopy(POLICY) | {
        "version": version,
        "checks": ["schema", "quality_rules", "meaning"],
        "meaning": meaning,
    }


def test_only_the_provider_names_a_key_to_judge_its_calls(world: Any) -> None:
    """A key's signed conflict refunds a call from sky's hold and strikes sky: a person's word
    over sky's money and record, which only sky itself names. An admin naming its own key, or
    another verifier's, is refused (403 KEY_JUDGES_PROVIDER_ONLY, nothing stored); sky naming a
    key of its own is refused (403 CONFLICT_OF_INTEREST: its word on its own calls is never
    heeded); sky naming vic's is registered. (The admin's was stored, and its key alone failed,
    refunded and struck any call of sky's it liked.)"""
    w, _, _ = world
    h = w.h
    op_signer = SigningKey.generate()
    made = h.app.accounts.create(
        None, "op", ["admin", "verifier"], verifier_public_key=op_signer.public_key.to_base64()
    )
    h.keys["op"] = made.value["api_key"]
    path = "/tools/weather_forecast/policies"
    for admin, signer in (("op", op_signer), ("root", h.signers["vic"])):
        policy = _key_policy(f"key:{signer.keyid}")
        assert h.refused(admin, "POST", path, {"policy": policy}) == (
            403,
            "KEY_JUDGES_PROVIDER_ONLY",
        )
    assert h.ok("ann", "GET", "/tools/weather_forecast")["judged_by"]["version"] == 1
    own = SigningKey.generate()
    raw = base64.b64decode(own.public_key.to_base64())
    h.app.unit.write(lambda tx: records.add_verifier_key(tx, PROVIDER, raw, at=h.clock.now()))
    code = h.refused(PROVIDER, "POST", path, {"policy": _key_policy(f"key:{own.keyid}")})
    assert code == (403, "CONFLICT_OF_INTEREST")
    h.ok(PROVIDER, "POST", path, {"policy": _key_policy(f"key:{h.signers['vic'].keyid}")})
    assert h.ok("ann", "GET", "/tools/weather_forecast")["judged_by"]["version"] == 2


def test_an_admins_key_policy_stored_before_is_not_heeded(
    world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy naming vic's key that root registered before the refusal: the key is not asked
    (vic's list is empty, its judgment is not taken), the call is judged at once without it
    (no waiting for the deadline), and the charge stands."""
    w, _, _ = world
    monkeypatch.setattr(app_calls, "_on_the_providers_word", lambda *_: None, raising=False)
    key = f"key:{w.h.signers['vic'].keyid}"
    w.h.ok("root", "POST", "/tools/weather_forecast/policies", {"policy": _key_policy(key)})
    panel = w.h.ok("ann", "GET", "/tools/weather_forecast")["judged_by"]["judges"]
    assert (panel["keys"], panel["not_asked"]) == ([], [key])  # as the caller reads it
    call_id = w.answered()["intentId"]
    assert w.h.ok("vic", "GET", "/meaning/judgments")["judgments"] == []
    record = w.h.ok("ann", "GET", f"/calls/{call_id}")
    shown = {
        "call_id": call_id,
        "judge_key": key,
        "response_digest": record["record"]["response_digest"],
        "output": record["response"]["output"],
    }
    body = _signed(w.h.signers["vic"], shown)
    path = f"/meaning/judgments/{call_id}"
    assert w.h.refused("vic", "POST", path, body) == (404, "MEANING_JUDGMENT_NOT_FOUND")
    assert w.h.app.gateway.judge_pending() == 1
    view = w.h.ok("ann", "GET", f"/gateway/calls/{call_id}")
    assert view["status"] == "settled" and view["meaning"]["outcome"] == "unavailable"
    assert w.h.balance("wallet:ann") == FUNDS - PRICE


def test_a_judgment_later_under_a_policy_in_the_providers_stead_refunds_nothing(
    world: Any, store: Store
) -> None:
    """Sky's enforcing policy judging after the answer, its row rewritten as root's (registered
    in sky's stead before that was refused): 2 of 2 cited conflicts judge the call FAIL later,
    but it acts as shadow: the charge stands, nothing is struck, the superseding receipt signs
    `enforced: false`, and the bundle replays the same. (It was refunded from sky's hold.)"""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    with store.write() as tx:
        tx.conn.execute(
            update(calls_db.call_policies)
            .where(calls_db.call_policies.c.tool == "weather_forecast")
            .where(calls_db.call_policies.c.version == 2)
            .values(registered_by="root")
        )
    got = w.answered()
    assert w.h.app.gateway.judge_pending() == 1
    view, receipt = _final(w, got["intentId"])
    assert (view["verdict"], view["status"]) == ("FAIL", "settled"), view
    decision = receipt.predicate["policyDecision"]
    assert (decision["payment"], decision["strike"], decision["enforced"]) == (
        "settle",
        False,
        False,
    )
    assert w.h.balance("wallet:ann") == FUNDS - PRICE
    assert w.h.balance(f"held:{PROVIDER}") == PRICE
    assert w.h.ok("pat", "GET", f"/providers/{PROVIDER}/quality")["window"]["fail"] == 0
    found = replay(from_answer(w.h.ok("ann", "GET", f"/calls/{got['intentId']}/bundle")))
    assert found.outcome == "same", [d.describe() for d in found.differences]
    assert found.detail == {"call_verdict": "FAIL", "payment": "settle"}


def test_a_call_judged_after_its_answer_replays_from_its_bundle(world: Any) -> None:
    """The bundle of a call judged later holds its superseding receipt, the final record and the
    judgments it was derived from: replayed offline, the same verdict (FAIL, refunded); without
    the judgments the replay differs on the meaning rows."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    got = w.answered()
    before = replay(from_answer(w.h.ok("ann", "GET", f"/calls/{got['intentId']}/bundle")))
    assert before.outcome == "same" and before.detail["call_verdict"] == "DEGRADED"
    assert w.h.app.gateway.judge_pending() == 1
    view, receipt = _final(w, got["intentId"])
    answer = w.h.ok("ann", "GET", f"/calls/{got['intentId']}/bundle")
    original = verify(canonical_bytes(got["receipt"]), w.signer.keyid).receipt_id
    bundled = verify(canonical_bytes(answer["receipt"]["envelope"]), w.signer.keyid)
    assert answer["receipt"]["id"] == view["receipt_id"]
    assert bundled.receipt_id == receipt.receipt_id != original
    assert [j["judge"] for j in answer["judgments"]] == ["model-a", "model-b"]
    data = from_answer(answer)
    found = replay(data, w.signer.keyid)
    assert found.outcome == "same", [d.describe() for d in found.differences]
    assert found.detail == {"call_verdict": "FAIL", "payment": "refund"}
    stripped = replay(without(data, "judgments.json"), w.signer.keyid)
    assert stripped.outcome != "same"
    assert any("meaning" in d.what for d in stripped.differences)


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_an_upheld_ruling_racing_the_judgment_refunds_once(
    world: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second process upholds the report while the judges' FAIL refunds the call: the
    ruling read the report open before the judgment committed, and reads the call, with its
    row held, refunded: it refunds nothing, where it refunded the caller a second time from
    the provider's own wallet."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    call_id = w.answered()["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "wrong city"})
    w.h.ok("root", "POST", f"/accounts/{PROVIDER}/deposits", {"amount": str(10 * PRICE)})
    other = App(store, clock=w.h.clock, issuer=w.h.app.issuer, checker=w.h.app.checker)
    read, judged = threading.Event(), threading.Event()
    held = posthoc.db.call_held

    def wait_then_hold(tx: Any, found: str) -> Any:
        if not read.is_set():  # the ruling's, first: it waits there for the judgment
            read.set()
            assert judged.wait(30)
        return held(tx, found)

    monkeypatch.setattr(posthoc.db, "call_held", wait_then_hold)
    ruled: dict[str, Any] = {}

    def rule() -> None:
        root = other.accounts.authenticate(w.h.keys["root"])
        reasons = ["the judges found the conflict"]
        ruled.update(other.calls.rule_report(root, call_id, upheld=True, reasons=reasons).value)

    ruling = threading.Thread(target=rule)
    ruling.start()
    try:
        assert read.wait(30)
        assert w.h.app.gateway.judge_pending() == 1
    finally:
        judged.set()
        ruling.join(60)
        other.close()
    assert ruled["status"] == "upheld" and ruled["refunded_minor"] == 0
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.balance(f"wallet:{PROVIDER}") == 10 * PRICE


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_a_judgment_racing_an_upheld_ruling_says_what_it_moved(
    world: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second process upholds the report after the judgment read the call and asked its
    judges, and before its transaction holds the call: the judgment reads the charge back and
    signs a receipt that moves nothing and says so (it committed the refund it had read as
    due, having moved nothing)."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    call_id = w.answered()["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "wrong city"})
    other = App(store, clock=w.h.clock, issuer=w.h.app.issuer, checker=w.h.app.checker)
    held = posthoc.db.call_held
    ruling: list[threading.Thread] = []
    ruled: dict[str, Any] = {}

    def rule() -> None:
        root = other.accounts.authenticate(w.h.keys["root"])
        reasons = ["the provider's feed was stale"]
        ruled.update(other.calls.rule_report(root, call_id, upheld=True, reasons=reasons).value)

    def ruled_then_held(tx: Any, found: str) -> Any:
        if not ruling:  # the ruling commits before the judgment holds the call
            ruling.append(threading.Thread(target=rule))
            ruling[0].start()
            ruling[0].join(60)
        return held(tx, found)

    monkeypatch.setattr(posthoc.db, "call_held", ruled_then_held)
    try:
        assert w.h.app.gateway.judge_pending() == 1
    finally:
        other.close()
    assert ruled["status"] == "upheld" and ruled["refunded_minor"] == PRICE
    view, receipt = _final(w, call_id)
    assert receipt.verdict.value == "FAIL" and view["money"]["state"] == "refunded_after_report"
    decision = receipt.predicate["policyDecision"]
    assert (decision["payment"], decision["chargeMinor"]) == ("none", 0)
    assert w.h.balance("wallet:ann") == FUNDS


@pytest.mark.parametrize("store", ["postgresql"], indirect=True)
def test_a_judgment_keeping_the_charge_and_a_ruling_at_once_supersede_in_turn(
    world: Any, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second process upholds the report after a judgment that keeps the charge has read the
    receipt in force: one of them waits for the other, and the later supersedes the earlier's
    receipt, so the log verifies as one chain and the ruling's refund is said once (each
    superseded the call's first receipt, which the log then held superseded twice, and the
    judgment said the charge stood after the ruling had refunded it)."""
    w, base, _ = world
    _later(w, base, {"model-a": "honest"}, quorum=1)
    got = w.answered()
    call_id = got["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "wrong city"})
    other = App(store, clock=w.h.clock, issuer=w.h.app.issuer, checker=w.h.app.checker)
    in_force = posthoc._in_force
    ruled: dict[str, Any] = {}
    ruling: list[threading.Thread] = []

    def rule() -> None:
        root = other.accounts.authenticate(w.h.keys["root"])
        reasons = ["the provider's feed was stale"]
        ruled.update(other.calls.rule_report(root, call_id, upheld=True, reasons=reasons).value)

    def read_then_ruled(tx: Any, *args: Any) -> str:
        found = in_force(tx, *args)
        if not ruling:  # the ruling runs once the judgment has read the receipt in force
            ruling.append(threading.Thread(target=rule))
            ruling[0].start()
            ruling[0].join(2)  # it commits now, or waits for the judgment
        return found

    monkeypatch.setattr(posthoc, "_in_force", read_then_ruled)
    try:
        assert w.h.app.gateway.judge_pending() == 1
        ruling[0].join(60)
    finally:
        other.close()
    assert ruled["status"] == "upheld"
    first = verify(canonical_bytes(got["receipt"]), w.signer.keyid).receipt_id
    chain = _chain_verifies(w)
    assert first in chain.superseded
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.balance(f"held:{PROVIDER}") == 0


def test_every_receipt_about_a_call_is_for_its_parties(world: Any) -> None:
    """The receipt of a ruling on its report and the one its judgment superseded it with are,
    as its first is, for the call's parties and admins (they were read by anyone holding their
    id: the ruling's reasons, the refund, the verdict)."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    call_id = w.answered()["intentId"]
    first = w.h.ok("ann", "GET", f"/gateway/calls/{call_id}")["receipt_id"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "wrong city"})
    assert w.h.app.gateway.judge_pending() == 1
    judged = w.h.ok("ann", "GET", f"/gateway/calls/{call_id}")["receipt_id"]
    reasons = ["confidential: the provider's feed was stale"]
    ruling = w.h.ok(
        "root", "POST", f"/calls/{call_id}/report/ruling", {"upheld": True, "reasons": reasons}
    )
    assert len({first, judged, ruling["receipt_id"]}) == 3
    for receipt_id in (first, judged, ruling["receipt_id"]):
        for path in (f"/receipts/{receipt_id}", f"/receipts/{receipt_id}/envelope"):
            assert w.h.refused("bob", "GET", path) == (403, "NOT_A_PARTY"), path
            for who in ("ann", PROVIDER, "root"):
                assert w.h.call(who, "GET", path).status_code == 200, (who, path)


def _decided(w: World, receipt_id: str) -> dict[str, Any]:
    """The policy decision a receipt signs, its envelope verified under the service's key."""
    envelope = w.h.ok("root", "GET", f"/receipts/{receipt_id}/envelope")
    return dict(verify(canonical_bytes(envelope), w.signer.keyid).predicate["policyDecision"])


def _upheld_before_judged(w: World, base: str) -> tuple[str, dict[str, Any]]:
    """A call judged later by two strict judges, reported by its caller and the report upheld
    before the judges were asked: the call's id and the ruling."""
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    call_id = w.answered()["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "The wrong city."})
    ruling = {"upheld": True, "reasons": ["The wrong city."]}
    return call_id, w.h.ok("root", "POST", f"/calls/{call_id}/report/ruling", ruling)


def test_a_judged_fail_after_an_upheld_report_says_it_refunds_nothing(
    world: Any, store: Store
) -> None:
    """The caller reports while the judgment is pending and an admin upholds the report (the
    charge back from the hold, against the ruling's receipt); then the judges FAIL the call.
    The superseding receipt moves no money, and says so (payment "none", nothing charged): it
    said "refund" of the price, a refund its transaction never made, while the event said 0.
    Its bundle replays to the same statement."""
    w, base, _ = world
    _hooked(w, store)
    call_id, ruled = _upheld_before_judged(w, base)
    assert ruled["refunded_minor"] == PRICE
    assert w.h.app.gateway.judge_pending() == 1
    view, receipt = _final(w, call_id)
    assert receipt.verdict.value == "FAIL" and view["money"]["state"] == "refunded_after_report"
    decision = receipt.predicate["policyDecision"]
    assert (decision["payment"], decision["chargeMinor"], decision["priceMinor"]) == (
        "none",
        0,
        PRICE,
    )
    assert _decided(w, ruled["receipt_id"])["refundMinor"] == PRICE  # the one refund
    data = events_to(store, "ep_ann")[-1]["data"]
    assert (data["payment"], data["refund"]) == ("refund", "0")
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.balance(f"held:{PROVIDER}") == w.h.balance(f"wallet:{PROVIDER}") == 0
    answer = w.h.ok("ann", "GET", f"/calls/{call_id}/bundle")
    assert answer["receipt"]["id"] == view["receipt_id"]
    data = from_answer(answer)
    found = replay(data, w.signer.keyid)
    assert found.outcome == "same", [d.describe() for d in found.differences]
    assert any("moves no money" in note for note in found.notes)

    def unsaid(raw: bytes) -> bytes:
        return json.dumps({k: v for k, v in json.loads(raw).items() if k != "payment"}).encode()

    # A bundle that does not say the receipt moved nothing re-derives the verdict's refund.
    stripped = replay(edited(data, "call.json", unsaid), w.signer.keyid)
    assert stripped.outcome != "same"
    assert any("policyDecision.payment" in d.what for d in stripped.differences)


def test_a_call_refunded_at_once_is_not_sent_to_the_judges(world: Any) -> None:
    """A sampled answer that fails a quality rule is refunded by its first receipt: nothing of
    its charge is left for a judgment to move, and a cited conflict would only add a fail vote
    to a call its own checks failed. Its judgment is not queued, no judge is asked, and its
    first receipt stays the one in force (it was queued, its judges asked, and a superseding
    receipt signed that moved nothing). Its bundle replays to that receipt."""
    w, base, seen = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    w.script.answer = "hot"
    got = w.answered()
    assert (got["verdict"], got["status"]) == ("FAIL", "refunded")
    assert w.h.balance("wallet:ann") == FUNDS
    assert w.h.app.gateway.judge_pending() == 0 and seen == []
    view = w.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    assert view["meaning"] is None and view["receipt_id"] == got["receiptId"]
    assert w.h.balance("wallet:ann") == FUNDS
    answer = w.h.ok(PROVIDER, "GET", f"/calls/{got['intentId']}/bundle")
    assert answer["receipt"]["id"] == got["receiptId"]
    found = replay(from_answer(answer), w.signer.keyid)
    assert found.outcome == "same", [d.describe() for d in found.differences]


def test_a_call_under_a_withdrawn_policy_is_not_sent_to_the_judges(world: Any) -> None:
    """A policy withdrawn by the call's start cannot penalize: the call is DEGRADED and settles
    whatever the judges would say. Its judgment is not queued, no judge is asked, and its hold
    does not wait for one (it was queued, its judges asked, for a verdict nothing could move)."""
    w, base, seen = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    withdrawn = copy.deepcopy(w.h.ok("ann", "GET", "/tools/weather_forecast")["policy_document"])
    withdrawn |= {"version": 3, "withdrawn_at": w.h.clock.now().isoformat()}
    w.h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": withdrawn})
    got = w.answered()
    assert (got["verdict"], got["status"]) == ("DEGRADED", "settled")
    assert w.h.app.gateway.judge_pending() == 0 and seen == []
    view = w.h.ok("ann", "GET", f"/gateway/calls/{got['intentId']}")
    assert view["meaning"] is None and view["receipt_id"] == got["receiptId"]
    assert w.h.balance("wallet:ann") == FUNDS - PRICE


@pytest.mark.parametrize("ruled_first", [True, False], ids=["ruling first", "judgment first"])
def test_a_calls_later_receipt_supersedes_the_one_in_force(world: Any, ruled_first: bool) -> None:
    """A call reported while its judgment is pending gets two receipts after its first: the
    upheld ruling's and the judgment's, in either order. The later supersedes the earlier, the
    one in force, and the exported log verifies as a chain. Each superseded the call's first
    receipt, and a receipt is superseded once: the log failed verification
    (RECEIPT_CHAIN_BROKEN, "already superseded")."""
    w, base, _ = world
    _later(w, base, {"model-a": "strict", "model-b": "strict"}, quorum=2)
    got = w.answered()
    call_id = got["intentId"]
    w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "The wrong city."})
    ruling = {"upheld": True, "reasons": ["The wrong city."]}
    if not ruled_first:
        assert w.h.app.gateway.judge_pending() == 1
    ruled = w.h.ok("root", "POST", f"/calls/{call_id}/report/ruling", ruling)
    if ruled_first:
        assert w.h.app.gateway.judge_pending() == 1
    judged = w.h.ok("ann", "GET", f"/gateway/calls/{call_id}")["receipt_id"]

    def statement(receipt_id: str) -> Any:
        envelope = w.h.ok("root", "GET", f"/receipts/{receipt_id}/envelope")
        return verify(canonical_bytes(envelope), w.signer.keyid)

    first = verify(canonical_bytes(got["receipt"]), w.signer.keyid)
    earlier, later = (ruled["receipt_id"], judged) if ruled_first else (judged, ruled["receipt_id"])
    assert statement(earlier).supersedes == first.receipt_id
    assert statement(later).supersedes == statement(earlier).receipt_id
    assert w.h.ok("root", "GET", f"/receipts/{earlier}")["superseded_by"] == later
    superseded = _chain_verifies(w).superseded
    assert {first.receipt_id, statement(earlier).receipt_id} <= set(superseded)
    assert w.h.balance("wallet:ann") == FUNDS


def test_a_judgment_after_a_ruling_tells_the_parties_the_receipt_it_superseded(
    world: Any, store: Store
) -> None:
    """A judgment signed after an upheld ruling supersedes the ruling's receipt, and its
    ``call.rejudged`` event names that receipt as the one it replaced, as the receipt itself
    says (the event named the call's first receipt, which the ruling had superseded)."""
    w, base, _ = world
    _hooked(w, store)
    call_id, ruled = _upheld_before_judged(w, base)
    assert w.h.app.gateway.judge_pending() == 1
    judged = w.h.ok("ann", "GET", f"/gateway/calls/{call_id}")["receipt_id"]
    for endpoint in ("ep_ann", "ep_sky"):
        rejudged = events_to(store, endpoint)[-1]
        assert rejudged["type"] == "call.rejudged"
        assert rejudged["data"]["receipt_id"] == judged
        assert rejudged["data"]["supersedes"] == ruled["receipt_id"]
        assert rejudged["data"]["refund"] == "0"


def test_the_audit_refuses_a_judgment_that_states_a_refund_it_never_made(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit every money test ends with reads each receipt's decision against the lines
    written with it: the judgment after an upheld ruling, signed as it was (the verdict's
    refund of the price, though the ruling had refunded the hold and nothing moved), fails
    it."""
    signing = posthoc.determine_call
    monkeypatch.setattr(
        posthoc,
        "determine_call",
        lambda result, **kw: signing(result, **kw | {"payment": None}),
    )
    with weather_world(store) as w, AsgiServer(fake_models([])) as models:
        _later(w, f"{models.url}/v1", {"model-a": "strict", "model-b": "strict"}, quorum=2)
        call_id = w.answered()["intentId"]
        w.h.ok("ann", "POST", f"/calls/{call_id}/report", {"reason": "The wrong city."})
        ruling = {"upheld": True, "reasons": ["The wrong city."]}
        w.h.ok("root", "POST", f"/calls/{call_id}/report/ruling", ruling)
        assert w.h.app.gateway.judge_pending() == 1
        assert w.h.balance("wallet:ann") == FUNDS  # refunded once, by the ruling
        # Its queue row as such a judgment kept it (the receipt's payment not said apart):
        # its bundle replays to the receipt as signed, as before.
        q = meaning_queue.queue.c
        row = q.call_id == call_id
        with store.write() as tx:
            kept = dict(tx.conn.execute(select(q.verification).where(row)).one()[0])
            del kept["payment"]
            tx.conn.execute(update(meaning_queue.queue).where(row).values(verification=kept))
        answer = w.h.ok("ann", "GET", f"/calls/{call_id}/bundle")
        found = replay(from_answer(answer), w.signer.keyid)
        assert found.outcome == "same", [d.describe() for d in found.differences]
        assert found.detail["payment"] == "refund"
    with pytest.raises(AssertionError, match="'payment': 'refund'"):
        audit(store)
