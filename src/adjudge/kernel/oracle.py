"""The oracle seam: the one place that compares a submitter's claim with our own record.

"Only the oracle seam, which reads a record the verifying side populates, can mint a MISMATCH.
An evaluator reads the bundle the submitter chose, so an evaluator can never author an
accusation." (spec 002)

The record is a :class:`Record`: the bytes the verifying side's store holds for an artifact
(the result as stored on submission), built by the IO side that holds them — the service from
its store, the CLI from the file it was pointed at. Evaluators (the auto check, a call's rules,
a model's routing) read the bundle and never build one; the seam takes nothing else, so bytes
handed to it by an evaluator are refused (``ORACLE_RECORD_REQUIRED``). The claim is the digest
the submitter declared for it. Equal, and the check is the deterministic evidence-integrity
proof a PASS needs, ``(= result "sha256:…")``. Different, and it is a MISMATCH. Both are minted
with the kernel's single oracle seal, which this module takes when the package loads and keeps
in a closure (no public name exposes it): a MISMATCH cannot exist without it, and a
determination counts only a sealed proof, so a caller's look-alike ``(= result "sha256:…")``
check — whoever computed its digest — carries nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from adjudge.digests import is_digest, sha256_digest
from adjudge.errors import CriteriaError
from adjudge.kernel.authority import Authority
from adjudge.kernel.observables import CONTENT_DIGEST, DigestEquals
from adjudge.kernel.verdicts import Check, Verdict, _take_oracle_seal

INTEGRITY_CHECK = "evidence-integrity"

#: What a record may be called: the symbol its integrity proof names.
_SYMBOL: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True, slots=True, repr=False)
class Record:
    """The verifying side's own record of one artifact: the bytes its store holds for it.

    ``name`` is the symbol the integrity proof names (``result`` for the judged result;
    ``brief`` for a task's brief in an agent review). ``digest`` is computed here from the bytes,
    never passed in. Refuses (``RECORD_INVALID``) content that is not ``bytes`` — text must be
    encoded by whoever stored it, so the digest covers exactly the stored bytes — and a name
    that is not a symbol.
    """

    content: bytes
    name: str = "result"
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        if type(self.content) is not bytes:
            raise CriteriaError(
                "A record holds the bytes the store holds (bytes, not "
                f"{type(self.content).__name__}).",
                code="RECORD_INVALID",
            )
        if type(self.name) is not str or not _SYMBOL.fullmatch(self.name):
            raise CriteriaError(
                f"A record is named by a symbol such as 'result', not {self.name!r}.",
                code="RECORD_INVALID",
            )
        object.__setattr__(self, "digest", sha256_digest(self.content))

    def __repr__(self) -> str:
        return f"Record(name={self.name!r}, digest={self.digest!r}, size={len(self.content)})"


def _minter() -> Callable[[str, str, str], Check]:
    seal = _take_oracle_seal()

    def mint(symbol: str, recorded: str, declared: str) -> Check:
        if recorded != declared:
            return Check(
                name=INTEGRITY_CHECK,
                verdict=Verdict.MISMATCH,
                authority=Authority.DETERMINISTIC,
                evidence=(recorded, declared),
                reason=(
                    f"the stored {symbol} has digest {recorded}, but the submitter declared "
                    f"{declared}"
                ),
                observable=CONTENT_DIGEST,
                expression=DigestEquals(symbol, declared).render(),
                seal=seal,
            )
        # Sealed too: a determination counts only an integrity proof the oracle minted.
        return Check(
            name=INTEGRITY_CHECK,
            verdict=Verdict.PASS,
            authority=Authority.DETERMINISTIC,
            evidence=(recorded,),
            reason=f"the stored {symbol} has the declared digest {recorded}",
            observable=CONTENT_DIGEST,
            expression=DigestEquals(symbol, recorded).render(),
            seal=seal,
        )

    return mint


_mint = _minter()


def integrity(record: Record, declared: str) -> Check:
    """Compare our ``record`` with the digest the submitter declared for it.

    PASS with the expression ``(= <record name> "<digest>")`` when they agree: the
    evidence-integrity proof. MISMATCH when they differ. Refuses anything but a :class:`Record`
    (``ORACLE_RECORD_REQUIRED``), and a declared value that is not ``sha256:<64 lowercase hex>``
    (``DIGEST_INVALID``) rather than judging it.
    """
    if not isinstance(record, Record):
        raise CriteriaError(
            "The oracle seam reads the verifying side's own record: an oracle.Record built from "
            f"the bytes your store holds, not a {type(record).__name__} handed to it.",
            code="ORACLE_RECORD_REQUIRED",
        )
    if not is_digest(declared):
        raise CriteriaError(
            f"{declared!r} is not a digest of the form sha256:<64 lowercase hex>.",
            code="DIGEST_INVALID",
        )
    return _mint(record.name, record.digest, declared)
