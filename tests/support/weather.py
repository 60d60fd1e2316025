"""A weather provider for the gateway's tests: its API behind the unmodified
``goassay-provider-verify`` middleware, the tool that calls it and its policy, served with an
adjudge on loopback. The gateway's, the CLI's and the browser's tests all drive this one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient
from goassay_provider_verify import AssayVerifyMiddleware
from goassay_provider_verify.jwks import shared_cache
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adjudge.app import App, Settings
from adjudge.app.demo import WEATHER_POLICY, weather_tool
from adjudge.gateway import JWKS_PATH, AddressGuard, Forwarder, ForwardLimits
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.service import create_app
from adjudge.store import Store
from support import http
from support.harness import Harness, make_harness
from support.live import serving
from support.loopback import AsgiServer

PROVIDER = "skycast"
PRICE = 250_000  # 0.25 USDC
#: How long the gateway waits for the provider here: long enough for a loaded machine (the
#: provider's middleware has the gateway's JWKS before the first call: with its fetch in the
#: first call's time, 3 s was seen to run out at a load average of 9), short enough that the
#: "slow" answer (this plus 1.5 s) is a time-out.
TIMEOUT = 3.0


@dataclass
class Script:
    """What the provider answers next, and what it saw."""

    answer: str = "good"
    #: How long a "slow" answer takes: past the gateway's wait (a world sets it from its own),
    #: and no longer, so that a server stopping at the end never waits out a long sleep.
    slow_for: float = TIMEOUT + 1.5
    seen: list[dict[str, Any]] = field(default_factory=list)
    now: datetime = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: What happens while the provider works on a call, before it answers (a test's clock
    #: moved on while the call is out).
    answering: Callable[[], None] | None = None
    #: Where a "redirect" answer points.
    location: str = "https://elsewhere.example/v1/forecast"


def forecast(script: Script, days: int) -> dict[str, Any]:
    return {
        "latitude": 52.52,
        "longitude": 13.41,
        "issued": script.now.isoformat().replace("+00:00", "Z"),
        "daily": [
            {
                "date": f"2026-01-{10 + d:02d}",
                "temperature_2m_max": 5.0 + d,
                "temperature_2m_min": -1.0,
                "precipitation_probability_max": 40,
            }
            for d in range(days)
        ],
    }


def provider(script: Script) -> Starlette:
    """The provider's own API: a forecast endpoint whose answer the test scripts."""

    async def handle(request: Request) -> Response:
        with script.lock:
            script.seen.append(
                {"city": request.path_params["city"], "call_id": request.headers["x-assay-call-id"]}
            )
        if script.answering is not None:
            script.answering()
        kind = script.answer
        if kind == "good":
            return JSONResponse(forecast(script, 3))
        if kind == "bad":  # a high of 300 °C and a latitude of 95: breaks the contract
            body = forecast(script, 3)
            body["latitude"] = 95
            body["daily"][0]["temperature_2m_max"] = 300
            return JSONResponse(body)
        if kind == "hot":  # in the promised shape, but a high of 300 °C breaks a quality rule
            body = forecast(script, 3)
            body["daily"][0]["temperature_2m_max"] = 300
            return JSONResponse(body)
        if kind == "misapplied":  # the rain chance as text: the range rule cannot judge it
            body = forecast(script, 3)
            body["daily"][1]["precipitation_probability_max"] = "high"
            return JSONResponse(body)
        if kind == "empty":
            body = forecast(script, 0)
            return JSONResponse(body)
        if kind == "slow":
            import asyncio  # noqa: PLC0415

            await asyncio.sleep(script.slow_for)
            return JSONResponse(forecast(script, 3))
        if kind == "error":
            return JSONResponse({"error": "boom"}, status_code=503)
        if kind == "redirect":
            return Response(status_code=302, headers={"location": script.location})
        return Response(b"\x00garbage", media_type="application/octet-stream")

    return Starlette(routes=[Route("/v1/forecast/{city}", handle, methods=["GET"])])


def tool(base_url: str, provider_id: str = PROVIDER) -> dict[str, Any]:
    """The demo's forecast tool, sold by ``provider_id``."""
    return weather_tool(base_url, provider=provider_id, price=PRICE)


POLICY = WEATHER_POLICY


@dataclass
class World:
    h: Harness
    service: str
    script: Script
    provider_url: str
    signer: SigningKey

    def call(self, arguments: dict[str, Any], key: str | None = None, who: str = "ann") -> Any:
        headers = {"Authorization": f"Bearer {self.h.keys[who]}"}
        if key:
            headers["Idempotency-Key"] = key
        return http.post(
            f"{self.service}/api/v1/gateway/calls",
            json={"tool": "weather_forecast", "arguments": arguments},
            headers=headers,
            timeout=30,
        )

    def answered(self) -> dict[str, Any]:
        """ann's call for Berlin, answered (any verdict): the gateway's answer."""
        r = self.call({"city": "berlin"})
        assert r.status_code == 200, r.text
        return dict(r.json())


def check_row(answer: dict[str, Any], name: str) -> dict[str, Any]:
    """The row of check ``name`` in a gateway answer's checks."""
    return next(r for r in answer["checks"] if r["name"] == name)


@contextmanager
def weather_world(
    store: Store,
    *,
    real_checker: bool = False,
    timeout: float = TIMEOUT,
    max_per_caller: int = ForwardLimits.max_per_caller,
) -> Iterator[World]:
    """A served adjudge with a provider behind the real middleware, its tool and policy; the
    gateway waits ``timeout`` seconds for the provider, and takes ``max_per_caller`` calls of
    one caller at once."""
    signer = SigningKey.generate()
    h = make_harness(store, real_checker=real_checker, issuer=SignedReceipts(signer))
    h.app = App(
        store,
        clock=h.clock,
        issuer=h.app.issuer,
        checker=h.app.checker,
        forwarder=Forwarder(
            ForwardLimits(
                total_timeout=timeout, read_timeout=timeout, max_per_caller=max_per_caller
            ),
            guard=AddressGuard(allow_private=True),
        ),
        settings=Settings(allow_private_providers=True, webhooks_allow_private=True),
    )
    # The harness's own client must reach this app too, not the one it was made with: its
    # calls (an endpoint on loopback, a test event) follow this app's settings.
    h.client = TestClient(create_app(h.app))
    h.keys[PROVIDER] = h.app.accounts.create(None, PROVIDER, ["provider"]).value["api_key"]
    script = Script(slow_for=timeout + 1.5)
    with serving(h.app) as service:
        # The middleware caches a JWKS per URL for the whole process and refetches it at most
        # once a minute: a world served on a port an earlier world of this process used would
        # find that world's keys, not its own, and refuse its first calls (UNKNOWN_KEY). A query
        # the service ignores makes each world's URL its own.
        jwks_url = f"{service}{JWKS_PATH}?world={signer.keyid[:16]}"
        guarded = AssayVerifyMiddleware(provider(script), provider=PROVIDER, jwks_url=jwks_url)
        # The middleware fetches the JWKS on its first call, in the call's time: fetched here,
        # so that no call waits for it and the gateway's wait is the provider's alone.
        kid = http.get(jwks_url).json()["keys"][0]["kid"]
        assert shared_cache(jwks_url).get_key(kid, time.time()) is not None
        with AsgiServer(guarded) as server:
            base = server.url
            r = http.post(
                f"{service}/api/v1/tools/callable",
                json={"tool": tool(base)},
                headers={"Authorization": f"Bearer {h.keys[PROVIDER]}"},
            )
            assert r.status_code == 201, r.text
            h.ok(PROVIDER, "POST", "/tools/weather_forecast/policies", {"policy": POLICY})
            yield World(h, service, script, base, signer)
        h.app.close()
