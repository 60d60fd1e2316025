"""The demo marketplace's paid APIs: two small weather providers served beside the demo
(``adjudge serve --demo``, under ``/demo/skycast``), so the gateway has someone to call.

It is the providers' side, not adjudge's: it accepts only requests carrying the credential
the demo gave the gateway for them (``X-Api-Key``), and its answers are made up but stable.
``sky``'s forecast (``/v1/forecast/{city}``) breaks on purpose twice: ``atlantis`` answers a
latitude of 95 and a high of 300 °C, so a reader can watch a contract-breaking answer be
refunded and the provider struck; ``erewhon`` answers no days at all (a lazy empty answer),
which ``nimbus``'s outlook (``/v1/outlook/{city}``, the same forecasts, never lazy) contradicts
when sky's policy names it as the corroborator of empty answers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, date, datetime, timedelta

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

#: Where the demo mounts the provider, and the header its credential travels in.
MOUNT = "/demo/skycast"
CREDENTIAL_HEADER = "X-Api-Key"
#: Known cities' coordinates; any other city gets a stable made-up place.
CITIES = {"berlin": (52.52, 13.41), "paris": (48.86, 2.35), "tokyo": (35.68, 139.69)}
BROKEN = "atlantis"
#: The city ``sky`` answers with no days at all, while ``nimbus`` has its forecast.
LAZY = "erewhon"
#: The city ``sky`` answers with last year's days: in the promised shape, passing every rule,
#: but not the forecast asked for (what only a meaning judge notices).
STALE = "mirage"
#: Where the demo's meaning judges answer, beside the providers.
JUDGE_MOUNT = "/demo/judges"


def forecast(city: str, days: int, today: date) -> dict[str, object]:
    """A stable forecast for ``city``: the same city and day give the same numbers."""
    seed = hashlib.sha256(city.encode("utf-8")).digest()
    lat, lon = CITIES.get(city, (seed[0] / 255 * 120 - 60, seed[1] / 255 * 340 - 170))
    daily = [
        {
            "date": (today + timedelta(days=d)).isoformat(),
            "temperature_2m_max": round(8 + seed[2 + d] % 15 + d * 0.5, 1),
            "temperature_2m_min": round(seed[10 + d] % 8 - 2.0, 1),
            "precipitation_probability_max": seed[20 + d] % 101,
        }
        for d in range(days)
    ]
    if city == BROKEN:
        lat = 95.0
        if daily:
            daily[0]["temperature_2m_max"] = 300.0
    return {
        "latitude": round(lat, 2),
        "longitude": round(lon, 2),
        "issued": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "daily": daily,
    }


def skycast_app(secret: str) -> Starlette:
    """The provider's API, answering only callers that present ``secret``."""

    async def handle(request: Request) -> JSONResponse:
        given = request.headers.get(CREDENTIAL_HEADER, "")
        if not hmac.compare_digest(given.encode("utf-8"), secret.encode("utf-8")):
            return JSONResponse({"error": "a valid X-Api-Key is required"}, status_code=401)
        raw = request.query_params.get("days", "3")
        days = int(raw) if raw.isdigit() else 3
        city = request.path_params["city"].lower()
        if city == LAZY and request.url.path.endswith(f"/forecast/{city}"):
            days = 0  # sky's lazy answer: nothing found
        today = datetime.now(UTC).date()
        if city == STALE:
            today -= timedelta(days=365)  # last year's forecast, issued today
        return JSONResponse(forecast(city, min(max(days, 0), 7), today))

    return Starlette(
        routes=[
            Route("/v1/forecast/{city}", handle, methods=["GET"]),
            Route("/v1/outlook/{city}", handle, methods=["GET"]),
        ]
    )


def judges_app() -> Starlette:
    """The demo's two meaning judges behind one OpenAI-compatible chat-completions endpoint, so
    a reader can watch a quorum without a model service. They are small rules, not models:
    ``careful`` cites the first day of a forecast dated before the day it was issued (quoting
    it exactly); ``lenient`` never finds a conflict. Point ``adjudge serve --judges`` at a real
    endpoint for real judgments."""

    async def complete(request: Request) -> JSONResponse:
        body = await request.json()
        data = json.loads(body["messages"][-1]["content"])
        output = data.get("output") if isinstance(data, dict) else None
        answer: dict[str, object] = {"conflict": False, "reason": "the forecast fits"}
        if body.get("model") == "careful" and isinstance(output, dict):
            days = output.get("days") or []
            issued = str(output.get("issued_at", ""))[:10]
            first = days[0].get("date") if days and isinstance(days[0], dict) else None
            if isinstance(first, str) and issued and first < issued:
                answer = {
                    "conflict": True,
                    "reason": f"the forecast starts on {first}, before it was issued",
                    "citations": [{"pointer": "/days/0/date", "quote": first}],
                }
        message = {"role": "assistant", "content": json.dumps(answer)}
        return JSONResponse({"choices": [{"index": 0, "message": message}]})

    return Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"])])
