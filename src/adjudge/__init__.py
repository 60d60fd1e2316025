"""adjudge: decides whether paid work gets paid, and proves why.

The small public API; everything else lives in the subpackages named in DESIGN.md.
"""

from adjudge.autocheck import VerificationResult, admissibility, auto_check
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
