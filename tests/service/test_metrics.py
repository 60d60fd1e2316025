"""``GET /metrics``, scraped over loopback and read with Prometheus' own text parser: requests
by route template and status, verdicts and money counted once their transaction commits (a
refused action counts nothing), the holds and outbox gauges, the request id as an exemplar,
and an admin's key required."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from adjudge.store import Store
from support import http
from support.harness import Harness, make_harness
from support.live import serving

GOOD = "A long enough result."


@pytest.fixture
def h(sqlite_store: Store) -> Iterator[Harness]:
    """A fresh service on SQLite."""
    yield make_harness(sqlite_store)


def scrape(base: str, key: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition, by name and labels."""
    r = http.get(f"{base}/metrics", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_verdicts_and_money_are_counted_as_they_commit(h: Harness) -> None:
    """A finalize that pays counts one request on its route template, one PASS and the money it
    moved; a refused finalize counts its 4xx and no verdict, no money."""
    with serving(h.app) as base:
        root = h.keys["root"]
        tid = h.post("auto")
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
        before = scrape(base, root)
        auth = {"Authorization": f"Bearer {h.keys['ann']}"}
        done = http.post(f"{base}/api/v1/tasks/{tid}/finalize", headers=auth)
        assert done.status_code == 200 and done.json()["status"] == "completed"
        again = http.post(f"{base}/api/v1/tasks/{tid}/finalize", headers=auth)
        assert again.status_code == 409
        after = scrape(base, root)
    route = "/api/v1/tasks/{task_id}/finalize"
    counted = "adjudge_http_requests_total"
    assert (
        value(after, counted, method="POST", route=route, status="200")
        - value(before, counted, method="POST", route=route, status="200")
        == 1
    )
    assert (
        value(after, counted, method="POST", route=route, status="409")
        - value(before, counted, method="POST", route=route, status="409")
        == 1
    )
    verdicts = "adjudge_verdicts_total"
    assert (
        value(after, verdicts, subject="task", verdict="PASS")
        - value(before, verdicts, subject="task", verdict="PASS")
        == 1
    )
    assert value(after, verdicts, subject="task", verdict="FAIL") == value(
        before, verdicts, subject="task", verdict="FAIL"
    )
    moved = {
        k[1]: v - before.get(k, 0.0)
        for k, v in after.items()
        if k[0] == "adjudge_money_moved_minor_total" and v != before.get(k, 0.0)
    }
    # The reward left escrow for the agent and the fee: 2 USDC in all, no more, no less.
    assert sum(moved.values()) == 2_000_000
    assert not any(label[0][1] == "deposit" for label in moved)
    # No path label ever carries a task id: only templates, or "unmatched".
    routes = {dict(k[1]).get("route") for k in after if k[0] == counted}
    assert all(r == "unmatched" or "{" in r or tid not in r for r in routes)
    assert all(tid not in r for r in routes)


def test_the_gauges_and_the_request_id_exemplar(h: Harness) -> None:
    """The holds and outbox gauges are there (0 on a fresh service); in the OpenMetrics format
    a latency bucket names the request id the client saw."""
    with serving(h.app) as base:
        seen = http.get(
            f"{base}/api/v1/accounts/me",
            headers={"Authorization": f"Bearer {h.keys['ann']}", "X-Request-Id": "probe-42"},
        )
        assert seen.headers["x-request-id"] == "probe-42"
        samples = scrape(base, h.keys["root"])
        open_text = http.get(
            f"{base}/metrics",
            headers={
                "Authorization": f"Bearer {h.keys['root']}",
                "Accept": "application/openmetrics-text; version=1.0.0",
            },
        )
    assert value(samples, "adjudge_provider_holds") == 0
    assert value(samples, "adjudge_provider_holds_minor") == 0
    assert value(samples, "adjudge_webhook_outbox_lag_seconds") == 0
    assert value(samples, "adjudge_regex_pool_queue") == 0
    assert ("adjudge_regex_pool_busy", ()) in samples
    assert open_text.headers["content-type"].startswith("application/openmetrics-text")
    exemplars = [
        s.exemplar.labels["request_id"]
        for family in openmetrics_families(open_text.text)
        for s in family.samples
        if s.exemplar is not None and s.labels.get("route") == "/api/v1/accounts/me"
    ]
    assert "probe-42" in exemplars


def test_only_an_admin_reads_the_metrics(h: Harness) -> None:
    """Metrics name money and providers: no key is 401, another role's key is 403."""
    assert h.client.get("/metrics").status_code == 401
    r = h.client.get("/metrics", headers={"Authorization": f"Bearer {h.keys['ann']}"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "ROLE_REQUIRED"
