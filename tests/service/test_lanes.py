"""The finalize lane answers as the framework's stack does: the same requests sent both ways
(one app, one store, two front doors) get the same status, error shape, headers and answer."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from adjudge.service import create_app
from adjudge.service.lanes import MAX_KEY_CHARS
from adjudge.store import Store
from support.harness import Harness, make_harness

RESULT = "A summary of the brief, long enough to pass."
#: Headers whose values differ by request whichever way it goes.
_PER_REQUEST = {"x-request-id", "date"}


@pytest.fixture
def h(sqlite_store: Store) -> Harness:
    return make_harness(sqlite_store)


@pytest.fixture
def stack(h: Harness) -> TestClient:
    """The same app served with every request through the framework's whole stack."""
    return TestClient(create_app(h.app, lanes=False))


def _submitted(h: Harness) -> str:
    tid = h.post("auto", criteria={"min_length": 10})
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": RESULT})
    return tid


def _seen(r: httpx.Response) -> tuple[int, dict[str, str], Any]:
    """What a client sees, without what differs by request (the id, the date)."""
    body = r.json()
    if isinstance(body.get("error"), dict):
        assert body["error"].pop("request_id") == r.headers["x-request-id"]
    headers = {k: v for k, v in r.headers.items() if k not in _PER_REQUEST}
    if "content-length" in headers:  # the request id's length is in it
        headers.pop("content-length")
    return r.status_code, headers, body


def _both(h: Harness, stack: TestClient, path: str, headers: dict[str, str]) -> tuple[Any, Any]:
    lane = h.client.post(path, headers=headers)
    whole = stack.post(path, headers=headers)
    return _seen(lane), _seen(whole)


@pytest.mark.parametrize(
    ("who", "authorization", "path"),
    [
        (None, None, "/api/v1/tasks/{tid}/finalize"),  # no key
        (None, "Basic YWxhZGRpbjpvcGVuc2VzYW1l", "/api/v1/tasks/{tid}/finalize"),
        (None, "Bearer", "/api/v1/tasks/{tid}/finalize"),
        (None, "Bearer not-a-key", "/api/v1/tasks/{tid}/finalize"),
        (None, "bearer  {bob}  ", "/api/v1/tasks/{tid}/finalize"),  # any case, spaces trimmed
        ("pat", None, "/api/v1/tasks/{tid}/finalize"),  # not an agent
        ("bob", None, "/api/v1/tasks/{tid}/finalize"),  # not its agent
        ("ann", None, "/api/v1/tasks/task_nowhere/finalize"),
        ("ann", None, "/api/v1/tasks/a%20b/finalize"),
        ("ann", None, "/api/v1/tasks/{tid}%00/finalize"),  # the stack refuses a NUL
        ("ann", None, "/api/v1/tasks/{tid}/finalize?x=%00"),
        ("ann", None, "/api/v1/tasks//finalize"),
        ("ann", None, "/api/v1/tasks/{tid}/x/finalize"),
    ],
)
def test_a_refusal_is_the_same_both_ways(
    h: Harness, stack: TestClient, who: str | None, authorization: str | None, path: str
) -> None:
    """Whoever asks, with whatever key, for whatever task: the same refusal, and nothing done
    (the task is still waiting for its check after both)."""
    tid = _submitted(h)
    headers = {"Authorization": f"Bearer {h.keys[who]}"} if who else {}
    if authorization is not None:
        headers["Authorization"] = authorization.format(bob=h.keys["bob"])
    lane, whole = _both(h, stack, path.format(tid=tid), headers)
    assert lane == whole
    assert lane[0] >= 400
    assert h.ok("pat", "GET", f"/tasks/{tid}")["status"] == "submitted"


def test_a_finalize_is_answered_the_same_both_ways(h: Harness, stack: TestClient) -> None:
    """Two twin tasks, one finalized down the lane and one through the stack: the same status,
    headers and answer (but for each task's own ids and times)."""
    answers = []
    for client in (h.client, stack):
        tid = _submitted(h)
        r = client.post(
            f"/api/v1/tasks/{tid}/finalize", headers={"Authorization": f"Bearer {h.keys['ann']}"}
        )
        status, headers, body = _seen(r)
        answers.append((status, headers, _shape(body), body["verification_result"]["score"]))
    assert answers[0] == answers[1]
    assert answers[0][0] == 200


def test_a_key_replays_the_same_both_ways(h: Harness, stack: TestClient) -> None:
    """The first finalize with a key goes down the lane; the same key through the stack (and
    the lane again) replays the stored answer, marked; a key over the limit is refused by the
    stack either way."""
    tid = _submitted(h)
    headers = {"Authorization": f"Bearer {h.keys['ann']}", "Idempotency-Key": "k-1"}
    first = h.client.post(f"/api/v1/tasks/{tid}/finalize", headers=headers)
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers
    lane, whole = _both(h, stack, f"/api/v1/tasks/{tid}/finalize", headers)
    assert lane == whole
    assert lane[1]["idempotent-replayed"] == "true" and lane[2] == first.json()
    long = {**headers, "Idempotency-Key": "k" * (MAX_KEY_CHARS + 1)}
    lane, whole = _both(h, stack, f"/api/v1/tasks/{tid}/finalize", long)
    assert lane == whole and lane[0] == 422


def test_the_lane_logs_and_counts_the_route_and_the_caller(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """The access log line and the metrics name the route's template and the caller, as for
    any route."""
    tid = _submitted(h)
    with caplog.at_level(logging.INFO, logger="adjudge.access"):
        h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    [line] = [json.loads(r.getMessage()) for r in caplog.records if tid in r.getMessage()]
    assert line["route"] == "/api/v1/tasks/{task_id}/finalize"
    assert line["account"] == "ann" and line["status"] == 200
    metrics = h.client.get("/metrics", headers={"Authorization": f"Bearer {h.keys['root']}"})
    assert 'route="/api/v1/tasks/{task_id}/finalize"' in metrics.text


def _shape(value: Any) -> Any:
    """The answer's keys and kinds of values, recursively."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


@pytest.mark.parametrize("lanes", [True, False])
def test_on_sqlite_a_quick_finalize_is_written_on_the_loop_that_serves_it(
    h: Harness, lanes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through either door, a finalize whose check is quick is one write, run on the event loop
    that serves the request: handed to no request thread and no commit thread. (A try that found
    the store held, by the checkpointer say, began no transaction: only those begun count.)"""
    tid = _submitted(h)
    store = h.app.unit.store
    original, threads = store.write, []

    @contextmanager
    def traced(*args: Any, **kw: Any) -> Iterator[Any]:
        with original(*args, **kw) as tx:
            threads.append(threading.current_thread().name)
            yield tx

    monkeypatch.setattr(store, "write", traced)
    client = h.client if lanes else TestClient(create_app(h.app, lanes=False))
    auth = {"Authorization": f"Bearer {h.keys['ann']}"}
    r = client.post(f"/api/v1/tasks/{tid}/finalize", headers=auth)
    assert r.status_code == 200, r.text
    assert r.json()["verification_result"]["passed"] is True
    assert len(threads) == 1
    assert threads[0] != "adjudge-commits" and "worker" not in threads[0].lower()
