"""Lanes and checkpoints: one log written by several writers at once, still one verifiable log.

A log is a small fixed set of *lanes*, each its own hash chain: a receipt's signed statement
names its ``lane`` beside its ``sequence`` and ``previous`` (both counted within the lane). Lane
0 is written by omission, so a log of one lane — every log before lanes, and every receipt on
it — is byte for byte what it was.

Cutting receipts from the end of a lane leaves no trace in the lane itself, as cutting them from
the end of a one-chain log does not; what detects it is a *checkpoint*: a receipt on one lane
whose signed policy decision names the head (id and sequence) of every lane of the log when it
was issued. A verifier that pinned a checkpoint knows how far every lane reaches.

A checkpoint is an ordinary receipt: a determination of no checks (NOT_RUN: nothing was judged),
its subject the digest of the heads it names, its policy decision
``{"type": "adjudge.log.checkpoint/v1", "lanes": N, "head.0": id | null, "sequence.0": k | null,
…}`` (null: the lane was empty). So every verifier of receipts reads it as one, and a log's
verifier also checks what it names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from adjudge.digests import DIGEST as SHA256_DIGEST
from adjudge.errors import ReceiptError
from adjudge.receipts.canonical import digest

#: The policy decision's ``type`` that marks a checkpoint.
CHECKPOINT_TYPE: Final = "adjudge.log.checkpoint/v1"
#: The ``about`` a checkpoint names.
CHECKPOINT_ABOUT: Final = "log:checkpoint"
#: The most lanes a log may have (a checkpoint names each).
MAX_LANES: Final = 64

#: One lane's head as a checkpoint names it: the lane, and its last receipt's id and sequence
#: (both None for a lane still empty).
NamedHead = tuple[int, str | None, int | None]


def heads_subject(heads: Sequence[NamedHead]) -> str:
    """A checkpoint's subject: the digest of the heads it names."""
    return digest({"type": CHECKPOINT_TYPE, "heads": [list(h) for h in heads]})


def decision(heads: Sequence[NamedHead]) -> dict[str, str | int | None]:
    """The policy decision of a checkpoint naming ``heads`` (every lane, 0 to N-1, in order)."""
    if not 0 < len(heads) <= MAX_LANES or [h[0] for h in heads] != list(range(len(heads))):
        raise ValueError("a checkpoint names every lane of its log, in order")
    out: dict[str, str | int | None] = {"type": CHECKPOINT_TYPE, "lanes": len(heads)}
    for lane, receipt_id, sequence in heads:
        out[f"head.{lane}"] = receipt_id
        out[f"sequence.{lane}"] = sequence
    return out


def named_heads(predicate: Mapping[str, Any], subject: str) -> tuple[NamedHead, ...] | None:
    """The heads a checkpoint's predicate names; None when the receipt is not a checkpoint.

    Only a receipt whose policy decision has the checkpoint's type is one; it must then be one
    exactly (``RECEIPT_MALFORMED`` otherwise): the lanes 0 to N-1, each with a receipt id and a
    sequence (or null and null), nothing else, no checks, and its subject the digest of those
    heads. Called on a statement :func:`~adjudge.receipts.statement.check_statement` accepted.
    """
    found = predicate.get("policyDecision")
    if type(found) is not dict or found.get("type") != CHECKPOINT_TYPE:
        return None
    count = found.get("lanes")
    if type(count) is not int or not 0 < count <= MAX_LANES or len(found) != 2 + 2 * count:
        raise _malformed("it names lanes 0 to N-1, each with its head and its sequence")
    heads: list[NamedHead] = []
    for lane in range(count):
        head, sequence = found.get(f"head.{lane}", 0), found.get(f"sequence.{lane}", 0)
        if head is None and sequence is None:
            heads.append((lane, None, None))
        elif type(head) is str and SHA256_DIGEST.fullmatch(head) and type(sequence) is int:
            if sequence < 0:
                raise _malformed(f"lane {lane}'s sequence is a whole number")
            heads.append((lane, head, sequence))
        else:
            raise _malformed(f"lane {lane}'s head is a receipt id and a sequence, or null and null")
    if predicate.get("checks") != [] or predicate.get("verdict") != "NOT_RUN":
        raise _malformed("a checkpoint judges nothing: no checks, NOT_RUN")
    if subject != heads_subject(heads):
        raise _malformed("its subject is the digest of the heads it names")
    return tuple(heads)


def _malformed(why: str) -> ReceiptError:
    return ReceiptError(f"Not a valid checkpoint: {why}.", code="RECEIPT_MALFORMED")
