"""What a meaning judge is shown of one paid call (pure data, shared by the gateway that asks
and the judges that answer)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MeaningAsk"]


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
