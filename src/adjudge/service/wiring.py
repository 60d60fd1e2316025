"""The checker and the receipt issuer the service uses unless it is given others.

The checker is the auto check of spec 000 (``adjudge.autocheck``). Receipts are hash-chained but
unsigned until ``adjudge.receipts`` (signed DSSE envelopes) is wired in here; each one says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from adjudge.autocheck import admissibility, auto_check
from adjudge.errors import Error
from adjudge.market import Checker, CheckOutcome, ReceiptIssuer


class AutoCheck:
    """The market's :class:`~adjudge.market.Checker` over ``adjudge.autocheck``."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """The auto check's post-time refusals."""
        return admissibility(criteria, mode)

    def check(self, result: str, criteria: Mapping[str, Any]) -> CheckOutcome:
        """Run the auto check and keep its full ``verificationResult``."""
        r = auto_check(result, criteria)
        return CheckOutcome(r.passed, r.score, tuple(r.reasons), r.to_dict())


class ChainedDigestIssuer:
    """Unsigned receipts: the statement and the previous digest, hashed over sorted-key JSON."""

    def issue(self, statement: Mapping[str, Any], previous: str | None) -> Mapping[str, Any]:
        """A receipt ``{"statement", "previous", "signed": false, "digest"}``."""
        body = {"statement": dict(statement), "previous": previous, "signed": False}
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        return {**body, "digest": digest}


def default_checker() -> Checker:
    """The auto check."""
    return AutoCheck()


def default_issuer() -> ReceiptIssuer:
    """Unsigned chained receipts until signed receipts are wired in (see docs/service.md)."""
    return ChainedDigestIssuer()
