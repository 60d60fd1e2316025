"""Gateway vectors: one runner over tests/vectors/gateway_*.json, ids from the descriptions.

``tools``: registration (ok or the refusal's code), argument checks (the pointers of every
problem) and the exact request each call becomes. ``signing``: known answers of the signature
profile, byte for byte, each also accepted by the unmodified goassay-provider-verify verifier.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from goassay_provider_verify import MemoryReplayStore, Verifier

from adjudge.calls.tools import (
    ArgumentsInvalid,
    BuiltRequest,
    build_request,
    check_arguments,
    parse_tool,
)
from adjudge.errors import Error
from adjudge.gateway.signing import sign_request
from adjudge.receipts.keys import SigningKey

VECTORS = Path(__file__).resolve().parent.parent / "vectors"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((VECTORS / name).read_text(encoding="utf-8"))
    return data


TOOLS = _load("gateway_tools.json")
SIGNING = _load("gateway_signing.json")


def _params(section: str) -> list[Any]:
    return [pytest.param(case, id=case["description"]) for case in TOOLS[section]]


def _tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def _patched(case: dict[str, Any]) -> Any:
    if "document" in case:
        return case["document"]
    doc = copy.deepcopy(TOOLS["tools"][case["base"]])
    for pointer, value in case.get("set", {}).items():
        *parents, last = _tokens(pointer)
        node = doc
        for token in parents:
            node = node[token]
        node[last] = value
    for pointer in case.get("remove", []):
        *parents, last = _tokens(pointer)
        node = doc
        for token in parents:
            node = node[token]
        del node[last]
    return doc


def test_the_vector_files_are_all_run() -> None:
    """Every gateway vector file has a runner here (a file nobody runs must not pass silently)."""
    assert sorted(p.name for p in VECTORS.glob("gateway_*.json")) == [
        "gateway_signing.json",
        "gateway_tools.json",
    ]
    assert TOOLS["kind"] == "tools" and SIGNING["kind"] == "signing"


@pytest.mark.parametrize("case", _params("registration"))
def test_registration(case: dict[str, Any]) -> None:
    document = _patched(case)
    if case["expect"] == "ok":
        tool = parse_tool(document)
        assert parse_tool(tool.to_dict()) == tool  # the normalized document round-trips
        return
    with pytest.raises(Error) as caught:
        parse_tool(document)
    assert caught.value.code == case["expect"], caught.value


@pytest.mark.parametrize("case", _params("arguments"))
def test_arguments(case: dict[str, Any]) -> None:
    tool = parse_tool(TOOLS["tools"][case["tool"]])
    if not case["expect"]:
        assert check_arguments(tool, case["arguments"]) == (case["arguments"] or {})
        return
    with pytest.raises(ArgumentsInvalid) as caught:
        check_arguments(tool, case["arguments"])
    assert caught.value.code == "TOOL_ARGUMENTS_INVALID"
    assert sorted({d["pointer"] for d in caught.value.details}) == case["expect"]


@pytest.mark.parametrize("case", _params("requests"))
def test_requests(case: dict[str, Any]) -> None:
    tool = parse_tool(TOOLS["tools"][case["tool"]])
    expect = case["expect"]
    if isinstance(expect, list):  # refused: the pointers of what could not be sent
        with pytest.raises(ArgumentsInvalid) as caught:
            build_request(tool, case["arguments"])
        assert sorted({d["pointer"] for d in caught.value.details}) == expect
        return
    method, url, headers, body = build_request(tool, case["arguments"])
    assert method == expect["method"]
    assert url == expect["url"]
    assert [list(h) for h in headers] == expect["headers"]
    assert body == (None if expect["body"] is None else expect["body"].encode("utf-8"))


@pytest.mark.parametrize("case", [pytest.param(c, id=c["description"]) for c in SIGNING["cases"]])
def test_signing(case: dict[str, Any]) -> None:
    key = SigningKey.from_seed(bytes.fromhex(SIGNING["seed_hex"]))
    r = case["request"]
    body = None if r["body"] is None else r["body"].encode("utf-8")
    built = BuiltRequest(r["method"], r["url"], tuple(tuple(h) for h in r["headers"]), body)  # type: ignore[misc]
    signed = sign_request(built, signer=key, **case["options"])
    assert [list(h) for h in signed.headers] == case["expect"]["headers"]
    assert signed.base.decode("utf-8") == case["expect"]["base"]
    # The pinned bytes are what the real verifier accepts, 10 s after signing.
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": SIGNING["jwk_x"], "kid": case["options"]["keyid"]}
    verifier = Verifier(
        provider=case["options"]["provider"],
        jwks={"keys": [jwk]},
        authority=case["options"].get("authority"),
        now=lambda: float(case["options"]["now"] + 10),
        replay_store=MemoryReplayStore(),
    )
    result = verifier.verify(built.method, built.target, dict(signed.headers), body)
    assert result.ok, result.reason
    assert result.call_id == case["options"]["call_id"]
