"""Identifiers of stored rows: unguessable, and ordered by the time they were made.

A row keyed by a random identifier lands on a random page of its index, and a commit writes
every page it touched whole: at 60,000 rows, five inserts under random keys cost SQLite three
times what they cost under keys that start with the time, and the gap grows with the table (each
write finds a cold page). Here an identifier starts with the Unix time in milliseconds, so the
rows made together sit together at the end of each index — and the rows keyed by a task's id
(its submissions, verdicts, receipts, ledger entries) with them — and ends with at least 48
random bits. Nothing orders by them: clocks step back, and two made in one millisecond are in
no order.

Written here, not taken from a library: the standard library has ``uuid.uuid7`` only from
Python 3.14, and each form is a line of RFC 9562.
"""

from __future__ import annotations

import secrets
import time
import uuid

#: Hex digits of the time at the head of :func:`ordered_hex` (48 bits of milliseconds).
_TIME_DIGITS = 12


def ordered_hex(digits: int = 32) -> str:
    """``digits`` lowercase hex digits: the time in milliseconds (12), then random ones (at
    least 12: 48 bits; 80 in the default 32)."""
    if digits < _TIME_DIGITS + 12 or digits % 2:
        raise ValueError("an ordered id has an even number of hex digits, at least 24")
    now = time.time_ns() // 1_000_000 & (1 << 48) - 1
    return f"{now:012x}{secrets.token_hex((digits - _TIME_DIGITS) // 2)}"


def uuid7() -> uuid.UUID:
    """A UUID version 7 (RFC 9562 §5.7): 48 bits of Unix milliseconds, the version, 12 random
    bits, the variant, 62 random bits."""
    now = time.time_ns() // 1_000_000 & (1 << 48) - 1
    rand = int.from_bytes(secrets.token_bytes(10), "big")  # 80 bits; 74 are used
    rand_a, rand_b = rand >> 68, rand & (1 << 62) - 1
    return uuid.UUID(int=now << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b)
