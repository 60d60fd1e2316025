"""Smoke: the app starts, answers health, and refuses without a key."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.routing import APIRoute

from adjudge.service import create_app
from adjudge.service.deps import FastJSONResponse
from adjudge.service.docs import DOCS_PATH
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


def test_applications_serve_the_routes_as_declared(sqlite_store: Store) -> None:
    """Two applications over one set of use cases serve the very routes their routers declared
    (an included router's are built anew for each application at its first request, every
    parameter's validator again: 50-150 ms an application; only the docs page, which each
    application declares itself, is its own), and every route answers with the application's
    answer class, written by orjson."""
    h = make_harness(sqlite_store)
    first, second = h.client.app, create_app(h.app)
    served = [r for r in first.routes if isinstance(r, APIRoute) and r.path != DOCS_PATH]
    assert len(served) > 50
    again = [r for r in second.routes if isinstance(r, APIRoute) and r.path != DOCS_PATH]
    assert [id(r) for r in served] == [id(r) for r in again]
    assert {r.response_class for r in served} == {FastJSONResponse}
    assert h.client.get("/health").json()["ok"] is True
