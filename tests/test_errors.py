"""The one error family: stable codes and actionable sentences."""

from adjudge import CriteriaError, Error


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
