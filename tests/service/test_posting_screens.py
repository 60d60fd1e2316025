"""Posting's screens of a task's criteria: what they cost the service.

A ``regex_pattern`` of a few bytes must not make posting build a string sized by its count, nor
run matches to the time limit that its shape alone shows to be slow.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from adjudge.app.wiring import AutoCheck
from support.harness import Harness

BASE = {"title": "t", "reward": "2000000", "deadline_hours": 24}


@pytest.mark.parametrize("pattern", ["a{2147483647}", "x{9999999999}"])
def test_a_count_past_any_text_is_posted_at_once_and_builds_nothing(
    h: Harness, pattern: str
) -> None:
    """The count asks for more characters than the matcher ever reads: posting accepts it
    (the auto check fails it on every result, as the reference does), in well under a second
    and without building a string of that length (it built 2 GiB, or failed with a 500)."""
    h.app.tasks.checker = AutoCheck()
    body = {**BASE, "mode": "auto", "criteria": {"regex_pattern": pattern, "min_length": 5}}
    tracemalloc.start()
    try:
        started = time.perf_counter()
        r = h.call("pat", "POST", "/tasks", body)
        took = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.status_code == 201, r.text
    assert peak < 100 * 2**20, f"posting {pattern} allocated {peak / 2**20:.0f} MiB at its peak"
    assert took < 2.5, f"posting {pattern} took {took:.2f} s"


@pytest.mark.parametrize(
    "pattern", ["(-+){1,9999999999}!", "[\\n0x]|([a-z -]+){1,9999999999}!", "(a{1,99999999999})+"]
)
def test_a_nested_repeat_behind_a_long_count_is_refused_at_posting(
    h: Harness, pattern: str
) -> None:
    """The reference's scan reads a {n,m} of more than 12 characters as text, so it passes
    these nested repeats; posting refuses them as exponential before any match runs (the
    second was refused as CRITERIA_UNFALSIFIABLE after its witnesses ran to the time limit)."""
    h.app.tasks.checker = AutoCheck()
    body = {**BASE, "mode": "auto", "criteria": {"regex_pattern": pattern, "min_length": 5}}
    r = h.call("pat", "POST", "/tasks", body)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "REGEX_PATTERN_UNUSABLE")
    assert "nested quantifier" in r.json()["error"]["message"]
