"""adjudge: decides whether paid work gets paid, and proves why.

The small public API; everything else lives in the subpackages named in DESIGN.md.
"""

from typing import TYPE_CHECKING, Any

from adjudge.errors import (
    BadInput,
    Conflict,
    CriteriaError,
    Error,
    InternalError,
    NotAllowed,
    NotFound,
    ReceiptError,
    StateError,
    StorageError,
    TransitionError,
    Unavailable,
    VerificationFailed,
)

__all__ = [
    "BadInput",
    "Conflict",
    "CriteriaError",
    "Error",
    "InternalError",
    "NotAllowed",
    "NotFound",
    "ReceiptError",
    "StateError",
    "StorageError",
    "TransitionError",
    "Unavailable",
    "VerificationFailed",
    "VerificationResult",
    "admissibility",
    "auto_check",
]

__version__ = "0.1.0"

if TYPE_CHECKING:
    from adjudge.autocheck import VerificationResult, admissibility, auto_check

_AUTO_CHECK = frozenset({"VerificationResult", "admissibility", "auto_check"})


def __getattr__(name: str) -> Any:
    """The auto check's names, imported on first use: importing any part of adjudge (the CLI,
    the service, a worker) runs this module first, and need not pay for the auto check."""
    if name in _AUTO_CHECK:
        from adjudge import autocheck  # noqa: PLC0415

        value = getattr(autocheck, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'adjudge' has no attribute {name!r}")
