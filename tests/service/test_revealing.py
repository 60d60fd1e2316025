"""A sealed task's reveal over HTTP: its screens and check hold no other account's writes, and a
reveal whose criteria need the regex worker pool waits in the poster's own slow lane."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import pytest

from adjudge.app.wiring import AutoCheck
from adjudge.errors import Error
from adjudge.market import CheckOutcome, seal
from adjudge.service import tasks as service_tasks
from adjudge.service.deps import checked
from adjudge.store import Store
from support.beside import posts_beside
from support.harness import Harness, make_harness

ANSWER = {"expected_answer": "42"}
SALT = "a-poster-chosen-salt-of-some-length"
REVEAL = {"criteria": ANSWER, "salt": SALT}
PUBLIC = {"max_length": 400}
GOOD = "The answer is 42."

#: How long a reveal's screens, and then its check, take in the checker below.
SLOW_SECONDS = 0.25


class SlowReveal(AutoCheck):
    """The auto check, whose screens and check of criteria holding the revealed answer take a
    quarter second each: a stand-in for a pattern whose witnesses and match run to the time
    limit (posting screens the sealed answer's stand-in, and is quick)."""

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        if criteria.get("expected_answer") == ANSWER["expected_answer"]:
            time.sleep(SLOW_SECONDS)
        return super().admissibility(criteria, mode)

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        if criteria.get("expected_answer") == ANSWER["expected_answer"]:
            time.sleep(SLOW_SECONDS)
        return super().check(result, criteria, withhold=withhold)


def _awaiting(h: Harness, public: Mapping[str, Any] = PUBLIC) -> str:
    """A sealed task of pat's whose agent delivered and waits for the reveal."""
    tid = h.post("auto", criteria=dict(public), seal=seal.commit(ANSWER, SALT))
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    assert h.ok("ann", "POST", f"/tasks/{tid}/finalize")["status"] == "awaiting_verification"
    return tid


def test_one_posters_slow_reveals_do_not_hold_another_accounts_writes(
    sqlite_store: Store,
) -> None:
    """One poster reveals sealed tasks whose screens and check take half a second, from eight
    connections at once, while another account posts: the other's posts are answered as if
    nobody were revealing (the screens and the check ran in the write, on the one committing
    thread: the other's posts waited behind them, about a second each)."""
    h = make_harness(sqlite_store, real_checker=True)
    h.app.accounts.deposit(h.app.accounts.authenticate(h.keys["root"]), "pat", 10**12)
    waiting = [_awaiting(h) for _ in range(64)]
    h.app.tasks.checker = SlowReveal()
    lock = threading.Lock()
    revealed: list[str] = []

    def reveal(c: httpx.Client) -> bool:
        with lock:
            if not waiting:
                return False
            tid = waiting.pop()
        r = c.post(f"/tasks/{tid}/reveal", json=REVEAL)
        revealed.append(r.json()["status"] if r.status_code == 200 else r.text)
        return True

    others, failures = posts_beside(h, reveal, who="pat")
    assert not failures, failures[0]
    assert set(revealed) == {"completed"} and len(revealed) >= 8
    median = statistics.median(others) if others else float("inf")  # none answered in 3 s
    # Generous for a loaded 2-CPU machine: a plain post takes milliseconds; with the screens and
    # the check in the write each waited behind up to eight half-second reveals.
    assert median < SLOW_SECONDS, f"another account's median post took {median:.2f} s"


@pytest.mark.parametrize(("pattern", "lanes"), [("\\d\\d", [False]), ("4.*2", [False, True])])
def test_a_reveal_goes_to_the_slow_lane_only_when_its_criteria_need_the_pool(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch, pattern: str, lanes: list[bool]
) -> None:
    """A reveal whose criteria need no regex worker is screened and checked on the request
    threads; one whose pattern needs the pool says so before screening anything and runs again
    in the poster's slow lane, judged once."""
    h = make_harness(sqlite_store, real_checker=True)
    seen: list[tuple[bool, str]] = []

    async def recording(slow: bool, fn: Any, owner: str, *, wait: float) -> Any:
        seen.append((slow, owner))
        assert wait == h.app.settings.slow_check_wait_seconds
        return await checked(slow, fn, owner, wait=wait)

    tid = _awaiting(h, {**PUBLIC, "regex_pattern": pattern})
    monkeypatch.setattr(service_tasks, "checked", recording)
    done = h.ok("pat", "POST", f"/tasks/{tid}/reveal", REVEAL)
    assert seen == [(slow, "pat") for slow in lanes]
    assert done["status"] == "completed" and len(done["verdicts"]) == 1
