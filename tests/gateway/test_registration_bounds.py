"""What one registration may cost: a tool document or a contract of more than 2,000 JSON values
is refused before its schemas are compiled (a 4 MiB document took 70 s of CPU and 6 GB, and
held the interpreter the event loop needs), and an account has at most two registrations
being checked at once (429 ``REGISTRATIONS_AT_ONCE_EXCEEDED``), tools and contracts together."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from adjudge import json_text
from adjudge.app import calls as call_use_cases
from adjudge.app.demo import WEATHER_POLICY
from adjudge.app.gateway import parsed as parsed_documents
from adjudge.app.gateway import tools as tool_use_cases
from adjudge.calls.kept import Kept
from adjudge.calls.tools import MAX_REGISTERED_BYTES, MAX_REGISTERED_VALUES
from support.harness import Harness, make_harness
from support.weather import tool

BASE = "https://api.example"


@pytest.fixture
def h(sqlite_store: Any) -> Harness:
    """A harness with two providers, sky and sun."""
    harness = make_harness(sqlite_store)
    for name in ("sky", "sun"):
        harness.keys[name] = harness.app.accounts.create(None, name, ["provider"]).value["api_key"]
    return harness


def _document(provider: str, name: str, extra: int) -> dict[str, Any]:
    """The forecast tool of ``provider`` named ``name``, its output schema given ``extra``
    more properties (each two JSON values: its schema object and its type)."""
    made = copy.deepcopy(tool(BASE, provider))
    made["name"] = name
    properties = made["contract"]["output_schema"]["properties"]
    for n in range(extra):
        properties[f"extra{n}"] = {"type": "integer"}
    return made


def _values(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    return 1


def test_a_document_past_the_bound_is_refused_before_it_compiles(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool document at the bound is registered; one value past it is refused with its
    code and a sentence naming the bound, without its schemas compiled; a contract past it
    alike."""
    room = (MAX_REGISTERED_VALUES - _values(_document("sky", "at_bound", 0))) // 2
    at = _document("sky", "at_bound", room)
    assert _values(at) <= MAX_REGISTERED_VALUES
    h.ok("sky", "POST", "/tools/callable", {"tool": at})
    past = _document("sky", "past_bound", room + 1)
    assert _values(past) > MAX_REGISTERED_VALUES

    def compiled(*_: Any) -> Any:
        raise AssertionError("compiled a document past the bound")

    monkeypatch.setattr(tool_use_cases, "parse_tool", compiled)
    r = h.call("sky", "POST", "/tools/callable", {"tool": past})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "TOOL_INVALID")
    assert "2,000 JSON values" in r.json()["error"]["message"]
    contract = {**_document("sky", "past_bound", room + 50)["contract"], "tool": "past_bound"}
    assert _values(contract) > MAX_REGISTERED_VALUES
    r = h.call("sky", "POST", "/tools", {"contract": contract})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "CONTRACT_INVALID")


def test_a_document_past_the_bytes_bound_is_refused_before_it_compiles(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool document of a few values whose input schema holds a long description: at the
    bytes bound it is registered; a byte past it is refused with its code and a sentence naming
    the bound, without its schemas compiled; a contract and a policy alike (before, a tool of
    3.5 MB was registered, and a page of 31 of them was a 109 MB answer)."""

    def described(name: str, size: int) -> dict[str, Any]:
        made = _document("sky", name, 0)
        made["input_schema"]["properties"]["city"]["description"] = ""
        room = MAX_REGISTERED_BYTES - len(json_text.dumps_utf8(made))
        made["input_schema"]["properties"]["city"]["description"] = "x" * (room + size)
        return made

    at = described("at_bound", 0)
    assert len(json_text.dumps_utf8(at)) == MAX_REGISTERED_BYTES
    h.ok("sky", "POST", "/tools/callable", {"tool": at})

    def compiled(*_: Any) -> Any:
        raise AssertionError("compiled a document past the bound")

    monkeypatch.setattr(tool_use_cases, "parse_tool", compiled)
    r = h.call("sky", "POST", "/tools/callable", {"tool": described("past_bound", 1)})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "TOOL_INVALID")
    assert "128 KiB" in r.json()["error"]["message"]
    contract = {**described("past_bound", 0)["contract"], "tool": "past_bound"}
    contract["description"] = "x" * MAX_REGISTERED_BYTES
    r = h.call("sky", "POST", "/tools", {"contract": contract})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "CONTRACT_INVALID")
    assert "128 KiB" in r.json()["error"]["message"]
    policy = {**copy.deepcopy(WEATHER_POLICY), "description": "x" * MAX_REGISTERED_BYTES}
    r = h.call("sky", "POST", "/tools/at_bound/policies", {"policy": policy})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "POLICY_INVALID")
    assert "128 KiB" in r.json()["error"]["message"]


def test_an_accounts_registrations_at_once_are_bounded(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two of sky's registrations being checked at once: a third, a tool or a contract, is 429
    with its code and Retry-After; sun registers meanwhile; sky again once they end."""
    real = tool_use_cases.parse_tool
    inside, release = threading.Semaphore(0), threading.Event()

    def slow(document: Any) -> Any:
        inside.release()
        release.wait(30)
        return real(document)

    monkeypatch.setattr(tool_use_cases, "parse_tool", slow)
    sky = h.app.accounts.authenticate(h.keys["sky"])
    held = [
        threading.Thread(target=h.app.tools.register, args=(sky, _document("sky", f"held{n}", 0)))
        for n in range(2)
    ]
    for thread in held:
        thread.start()
    assert inside.acquire(timeout=30) and inside.acquire(timeout=30)
    try:
        r = h.call("sky", "POST", "/tools/callable", {"tool": _document("sky", "third", 0)})
        assert (r.status_code, r.json()["error"]["code"]) == (429, "REGISTRATIONS_AT_ONCE_EXCEEDED")
        assert r.headers["Retry-After"] == "1"
        contract = {**_document("sky", "third", 0)["contract"], "tool": "third"}
        r = h.call("sky", "POST", "/tools", {"contract": contract})
        assert (r.status_code, r.json()["error"]["code"]) == (429, "REGISTRATIONS_AT_ONCE_EXCEEDED")
        monkeypatch.setattr(tool_use_cases, "parse_tool", real)
        h.ok("sun", "POST", "/tools/callable", {"tool": _document("sun", "suns", 0)})
    finally:
        release.set()
        for thread in held:
            thread.join()
    h.ok("sky", "POST", "/tools/callable", {"tool": _document("sky", "third", 0)})


def test_a_policy_past_the_bound_is_refused_before_it_is_parsed(h: Harness) -> None:
    """A decision policy of 600 rules (2,400 JSON values; parsing one of 50,000 took 36 s
    inside the write) is refused with its code before anything parses it; the demo's policy,
    under the bound, is registered."""
    h.ok("sky", "POST", "/tools/callable", {"tool": _document("sky", "weather_forecast", 0)})
    policy = copy.deepcopy(WEATHER_POLICY)
    policy["rules"] = [
        {"kind": "required_values", "name": f"r{n}", "path": "days", "fields": ["date"]}
        for n in range(600)
    ]
    assert _values(policy) > MAX_REGISTERED_VALUES
    r = h.call("sky", "POST", "/tools/weather_forecast/policies", {"policy": policy})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "POLICY_INVALID")
    assert "2,000 JSON values" in r.json()["error"]["message"]
    h.ok("sky", "POST", "/tools/weather_forecast/policies", {"policy": WEATHER_POLICY})


def test_a_provider_registers_a_bounded_number_of_tools(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each tool name keeps its contracts, policies and catalog versions for good: a provider
    registers a bounded number of names (here two, by either route), then ``409
    TOOL_LIMIT_REACHED`` naming the bound, nothing stored; a new version of one of its tools
    and a retry of a registration are served, and another provider is counted apart (before,
    any number)."""
    monkeypatch.setattr(call_use_cases, "MAX_PROVIDER_TOOLS", 2)
    first = h.call(
        "sky", "POST", "/tools/callable", {"tool": _document("sky", "one", 0)}, Idempotency_Key="t1"
    )
    assert first.status_code == 201
    h.ok(
        "sky",
        "POST",
        "/tools",
        {"contract": {**_document("sky", "two", 0)["contract"], "tool": "two"}},
    )
    r = h.call("sky", "POST", "/tools/callable", {"tool": _document("sky", "three", 0)})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "TOOL_LIMIT_REACHED")
    assert "at most 2 tools" in r.json()["error"]["message"]
    contract = {**_document("sky", "three", 0)["contract"], "tool": "three"}
    assert h.refused("sky", "POST", "/tools", {"contract": contract}) == (409, "TOOL_LIMIT_REACHED")
    assert h.refused("ann", "GET", "/tools/three") == (404, "TOOL_NOT_FOUND")
    again = h.call(
        "sky", "POST", "/tools/callable", {"tool": _document("sky", "one", 0)}, Idempotency_Key="t1"
    )
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    changed = {**_document("sky", "one", 0), "description": "Changed."}
    assert h.ok("sky", "POST", "/tools/callable", {"tool": changed})["version"] == 2
    h.ok("sun", "POST", "/tools/callable", {"tool": _document("sun", "three", 0)})


def test_a_tools_versions_are_bounded(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool's contract versions, its policy versions (every policy of it counted) and its
    catalog versions are kept for good: each is bounded (here two, two and three), then ``409
    CONTRACT_LIMIT_REACHED``, ``POLICY_LIMIT_REACHED`` or ``TOOL_VERSION_LIMIT_REACHED``
    naming the bound, nothing stored; a version stored already is still refused as it was, a
    retry of a registration is answered again, and another tool is counted apart (before, any
    number of each)."""
    monkeypatch.setattr(call_use_cases, "MAX_CONTRACT_VERSIONS", 2)
    monkeypatch.setattr(call_use_cases, "MAX_POLICY_VERSIONS", 2)
    monkeypatch.setattr(tool_use_cases, "MAX_TOOL_VERSIONS", 3)
    name = "weather_forecast"
    document = _document("sky", name, 0)
    h.ok("sky", "POST", "/tools/callable", {"tool": document})
    second = {"contract": {**document["contract"], "tool": name, "version": "2"}}
    made = h.call("sky", "POST", "/tools", second, Idempotency_Key="c2")
    assert made.status_code == 201
    third = {"contract": {**document["contract"], "tool": name, "version": "3"}}
    r = h.call("sky", "POST", "/tools", third)
    assert (r.status_code, r.json()["error"]["code"]) == (409, "CONTRACT_LIMIT_REACHED")
    assert "at most 2 contract versions" in r.json()["error"]["message"]
    newer = {**document, "contract": third["contract"]}
    assert h.refused("sky", "POST", "/tools/callable", {"tool": newer}) == (
        409,
        "CONTRACT_LIMIT_REACHED",
    )
    again = h.call("sky", "POST", "/tools", second, Idempotency_Key="c2")
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == made.json()
    assert h.refused("sky", "POST", "/tools", second) == (409, "CONTRACT_EXISTS")
    calm = {**document["contract"], "tool": "calm"}
    h.ok("sky", "POST", "/tools", {"contract": calm})
    h.ok("sky", "POST", "/tools", {"contract": {**calm, "version": "2"}})

    for n in (2, 3):  # versions 2 and 3 of the catalog's entry
        h.ok("sky", "POST", "/tools/callable", {"tool": {**document, "description": f"v{n}"}})
    r = h.call("sky", "POST", "/tools/callable", {"tool": {**document, "description": "v4"}})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "TOOL_VERSION_LIMIT_REACHED")
    assert "at most 3 versions" in r.json()["error"]["message"]
    assert h.ok("ann", "GET", f"/tools/{name}")["version"] == 3
    # The latest version registered again (a deploy that registers its tools each time) is
    # that version, at the bound too.
    again = h.ok("sky", "POST", "/tools/callable", {"tool": {**document, "description": "v3"}})
    assert again["version"] == 3

    path = f"/tools/{name}/policies"
    first = h.call("sky", "POST", path, {"policy": WEATHER_POLICY}, Idempotency_Key="p1")
    assert first.status_code == 201
    h.ok("sky", "POST", path, {"policy": {**WEATHER_POLICY, "version": 2}})
    other = {**WEATHER_POLICY, "policy": "weather-strict"}
    r = h.call("sky", "POST", path, {"policy": other})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "POLICY_LIMIT_REACHED")
    assert "at most 2 policy versions" in r.json()["error"]["message"]
    shadow = {**other, "mode": "shadow"}  # what an admin may register over a provider's tool
    assert h.refused("root", "POST", path, {"policy": shadow}) == (409, "POLICY_LIMIT_REACHED")
    again = h.call("sky", "POST", path, {"policy": WEATHER_POLICY}, Idempotency_Key="p1")
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert h.refused("sky", "POST", path, {"policy": WEATHER_POLICY}) == (409, "POLICY_EXISTS")


def test_an_extra_key_sets_none_of_the_rules_that_judge_calls(h: Harness) -> None:
    """The rules a provider is judged by are registered on its account's own word: an extra
    key (a budget for calls) neither registers a tool, a contract or a decision policy, nor
    sets the credential calls are sent with, nor (an admin's) rotates the gateway's keys; each
    is ``403 PRIMARY_KEY_REQUIRED`` and stores nothing. Before, an admin's extra key of no
    budget registered a stricter policy over a provider's tool, and the provider's next calls
    were refunded on it."""
    h.ok("sky", "POST", "/tools/callable", {"tool": _document("sky", "weather_forecast", 0)})
    extra = {}
    for owner in ("sky", "root"):
        made = h.ok(owner, "POST", "/accounts/me/api-keys", {"label": "ci"})
        h.keys[f"{owner}-extra"] = made["api_key"]
        extra[owner] = f"{owner}-extra"
    policy = {"policy": {**WEATHER_POLICY, "version": 9}}
    contract = {**_document("sky", "other", 0)["contract"], "tool": "other"}
    refusals = [
        h.refused(extra["root"], "POST", "/tools/weather_forecast/policies", policy),
        h.refused(extra["sky"], "POST", "/tools/weather_forecast/policies", policy),
        h.refused(extra["sky"], "POST", "/tools/callable", {"tool": _document("sky", "new", 0)}),
        h.refused(extra["sky"], "POST", "/tools", {"contract": contract}),
        h.refused(
            extra["sky"], "PUT", "/providers/me/credential", {"header": "X-Key", "secret": "s"}
        ),
        h.refused(extra["root"], "POST", "/gateway/keys/rotate"),
    ]
    assert refusals == [(403, "PRIMARY_KEY_REQUIRED")] * 6
    assert h.ok("ann", "GET", "/tools/weather_forecast")["policy"]["version"] != 9
    assert h.refused("ann", "GET", "/tools/new") == (404, "TOOL_NOT_FOUND")
    # The admin's own key registers what an admin may: the policy in shadow mode.
    shadow = {"policy": {**policy["policy"], "mode": "shadow"}}
    h.ok("root", "POST", "/tools/weather_forecast/policies", shadow)


def test_a_listing_compiles_no_tool_document(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of tools, a search and one tool's page are read from the stored documents, each
    as its parse would list it, with nothing compiled: with the parsed documents let go and
    ``parse_tool`` refusing, they answer as before (a page of 200 tools at the bound compiled
    each, and outgrew the cache that keeps them, so each page compiled them all again: 249 s
    and 304 s for two pages, another account's requests 5-6x slower meanwhile)."""
    documents = {
        "weather_forecast": _document("sky", "weather_forecast", 30),
        "plain": {**_document("sky", "plain", 0), "policy": None, "refunded_output": "return"},
    }
    for document in documents.values():
        h.ok("sky", "POST", "/tools/callable", {"tool": document})
    h.ok("sky", "POST", "/tools/weather_forecast/policies", {"policy": WEATHER_POLICY})
    page = h.ok("sun", "GET", "/tools")
    found = h.ok("sun", "GET", "/tools?query=weather")
    one = h.ok("sun", "GET", "/tools/weather_forecast")
    assert len(page["tools"]) == 2 and one["judged_by"] is not None
    for view in page["tools"]:  # what the full parse of its document lists
        parsed = tool_use_cases.parse_tool(documents[view["name"]])
        assert view["definition"] == parsed.mcp_definition()
        assert view["description"] == parsed.description
        assert view["policy"] == (None if parsed.policy is None else parsed.policy.to_dict())
        assert view["refunded_output"] == parsed.refunded_output
    whole = tool_use_cases.parse_tool(documents["weather_forecast"]).to_dict()
    assert (one["input_schema"], one["contract"]) == (whole["input_schema"], whole["contract"])
    hidden = ("base_url", "authority")  # a caller's view of where the provider lives
    assert one["endpoint"] == {k: v for k, v in whole["endpoint"].items() if k not in hidden}

    def compiled(*_: Any) -> Any:
        raise AssertionError("a listing compiled a tool document")

    monkeypatch.setattr(parsed_documents, "_TOOLS", Kept())
    monkeypatch.setattr(parsed_documents, "parse_tool", compiled)
    assert h.ok("sun", "GET", "/tools") == page
    assert h.ok("sun", "GET", "/tools?query=weather") == found
    assert h.ok("sun", "GET", "/tools/weather_forecast") == one
