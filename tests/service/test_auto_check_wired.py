"""The service with the real auto check: posting refusals and verdicts come from it."""

from __future__ import annotations

from typing import Any

import pytest

from adjudge.autocheck import _sandbox
from adjudge.service import tasks as service_tasks
from adjudge.store import Store
from support.harness import make_harness

CRITERIA = {"min_length": 40, "contains_keywords": ["escrow"], "pass_threshold": 60}
GOOD = (
    "An escrow holds the reward until the work is judged; a pass releases it to the agent and "
    "a refund returns it to the poster."
)


def test_real_auto_check_judges_on_finalize(sqlite_store: Store) -> None:
    """Auto tasks are admitted and judged by adjudge.autocheck; its full result is stored."""
    h = make_harness(sqlite_store, real_checker=True)
    base = {"title": "t", "reward": "1000", "deadline_hours": 2, "mode": "auto"}
    assert h.refused("pat", "POST", "/tasks", {**base, "criteria": {}}) == (
        400,
        "AUTO_CRITERIA_REQUIRED",
    )
    bad_regex = {**base, "criteria": {"regex_pattern": "(a+)+$"}}
    assert h.refused("pat", "POST", "/tasks", bad_regex) == (400, "REGEX_PATTERN_UNUSABLE")
    tid = h.post("auto", criteria=CRITERIA)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "No."})
    failed = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert failed["status"] == "failed"
    assert failed["verification_result"]["verification_result"]["passed"] is False
    dry = h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
    assert dry["passed"] is True and dry["reasons"][0].startswith("All verification criteria met")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    passed = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert passed["ending"] == "paid_on_pass"
    result = passed["verification_result"]
    assert result["authority"] == "deterministic" and result["score"] >= 60
    assert set(result["verification_result"]) >= {"passed", "score", "reasons", "breakdown"}
    h.ledger()


def test_the_regex_work_of_a_check_is_the_calling_agents(sqlite_store: Store) -> None:
    """Dry runs and finalizes run their check as the agent's work, for the pool's fair shares."""
    h = make_harness(sqlite_store, real_checker=True)
    inner = h.app.tasks.checker
    owners: list[str] = []

    class Recording:
        def admissibility(self, criteria: Any, mode: str) -> Any:
            return inner.admissibility(criteria, mode)

        def check(self, result: str, criteria: Any, *, withhold: Any = frozenset()) -> Any:
            owners.append(_sandbox.regex_owner.get())
            return inner.check(result, criteria, withhold=withhold)

    h.app.tasks.checker = Recording()
    tid = h.post("auto", criteria={**CRITERIA, "regex_pattern": "escrow.*(agent|poster)"})
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/dry-run", {"result": GOOD})
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert owners == ["ann", "ann"]
    assert _sandbox.regex_owner.get() == ""


@pytest.mark.parametrize(("pattern", "lanes"), [("esc\\w+", []), ("escrow.*agent", [False, True])])
def test_a_finalize_goes_to_the_slow_lane_only_when_its_check_needs_the_pool(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch, pattern: str, lanes: list[bool]
) -> None:
    """A finalize whose check is quick is written on the event loop (SQLite: neither lane);
    another is tried on the request threads, and one whose regex needs the worker pool says so
    before checking anything and runs again in the slow lane, judged once."""
    h = make_harness(sqlite_store, real_checker=True)
    seen: list[bool] = []
    real = service_tasks.checked

    async def recording(slow: bool, fn: Any, owner: str, *, wait: float) -> Any:
        seen.append(slow)
        assert wait == h.app.settings.slow_check_wait_seconds
        return await real(slow, fn, owner, wait=wait)

    monkeypatch.setattr(service_tasks, "checked", recording)
    tid = h.post("auto", criteria={**CRITERIA, "regex_pattern": pattern})
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    seen.clear()  # the post's own screens took a lane of theirs
    done = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert seen == lanes
    assert len(done["verdicts"]) == 1 and len(done["receipts"]) == 1
