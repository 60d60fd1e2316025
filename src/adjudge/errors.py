"""One error family for every refusal adjudge makes.

Each error carries a stable machine ``code`` (the spec's own where it names one, such as
``AUTO_CRITERIA_REQUIRED``) and a sentence a person can act on. The HTTP API and the CLI print
both unchanged. A failed *check* is never an exception: it is a verdict. Exceptions are for
callers who passed something unusable.
"""

from __future__ import annotations


class Error(Exception):
    """Base of every adjudge refusal: a stable ``code`` and an actionable ``message``."""

    code: str = "ADJUDGE_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        """The wire shape of a refusal: ``{"code", "message"}``."""
        return {"code": self.code, "message": self.message}


class CriteriaError(Error):
    """Criteria (or a contract, a policy) that cannot be used as given."""

    code = "INVALID_CRITERIA"


class TransitionError(Error):
    """An event that is not allowed in the current state of a task."""

    code = "ILLEGAL_TRANSITION"


class ReceiptError(Error):
    """A receipt that does not verify: the signature, the chain or the statement is wrong."""

    code = "INVALID_RECEIPT"


class StorageError(Error):
    """The store could not do what was asked; nothing was half-written."""

    code = "STORAGE_ERROR"


class RateLimited(Error):
    """A bounded action was used up for now; ``retry_after`` says in how many seconds to retry."""

    code = "RATE_LIMITED"

    def __init__(self, message: str, *, retry_after: int, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after
