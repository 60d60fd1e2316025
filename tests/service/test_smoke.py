"""Smoke: the app starts, answers health, and refuses without a key."""

from __future__ import annotations

import re
from pathlib import Path

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


def test_the_operating_guides_health_probe_answers(sqlite_store: Store) -> None:
    """Every path the operating guide names for the liveness probe answers 200 without a key."""
    guide = (Path(__file__).parents[2] / "docs" / "guide" / "operating.md").read_text()
    paragraph = next(p for p in guide.split("\n\n") if "liveness probe" in p)
    paths = re.findall(r"`(?:GET )?(/[\w/.-]*)`", paragraph)
    assert "/health" in paths, paragraph
    h = make_harness(sqlite_store)
    for path in paths:
        r = h.client.get(path)
        assert r.status_code == 200 and r.json()["ok"] is True, (path, r.status_code)
