"""One error family for every refusal adjudge makes, one class per kind of failure.

Each error carries a stable machine ``code`` (the spec's own where it names one, such as
``AUTO_CRITERIA_REQUIRED``) and a sentence a person can act on. The HTTP API and the CLI print
both unchanged. A failed *check* is never an exception: it is a verdict. Exceptions are for
callers who passed something unusable, and for checks that could not run.

The class says what kind of failure happened, so a caller catches the kind it can handle::

    Error
    ├── BadInput             the request cannot be used as sent; fix it      CriteriaError
    ├── NotAllowed           not yours to do (no key, the wrong party, a role)
    ├── NotFound             no such thing (or none you may see)
    ├── Conflict             it exists already, or clashes with an earlier request
    ├── StateError           not now, not in this state                      TransitionError
    ├── VerificationFailed   what was checked is wrong: a signature, a chain  ReceiptError
    ├── Unavailable          could not be done now; the same request may succeed later
    │                                                   StorageError, RateLimited
    └── InternalError        adjudge itself is wrong (a broken invariant); nothing to fix

As securesystemslib keeps "the signature is wrong" apart from "the check itself broke", a
:class:`VerificationFailed` says the thing checked is wrong, never that checking it was
impossible: a key that is not a key is :class:`BadInput`, a checker that could not run
:class:`Unavailable`. Every code is declared once, with its kind, its HTTP status and its
meaning, in :mod:`adjudge.error_codes`.
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


# --- the kinds ---------------------------------------------------------------------------------


class BadInput(Error):
    """The request cannot be used as sent (a bad field, a bad file, a bad key): fix it."""


class NotAllowed(Error):
    """Who is asking may not do this: no or an unknown key, the wrong party or role."""


class NotFound(Error):
    """No such thing, or none the caller may see."""


class Conflict(Error):
    """It exists already, or the request clashes with an earlier one (a reused key)."""


class StateError(Error):
    """Not now, not in this state: a step the state does not allow, a deadline, a limit held."""


class VerificationFailed(Error):
    """What was checked is wrong: a signature, a chain, a digest or a verdict that does not
    verify. Never "the check could not run": that is :class:`BadInput` or :class:`Unavailable`."""


class Unavailable(Error):
    """It could not be done now, through no fault of the request: the same request may succeed
    later (the store failed, a quota is used up, a checker or a provider could not answer)."""


class InternalError(Error):
    """adjudge itself is wrong (a broken invariant, a damaged record); nothing a caller can fix."""


#: The kinds, in the order the docs list them.
KINDS: tuple[type[Error], ...] = (
    BadInput,
    NotAllowed,
    NotFound,
    Conflict,
    StateError,
    VerificationFailed,
    Unavailable,
    InternalError,
)


def kind_of(error: Error | type[Error]) -> type[Error] | None:
    """The kind an error (or an error class) is of: the first kind among its bases; None for a
    bare :class:`Error`, which names no kind."""
    cls = error if isinstance(error, type) else type(error)
    return next((base for base in cls.__mro__ if base in KINDS), None)


# --- the long-standing leaves, each under its kind ---------------------------------------------


class CriteriaError(BadInput):
    """Criteria (or a contract, a policy, a check) that cannot be used as given."""

    code = "INVALID_CRITERIA"


class TransitionError(StateError):
    """An event that is not allowed in the current state of a task."""

    code = "ILLEGAL_TRANSITION"


class ReceiptError(VerificationFailed):
    """A receipt that does not verify: the signature, the chain or the statement is wrong."""

    code = "INVALID_RECEIPT"


class StorageError(Unavailable):
    """The store could not do what was asked; nothing was half-written."""

    code = "STORAGE_ERROR"


class RateLimited(Unavailable):
    """A bounded action was used up for now; ``retry_after`` says in how many seconds to retry."""

    code = "RATE_LIMITED"

    def __init__(self, message: str, *, retry_after: int, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after
