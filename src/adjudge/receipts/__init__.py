"""Signed, append-only receipts: RFC 8785 JSON, in-toto statements in DSSE envelopes, Ed25519.

Pure: keys are generated from the operating system's randomness, but nothing here reads or
writes a file, the network or the clock.
"""

from adjudge.receipts.canonical import canonical_bytes, digest
from adjudge.receipts.chain import (
    ChainReport,
    Head,
    Receipt,
    ReceiptLog,
    Verified,
    issue,
    link_ranges,
    receipt_id,
    verify,
    verify_chain,
    verify_lines,
)
from adjudge.receipts.envelope import Envelope, pae
from adjudge.receipts.issuer import Issuer, SignedReceipts
from adjudge.receipts.keys import Signer, SigningKey, VerifyingKey, fingerprint
from adjudge.receipts.standing import Deadline, Standing, as_of

__all__ = [
    "ChainReport",
    "Deadline",
    "Envelope",
    "Head",
    "Issuer",
    "Receipt",
    "ReceiptLog",
    "SignedReceipts",
    "Signer",
    "SigningKey",
    "Standing",
    "Verified",
    "VerifyingKey",
    "as_of",
    "canonical_bytes",
    "digest",
    "fingerprint",
    "issue",
    "link_ranges",
    "pae",
    "receipt_id",
    "verify",
    "verify_chain",
    "verify_lines",
]
