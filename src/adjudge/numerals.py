"""Numbers a person types, read one way wherever they are typed: a setting's environment
variable (:mod:`adjudge.settings`) and a command's option (:mod:`adjudge.cli`).

A whole number is ASCII digits, with at most a ``-`` first; a decimal is the same with an
optional fraction and exponent (``30``, ``2.5``, ``1e3``). Python's own ``int`` and ``float``
also take spaces around the digits, underscores between them (``8_000``), other scripts'
digits (``٨٠٠٠``), and ``nan`` and ``inf``, none of which a person means as a count or a
span. This module imports nothing of adjudge.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["read_decimal", "read_whole"]

_WHOLE: Final = re.compile(r"-?[0-9]+")
_DECIMAL: Final = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def read_whole(text: str) -> int | None:
    """``text`` as a whole number; None when the whole of it is not one, or has more digits
    than Python reads into an int (4300, past any count adjudge takes)."""
    if not _WHOLE.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:
        return None


def read_decimal(text: str) -> float | None:
    """``text`` as a number; None when the whole of it is not a decimal. One too large for a
    float is infinite (``1e400``): the caller's bounds refuse it."""
    return float(text) if _DECIMAL.fullmatch(text) else None
