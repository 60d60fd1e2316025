"""The checker and the receipt issuer adjudge uses unless it is given others.

The checker is the auto check of spec 000 (``adjudge.autocheck``); the issuer signs the kernel's
determinations (:class:`adjudge.receipts.SignedReceipts`, the one issuer port's implementation).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from adjudge.autocheck import admissibility, auto_check, falsifiable, redos
from adjudge.errors import CriteriaError, Error
from adjudge.market import Checker, CheckOutcome
from adjudge.receipts import Issuer, SignedReceipts, SigningKey


class AutoCheck:
    """The market's :class:`~adjudge.market.Checker` over ``adjudge.autocheck``."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """The auto check's post-time refusals, and more the reference's scan cannot see
        (:mod:`adjudge.autocheck.redos`): a ``regex_pattern`` whose repeated alternatives can
        match the same text, or whose repeat holds a repeat (exponential time), or that holds a
        run of repeats that can match the same characters (polynomial time past the square of
        the text's length); then, for an auto task, a gate no result could fail. The pattern's
        screens come first: they only read the pattern, while the falsifiability check runs
        matches (and a slow pattern would run them to the time limit). The verdict keeps the
        reference's scan alone."""
        refusals = list(admissibility(criteria, mode))
        pattern = criteria.get("regex_pattern")
        if not refusals and isinstance(pattern, str):
            refusals.extend(_slow_pattern(pattern))
        if not refusals and mode == "auto":
            for _field, reason in falsifiable.unfalsifiable(criteria):
                refusals.append(CriteriaError(f"{reason}.", code="CRITERIA_UNFALSIFIABLE"))
        return refusals

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        """Run the auto check and keep its full ``verificationResult``."""
        r = auto_check(result, criteria, withhold=withhold)
        return CheckOutcome(r.passed, r.score, tuple(r.reasons), r.to_dict())


def _slow_pattern(pattern: str) -> list[Error]:
    """The refusal of a pattern :mod:`adjudge.autocheck.redos` finds slow, if it does."""
    why = redos.ambiguous_repeat(pattern)
    if why is not None:
        return [
            CriteriaError(
                f"regex_pattern {pattern!r} can take exponential time: {why} under a "
                "repetition. Rewrite it so the alternatives cannot overlap and no repeat holds "
                "another (for example (a|aa)+ as a+, (http|https)+ as (https?)+, (a+)+ as a+).",
                code="REGEX_PATTERN_UNUSABLE",
            )
        ]
    slow = redos.slow_run(pattern)
    if slow is None:
        return []
    anchor = ", or anchor it with ^" if slow.degree > slow.repeats else ""
    return [
        CriteriaError(
            f"regex_pattern `{pattern}` can take polynomial time: {slow.reason}. "
            "Rewrite it so repeats next to each other cannot match the same "
            f"characters (for example .*.*x as .*x, \\d+\\d*x as \\d+x){anchor}.",
            code="REGEX_PATTERN_UNUSABLE",
        )
    ]


def call_subject(call_id: str) -> str:
    """The ``about`` name of a paid call: what its receipt and a ruling on its report answer."""
    return f"call:{call_id}"


def default_checker() -> Checker:
    """The auto check."""
    return AutoCheck()


def default_issuer() -> Issuer:
    """Signed receipts under a fresh key (``adjudge serve`` passes its persistent one)."""
    return SignedReceipts(SigningKey.generate())


def new_sample_seed() -> str:
    """A fresh seed for a call's meaning-check sampling (:func:`adjudge.calls.policy.sampled`):
    128 random bits, as the 32 hex digits a request's ``sample_seed`` holds."""
    return secrets.token_hex(16)
