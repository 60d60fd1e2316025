"""Posting's screens of a task's criteria: what they cost the service, and where they run.

A ``regex_pattern`` of a few bytes must not make posting build a string sized by its count, nor
hold the one thread that commits every account's writes; the screens run before the write, and
a poster whose screens are slow waits for them alone.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest

from adjudge.app.wiring import AutoCheck
from adjudge.errors import Error
from adjudge.store import Store
from support.beside import posts_beside
from support.harness import Harness, make_harness

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


#: How long one slow post's screens take, in the checker below.
SCREEN_SECONDS = 0.25


class SlowScreens(AutoCheck):
    """The auto check, whose screens of criteria with ``min_length: 7`` take a quarter second:
    a stand-in for a pattern whose falsifiability witnesses run to the time limit."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        if criteria.get("min_length") == 7:
            time.sleep(SCREEN_SECONDS)
        return super().admissibility(criteria, mode)


def test_one_posters_slow_screens_do_not_hold_another_posters_writes(
    sqlite_store: Store,
) -> None:
    """One poster posts criteria whose screens take a quarter second each, from eight
    connections at once, while another posts plain tasks: the other's posts are answered as
    if nobody else were posting (the screens ran in the write, on the one committing thread:
    the other's posts waited about a second each)."""
    h = make_harness(sqlite_store)
    h.app.tasks.checker = SlowScreens()
    h.app.accounts.deposit(h.app.accounts.authenticate(h.keys["root"]), "pat", 10**12)
    slow = {**BASE, "mode": "auto", "criteria": {"contains_keywords": ["x"], "min_length": 7}}
    flooded: list[int] = []

    def flood(c: httpx.Client) -> bool:
        flooded.append(c.post("/tasks", json=slow).status_code)
        return True

    others, failures = posts_beside(h, flood, who="pat")
    assert not failures, failures[0]
    assert set(flooded) == {201} and len(flooded) >= 8
    median = statistics.median(others)
    # Generous for a loaded 2-CPU machine: a plain post takes milliseconds; with the screens in
    # the write each waited behind up to eight quarter-second screens (about 1 s at the median).
    assert median < SCREEN_SECONDS, f"another poster's median post took {median:.2f} s"
