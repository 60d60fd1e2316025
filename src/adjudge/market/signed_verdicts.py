"""A verifier's own Ed25519 signature on its verdict (agent review).

The named verifier signs the RFC 8785 canonical JSON (:func:`adjudge.receipts.canonical_bytes`)
of exactly this object, with the private half of the key its account registered::

    {
      "type": "adjudge.verifier-verdict/v2",
      "task_id": "task_…",
      "attempt": 1,                      # the submission judged (1, 2 or 3)
      "result_digest": "sha256:<hex>",   # that submission's digest, recorded at submission
      "brief_digest": "sha256:<hex>",    # the task's brief as posted (UTF-8)
      "passed": true,
      "reasons": ["…"],                  # exactly as sent, in order
      "quotes": [{"artifact": "brief" | "result", "start": 0, "end": 12,
                  "text": "…", "quoteHash": "sha256:<hex>"}],   # what the verdict relies on
      "verifier_key": "<hex>"            # the key's fingerprint: sha256 of the raw public key
    }

The quotes ground the judgment (spec 002): offsets are Unicode code points into the artifact's
text, ``[start, end)``, and ``quoteHash`` is the sha256 of the quoted text's UTF-8 bytes. The
service checks every quote against its own stored brief and result
(:func:`adjudge.kernel.semantic.ground_review`); a review that quotes nothing from either, or a
quote that does not resolve, is not paid on: the submission goes to the poster.

``POST /tasks/{id}/verdict`` carries ``signature`` (standard base64 of the 64-byte signature) and
``public_key`` (standard base64 of the raw 32-byte key). The service never takes the payload from
the client: it rebuilds it from the task's current submission, the verdict's ``passed`` and
``reasons``, and the verifier key the task's trust policy names (fixed at posting), and checks
that ``public_key`` has that fingerprint and that the signature verifies. A signature made for
another task, submission or verdict therefore fails. Missing: ``VERDICT_SIGNATURE_REQUIRED``
(400); anything that does not verify: ``VERDICT_SIGNATURE_INVALID`` (403).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from adjudge.errors import BadInput, Error, VerificationFailed
from adjudge.receipts import Signer, VerifyingKey, canonical_bytes, digest

#: The payload's ``type``; it also keeps the signed bytes apart from any other signed document.
PAYLOAD_TYPE = "adjudge.verifier-verdict/v2"
#: Where a verdict record's ``detail`` keeps the verified signature.
DETAIL_KEY = "verifier_signature"


def verdict_payload(
    *,
    task_id: str,
    attempt: int,
    result_digest: str,
    passed: bool,
    reasons: Sequence[str],
    verifier_key: str,
    brief_digest: str | None = None,
    quotes: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The object a verifier signs (see the module's docstring)."""
    return {
        "type": PAYLOAD_TYPE,
        "task_id": task_id,
        "attempt": attempt,
        "result_digest": result_digest,
        "brief_digest": brief_digest,
        "passed": passed,
        "reasons": list(reasons),
        "quotes": [dict(q) for q in quotes],
        "verifier_key": verifier_key,
    }


def sign_verdict(key: Signer, payload: Mapping[str, Any]) -> dict[str, str]:
    """``{"signature", "public_key"}`` for the verdict body: ``key``'s signature of ``payload``."""
    return {
        "signature": base64.b64encode(key.sign(canonical_bytes(dict(payload)))).decode("ascii"),
        "public_key": key.public_key.to_base64(),
    }


def check_signature(
    payload: Mapping[str, Any], signature: str | None, public_key: str | None
) -> dict[str, Any]:
    """Verify a verdict's signature against the key ``payload`` names; return what to record.

    The record (kept with the verdict) is the payload, the signature, the public key and the
    ``sha256:`` digest of the signed bytes, which the receipt's agent-review check names as
    evidence.
    """
    if not signature or not public_key:
        raise BadInput(
            "A verifier's verdict must carry its signature: sign the verdict payload with the "
            "key your verifier account registered and send 'signature' and 'public_key'.",
            code="VERDICT_SIGNATURE_REQUIRED",
        )
    named = payload["verifier_key"]
    try:
        key = VerifyingKey.from_base64(public_key)
        raw = base64.b64decode(signature, validate=True)
    except (Error, binascii.Error, ValueError) as exc:
        raise _invalid("The signature and public key must be standard base64.") from exc
    if key.keyid != named:
        raise _invalid(
            f"The verdict is signed by key {key.keyid}, but this task trusts only the verifier "
            f"key {named}."
        )
    signed = canonical_bytes(dict(payload))
    if not key.verify(raw, signed):
        raise _invalid(
            "The signature does not verify for this task, submission and verdict; sign the "
            "payload of the submission you judged, with exactly these passed and reasons."
        )
    return {
        "payload": dict(payload),
        "signature": signature,
        "public_key": public_key,
        "digest": digest(dict(payload)),
    }


def _invalid(message: str) -> Error:
    return VerificationFailed(message, code="VERDICT_SIGNATURE_INVALID")
