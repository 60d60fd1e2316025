"""The oracle seam: the one place that compares a submitter's claim with our own record.

"Only the oracle seam, which reads a record the verifying side populates, can mint a MISMATCH.
An evaluator reads the bundle the submitter chose, so an evaluator can never author an
accusation." (spec 002)

In adjudge the record is the result as the verifying side stored it on submission; the claim is
the digest the submitter declared for it. Equal, and the check is the deterministic
evidence-integrity proof a PASS needs, ``(= result "sha256:…")``. Different, and it is a
MISMATCH. This module takes the kernel's single oracle seal when the package loads and keeps it
in a closure; no public name exposes it.
"""

from __future__ import annotations

from collections.abc import Callable

from adjudge.errors import CriteriaError
from adjudge.kernel.authority import Authority
from adjudge.kernel.observables import CONTENT_DIGEST, SHA256_DIGEST, DigestEquals, content_digest
from adjudge.kernel.verdicts import Check, Verdict, _take_oracle_seal

INTEGRITY_CHECK = "evidence-integrity"


def _minter() -> Callable[[str, str, str, str], Check]:
    seal = _take_oracle_seal()

    def mint(name: str, symbol: str, recorded: str, declared: str) -> Check:
        return Check(
            name=name,
            verdict=Verdict.MISMATCH,
            authority=Authority.DETERMINISTIC,
            evidence=(recorded, declared),
            reason=(
                f"the stored {symbol} has digest {recorded}, but the submitter declared {declared}"
            ),
            observable=CONTENT_DIGEST,
            expression=DigestEquals(symbol, declared).render(),
            seal=seal,
        )

    return mint


_mint_mismatch = _minter()


def integrity(stored: bytes, declared: str, *, symbol: str = "result") -> Check:
    """Compare the stored bytes (our record) with the digest the submitter declared.

    PASS with the expression ``(= result "<digest>")`` when they agree: the evidence-integrity
    proof. MISMATCH when they differ. A declared value that is not ``sha256:<64 lowercase hex>``
    is refused (``DIGEST_INVALID``) rather than judged.
    """
    if not isinstance(declared, str) or not SHA256_DIGEST.fullmatch(declared):
        raise CriteriaError(
            f"{declared!r} is not a digest of the form sha256:<64 lowercase hex>.",
            code="DIGEST_INVALID",
        )
    recorded = content_digest(stored)
    if recorded != declared:
        return _mint_mismatch(INTEGRITY_CHECK, symbol, recorded, declared)
    return Check(
        name=INTEGRITY_CHECK,
        verdict=Verdict.PASS,
        authority=Authority.DETERMINISTIC,
        evidence=(recorded,),
        reason=f"the stored {symbol} has the declared digest {recorded}",
        observable=CONTENT_DIGEST,
        expression=DigestEquals(symbol, recorded).render(),
    )
