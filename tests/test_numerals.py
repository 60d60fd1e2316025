"""Numbers a person types: a whole number is ASCII digits with at most a ``-`` first, a decimal
the same with an optional fraction and exponent; everything else Python reads is not one."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adjudge.numerals import read_decimal, read_whole

#: What Python's int() or float() reads and a person typing a count or a span never means.
LAX = [
    "",
    " 5",
    "5 ",
    "5\n",
    "+5",
    "8_000",
    "1_0.5",
    "0x1f",
    "٨",
    "８",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "5.",
    ".5",
    "1e",
    "e5",
    "1.5.2",
    "--5",
    "5-",
]


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_a_whole_number_reads_back(n: int) -> None:
    """Any integer written as Python writes it is that integer."""
    assert read_whole(str(n)) == n


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_finite_float_reads_back(x: float) -> None:
    """Any finite float written as Python writes it (``1e-05``, ``-0.0``) is that float."""
    assert read_decimal(repr(x)) == x


@pytest.mark.parametrize("text", LAX)
def test_what_python_reads_laxly_is_no_number(text: str) -> None:
    """Spaces, signs other than a leading ``-``, underscores, other digits, ``nan`` and
    ``inf`` are no number of either kind."""
    assert read_whole(text) is None and read_decimal(text) is None


@pytest.mark.parametrize(("text", "value"), [("30", 30.0), ("2.5", 2.5), ("1E3", 1e3)])
def test_a_decimal_may_be_whole_or_have_an_exponent(text: str, value: float) -> None:
    """A decimal is digits, an optional fraction, an optional exponent; a whole number only
    digits."""
    assert read_decimal(text) == value
    assert read_whole(text) == (int(text) if text.isdigit() else None)


def test_too_many_digits_is_no_whole_number_and_too_large_a_decimal_is_infinite() -> None:
    """Past what int() reads is not a whole number (not Python's error); past the largest
    float is infinite, for the caller's bounds to refuse."""
    assert read_whole("9" * 5000) is None
    assert read_decimal("1e400") == math.inf
