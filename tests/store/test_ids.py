"""Row identifiers start with the time they were made and end with random bits."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from adjudge.store.ids import ordered_hex, uuid7


def test_an_ordered_id_starts_with_the_milliseconds_it_was_made() -> None:
    before = time.time_ns() // 1_000_000
    made = ordered_hex()
    after = time.time_ns() // 1_000_000
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    assert before <= int(made[:12], 16) <= after
    assert re.fullmatch(r"[0-9a-f]{24}", ordered_hex(24))


def test_ordered_ids_made_later_sort_later_and_never_repeat() -> None:
    first = [ordered_hex() for _ in range(2000)]
    time.sleep(0.002)
    later = ordered_hex(24)
    assert len(set(first)) == len(first)  # the same millisecond, different random tails
    assert later[:12] > max(first)[:12]


@pytest.mark.parametrize("digits", [0, 12, 22, 25, 33])
def test_an_ordered_id_keeps_at_least_48_random_bits(digits: int) -> None:
    with pytest.raises(ValueError):
        ordered_hex(digits)


def test_uuid7_is_rfc_9562_version_7() -> None:
    before = time.time_ns() // 1_000_000
    made = [uuid7() for _ in range(1000)]
    after = time.time_ns() // 1_000_000
    for u in made:
        again = uuid.UUID(str(u))  # its text form parses back to itself
        assert again == u and u.version == 7 and u.variant == uuid.RFC_4122
        assert before <= u.int >> 80 <= after
    assert len(set(made)) == len(made)
    tails = {u.int & (1 << 62) - 1 for u in made}
    assert len(tails) == len(made)  # the random bits are drawn for each
