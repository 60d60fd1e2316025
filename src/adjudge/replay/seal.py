"""Checking a sealed task's verdict offline: the answer judged is the one committed at posting.

What an agent holds after the fact: the verdict's signed receipt, the poster's reveal (shown on
the task once no further submission can be judged against it), the task's public criteria and
the commitment it saw on the task before it started. The steps:

1. The receipt verifies under the pinned key (``RECEIPT_*`` codes: nothing else is read
   otherwise).
2. It carries the oracle's check ``(= sealed-criteria "<commitment>")``, PASS: the service
   compared the reveal it held with the commitment and they agreed.
3. That commitment is the one the agent saw on the task before it started (when given).
4. The reveal's digest — ``sha256:`` of its RFC 8785 JSON — is that commitment.
5. The receipt's ``criteriaDigest`` is the digest of the public criteria with the revealed ones,
   salted with the reveal's salt: the check ran on exactly what was committed (when the public
   criteria are given).

Pure: the caller hands in the bytes and values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from adjudge.digests import DIGEST
from adjudge.errors import Error
from adjudge.market.proof import signed_digest
from adjudge.market.seal import SEALABLE, SYMBOL, parse_reveal
from adjudge.receipts import VerifyingKey, verify

_SEAL_EXPRESSION: Final = re.compile(
    r"\(= " + re.escape(SYMBOL) + r' "(' + DIGEST.pattern + r')"\)'
)


@dataclass(frozen=True)
class SealReport:
    """What the check found: ``valid`` when every step held; ``lines`` says what each step
    proved, ``findings`` what failed."""

    valid: bool
    commitment: str | None
    criteria_digest: str | None
    lines: tuple[str, ...]
    findings: tuple[str, ...]


def sealed_commitment(predicate: Mapping[str, Any]) -> str | None:
    """The commitment a receipt's oracle check of sealed criteria names, when it passed."""
    checks = predicate.get("checks")
    for check in checks if isinstance(checks, list) else []:  # a bundle's, unverified yet
        if not isinstance(check, Mapping):
            continue
        match = _SEAL_EXPRESSION.fullmatch(str(check.get("expression") or ""))
        if match and check.get("oracle") is True and check.get("verdict") == "PASS":
            return match.group(1)
    return None


def verify_seal(
    receipt: bytes,
    key: VerifyingKey | str,
    reveal: object,
    *,
    criteria: Mapping[str, Any] | None = None,
    commitment: str | None = None,
) -> SealReport:
    """Steps (1)-(5) of the module's docstring. Raises the receipt's own refusal (a
    :class:`adjudge.errors.ReceiptError`) when it does not verify, and ``SEAL_REVEAL_INVALID``
    when ``reveal`` is not a reveal; every other failure is a finding."""
    checked = verify(receipt.strip(), key)  # (1)
    p = checked.predicate
    lines = [f"the receipt verifies under key {checked.keyid} ({checked.verdict.value})"]
    findings: list[str] = []
    bound = sealed_commitment(p)  # (2)
    if bound is None:
        findings.append("the receipt carries no passed oracle check of sealed criteria")
    else:
        lines.append(f"the service checked the reveal against commitment {bound}")
    if commitment is not None and bound is not None:  # (3)
        if commitment != bound:
            findings.append(
                f"the receipt's commitment {bound} is not the one you saw on the task "
                f"({commitment})"
            )
        else:
            lines.append("it is the commitment the task showed before the work began")
    opened = parse_reveal(reveal)  # (4)
    if bound is not None:
        if opened.digest != bound:
            findings.append(
                f"the reveal's digest {opened.digest} is not the receipt's commitment {bound}"
            )
        else:
            lines.append(f"the reveal's digest is that commitment: {opened.digest}")
    signed = p.get("criteriaDigest")
    if criteria is not None:  # (5)
        public = [f for f in SEALABLE if f in criteria]
        merged = {**criteria, **opened.criteria}
        try:
            judged = signed_digest(merged, opened.salt, signed)  # salted with the reveal's
        except Error as exc:
            findings.append(f"the public criteria have no digest: {exc.message}")
        else:
            if public:
                findings.append(f"the public criteria hold {public[0]}, which the seal covers")
            elif judged != signed:
                findings.append(
                    f"the criteria judged ({signed}) are not the public criteria with the "
                    f"revealed ones ({judged})"
                )
            else:
                lines.append(
                    f"the check ran on the public criteria with the revealed ones: {judged}"
                )
    return SealReport(
        valid=not findings,
        commitment=bound,
        criteria_digest=signed if isinstance(signed, str) else None,
        lines=tuple(lines),
        findings=tuple(findings),
    )
