"""The one error family: stable codes and actionable sentences."""

from adjudge import CriteriaError, Error, client
from adjudge.autocheck.jsregex import EngineUnavailable, JsRegexError
from adjudge.client import ServiceUnavailable
from adjudge.errors import (
    KINDS,
    BadInput,
    Conflict,
    InternalError,
    NotFound,
    RateLimited,
    ReceiptError,
    StateError,
    StorageError,
    TransitionError,
    Unavailable,
    VerificationFailed,
    kind_of,
)
from adjudge.gateway import KeyRingError, SecretError
from adjudge.store import ConcurrentUpdate
from adjudge.store.ledger import UnprovenRelease
from adjudge.workers.judges import JudgeError


def test_error_carries_code_and_message() -> None:
    """An error prints its stable code before its sentence and serializes both."""
    err = CriteriaError("min_length must be a whole number.", code="CRITERIA_INVALID")
    assert isinstance(err, Error)
    assert str(err) == "CRITERIA_INVALID: min_length must be a whole number."
    assert err.to_dict() == {
        "code": "CRITERIA_INVALID",
        "message": "min_length must be a whole number.",
    }


def test_leaf_default_code() -> None:
    """A leaf without an explicit code keeps its class's code."""
    assert CriteriaError("x").code == "INVALID_CRITERIA"


def test_each_long_standing_class_sits_under_its_kind() -> None:
    """The classes callers already catch keep working, each now a kind too."""
    assert {
        cls: kind_of(cls)
        for cls in (
            CriteriaError,
            TransitionError,
            ReceiptError,
            StorageError,
            RateLimited,
            ConcurrentUpdate,
            UnprovenRelease,
            KeyRingError,
            SecretError,
            JsRegexError,
            EngineUnavailable,
            JudgeError,
            ServiceUnavailable,
        )
    } == {
        CriteriaError: BadInput,
        TransitionError: StateError,
        ReceiptError: VerificationFailed,
        StorageError: Unavailable,
        RateLimited: Unavailable,
        ConcurrentUpdate: Unavailable,
        UnprovenRelease: InternalError,
        KeyRingError: BadInput,
        SecretError: VerificationFailed,
        JsRegexError: BadInput,
        EngineUnavailable: Unavailable,
        JudgeError: Unavailable,
        ServiceUnavailable: Unavailable,
    }


def test_a_bare_error_names_no_kind() -> None:
    """Only the kinds (and what is under them) say what happened; the base says nothing."""
    assert kind_of(Error("x")) is None
    assert all(kind_of(kind) is kind for kind in KINDS)
    assert kind_of(NotFound("No task t.", code="TASK_NOT_FOUND")) is NotFound


def test_a_remote_refusal_is_raised_as_its_status_and_its_kind() -> None:
    """The client raises a service's refusal as its status's class and its code's kind, so one
    ``except`` handles a local and a remote refusal alike; an unknown code gets its status's."""

    illegal = client.refusal_class(409, "ILLEGAL_TRANSITION")(
        "ILLEGAL_TRANSITION", "no", status=409
    )
    assert isinstance(illegal, client.Conflict) and isinstance(illegal, StateError)
    assert not isinstance(illegal, Conflict)
    reused = client.refusal_class(409, "IDEMPOTENCY_KEY_REUSED")
    assert issubclass(reused, client.Conflict) and issubclass(reused, Conflict)
    assert client.refusal_class(404, "TASK_NOT_FOUND").__name__ == "NotFound"
    assert client.refusal_class(409, "ILLEGAL_TRANSITION") is type(illegal)  # made once
    assert client.refusal_class(418, "A_NEWER_CODE") is client.ApiError
    assert client.refusal_class(503, "A_NEWER_CODE") is client.ServerError
