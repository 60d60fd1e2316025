"""The checker and the receipt issuer the service uses unless it is given others.

The real auto check (``adjudge.autocheck``) and signed receipts (``adjudge.receipts``) are found
at run time: when a build lacks the auto check, auto mode is refused at posting
(``VERIFICATION_MODE_UNSUPPORTED``) rather than judged by anything else; when it lacks signed
receipts, receipts are hash-chained but unsigned, and say so.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from adjudge.errors import Error
from adjudge.market import Checker, CheckOutcome, ReceiptIssuer


class AutoCheck:
    """The market's :class:`~adjudge.market.Checker` over ``adjudge.autocheck``."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """The auto check's post-time refusals."""
        return list(self._module.admissibility(criteria, mode))

    def check(self, result: str, criteria: Mapping[str, Any]) -> CheckOutcome:
        """Run the auto check and keep its full ``verificationResult``."""
        r = self._module.auto_check(result, criteria)
        return CheckOutcome(bool(r.passed), int(r.score), tuple(r.reasons), dict(r.to_dict()))


class NoAutoCheck:
    """Stands in when the auto check is not in this build: auto mode cannot be posted."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        """Refuse auto mode; the other modes need no checker."""
        if mode == "auto":
            return [
                Error(
                    "The auto check is not available in this build; use manual or agent review.",
                    code="VERIFICATION_MODE_UNSUPPORTED",
                )
            ]
        return []

    def check(self, result: str, criteria: Mapping[str, Any]) -> CheckOutcome:
        """Never reached: no auto task can be posted without the auto check."""
        raise Error("The auto check is not available in this build.", code="CHECKER_UNAVAILABLE")


class ChainedDigestIssuer:
    """Unsigned receipts: the statement and the previous digest, hashed over canonical JSON."""

    def issue(self, statement: Mapping[str, Any], previous: str | None) -> Mapping[str, Any]:
        """A receipt ``{"statement", "previous", "signed": false, "digest"}``."""
        body = {"statement": dict(statement), "previous": previous, "signed": False}
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        digest = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        return {**body, "digest": digest}


def default_checker() -> Checker:
    """The real auto check when this build has it, else :class:`NoAutoCheck`."""
    module = importlib.import_module("adjudge.autocheck")
    if callable(getattr(module, "auto_check", None)) and callable(
        getattr(module, "admissibility", None)
    ):
        return AutoCheck(module)
    return NoAutoCheck()


def default_issuer() -> ReceiptIssuer:
    """Unsigned chained receipts until signed receipts are wired in (see docs/service.md)."""
    return ChainedDigestIssuer()
