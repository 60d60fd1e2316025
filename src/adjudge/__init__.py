"""adjudge: decides whether paid work gets paid, and proves why.

The small public API; everything else lives in the subpackages named in DESIGN.md.
"""

from adjudge.autocheck import VerificationResult, admissibility, auto_check
from adjudge.errors import CriteriaError, Error, ReceiptError, StorageError, TransitionError

__all__ = [
    "CriteriaError",
    "Error",
    "ReceiptError",
    "StorageError",
    "TransitionError",
    "VerificationResult",
    "admissibility",
    "auto_check",
]

__version__ = "0.1.0"
