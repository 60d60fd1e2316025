"""A demo marketplace: a few accounts, money, and tasks in each mode at different stages."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from adjudge.app import App
from adjudge.errors import Error
from adjudge.receipts import SigningKey

#: Demo accounts: id, roles, opted in as a verifier.
ACCOUNTS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("admin", ("admin",), False),
    ("pat", ("poster",), False),
    ("ann", ("agent",), False),
    ("bob", ("agent",), False),
    ("vera", ("verifier",), True),
    ("vic", ("verifier",), True),  # a second verifier, for a panel (k of n)
    ("sky", ("provider",), False),
    ("nimbus", ("provider",), False),
)
#: 100 USDC for the poster, in minor units.
DEPOSIT = 100_000_000
#: 5 USDC for ann to call the demo's paid tool with.
CALL_FUNDS = 5_000_000
#: The demo's paid tool: 0.25 USDC a forecast from ``sky``, served beside the demo.
WEATHER_PRICE = 250_000
#: ``nimbus``'s outlook, the corroborator ``sky`` may name for its empty answers: 0.01 USDC.
OUTLOOK_PRICE = 10_000
#: What ``sky`` holds to pay for corroborations it declares: 1 USDC.
SKY_FUNDS = 1_000_000


def weather_tool(
    base_url: str,
    provider: str = "sky",
    price: int = WEATHER_PRICE,
    *,
    name: str = "weather_forecast",
    path: str = "/v1/forecast/{city}",
    policy: str = "weather-standard",
) -> dict[str, Any]:
    """The demo provider's forecast endpoint as a callable tool, with its contract (the
    gateway's tests and benchmark sell the same tool from their own providers). It is judged
    by the newest registered version of ``policy``."""
    return {
        "name": name,
        "description": "Daily forecast for a city: highs, lows and chance of rain.",
        "provider": provider,
        "endpoint": {
            "base_url": base_url,
            "method": "GET",
            "path": path,
            "arguments": {"city": "path", "days": "query"},
        },
        "input_schema": {
            "type": "object",
            "required": ["city"],
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 80},
                "days": {"type": "integer", "minimum": 0, "maximum": 7},
            },
        },
        "contract": {
            "version": "1",
            "response_mapping": {
                "location": "{lat: latitude, lon: longitude}",
                "issued_at": "issued",
                "days": "daily[*].{date: date, temp_max_c: temperature_2m_max, "
                "temp_min_c: temperature_2m_min, precip_prob: precipitation_probability_max}",
            },
            "output_schema": {
                "type": "object",
                "required": ["location", "issued_at", "days"],
                "properties": {
                    "location": {
                        "type": "object",
                        "properties": {
                            "lat": {"type": "number", "minimum": -90, "maximum": 90},
                            "lon": {"type": "number", "minimum": -180, "maximum": 180},
                        },
                    },
                    "days": {"type": "array"},
                },
            },
        },
        "price": {"amount_minor": price, "currency": "USDC"},
        "policy": {"id": policy},
    }


def outlook_tool(
    base_url: str, provider: str = "nimbus", price: int = OUTLOOK_PRICE
) -> dict[str, Any]:
    """``nimbus``'s outlook: the same forecast shape from another provider, the corroborator
    ``sky`` can name for its empty answers."""
    return weather_tool(
        base_url,
        provider,
        price,
        name="nimbus_outlook",
        path="/v1/outlook/{city}",
        policy="outlook-standard",
    )


#: How the demo marketplace judges a forecast: the schema vetoes, one broken rule fails it,
#: and a forecast with no days is accepted as it is (nothing to check, nothing wrong).
WEATHER_POLICY: dict[str, Any] = {
    "policy": "weather-standard",
    "version": 1,
    "tool": "weather_forecast",
    "mode": "enforce",
    "checks": ["schema", "quality_rules"],
    "threshold": "1",
    "empty_result": {"path": "days", "on_empty": "accept"},
    "rules": [
        {"kind": "required_values", "name": "day_fields", "path": "days", "fields": ["date"]},
        {
            "kind": "numeric_range",
            "name": "plausible_highs",
            "path": "days",
            "field": "temp_max_c",
            "min": -90,
            "max": 60,
        },
        {
            "kind": "numeric_range",
            "name": "rain_percent",
            "path": "days",
            "field": "precip_prob",
            "min": 0,
            "max": 100,
        },
    ],
    "clauses": [
        {"match": "veto", "check": "schema", "verdict": "FAIL"},
        {"match": "failures_at_least", "count": 1, "verdict": "FAIL"},
        {"match": "votes_fewer_than", "count": 1, "verdict": "DEGRADED"},
    ],
}


#: How the marketplace judges nimbus's outlook: as it judges sky's forecast.
OUTLOOK_POLICY: dict[str, Any] = WEATHER_POLICY | {
    "policy": "outlook-standard",
    "tool": "nimbus_outlook",
}


def corroborated(policy: dict[str, Any], version: int, tool: str, max_price: int) -> dict[str, Any]:
    """``policy`` as ``version``, with ``tool`` declared as the corroborator of its empty
    answers, paid by its provider, at most ``max_price`` minor units a corroboration."""
    empty = dict(policy["empty_result"]) | {
        "corroboration": {"tool": tool, "paid_by": "provider", "max_price_minor": max_price}
    }
    return policy | {"version": version, "empty_result": empty}


@dataclass(frozen=True)
class Seeded:
    """What the demo created: API keys by account, task ids with a note, and what was skipped."""

    keys: dict[str, str]
    tasks: list[tuple[str, str, str, str]]  # id, mode, status, note
    skipped: list[str]
    #: Each demo verifier's private key (PEM), made here as the verifier would make its own.
    verifier_keys: dict[str, str] = field(default_factory=dict)
    #: The credential the demo provider takes (given to the gateway sealed); None: no tool.
    provider_secret: str | None = None


def seed(app: App, provider_url: str | None = None) -> Seeded:
    """Create the demo accounts and tasks; ``ACCOUNT_EXISTS`` if the database is not empty.

    The demo plays each verifier: it makes the verifier's key pair and registers the public
    half, as a verifier does; the service itself never holds a private key. With
    ``provider_url`` (where the demo provider answers) it plays the provider ``sky`` too: its
    forecast tool, the credential the gateway calls it with, and the marketplace's policy.
    """
    keys: dict[str, str] = {}
    verifier_keys: dict[str, str] = {}
    for account_id, roles, opt_in in ACCOUNTS:
        public = None
        if "verifier" in roles:
            pair = SigningKey.generate()
            verifier_keys[account_id] = pair.to_pem().decode("ascii")
            public = pair.public_key.to_base64()
        made = app.accounts.create(
            None, account_id, roles, opt_in=opt_in, verifier_public_key=public
        ).value
        keys[account_id] = made["api_key"]
    admin = app.accounts.authenticate(keys["admin"])
    app.accounts.deposit(admin, "pat", DEPOSIT)
    pat = app.accounts.authenticate(keys["pat"])
    ann = app.accounts.authenticate(keys["ann"])
    deadline = app.clock.now() + timedelta(days=7)
    tasks: list[tuple[str, str, str, str]] = []
    skipped: list[str] = []

    def post(mode: str, title: str, reward: int, **extra: Any) -> str:
        answer = app.tasks.post(
            pat,
            title=title,
            brief=extra.pop("brief", f"{title}. Reply in plain text."),
            reward=reward,
            deadline=deadline,
            mode=mode,
            criteria=extra.pop("criteria", {}),
            verifier=extra.pop("verifier", None),
            private=extra.pop("private", False),
        )
        return str(answer.value["id"])

    def deliver(task_id: str, result: str) -> None:
        app.tasks.accept(ann, task_id)
        app.tasks.submit(ann, task_id, result)

    manual_open = post("manual", "Review a refactor plan and list every risk", 2_000_000)
    tasks.append((manual_open, "manual", "funded", "take it as bob, submit, review as pat"))
    manual_done = post("manual", "Summarise the incident report", 3_000_000)
    deliver(manual_done, "Summary: the cache expired early; three services retried at once.")
    tasks.append((manual_done, "manual", "submitted", "pat approves or rejects it"))
    agent_open = post("agent", "Translate the release notes", 1_500_000, verifier="vera")
    tasks.append((agent_open, "agent", "funded", "vera judges once an agent delivers"))
    agent_done = post("agent", "Write a changelog entry", 1_000_000, verifier="vera")
    deliver(agent_done, "Added: receipts for every verdict. Fixed: refunds carry no fee.")
    tasks.append((agent_done, "agent", "awaiting_verification", "vera posts a verdict"))
    criteria = {"min_length": 40, "pass_threshold": 60}
    try:
        auto_open = post("auto", "Explain escrow in two sentences", 500_000, criteria=criteria)
        tasks.append((auto_open, "auto", "funded", "take it, submit, finalize to run the check"))
        auto_done = post("auto", "Describe a hash chain", 500_000, criteria=criteria)
        deliver(
            auto_done,
            "A hash chain links each record to the digest of the one before it, so editing any "
            "record breaks every link after it.",
        )
        tasks.append((auto_done, "auto", "submitted", "ann finalizes to run the auto check"))
    except Error as exc:
        skipped.append(f"auto tasks: {exc.message}")
    secret = None if provider_url is None else _providers(app, keys, provider_url)
    return Seeded(keys, tasks, skipped, verifier_keys, secret)


def _providers(app: App, keys: dict[str, str], provider_url: str) -> str:
    """Play the demo's providers: sky's forecast tool, the credential the gateway calls it with
    and the policy sky enforces over it (the rules that judge a provider are its own); nimbus's
    outlook, which sky may name to corroborate its empty
    answers (sky pays for each corroboration from its own wallet). The credential."""
    secret = secrets.token_urlsafe(24)
    admin = app.accounts.authenticate(keys["admin"])
    sky = app.accounts.authenticate(keys["sky"])
    app.accounts.deposit(admin, "ann", CALL_FUNDS)
    app.tools.register(sky, weather_tool(provider_url))
    app.tools.set_credential(sky, "X-Api-Key", secret)
    app.calls.register_policy(sky, "weather_forecast", WEATHER_POLICY)
    nimbus = app.accounts.authenticate(keys["nimbus"])
    app.tools.register(nimbus, outlook_tool(provider_url))
    app.tools.set_credential(nimbus, "X-Api-Key", secret)
    app.calls.register_policy(nimbus, "nimbus_outlook", OUTLOOK_POLICY)
    app.accounts.deposit(admin, "sky", SKY_FUNDS)
    return secret
