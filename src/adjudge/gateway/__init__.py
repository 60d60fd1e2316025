"""The verification gateway's building blocks: signing, keys, sealed secrets, forwarding, and
the address guard (which hosts a request may connect to: :mod:`adjudge.gateway.addresses`).

IO lives here (the network, the clock, randomness, key files); every decision about a call stays
in the pure core (``adjudge.calls``). The use cases wire the blocks together:

    tool = parse_tool(document)                                  # adjudge.calls.tools
    request = build_request(tool, arguments)                     # TOOL_ARGUMENTS_INVALID: no call
    key = signing_key(ring.all_keys(), now)
    signed = sign_request(request, signer=key.signing_key, keyid=key.kid,
                          provider=tool.provider, call_id=call_id,
                          authority=tool.endpoint.authority)
    outcome = await forwarder.forward(signed, credential=credential)   # never raises
    response = provider_response(outcome)                        # adjudge.calls.ProviderResponse

The JWKS is ``jwks(ring.all_keys(), now)``, served at :data:`JWKS_PATH`.
"""

from adjudge.gateway.addresses import (
    AddressGuard,
    AddressRefused,
    AresResolver,
    GuardedResolver,
    Resolver,
    pinned_connector,
    public_address,
    public_host,
    tls_context,
)
from adjudge.gateway.forward import (
    AsyncForwarder,
    FailureKind,
    Forwarder,
    ForwardFailure,
    ForwardLimits,
    Outcome,
    ProviderAnswer,
    provider_response,
)
from adjudge.gateway.keys import (
    DEFAULT_LEAD,
    DEFAULT_OVERLAP,
    JWKS_PATH,
    FileKeyRing,
    GatewayKey,
    KeyRing,
    KeyRingError,
    MemoryKeyRing,
    jwks,
    new_key,
    rotate,
    signing_key,
)
from adjudge.gateway.sealed import ProviderCredential, SecretBox, SecretError
from adjudge.gateway.signing import SignedRequest, SigningError, content_digest, sign_request

__all__ = [
    "DEFAULT_LEAD",
    "DEFAULT_OVERLAP",
    "JWKS_PATH",
    "AddressGuard",
    "AddressRefused",
    "AresResolver",
    "AsyncForwarder",
    "FailureKind",
    "FileKeyRing",
    "ForwardFailure",
    "ForwardLimits",
    "Forwarder",
    "GatewayKey",
    "GuardedResolver",
    "KeyRing",
    "KeyRingError",
    "MemoryKeyRing",
    "Outcome",
    "ProviderAnswer",
    "ProviderCredential",
    "Resolver",
    "SecretBox",
    "SecretError",
    "SignedRequest",
    "SigningError",
    "content_digest",
    "jwks",
    "new_key",
    "pinned_connector",
    "provider_response",
    "public_address",
    "public_host",
    "rotate",
    "sign_request",
    "signing_key",
    "tls_context",
]
