"""The MCP endpoint with the real clients, over real HTTP on loopback: the unmodified ``goassay``
1.0.0 client (configured only with the service's URLs) and the official ``mcp`` SDK (in each
mode it offers) list and call the gateway's tools; the calls reach a provider behind the
unmodified ``goassay-provider-verify`` middleware, the verdict decides the charge, and the
signed receipt verifies offline with ``adjudge receipt verify``. The books are audited after
each test."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from goassay import Assay
from goassay.errors import AssayError
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from adjudge.receipts import SigningKey
from adjudge.store import Store
from support.audit import audit
from support.harness import FUNDS, Harness
from support.weather import PRICE, PROVIDER, TIMEOUT, Script, weather_world

TOOL = "weather_forecast"


@dataclass
class World:
    """A served adjudge, a provider behind the real middleware, and a goassay client."""

    h: Harness
    service: str
    script: Script
    signer: SigningKey
    client: Assay

    def balance(self, account: str) -> int:
        return self.h.balance(account)


@pytest.fixture
def world(store: Store) -> Iterator[World]:
    """The service, the provider (only its id and the service's JWKS URL configured), the
    weather tool and its policy, and ann's goassay client on the service's URLs. The gateway
    waits for the provider as every test world does (``support.weather.TIMEOUT``)."""
    yield from _world(store, timeout=TIMEOUT)


@pytest.fixture
def patient_world(store: Store) -> Iterator[World]:
    """The same, with the gateway waiting 4 s for the provider: room for a second client to
    arrive while a first call runs, even on a loaded machine (with 1 s, a second client was
    seen to arrive after the first call had ended)."""
    yield from _world(store, timeout=4.0)


def _world(store: Store, *, timeout: float) -> Iterator[World]:
    with weather_world(store, timeout=timeout) as w:
        client = Assay(
            api_key=w.h.keys["ann"],
            mcp_url=f"{w.service}/",
            api_url=f"{w.service}/assay/v1",
            web_url=w.service,
            max_retries=2,
        )
        with client:
            yield World(w.h, w.service, w.script, w.signer, client)
    audit(store)


# --- goassay ------------------------------------------------------------------------------


def test_goassay_lists_prices_calls_replays_and_fetches_the_receipt(world: World) -> None:
    """The goassay client lists the tool with its price, calls it (mapped answer, receipt),
    replays the same idempotency key without the provider being called again, and fetches the
    receipt by its intent id."""
    listing = world.client.tools.list()
    names = [t["name"] for t in listing.tools]
    assert {"search_tools", "get_tool", "call_tool", TOOL} <= set(names)
    weather = next(t for t in listing.tools if t["name"] == TOOL)
    assert weather["_meta"]["assay/price"] == {"maxAmount": str(PRICE), "asset": "USDC"}
    assert world.client.tools.get(TOOL)["price"] == {"maxAmount": str(PRICE), "asset": "USDC"}
    found = world.client.tools.search("forecast")
    assert [r["name"] for r in found.results] == [TOOL]
    assert found.results[0]["assayPrice"] == {"maxAmount": str(PRICE), "asset": "USDC"}

    result = world.client.tools.call(TOOL, {"city": "berlin", "days": 3}, idempotency_key="k-1")
    assert not result.is_error and not result.replayed
    assert result.structured_content is not None
    assert result.structured_content["location"] == {"lat": 52.52, "lon": 13.41}
    assert json.loads(result.content[0]["text"]) == result.structured_content
    receipt = result.receipt
    assert receipt is not None
    assert (receipt["status"], receipt["verdict"], receipt["payment"]) == (
        "settled",
        "PASS",
        "settle",
    )
    assert receipt["chargedPrice"] == {"amount": str(PRICE), "asset": "USDC", "decimals": 6}
    assert [s["call_id"] for s in world.script.seen] == [receipt["intentId"]]
    assert world.balance("wallet:ann") == FUNDS - PRICE

    again = world.client.tools.call(TOOL, {"city": "berlin", "days": 3}, idempotency_key="k-1")
    assert again.replayed and again.receipt == receipt
    assert again.structured_content == result.structured_content
    assert len(world.script.seen) == 1 and world.balance("wallet:ann") == FUNDS - PRICE

    fetched = world.client.receipts.get(receipt["intentId"])
    assert fetched == receipt


def test_goassay_waits_while_the_first_call_runs_then_gets_its_answer(
    patient_world: World,
) -> None:
    """Two clients send one idempotency key: while the first call runs the second is told
    IDEMPOTENCY_IN_PROGRESS (retryable, retryAfterMs), waits as told and sends the same again,
    and gets the first call's answer replayed — the provider called once, charged once."""
    world = patient_world
    world.script.answer = "slow"  # the provider takes 5.5 s; the gateway gives up after 4 s
    first: list[Any] = []
    running = threading.Thread(
        target=lambda: first.append(
            world.client.tools.call(TOOL, {"city": "berlin"}, idempotency_key="same")
        )
    )
    running.start()
    for _ in range(200):
        if world.script.seen:
            break
        time.sleep(0.01)
    other = Assay(
        api_key=world.h.keys["ann"],
        mcp_url=f"{world.service}/",
        api_url=f"{world.service}/assay/v1",
        web_url=world.service,
        max_retries=10,  # told to wait 1 s each time: enough to outlast the first call
    )
    with other:
        started = time.monotonic()
        second = other.tools.call(TOOL, {"city": "berlin"}, idempotency_key="same")
        waited = time.monotonic() - started
    running.join(timeout=30)
    assert second.replayed and second.receipt == first[0].receipt
    assert waited >= 0.9  # it waited as told instead of failing at once
    assert len(world.script.seen) == 1


def test_goassay_refusals_are_typed_errors(world: World) -> None:
    """Refusals arrive as the client's typed errors with the service's codes: arguments that do
    not fit (no charge), an unknown tool, a key reused for other arguments."""
    with pytest.raises(AssayError) as bad:
        world.client.tools.call(TOOL, {"town": "berlin"})
    assert bad.value.code == "TOOL_ARGUMENTS_INVALID"
    assert bad.value.details is not None and bad.value.details["problems"]
    with pytest.raises(AssayError) as missing:
        world.client.tools.call("no_such_tool", {})
    assert missing.value.code == "TOOL_NOT_FOUND"
    with pytest.raises(AssayError) as unknown:
        world.client.tools.get("no_such_tool")
    assert unknown.value.code == "TOOL_NOT_FOUND"
    world.client.tools.call(TOOL, {"city": "berlin"}, idempotency_key="k-2")
    with pytest.raises(AssayError) as reused:
        world.client.tools.call(TOOL, {"city": "paris"}, idempotency_key="k-2")
    assert reused.value.code == "IDEMPOTENCY_KEY_REUSED"
    assert len(world.script.seen) == 1
    assert world.balance("wallet:ann") == FUNDS - PRICE


def test_goassay_with_a_bad_key_is_an_auth_error(world: World) -> None:
    """A key the service does not know: 401 in the REST error shape, read as UNAUTHORIZED."""
    stranger = Assay(
        api_key="adj_not-a-key",
        mcp_url=f"{world.service}/",
        api_url=f"{world.service}/assay/v1",
        web_url=world.service,
    )
    with stranger, pytest.raises(AssayError) as refused:
        stranger.tools.list()
    assert (refused.value.code, refused.value.status) == ("UNAUTHORIZED", 401)


@pytest.mark.parametrize(
    ("answer", "status", "verdict", "strike"),
    [
        ("bad", "refunded", "FAIL", True),
        ("misapplied", "voided", "MISAPPLIED", False),
        ("empty", "settled", "EMPTY_UNVERIFIED", False),
        ("slow", "refunded", None, False),
    ],
)
def test_goassay_the_verdict_decides_the_charge(
    world: World, answer: str, status: str, verdict: str | None, strike: bool
) -> None:
    """Through goassay: a contract-breaking answer refunds and strikes, a misapplied rule voids,
    an empty answer settles under the empty-result policy, a provider time-out refunds with no
    strike; only a settled call is charged, and only it carries structured content."""
    world.script.answer = answer
    result = world.client.tools.call(TOOL, {"city": "berlin"})
    receipt = result.receipt
    assert receipt is not None
    assert (receipt["status"], receipt["verdict"], receipt["strike"]) == (status, verdict, strike)
    settled = status == "settled"
    assert result.is_error is not settled
    assert (result.structured_content is not None) is settled
    charged = PRICE if settled else 0
    assert receipt["chargedPrice"]["amount"] == str(charged)
    assert world.balance("wallet:ann") == FUNDS - charged
    assert world.balance(f"held:{PROVIDER}") == charged
    if verdict is None:
        assert receipt["error"]["code"] == "GATEWAY_TIMEOUT"


def test_the_receipt_verifies_offline(world: World, tmp_path: Path) -> None:
    """The DSSE envelope in ``_meta["assay/receipt"]`` verifies with ``adjudge receipt verify``
    against the service's key, in a process of its own; one changed byte does not."""
    result = world.client.tools.call(TOOL, {"city": "berlin"})
    assert result.receipt is not None
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(result.receipt["receipt"]))
    command = [sys.executable, "-m", "adjudge.cli", "receipt", "verify", str(path)]
    command += ["--key", world.signer.keyid]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VALID" in done.stdout and "PASS" in done.stdout
    envelope = dict(result.receipt["receipt"])
    payload = envelope["payload"]
    envelope["payload"] = payload[:-4] + ("AAAA" if payload[-4:] != "AAAA" else "BBBB")
    path.write_text(json.dumps(envelope))
    tampered = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)
    assert tampered.returncode != 0


# --- the official MCP SDK -----------------------------------------------------------------


async def _sdk_session(world: World, mode: str) -> dict[str, Any]:
    """List and call the weather tool with the SDK in ``mode``; what it saw."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {world.h.keys['ann']}"})
    async with (
        http,
        Client(streamable_http_client(f"{world.service}/", http_client=http), mode=mode) as client,
    ):
        listing = await client.list_tools()
        weather = next(t for t in listing.tools if t.name == TOOL)
        good = await client.call_tool(TOOL, {"city": "berlin", "days": 2})
        world.script.answer = "bad"
        bad = await client.call_tool(TOOL, {"city": "berlin"})
        world.script.answer = "good"
        refused = await client.call_tool(TOOL, {"town": "berlin"})
        found = await client.call_tool("search_tools", {"query": "weather"})
        return {
            "version": client.protocol_version,
            "names": [t.name for t in listing.tools],
            "price": (weather.meta or {}).get("assay/price"),
            "output_schema": weather.output_schema,
            "good": good,
            "bad": bad,
            "refused": refused,
            "found": found,
        }


@pytest.mark.parametrize(
    ("mode", "version"),
    [("legacy", "2025-11-25"), ("auto", "2026-07-28"), ("2026-07-28", "2026-07-28")],
)
def test_the_mcp_sdk_lists_and_calls_in_every_mode(world: World, mode: str, version: str) -> None:
    """The SDK in each mode (the initialize handshake with a session id; server/discover; a
    pinned stateless version) lists the tools with their prices and calls them: a settled
    call's structured content passes the SDK's own check against the listed output schema; a
    failed one is an error result with the receipt; a refusal carries assay/error."""
    seen = anyio.run(_sdk_session, world, mode)
    assert seen["version"] == version
    assert {TOOL, "search_tools", "get_tool", "call_tool"} <= set(seen["names"])
    assert seen["price"] == {"maxAmount": str(PRICE), "asset": "USDC"}
    assert seen["output_schema"]["type"] == "object"
    good, bad, refused = seen["good"], seen["bad"], seen["refused"]
    assert not good.is_error and good.structured_content["location"]["lat"] == 52.52
    assert good.meta["assay/receipt"]["status"] == "settled"
    assert bad.is_error and bad.structured_content is None
    assert bad.meta["assay/receipt"]["verdict"] == "FAIL"
    assert refused.is_error and refused.meta["assay/error"]["code"] == "TOOL_ARGUMENTS_INVALID"
    assert [r["name"] for r in seen["found"].structured_content["results"]] == [TOOL]
    assert len(world.script.seen) == 2
    assert world.balance("wallet:ann") == FUNDS - PRICE
