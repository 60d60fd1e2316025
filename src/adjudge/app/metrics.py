"""What ``GET /metrics`` reports: counters kept as work commits, gauges read when scraped.

The counters live in this process (Prometheus' own convention: a restart starts them at 0 and
``rate()`` reads through it): HTTP requests by route template and status with their latency,
verdicts by subject and kind, and money moved by memo. A counter moves only once the
transaction that did the work has committed (``Transaction.committed``), so a rolled-back
attempt is never counted. The gauges are read from the store at scrape time, each by an
indexed read whose cost is what is open now, never the history: the webhook outbox's oldest
undelivered event, the providers' holds and the soonest maturing, the money held on calls; and
the regex worker pool's callers running and waiting, from memory.

Why prometheus_client: it is the reference client, and its registry, exposition and exemplars
(the request id the client saw, on each latency bucket, in the OpenMetrics format) are exactly
the format scrapers parse.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from adjudge.autocheck._sandbox import load as regex_pool_load
from adjudge.market.money import Transfer
from adjudge.store import Store, Transaction, holds, outbox

#: Latency buckets in seconds: from a cached read to a slow regex check.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """One service's registry: the counters, and the store-backed gauges."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "adjudge_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "adjudge_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.verdicts = Counter(
            "adjudge_verdicts",
            "Verdicts signed into receipts, by subject (task or call) and verdict.",
            ["subject", "verdict"],
            registry=self.registry,
        )
        self.money = Counter(
            "adjudge_money_moved_minor",
            "Money moved through the ledger, in minor units, by movement (deposit, escrow, "
            "payout, fee, refund, charge, release …).",
            ["memo"],
            registry=self.registry,
        )

    def request(self, method: str, route: str, status: int, seconds: float, rid: str) -> None:
        """Count one answered request; its latency carries the request id as an exemplar (its
        first :data:`EXEMPLAR_ID` characters: an exemplar's names and values hold 128 in all,
        and a longer one raised, losing the request's access line)."""
        self.requests.labels(method, route, str(status)).inc()
        exemplar = {"request_id": rid[:EXEMPLAR_ID]}
        self.latency.labels(method, route).observe(seconds, exemplar=exemplar)


#: The most characters of a request id an exemplar carries (with its name, under 128).
EXEMPLAR_ID = 100

#: The process's counters: the use cases count into them, whichever service exposes them.
METRICS = Metrics()


def registry(store: Store, now: Callable[[], datetime]) -> CollectorRegistry:
    """What one service exposes: the process's counters, and its store's gauges read at each
    scrape."""
    exposed = CollectorRegistry(auto_describe=False)
    exposed.register(_Counters())
    exposed.register(_StoreGauges(store, now))
    return exposed


class _Counters(Collector):
    """The process's counters, as one collector of a service's registry."""

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        return iter(METRICS.registry.collect())


def verdict(tx: Transaction, subject: str, kind: str) -> None:
    """Count a verdict once ``tx`` commits."""
    tx.committed.append(lambda: METRICS.verdicts.labels(subject, kind).inc())


def moved(tx: Transaction, transfers: Sequence[Transfer]) -> None:
    """Count money moved once ``tx`` commits."""

    def count() -> None:
        for t in transfers:
            METRICS.money.labels(t.memo or "other").inc(t.amount)

    tx.committed.append(count)


class _StoreGauges(Collector):
    """Gauges read from the store when scraped: what is open now, by indexed reads."""

    def __init__(self, store: Store, now: Callable[[], datetime]) -> None:
        self.store = store
        self.now = now

    def describe(self) -> list[Any]:
        return []  # read at scrape time only: registering must not touch the store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self.now()
        with self.store.read() as tx:
            oldest = outbox.oldest_pending(tx)
            open_holds = holds.open_summary(tx, now)
        lag = GaugeMetricFamily(
            "adjudge_webhook_outbox_lag_seconds",
            "Age of the oldest webhook delivery not yet made (0 when none waits).",
        )
        lag.add_metric([], 0.0 if oldest is None else max(0.0, (now - oldest).total_seconds()))
        yield lag
        count = GaugeMetricFamily(
            "adjudge_provider_holds", "Settled call charges held until their report deadline."
        )
        count.add_metric([], open_holds["count"])
        yield count
        amount = GaugeMetricFamily(
            "adjudge_provider_holds_minor", "Money in providers' holds, in minor units."
        )
        amount.add_metric([], open_holds["amount"])
        yield amount
        soon = GaugeMetricFamily(
            "adjudge_provider_holds_maturing_24h",
            "Holds whose report deadline passes in the next 24 hours.",
        )
        soon.add_metric([], open_holds["maturing_24h"])
        yield soon
        busy, queued = regex_pool_load()
        held = GaugeMetricFamily(
            "adjudge_regex_pool_busy", "Regex checks running in the time-limited worker pool."
        )
        held.add_metric([], busy)
        yield held
        waiting = GaugeMetricFamily(
            "adjudge_regex_pool_queue", "Regex checks waiting for a worker of the pool."
        )
        waiting.add_metric([], queued)
        yield waiting
