"""Every answer carries a request id, every refusal names it, and each request is one JSON
access-log line with the caller's account."""

from __future__ import annotations

import json
import logging
import re

import pytest
from fastapi.testclient import TestClient

from adjudge.service import create_app
from adjudge.service.access import request_id_from
from support.harness import Harness

HEX32 = re.compile(r"[0-9a-f]{32}")


def test_a_sane_request_id_is_honoured_and_an_odd_one_replaced(h: Harness) -> None:
    """A client's own id comes back; one too long, with spaces or non-ASCII, is replaced."""
    ok = h.call("pat", "GET", "/accounts/me", X_Request_Id="order-42/retry:1")
    assert ok.headers["x-request-id"] == "order-42/retry:1"
    for odd in ("x" * 129, "two words", "", 'a"quote'):
        got = h.call("pat", "GET", "/accounts/me", X_Request_Id=odd).headers["x-request-id"]
        assert HEX32.fullmatch(got), odd
    assert request_id_from("é".encode()) != "é"
    fresh = {h.call("pat", "GET", "/accounts/me").headers["x-request-id"] for _ in range(3)}
    assert len(fresh) == 3 and all(HEX32.fullmatch(x) for x in fresh)


def test_every_refusal_carries_its_request_id(h: Harness) -> None:
    """401, 404 (a task, a route), 405, 409, 413, 422 and an I-JSON 400 all name the id the
    response header names (the harness's `refused` asserts it for every refusal tested)."""
    assert h.refused(None, "GET", "/tasks") == (401, "UNAUTHORIZED")
    assert h.refused("pat", "GET", "/tasks/none") == (404, "TASK_NOT_FOUND")
    assert h.refused("pat", "GET", "/nowhere") == (404, "NOT_FOUND")
    assert h.refused("pat", "DELETE", "/tasks") == (405, "METHOD_NOT_ALLOWED")
    tid = h.post("manual")
    assert h.refused("pat", "POST", f"/tasks/{tid}/review", {"passed": True})[0] == 409
    assert h.refused("pat", "POST", "/tasks", {"title": ""}) == (422, "INVALID_REQUEST")
    raw = h.client.post(
        "/api/v1/tasks",
        content=b'{"title": "a", "title": "b"}',
        headers={"Authorization": f"Bearer {h.keys['pat']}", "Content-Type": "application/json"},
    )
    assert raw.json()["error"]["request_id"] == raw.headers["x-request-id"]
    big = h.client.post(
        "/api/v1/tasks",
        content=b"x" * (5 * 1024 * 1024),
        headers={"Authorization": f"Bearer {h.keys['pat']}", "X-Request-Id": "big-one"},
    )
    assert big.status_code == 413
    assert big.json()["error"] == {
        "code": "PAYLOAD_TOO_LARGE",
        "message": big.json()["error"]["message"],
        "request_id": "big-one",
    }


def test_a_crash_is_answered_in_the_error_shape_with_its_id(h: Harness) -> None:
    """A route that fails unexpectedly answers 500 INTERNAL_ERROR with its request id."""

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    h.app.tasks.get = broken  # type: ignore[method-assign]
    client = TestClient(create_app(h.app), raise_server_exceptions=False)
    r = client.get(
        "/api/v1/tasks/t",
        headers={"Authorization": f"Bearer {h.keys['pat']}", "X-Request-Id": "crash-1"},
    )
    assert r.status_code == 500 and r.headers["x-request-id"] == "crash-1"
    assert r.json() == {
        "error": {
            "code": "INTERNAL_ERROR",
            "message": "The service failed; nothing was written.",
            "request_id": "crash-1",
        }
    }


def test_one_json_line_per_request_with_the_account(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """Each request is one line: time, method, path (no query), the route template, status,
    duration, request id,
    and the account once it is known (null for an unauthenticated request)."""
    with caplog.at_level(logging.INFO, logger="adjudge.access"):
        h.call("ann", "GET", "/tasks?status=funded", X_Request_Id="list-1")
        h.call(None, "GET", "/tasks", X_Request_Id="anon-1")
        h.client.get("/health", headers={"X-Request-Id": "health-1"})
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "adjudge.access"]
    assert [x["request_id"] for x in lines] == ["list-1", "anon-1", "health-1"]
    first = lines[0]
    assert first["route"] == "/api/v1/tasks" and lines[2]["route"] == "/health"
    assert set(first) == {
        "time",
        "method",
        "path",
        "route",
        "status",
        "duration_ms",
        "request_id",
        "account",
    }
    assert (first["method"], first["path"], first["status"], first["account"]) == (
        "GET",
        "/api/v1/tasks",
        200,
        "ann",
    )
    assert first["time"].endswith("Z") and first["duration_ms"] >= 0
    assert (lines[1]["status"], lines[1]["account"]) == (401, None)
    assert (lines[2]["path"], lines[2]["account"]) == ("/health", None)


def test_the_longest_request_id_is_logged_and_counted(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """A request id of 128 characters (the longest honoured) is answered, logged and counted:
    the metrics' exemplar carries its first 100 (an exemplar holds 128 in all, and a longer one
    raised, so such a request was never logged)."""
    rid = "r" * 128
    with caplog.at_level(logging.INFO, logger="adjudge.access"):
        r = h.call("ann", "GET", "/tasks", X_Request_Id=rid)
    assert r.status_code == 200 and r.headers["X-Request-Id"] == rid
    lines = [json.loads(x.getMessage()) for x in caplog.records if x.name == "adjudge.access"]
    assert [x["request_id"] for x in lines] == [rid]
