"""Interop: the unmodified goassay-provider-verify middleware accepts the gateway's calls.

A provider app (Starlette, under uvicorn) is wrapped in ``AssayVerifyMiddleware`` configured
only with its provider id and the gateway's JWKS URL (served on loopback from the gateway's key
ring). The gateway builds, signs and forwards over real HTTP; every rejection the middleware can
give for a bad signature comes back classified as ``signature_refused`` with its reason.
"""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from goassay_provider_verify import AssayVerifyMiddleware, AssayVerifyWSGI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from adjudge.calls import CallVerdict, parse_request, register_policy, verify_call
from adjudge.calls.openapi import import_openapi
from adjudge.calls.tools import Tool, build_request, parse_tool
from adjudge.gateway import (
    AddressGuard,
    FailureKind,
    Forwarder,
    ForwardLimits,
    GatewayKey,
    ProviderAnswer,
    new_key,
    provider_response,
    rotate,
    sign_request,
    signing_key,
)
from support.loopback import AsgiServer, JwksHost, RawUriHandler

PROVIDER = "skycast"
#: The providers here are on loopback.
LOOPBACK = AddressGuard(allow_private=True)


async def _echo(request: Request) -> JSONResponse:
    body = await request.body()
    return JSONResponse(
        {
            "method": request.method,
            "raw_path": request.scope["raw_path"].decode("latin-1"),
            "path_params": dict(request.path_params),
            "query": [list(kv) for kv in request.query_params.multi_items()],
            "call_id": request.headers.get("x-assay-call-id"),
            "json": json.loads(body) if body else None,
        }
    )


def provider_app() -> Starlette:
    return Starlette(
        routes=[
            # ``:path``: a "/" in a city arrives as %2F, and the server decodes it before routing.
            Route("/v1/forecast/{city:path}", _echo, methods=["GET"]),
            Route("/v1/search", _echo, methods=["POST"]),
        ]
    )


def weather_tool(base_url: str) -> Tool:
    return parse_tool(
        {
            "name": "weather_forecast",
            "provider": PROVIDER,
            "endpoint": {
                "base_url": base_url,
                "method": "GET",
                "path": "/v1/forecast/{city}",
                "arguments": {"city": "path", "units": "query", "days": "query", "tag": "query"},
            },
            "input_schema": {
                "type": "object",
                "required": ["city"],
                "additionalProperties": False,
                "properties": {
                    "city": {"type": "string", "minLength": 1},
                    "units": {"enum": ["metric", "imperial"]},
                    "days": {"type": "integer", "minimum": 1},
                    "tag": {"type": "array", "items": {"type": "string"}},
                },
            },
            "contract": {"output_schema": {"type": "object"}},
            "price": {"amount_minor": 3, "currency": "USD"},
            "policy": None,
        }
    )


def search_tool(base_url: str, provider: str = PROVIDER) -> Tool:
    return parse_tool(
        {
            "name": "web_search",
            "provider": provider,
            "endpoint": {
                "base_url": base_url,
                "method": "POST",
                "path": "/v1/search",
                "body": "rest",
            },
            "input_schema": {
                "type": "object",
                "required": ["q"],
                "properties": {"q": {"type": "string"}, "count": {"type": "integer"}},
            },
            "contract": {},
            "price": {"amount_minor": 1, "currency": "USD"},
            "policy": None,
        }
    )


@dataclasses.dataclass
class Setup:
    host: JwksHost
    provider_url: str
    forwarder: Forwarder

    @property
    def key(self) -> GatewayKey:
        return signing_key(self.host.ring.all_keys(), datetime.now(UTC))

    def sign(
        self, tool: Tool, arguments: dict[str, Any], key: GatewayKey | None = None, **kw: Any
    ) -> Any:
        key = key or self.key
        options: dict[str, Any] = {"provider": tool.provider, "call_id": f"call-{time.time_ns()}"}
        options.update(kw)
        return sign_request(
            build_request(tool, arguments), signer=key.signing_key, keyid=key.kid, **options
        )


@pytest.fixture
def setup(
    jwks_host: JwksHost, asgi_server: Callable[[Any], AsgiServer], request: pytest.FixtureRequest
) -> Iterator[Setup]:
    """A provider behind the middleware (provider id + JWKS URL only) and a forwarder."""
    # A URL of its own per test: the middleware's JWKS cache is per URL and process-wide.
    app = AssayVerifyMiddleware(
        provider_app(), provider=PROVIDER, jwks_url=jwks_host.url(request.node.name)
    )
    server = asgi_server(app)
    with Forwarder(ForwardLimits(total_timeout=10), guard=LOOPBACK) as forwarder:
        yield Setup(jwks_host, server.url, forwarder)


def refused(outcome: Any, reason: str) -> None:
    assert not outcome.ok, outcome
    assert outcome.kind is FailureKind.SIGNATURE_REFUSED, outcome
    assert outcome.status == 401
    assert outcome.reason == reason
    assert outcome.category == "request_error"


def test_a_get_with_path_and_query_needing_encoding_is_accepted(setup: Setup) -> None:
    """A GET whose path and query arguments need percent-encoding verifies and arrives intact."""
    tool = weather_tool(setup.provider_url)
    city = "São Paulo/Zona Sul (centro) 100%+ ~ünïcode?#"
    signed = setup.sign(tool, {"city": city, "units": "metric", "days": 3, "tag": ["a b", "c&d"]})
    outcome = setup.forwarder.forward(signed)
    assert isinstance(outcome, ProviderAnswer), outcome
    seen = json.loads(outcome.body)
    assert seen["path_params"] == {"city": city}
    assert seen["query"] == [["units", "metric"], ["days", "3"], ["tag", "a b"], ["tag", "c&d"]]
    assert seen["raw_path"] == urlsplit(signed.url).path  # the bytes signed are the bytes seen
    assert seen["call_id"] == signed.call_id


def test_a_post_with_a_json_body_is_accepted(setup: Setup) -> None:
    """A POST's JSON body is covered by Content-Digest, verifies and arrives as sent."""
    signed = setup.sign(search_tool(setup.provider_url), {"q": 'Grüße "quoted"', "count": 2})
    assert signed.header("content-digest") is not None
    outcome = setup.forwarder.forward(signed)
    assert isinstance(outcome, ProviderAnswer), outcome
    assert json.loads(outcome.body)["json"] == {"q": 'Grüße "quoted"', "count": 2}


def test_a_tampered_body_is_refused_as_digest_mismatch(setup: Setup) -> None:
    """Changing one byte of the body after signing: DIGEST_MISMATCH."""
    signed = setup.sign(search_tool(setup.provider_url), {"q": "cats"})
    tampered = dataclasses.replace(signed, body=signed.body.replace(b"cats", b"dogs"))
    refused(setup.forwarder.forward(tampered), "DIGEST_MISMATCH")


def test_a_replayed_nonce_is_refused(setup: Setup) -> None:
    """The same signed request sent twice: the first is accepted, the second REPLAYED."""
    signed = setup.sign(search_tool(setup.provider_url), {"q": "once"})
    assert setup.forwarder.forward(signed).ok
    refused(setup.forwarder.forward(signed), "REPLAYED")


def test_an_expired_signature_is_refused(setup: Setup) -> None:
    """A signature whose window ended beyond the verifier's skew: EXPIRED."""
    signed = setup.sign(search_tool(setup.provider_url), {"q": "late"}, now=int(time.time()) - 600)
    refused(setup.forwarder.forward(signed), "EXPIRED")


def test_a_request_signed_for_another_provider_is_refused(setup: Setup) -> None:
    """A tool of another provider pointed at this one: WRONG_PROVIDER (aud is signed)."""
    signed = setup.sign(search_tool(setup.provider_url, provider="another-provider"), {"q": "x"})
    refused(setup.forwarder.forward(signed), "WRONG_PROVIDER")


def test_a_key_not_in_the_jwks_is_refused(setup: Setup) -> None:
    """A key the gateway never published: UNKNOWN_KEY."""
    stranger = new_key(datetime.now(UTC), kid="not-published")
    signed = setup.sign(search_tool(setup.provider_url), {"q": "x"}, key=stranger)
    refused(setup.forwarder.forward(signed), "UNKNOWN_KEY")


def test_a_signature_by_another_key_under_a_published_kid_is_refused(setup: Setup) -> None:
    """A forged signature under the gateway's kid: BAD_SIGNATURE."""
    forger = dataclasses.replace(new_key(datetime.now(UTC)), kid=setup.key.kid)
    signed = setup.sign(search_tool(setup.provider_url), {"q": "x"}, key=forger)
    refused(setup.forwarder.forward(signed), "BAD_SIGNATURE")


def test_an_unsigned_request_is_refused_as_missing(setup: Setup) -> None:
    """The bare built request, unsigned: MISSING."""
    outcome = setup.forwarder.forward(build_request(search_tool(setup.provider_url), {"q": "x"}))
    refused(outcome, "MISSING")


def test_rotation_lists_old_and_new_and_the_retired_key_is_refused_after_its_overlap(
    jwks_host: JwksHost, asgi_server: Callable[[Any], AsgiServer]
) -> None:
    """Rotation: while both are listed, both verify; past its overlap the old key is refused."""
    now = datetime.now(UTC)
    old = signing_key(jwks_host.ring.all_keys(), now)
    new = rotate(jwks_host.ring, now - timedelta(minutes=10), lead=timedelta(minutes=5))
    assert signing_key(jwks_host.ring.all_keys(), now) == new  # the new key signs now
    listed = [k["kid"] for k in json.loads(_get(jwks_host.url()))["keys"]]
    assert listed == [old.kid, new.kid]

    app = AssayVerifyMiddleware(provider_app(), provider=PROVIDER, jwks_url=jwks_host.url("rot1"))
    server = asgi_server(app)
    with Forwarder(guard=LOOPBACK) as forwarder:
        setup = Setup(jwks_host, server.url, forwarder)
        tool = search_tool(server.url)
        assert forwarder.forward(setup.sign(tool, {"q": "new"}, key=new)).ok
        assert forwarder.forward(setup.sign(tool, {"q": "old, in overlap"}, key=old)).ok

        # Two hours on, the old key is past its overlap (1 h after retiring) and not listed.
        jwks_host.offset = timedelta(hours=2)
        listed = [k["kid"] for k in json.loads(_get(jwks_host.url()))["keys"]]
        assert listed == [new.kid]
        # A verifier reading the set now (a fresh cache) refuses the old key, accepts the new.
        fresh = AssayVerifyMiddleware(
            provider_app(), provider=PROVIDER, jwks_url=jwks_host.url("rot2")
        )
        later = asgi_server(fresh)
        tool = search_tool(later.url)
        refused(forwarder.forward(setup.sign(tool, {"q": "old"}, key=old)), "UNKNOWN_KEY")
        assert forwarder.forward(setup.sign(tool, {"q": "new"}, key=new)).ok


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body


def _wsgi_echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = json.dumps({"path_info": environ.get("PATH_INFO"), "query": environ.get("QUERY_STRING")})
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body.encode()]


def test_the_wsgi_adapter_accepts_signed_calls_where_the_server_reports_the_raw_uri(
    jwks_host: JwksHost, wsgi_server: Callable[..., str]
) -> None:
    """AssayVerifyWSGI under a server reporting RAW_URI (as gunicorn does) accepts any path."""
    app = AssayVerifyWSGI(_wsgi_echo, provider=PROVIDER, jwks_url=jwks_host.url("wsgi-raw"))
    url = wsgi_server(app, RawUriHandler)
    with Forwarder(guard=LOOPBACK) as forwarder:
        setup = Setup(jwks_host, url, forwarder)
        tool = weather_tool(url)
        outcome = forwarder.forward(setup.sign(tool, {"city": "a/b (c);d", "units": "metric"}))
        assert isinstance(outcome, ProviderAnswer), outcome
        assert json.loads(outcome.body)["path_info"] == "/v1/forecast/a/b (c);d"
        assert forwarder.forward(setup.sign(search_tool(url), {"q": "wsgi"})).ok
        refused(
            forwarder.forward(setup.sign(search_tool(url), {"q": "x"}, provider="nope")),
            "WRONG_PROVIDER",
        )


def test_the_wsgi_fallback_re_quotes_the_path_so_only_plain_arguments_verify(
    jwks_host: JwksHost, wsgi_server: Callable[..., str]
) -> None:
    """Without REQUEST_URI/RAW_URI (plain wsgiref) the adapter re-quotes PATH_INFO: a path with
    unreserved characters, spaces and non-ASCII verifies; an encoded sub-delimiter does not
    (the documented limit of that fallback, not of the signature)."""
    app = AssayVerifyWSGI(_wsgi_echo, provider=PROVIDER, jwks_url=jwks_host.url("wsgi-plain"))
    url = wsgi_server(app)
    with Forwarder(guard=LOOPBACK) as forwarder:
        setup = Setup(jwks_host, url, forwarder)
        tool = weather_tool(url)
        assert forwarder.forward(setup.sign(tool, {"city": "São Paulo", "units": "metric"})).ok
        refused(forwarder.forward(setup.sign(tool, {"city": "a(b)"})), "BAD_SIGNATURE")


FIXTURE = Path(__file__).resolve().parent / "fixtures" / "weather-3.0.json"


async def _forecast(request: Request) -> JSONResponse:
    city = request.path_params["city"]
    days = [{"date": "2026-11-01", "temp_max_c": 12.5}] if city != "Atlantis" else "none"
    return JSONResponse(
        {"location": {"lat": 1.0, "lon": 2.0}, "issued_at": "2026-11-01T06:00:00Z", "days": days}
    )


def test_an_imported_tool_end_to_end_settles_a_good_answer_and_fails_a_bad_one(
    jwks_host: JwksHost, asgi_server: Callable[[Any], AsgiServer]
) -> None:
    """The blocks composed: OpenAPI import -> argument check -> request -> signature ->
    forwarding through the middleware -> ProviderResponse -> the call verifier's verdict."""
    app = Starlette(routes=[Route("/v1/forecast/{city:path}", _forecast, methods=["GET"])])
    server = asgi_server(
        AssayVerifyMiddleware(app, provider=PROVIDER, jwks_url=jwks_host.url("e2e"))
    )
    tool = import_openapi(
        json.loads(FIXTURE.read_text(encoding="utf-8")),
        operation="getForecast",
        provider=PROVIDER,
        price={"amount_minor": 7, "currency": "USD"},
        base_url=f"{server.url}/v1",
    )
    policy = register_policy(
        {
            "policy": "forecast-shape",
            "version": 1,
            "tool": tool.name,
            "checks": ["schema"],
            "clauses": [{"match": "veto", "check": "schema", "verdict": "FAIL"}],
        },
        tool.contract,
    )
    verdicts = []
    with Forwarder(guard=LOOPBACK) as forwarder:
        setup = Setup(jwks_host, server.url, forwarder)
        for city in ("Paris", "Atlantis"):
            signed = setup.sign(tool, {"city": city, "days": 1})
            response = provider_response(forwarder.forward(signed))
            assert response.status == "ok"
            request = parse_request(
                {
                    "call_id": signed.call_id,
                    "provider": tool.provider,
                    "tool": tool.name,
                    "arguments": {"city": city, "days": 1},
                    "price": tool.price.to_dict(),
                }
            )
            result = verify_call(tool.contract, policy, request, response, datetime.now(UTC))
            verdicts.append((result.verdict, result.effect.payment.value, result.charge_minor))
    assert verdicts == [(CallVerdict.PASS, "settle", 7), (CallVerdict.FAIL, "refund", 0)]
