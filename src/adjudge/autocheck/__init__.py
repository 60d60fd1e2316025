"""The auto check of spec 000: scores a text result 0-100 against a poster's rules. Pure.

``auto_check(result, criteria)`` reproduces the reference checker's verdict, score, reasons and
breakdown; ``admissibility(criteria, mode)`` lists the refusals a service makes at post time.
"""

from adjudge.autocheck.check import Item, VerificationResult, auto_check, result_text
from adjudge.autocheck.criteria import Criteria, admissibility, parse

__all__ = [
    "Criteria",
    "Item",
    "VerificationResult",
    "admissibility",
    "auto_check",
    "parse",
    "result_text",
]
