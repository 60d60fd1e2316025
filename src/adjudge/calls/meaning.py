"""What a meaning judge is shown of one paid call (pure data, shared by the gateway that asks
and the judges that answer)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "JUDGMENT_TYPE",
    "KEY_JUDGE_PREFIX",
    "MeaningAsk",
    "is_key_judge",
    "judgment_payload",
]


@dataclass(frozen=True)
class MeaningAsk:
    """What a judge is shown: the tool, the caller's arguments, the mapped output, and what
    binds its judgment to this call (the call id and the response digest)."""

    call_id: str
    response_digest: str
    tool: str
    description: str
    arguments: Mapping[str, Any]
    output: Any


#: The signed payload's ``type``; it keeps a key judge's signed bytes apart from any other.
JUDGMENT_TYPE = "adjudge.meaning-judgment/v1"
#: How a policy names a verifier key as a judge: ``key:<fingerprint>``.
KEY_JUDGE_PREFIX = "key:"


def is_key_judge(name: str) -> bool:
    """Whether a policy's judge name is a registered verifier key (``key:<fingerprint>``)."""
    return name.startswith(KEY_JUDGE_PREFIX)


def judgment_payload(
    *,
    call_id: str,
    response_digest: str,
    judge_key: str,
    conflict: bool,
    reason: str,
    citations: Sequence[Mapping[str, str]],
) -> dict[str, Any]:
    """The object a key judge signs (RFC 8785 canonical JSON, Ed25519): it binds the call, the
    response's digest, the key, the vote and its citations (``{"pointer", "quote_sha256"}``)."""
    return {
        "type": JUDGMENT_TYPE,
        "call_id": call_id,
        "response_digest": response_digest,
        "judge_key": judge_key,
        "conflict": conflict,
        "reason": reason,
        "citations": [
            {"pointer": str(c["pointer"]), "quote_sha256": str(c["quote_sha256"])}
            for c in citations
        ],
    }
