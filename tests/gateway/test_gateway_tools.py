"""Tools: encoding and signing properties over any values, and the real clients' rules."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from typing import Any, ClassVar
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx
import mcp_types
import pytest
from goassay._meta import is_tool_name
from goassay_provider_verify import MemoryReplayStore, Verifier
from goassay_provider_verify.structured import parse_dictionary
from http_message_signatures import HTTPMessageVerifier, HTTPSignatureKeyResolver, algorithms
from http_sf import ser
from hypothesis import given, settings
from hypothesis import strategies as st
from yarl import URL

from adjudge.calls.tools import (
    MAX_URL_BYTES,
    TOOL_NAME,
    ArgumentsInvalid,
    BuiltRequest,
    Tool,
    build_request,
    check_arguments,
    parse_tool,
    percent_encode,
)
from adjudge.errors import Error
from adjudge.gateway.signing import COMPONENTS, LABEL, sign_request
from adjudge.receipts.keys import SigningKey

KEY = SigningKey.from_seed(bytes(32))
JWK = {
    "kty": "OKP",
    "crv": "Ed25519",
    "x": base64.urlsafe_b64encode(KEY.public_key.raw).rstrip(b"=").decode(),
    "kid": "k1",
}


def lookup_tool(method: str = "GET") -> Tool:
    body = method != "GET"
    return parse_tool(
        {
            "name": "lookup",
            "provider": "prov.example:eu-1",
            "endpoint": {
                "base_url": "https://api.example:8443/base",
                "method": method,
                "path": "/items/{id}/sub",
                "arguments": {"id": "path", "q": "query", "n": "query", "tags": "query"},
                **({"body": "rest"} if body else {}),
            },
            "input_schema": {
                "type": "object",
                "required": ["id"],
                "additionalProperties": body,
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "q": {"type": "string"},
                    "n": {"type": "number"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
            "contract": {},
            "price": {"amount_minor": 0, "currency": "EUR"},
        }
    )


GET, POST = lookup_tool(), lookup_tool("POST")
DECLARED = frozenset({"id", "q", "n", "tags"})
TEXT = st.text(st.characters(codec="utf-8"), max_size=30)
ARGUMENTS = st.fixed_dictionaries(
    {"id": TEXT.filter(bool)},
    optional={
        "q": TEXT,
        "n": st.one_of(
            st.integers(-(2**60), 2**60), st.floats(allow_nan=False, allow_infinity=False)
        ),
        "tags": st.lists(TEXT, max_size=4),
    },
)


@settings(max_examples=300)
@given(text=TEXT)
def test_percent_encoding_round_trips_and_leaves_only_unreserved(text: str) -> None:
    """Decoding the encoding gives the text back; only unreserved characters stay literal."""
    encoded = percent_encode(text)
    assert unquote(encoded, errors="strict") == text
    literal = encoded.replace("%", "")
    assert all(c.isascii() and (c.isalnum() or c in "-._~") for c in literal)


@settings(max_examples=300)
@given(args=ARGUMENTS)
def test_any_accepted_arguments_are_sent_exactly_as_built(args: dict[str, Any]) -> None:
    """The forwarder's client sends the built target unchanged (what the forwarder checks), and
    the provider decodes every value back: the path argument as one segment, the query in order."""
    request = build_request(GET, args)
    assert URL(request.url, encoded=True).raw_path_qs == request.target
    parts = urlsplit(request.url)
    segment = parts.path.split("/")[3]
    assert unquote(segment) == args["id"]
    expected: list[tuple[str, str]] = []
    if "q" in args:
        expected.append(("q", args["q"]))
    if "n" in args:
        n = args["n"]
        expected.append(("n", str(int(n)) if float(n).is_integer() and abs(n) < 2**53 else repr(n)))
    expected += [("tags", t) for t in args.get("tags", [])]
    assert parse_qsl(parts.query, keep_blank_values=True) == expected


def _verifier(provider: str) -> Verifier:
    return Verifier(provider=provider, jwks={"keys": [JWK]}, replay_store=MemoryReplayStore())


@settings(max_examples=200)
@given(
    args=ARGUMENTS,
    method=st.sampled_from(["GET", "POST"]),
    extra=st.dictionaries(TEXT, TEXT, max_size=3),
)
def test_any_accepted_call_signs_into_a_request_the_real_verifier_accepts(
    args: dict[str, Any], method: str, extra: dict[str, str]
) -> None:
    """Property: whatever arguments fit the tool, the signed request verifies (goassay 0.2.0)."""
    tool = GET if method == "GET" else POST
    if method == "POST":  # undeclared extras go to the body; declared names keep their type
        args = {**{k: v for k, v in extra.items() if k not in DECLARED}, **args}
    signed = sign_request(
        build_request(tool, args), signer=KEY, keyid="k1", provider=tool.provider, call_id="c-1"
    )
    target = signed.url[signed.url.index("/", 8) :]
    result = _verifier(tool.provider).verify(
        signed.method, target, dict(signed.headers), signed.body
    )
    assert result.ok, result.reason


@settings(max_examples=100)
@given(args=ARGUMENTS, flip=st.integers(0, 10**6))
def test_flipping_any_signed_byte_breaks_verification(args: dict[str, Any], flip: int) -> None:
    """Change one byte of the target, the body or the call id: the verifier refuses."""
    signed = sign_request(
        build_request(POST, args), signer=KEY, keyid="k1", provider=POST.provider, call_id="c-1"
    )
    target = signed.url[signed.url.index("/", 8) :]
    body = signed.body or b""
    headers = dict(signed.headers)
    place = flip % 3
    if place == 0:
        i = flip % len(target)
        target = target[:i] + ("A" if target[i] != "A" else "B") + target[i + 1 :]
    elif place == 1 and body:
        i = flip % len(body)
        body = body[:i] + bytes([body[i] ^ 1]) + body[i + 1 :]
    else:
        headers["x-assay-call-id"] = "c-2"
    result = _verifier(POST.provider).verify(signed.method, target, headers, body)
    assert not result.ok


class _Keys(HTTPSignatureKeyResolver):
    def resolve_public_key(self, key_id: str) -> Any:
        assert key_id == "k1"
        return KEY._key.public_key()

    def resolve_private_key(self, key_id: str) -> Any:
        raise NotImplementedError


class _ProfileVerifier(HTTPMessageVerifier):
    # RFC 9421 lets applications define parameters; this profile defines `aud`.
    signature_metadata_parameters: ClassVar[set[str]] = {
        *HTTPMessageVerifier.signature_metadata_parameters,
        "aud",
    }


@settings(max_examples=50, deadline=None)
@given(args=ARGUMENTS)
def test_a_general_rfc_9421_verifier_accepts_the_signatures(args: dict[str, Any]) -> None:
    """Differential: http-message-signatures (taught `aud`) verifies the same requests, its
    digest check included — the profile is plain RFC 9421 + RFC 9530."""
    signed = sign_request(
        build_request(POST, args), signer=KEY, keyid="k1", provider=POST.provider, call_id="c-1"
    )
    message = httpx.Request(
        signed.method, signed.url, headers=list(signed.headers), content=signed.body
    )
    verifier = _ProfileVerifier(signature_algorithm=algorithms.ED25519, key_resolver=_Keys())
    (result,) = verifier.verify(message, expect_tag="assay-request", body=signed.body)
    assert result.parameters["aud"] == POST.provider
    assert result.body == signed.body


def test_the_tool_name_rule_is_what_both_clients_accept() -> None:
    """A name parse_tool accepts is one goassay and the MCP SDK accept; a dot is refused."""
    for name in ("a", "weather_forecast", "acme__get-quote", "x" * 128):
        assert TOOL_NAME.fullmatch(name) and is_tool_name(name)
    for name in ("weather.forecast", "", "x" * 129, "a b", "ü"):
        assert not TOOL_NAME.fullmatch(name)


def test_the_mcp_definition_is_a_valid_mcp_tool() -> None:
    """mcp_definition() validates as the SDK's Tool (2026-07-28), output schema included."""
    tool = parse_tool(
        {**POST.to_dict(), "contract": {"output_schema": {"type": "object", "properties": {}}}}
    )
    definition = tool.mcp_definition()
    parsed = mcp_types.Tool.model_validate(definition)
    assert parsed.name == "lookup" and parsed.output_schema is not None
    assert "outputSchema" not in GET.mcp_definition()  # no object schema, none listed


def test_the_tool_is_frozen_and_its_documents_are_copies() -> None:
    """Mutating the document after parsing changes nothing in the tool."""
    document = GET.to_dict()
    tool = parse_tool(document)
    document["input_schema"]["properties"]["id"]["minLength"] = 99
    assert check_arguments(tool, {"id": "x"}) == {"id": "x"}
    with pytest.raises(AttributeError):
        tool.name = "other"  # type: ignore[misc]


def test_a_refusal_lists_at_most_twenty_problems() -> None:
    """Many problems: the first twenty by pointer, and the message counts the rest."""
    tool = parse_tool({**GET.to_dict(), "input_schema": {**GET.input_schema}})
    with pytest.raises(ArgumentsInvalid) as caught:
        check_arguments(tool, {f"x{i:02}": i for i in range(30)})
    assert len(caught.value.details) == 20
    assert "(and 30 more)" in caught.value.message  # 30 unknown plus the missing id, less one
    assert caught.value.to_dict()["code"] == "TOOL_ARGUMENTS_INVALID"


def test_the_fast_validator_and_the_reference_agree_on_refusals() -> None:
    """A tool on the compiled fast path refuses exactly what the reference validator refuses."""
    assert GET.fast_path
    slow = parse_tool({**GET.to_dict(), "input_schema": {**GET.input_schema, "uniqueItems": True}})
    assert not slow.fast_path
    for args in ({"id": ""}, {"id": 1}, {"id": "x", "n": "1"}, {"id": "x", "tags": [1]}, {}):
        codes = []
        for tool in (GET, slow):
            try:
                check_arguments(tool, args)
                codes.append(None)
            except Error as exc:
                codes.append(exc.code)
        assert codes[0] == codes[1] == "TOOL_ARGUMENTS_INVALID", args


def test_argument_patterns_are_ecmascript() -> None:
    """An input schema's pattern reads as JSON Schema says (ECMA-262 with the u flag) on both
    paths: \\d is ASCII digits only, and a pattern only Python reads is refused at registration."""
    digits = {"type": "string", "pattern": "^\\d+$"}
    schema = {**GET.input_schema, "properties": {**GET.input_schema["properties"], "id": digits}}
    fast = parse_tool({**GET.to_dict(), "input_schema": schema})
    slow = parse_tool({**GET.to_dict(), "input_schema": {**schema, "uniqueItems": True}})
    assert fast.fast_path and not slow.fast_path
    for tool in (fast, slow):
        assert check_arguments(tool, {"id": "123"}) == {"id": "123"}
        with pytest.raises(ArgumentsInvalid):
            check_arguments(tool, {"id": "\u0661\u0662\u0663"})  # Arabic-Indic digits
    python_only = {"type": "string", "pattern": "(?P<n>x)"}
    props = {**GET.input_schema["properties"], "id": python_only}
    with pytest.raises(Error) as caught:
        parse_tool({**GET.to_dict(), "input_schema": {**GET.input_schema, "properties": props}})
    assert caught.value.code == "TOOL_INPUT_SCHEMA_INVALID"
    assert "ECMA-262" in caught.value.message


def test_signing_time_is_whole_unix_seconds() -> None:
    """``created`` is the given time; ``expires`` is 60 s later by default."""
    signed = sign_request(
        build_request(GET, {"id": "x"}), signer=KEY, keyid="k1", provider="p", call_id="c", now=5
    )
    assert (signed.created, signed.expires) == (5, 65)
    assert dt.datetime.fromtimestamp(signed.created, dt.UTC).year == 1970


PLAIN = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters='"\\'),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200)
@given(
    nonce=PLAIN,
    keyid=PLAIN,
    provider=st.from_regex(r"[A-Za-z0-9._:-]{1,128}", fullmatch=True),
    now=st.integers(0, 2**40),
    validity=st.integers(1, 300),
    body=st.one_of(st.none(), st.binary(max_size=200)),
)
def test_the_signature_headers_are_what_the_structured_field_library_writes(
    nonce: str, keyid: str, provider: str, now: int, validity: int, body: bytes | None
) -> None:
    """The hand-concatenated headers equal http_sf.ser of the same structures, byte for byte,
    and parse back (through the verifier's own parser) to the same values."""
    request = BuiltRequest("POST", "https://a.example/x", (), body)
    signed = sign_request(
        request, signer=KEY, keyid=keyid, provider=provider, call_id="c", now=now,
        validity=validity, nonce=nonce,
    )  # fmt: skip
    components = [c for c in COMPONENTS if body is not None or c != "content-digest"]
    params = {
        "created": now, "expires": now + validity, "nonce": nonce, "keyid": keyid,
        "alg": "ed25519", "tag": "assay-request", "aud": provider,
    }  # fmt: skip
    assert signed.header("signature-input") == ser({LABEL: (components, params)})
    signature = base64.b64decode(signed.header("signature")[len(LABEL) + 2 : -1])
    assert signed.header("signature") == ser({LABEL: signature})
    if body is not None:
        assert signed.header("content-digest") == ser({"sha-256": hashlib.sha256(body).digest()})
    else:
        assert signed.header("content-digest") is None
    member = parse_dictionary(signed.header("signature-input") or "")[LABEL]
    assert (member.items, member.params) == (components, params)


def test_a_url_past_its_bound_is_refused_before_it_is_sent() -> None:
    """A query value that makes the URL pass 8,192 bytes (a space is three once encoded) is
    refused as the call's arguments, naming the whole request; just under the bound is sent.
    (The URL was parsed and kept whole by the forwarder's URL cache: a provider calling its own
    tool at no price with 4 MB arguments kept 34 MiB a call.)"""
    base = build_request(GET, {"id": "x", "q": ""}).url
    room = (MAX_URL_BYTES - len(base)) // 3
    sent = build_request(GET, {"id": "x", "q": " " * room})
    assert len(sent.url) <= MAX_URL_BYTES
    with pytest.raises(ArgumentsInvalid) as caught:
        build_request(GET, {"id": "x", "q": " " * (room + 1)})
    [problem] = caught.value.problems
    assert problem.pointer == "" and "8,192" in problem.message
    assert caught.value.code == "TOOL_ARGUMENTS_INVALID"


def test_headers_past_their_bound_are_refused_before_they_are_sent() -> None:
    """Header arguments making more than 8,192 bytes are refused as the call's arguments, the
    whole request named; under it they are sent."""
    document = GET.to_dict()
    document["endpoint"]["arguments"] = {"id": "path", "q": "header", "n": "query", "tags": "query"}
    headed = parse_tool(document)
    sent = build_request(headed, {"id": "x", "q": "v" * 8_000})
    assert dict(sent.headers)["q"] == "v" * 8_000
    with pytest.raises(ArgumentsInvalid) as caught:
        build_request(headed, {"id": "x", "q": "v" * 8_192})
    [problem] = caught.value.problems
    assert problem.pointer == "" and "headers" in problem.message and "8,192" in problem.message
