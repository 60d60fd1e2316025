"""Smoke: the app starts, answers health, and refuses without a key."""

from __future__ import annotations

from adjudge.store import Store
from support.harness import make_harness


def test_health_and_auth(sqlite_store: Store) -> None:
    """Health needs no key; everything else answers 401 in the error shape without one."""
    h = make_harness(sqlite_store)
    assert h.client.get("/api/v1/health").json()["ok"] is True
    assert h.refused(None, "GET", "/tasks") == (401, "UNAUTHORIZED")
    tid = h.post("manual")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here it is."})
    view = h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True})
    assert view["status"] == "completed"
    h.ledger()
