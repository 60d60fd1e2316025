"""Signing a forwarded call in the request-signature profile providers verify.

The profile is what ``goassay-provider-verify`` 0.2.0 checks (its ``core.Verifier.verify``): an
RFC 9421 HTTP message signature labelled ``assay``, Ed25519, over exactly these components in
this order::

    "@method" "@authority" "@path" "@query" ["content-digest"] "x-assay-call-id"

``content-digest`` is covered, and an RFC 9530 ``Content-Digest: sha-256=:…:`` header sent, if
and only if the request has a body. The parameters are ``created``, ``expires`` (at most 300 s
later), a fresh ``nonce``, ``keyid``, ``alg="ed25519"``, ``tag="assay-request"`` and ``aud`` (the
provider's id: it is what stops a request signed for one provider being replayed to another).

What is whose:

- **http-sf** (RFC 8941/9651) defines the structured headers' syntax: it serializes the
  component lists once, at import, and the tests hold every header written here equal to
  ``http_sf.ser`` of the same structure. Per call the rest is concatenated, because each value
  is checked first to need no escaping (integers; printable ASCII with no quote or backslash;
  base64): ``http_sf.ser`` of the whole dictionary took a third of the signing time.
- **cryptography** signs (through :class:`adjudge.receipts.keys.SigningKey`).
- **Written here, on purpose**: the signature base and the profile's fixed parts. The general
  RFC 9421 library (``http-message-signatures`` 3.0.0) fixes the set of signature parameters it
  will write to RFC 9421's six (``HTTPSignatureHandler.signature_metadata_parameters``), so it
  cannot sign ``aud``, which the profile requires; and it derives ``@path``/``@query`` from a
  re-parsed URL, where the profile signs the raw bytes the provider's server will report. The
  base is seven lines, built below from the request this gateway will send, byte for byte. A
  differential test verifies these signatures with that library's verifier (taught ``aud``).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from dataclasses import dataclass

import http_sf

from adjudge.calls.tools import PROVIDER_ID, BuiltRequest
from adjudge.errors import BadInput
from adjudge.receipts.keys import Signer

__all__ = [
    "COMPONENTS",
    "LABEL",
    "MAX_VALIDITY_SECONDS",
    "TAG",
    "SignedRequest",
    "SigningError",
    "content_digest",
    "sign_request",
    "signature_base",
]

#: The signature's label in the ``Signature-Input`` and ``Signature`` dictionaries.
LABEL = "assay"
#: ``tag``: the application the signature is for.
TAG = "assay-request"
ALG = "ed25519"
#: The covered components, in the profile's order; ``content-digest`` only with a body.
COMPONENTS = ("@method", "@authority", "@path", "@query", "content-digest", "x-assay-call-id")
#: ``expires - created`` may not exceed this (the verifier refuses a longer window as EXPIRED).
MAX_VALIDITY_SECONDS = 300
#: The default lifetime of a signature: long enough for a slow network, short for a replay.
DEFAULT_VALIDITY_SECONDS = 60

# A call id the verifier reads back trimmed: printable ASCII, no surrounding space.
_TEXT = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?")
# A quoted string's content that needs no escape (RFC 8941 sf-string minus '"' and '\\').
_PLAIN_STRING = re.compile(
    r"[\x21\x23-\x5b\x5d-\x7e](?:[\x20\x21\x23-\x5b\x5d-\x7e]{0,254}[\x21\x23-\x5b\x5d-\x7e])?"
)
# The component lists, serialized by the structured-field library once.
_LISTS = {
    digest: http_sf.ser({LABEL: [c for c in COMPONENTS if digest or c != "content-digest"]})
    for digest in (True, False)
}
_AUTHORITY = re.compile(r"(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::[0-9]{1,5})?")


class SigningError(BadInput):
    """A request that cannot be signed as asked (a bad call id, provider id or lifetime)."""

    code = "SIGNING_INVALID"


@dataclass(frozen=True)
class SignedRequest:
    """A request ready to send: the built request plus the profile's headers, and what was signed.

    ``headers`` are the built request's, then ``host``, ``x-assay-call-id``, ``content-digest``
    (with a body), ``signature-input`` and ``signature``. Send ``method``, ``url``, ``headers``
    and ``body`` exactly as they are.
    """

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    call_id: str
    provider: str
    keyid: str
    nonce: str
    created: int
    expires: int
    base: bytes  # the signature base, for the record and for tests

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (case-insensitive), or ``None``."""
        name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return None


def content_digest(body: bytes) -> str:
    """The RFC 9530 ``Content-Digest`` value: ``sha-256=:<padded base64 of sha256(body)>:``."""
    return f"sha-256=:{base64.b64encode(hashlib.sha256(body).digest()).decode('ascii')}:"


def signature_base(
    *,
    method: str,
    authority: str,
    path: str,
    query: str,
    digest: str | None,
    call_id: str,
    params: str,
) -> bytes:
    """The profile's signature base: one line per covered component, then the parameters.

    ``path`` and ``query`` are the raw text sent (``query`` without its ``?``); ``params`` is the
    ``Signature-Input`` member value exactly as sent (everything after ``assay=``). Lines are
    joined by a single LF, with no trailing newline.
    """
    lines = [
        f'"@method": {method.upper()}',
        f'"@authority": {authority}',
        f'"@path": {path or "/"}',
        f'"@query": ?{query}',
    ]
    if digest is not None:
        lines.append(f'"content-digest": {digest}')
    lines.append(f'"x-assay-call-id": {call_id}')
    lines.append(f'"@signature-params": {params}')
    return "\n".join(lines).encode("utf-8")


def sign_request(
    request: BuiltRequest,
    *,
    signer: Signer,
    keyid: str,
    provider: str,
    call_id: str,
    now: int | None = None,
    validity: int = DEFAULT_VALIDITY_SECONDS,
    nonce: str | None = None,
    authority: str | None = None,
) -> SignedRequest:
    """Sign ``request`` for ``provider`` with ``signer``, published as ``keyid`` in the JWKS.

    ``now`` (unix seconds) defaults to the system clock; ``nonce`` to 128 fresh random bits.
    ``authority`` is the ``@authority`` the provider's verifier will see: by default the URL's
    host[:port] (default port dropped), which is also sent as ``Host`` so the two cannot differ;
    give it when a proxy in front of the provider rewrites ``Host`` (the tool's
    ``endpoint.authority``). Refuses (``SIGNING_INVALID``) a call id, key id or nonce that is
    not printable ASCII without surrounding spaces, a provider id the verifier would refuse, and
    a lifetime outside 1..300 s.
    """
    # (1) What the verifier will accept at all.
    if not PROVIDER_ID.fullmatch(provider):
        raise SigningError(f"Provider id {provider!r} is not one a verifier accepts as `aud`.")
    if not _TEXT.fullmatch(call_id):
        raise SigningError(f"The call id {call_id!r} must be 1-256 printable ASCII characters.")
    if not _PLAIN_STRING.fullmatch(keyid):
        raise SigningError(
            f"The key id {keyid!r} must be 1-256 printable ASCII characters, no quote or backslash."
        )
    if nonce is None:
        nonce = secrets.token_urlsafe(16)
    elif not _PLAIN_STRING.fullmatch(nonce):
        raise SigningError("A nonce is 1-256 printable ASCII characters, no quote or backslash.")
    if not 0 < validity <= MAX_VALIDITY_SECONDS:
        raise SigningError(
            f"A signature lives 1 to {MAX_VALIDITY_SECONDS} seconds; got {validity}."
        )
    created = int(time.time()) if now is None else int(now)
    expires = created + validity
    host = request.authority
    signed_authority = host if authority is None else authority
    if not _AUTHORITY.fullmatch(signed_authority):
        raise SigningError(f"The authority {signed_authority!r} is not a lowercase host[:port].")

    # (2) The headers the profile covers: the component list, then the parameters in a fixed
    # order, exactly as http_sf.ser writes them (a test holds the two equal).
    digest = content_digest(request.body) if request.body is not None else None
    signature_input = (
        f'{_LISTS[digest is not None]};created={created};expires={expires};nonce="{nonce}"'
        f';keyid="{keyid}";alg="{ALG}";tag="{TAG}";aud="{provider}"'
    )
    member = signature_input[len(LABEL) + 1 :]  # what the verifier reads as "@signature-params"

    # (3) The base, from the bytes that will be sent, and the signature over it.
    base = signature_base(
        method=request.method,
        authority=signed_authority,
        path=request.path,
        query=request.query,
        digest=digest,
        call_id=call_id,
        params=member,
    )
    signature = signer.sign(base)
    headers = [(k, v) for k, v in request.headers if k not in _PROFILE_HEADERS]
    headers.append(("host", host))
    headers.append(("x-assay-call-id", call_id))
    if digest is not None:
        headers.append(("content-digest", digest))
    headers.append(("signature-input", signature_input))
    headers.append(("signature", f"{LABEL}=:{base64.b64encode(signature).decode('ascii')}:"))
    return SignedRequest(
        method=request.method,
        url=request.url,
        headers=tuple(headers),
        body=request.body,
        call_id=call_id,
        provider=provider,
        keyid=keyid,
        nonce=nonce,
        created=created,
        expires=expires,
        base=base,
    )


_PROFILE_HEADERS = frozenset(
    {"host", "x-assay-call-id", "content-digest", "signature-input", "signature"}
)
