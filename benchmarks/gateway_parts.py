"""Benchmark: the gateway's CPU cost per call before the provider is reached.

Three stages, each timed alone over the same deterministic calls (seeded), on one core:

- **argument check**: ``check_arguments`` against the tool's input schema (the compiled fast
  path, and the reference validator for comparison);
- **request building**: ``build_request(tool, arguments, check=False)`` — placement,
  percent-encoding, the compact JSON body;
- **signing**: ``sign_request`` — Content-Digest (sha256), the structured headers, the signature
  base and one Ed25519 signature.

Two tools: a GET with a path segment, three query parameters and a header (a weather forecast),
and a POST whose JSON body carries the arguments (a web search, ~300 bytes of body).

Run: ``python benchmarks/gateway_parts.py``.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from adjudge.calls.tools import Tool, build_request, check_arguments, parse_tool
from adjudge.gateway.signing import sign_request
from adjudge.receipts.keys import SigningKey

SEED = 11
CALLS = 5_000
ROUNDS = 5

WEATHER = parse_tool(
    {
        "name": "weather_forecast",
        "provider": "skycast",
        "endpoint": {
            "base_url": "https://api.skycast.example/v1",
            "method": "GET",
            "path": "/forecast/{city}",
            "arguments": {
                "city": "path",
                "units": "query",
                "days": "query",
                "lang": "query",
                "trace": {"in": "header", "name": "X-Trace"},
            },
        },
        "input_schema": {
            "type": "object",
            "required": ["city"],
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 100},
                "units": {"enum": ["metric", "imperial"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 16},
                "lang": {"type": "string", "pattern": "^[a-z]{2}$"},
                "trace": {"type": "string"},
            },
        },
        "contract": {"output_schema": {"type": "object"}},
        "price": {"amount_minor": 3, "currency": "USD"},
    }
)

SEARCH = parse_tool(
    {
        "name": "web_search",
        "provider": "searchco",
        "endpoint": {
            "base_url": "https://api.searchco.example",
            "method": "POST",
            "path": "/v1/search",
            "body": "rest",
        },
        "input_schema": {
            "type": "object",
            "required": ["query"],
            "additionalProperties": False,
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 400},
                "count": {"type": "integer", "minimum": 1, "maximum": 50},
                "freshness": {"enum": ["day", "week", "month"]},
                "filters": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "lang": {"type": "string"},
                        "safe": {"type": "boolean"},
                        "sites": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
                    },
                },
            },
        },
        "contract": {},
        "price": {"amount_minor": 1, "currency": "USD"},
    }
)

CITIES = ["Paris", "São Paulo", "New York", "Zürich", "Ho Chi Minh City", "Reykjavík", "Lagos"]
WORDS = ["climate", "rust async", "jmespath", "ed25519 signatures", "café près de moi", "gpu"]


def corpus(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    weather = [
        {
            "city": rng.choice(CITIES),
            "units": rng.choice(["metric", "imperial"]),
            "days": rng.randint(1, 16),
            "lang": rng.choice(["en", "fr", "pt"]),
            "trace": f"t-{i}",
        }
        for i in range(CALLS)
    ]
    search = [
        {
            "query": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))),
            "count": rng.randint(1, 50),
            "freshness": rng.choice(["day", "week", "month"]),
            "filters": {
                "lang": "en",
                "safe": rng.random() < 0.5,
                "sites": [f"site{j}.example" for j in range(rng.randint(0, 6))],
            },
        }
        for _ in range(CALLS)
    ]
    return weather, search


def per_call(fn: Callable[[Any], object], items: list[Any]) -> float:
    """Median over rounds of the mean microseconds per call."""
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for item in items:
            fn(item)
        rounds.append((time.perf_counter() - start) / len(items) * 1e6)
    return statistics.median(rounds)


def main() -> None:
    rng = random.Random(SEED)
    key = SigningKey.from_seed(bytes(range(32)))
    tools: dict[str, tuple[Tool, list[dict[str, Any]]]] = dict(
        zip(
            ("weather (GET)", "search (POST)"),
            zip((WEATHER, SEARCH), corpus(rng), strict=True),
            strict=True,
        )
    )
    print(f"{CALLS} calls per tool, median of {ROUNDS} rounds, microseconds per call (one core)")
    print(f"{'tool':<16}{'check':>9}{'check (ref)':>13}{'build':>9}{'sign':>9}{'total':>9}")
    for label, (tool, items) in tools.items():
        reference = parse_tool(
            {**tool.to_dict(), "input_schema": {**tool.input_schema, "uniqueItems": False}}
        )
        assert tool.fast_path and not reference.fast_path
        check = per_call(lambda a, t=tool: check_arguments(t, a), items)
        check_ref = per_call(lambda a, t=reference: check_arguments(t, a), items)
        requests = [build_request(tool, a) for a in items]
        build = per_call(lambda a, t=tool: build_request(t, a, check=False), items)
        sign = per_call(
            lambda r, t=tool: sign_request(
                r, signer=key, keyid="k1", provider=t.provider, call_id="c-1", now=1_796_000_000
            ),
            requests,
        )
        print(
            f"{label:<16}{check:>9.1f}{check_ref:>13.1f}{build:>9.1f}{sign:>9.1f}"
            f"{check + build + sign:>9.1f}"
        )
    raw = per_call(key.sign, [bytes(300)] * 2000)
    print(f"(one Ed25519 signature of 300 bytes alone: {raw:.1f} µs)")


if __name__ == "__main__":
    main()
