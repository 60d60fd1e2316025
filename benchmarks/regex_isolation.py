"""Does a slow regular expression stall the service for everyone else?

Sixteen agents hammer dry runs of tasks whose ``regex_pattern`` backtracks catastrophically
(``(a|aa)+$`` on a run of ``a`` and a ``!``: each match runs into the 100 ms limit and its worker
is killed and replaced). Meanwhile one probe reads ``GET /health`` 20 times a second and another
agent finalizes ordinary auto tasks 5 times a second, each request timed from when it was due
(open loop). The same probes run first without the attack, as the baseline. Targets (issue 9):
under the attack, ``/health`` p99 under 50 ms and the other tasks' finalize p99 under 100 ms.

The attack tasks are seeded straight into the database (posting now refuses that pattern; tasks
posted before the screen existed, or a pattern the screen misses, still reach the pool). Run
from the repository root:

    .venv/bin/python benchmarks/regex_isolation.py [--seconds 20] [--db URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from adjudge.app import App, settlement
from adjudge.errors import Error
from adjudge.market import Accept, Checker, CheckOutcome, Context, Draft, Submit, post, step
from adjudge.store import Store, Submission, records
from adjudge.store.schema import metadata

ATTACKERS = 16
PATTERN = "(a|aa)+$"
ATTACK_TEXT = "a" * 34 + "!"
RESULT = "An escrow holds the reward until the work is judged, then pays or refunds it."


class _Admits:
    """Admits any criteria, so the seed can post what the posting screen now refuses."""

    def __init__(self, inner: Checker) -> None:
        self.inner = inner

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        return []

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        return self.inner.check(result, criteria, withhold=withhold)


def seed(url: str, ordinary: int) -> tuple[list[tuple[str, str]], str, list[str]]:
    """Attackers (key, their assigned attack task), the finalizer's key and its tasks."""
    store = Store(url)
    if store.dialect == "postgresql":
        with store.engine.begin() as conn:
            metadata.drop_all(conn)
            conn.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
    store.migrate()
    app = App(store)
    admin = app.accounts.authenticate(
        app.accounts.create(None, "admin", ["admin"]).value["api_key"]
    )
    app.accounts.create(None, "poster", ["poster"])
    app.accounts.deposit(admin, "poster", 10_000_000 + 1_000 * ordinary)
    keys = {
        name: app.accounts.create(None, name, ["agent"]).value["api_key"]
        for name in [f"attacker{i}" for i in range(ATTACKERS)] + ["worker"]
    }
    now = datetime.now(UTC)
    ctx = Context(now=now, checker=_Admits(app.checker))
    attack: list[tuple[str, str]] = []
    ordinary_ids: list[str] = []
    with store.write() as tx:
        for i in range(ATTACKERS):
            criteria = {"regex_pattern": PATTERN, "min_length": 1}
            draft = Draft("poster", 1_000, now + timedelta(days=1), "auto", criteria)
            out = post(f"task_attack_{i:03d}", draft, ctx)
            stored = settlement.post(tx, out, title="attack", brief="", at=now)
            records.update_task(tx, stored, step(out.task, Accept(f"attacker{i}"), ctx).task)
            attack.append((keys[f"attacker{i}"], out.task.id))
        for n in range(ordinary):
            draft = Draft("poster", 1_000, now + timedelta(days=1), "auto", {"min_length": 40})
            out = post(f"task_plain_{n:05d}", draft, ctx)
            stored = settlement.post(tx, out, title="plain", brief="", at=now)
            task = step(out.task, Accept("worker"), ctx).task
            task = step(task, Submit("worker", RESULT), ctx).task
            records.update_task(tx, stored, task)
            assert task.result_digest is not None
            records.add_submission(tx, Submission(task.id, 1, RESULT, task.result_digest, now))
            ordinary_ids.append(task.id)
    store.dispose()
    return attack, keys["worker"], ordinary_ids


async def request(base: str, method: str, path: str, key: str, body: Any = None) -> int:
    """One HTTP/1.1 request on a fresh connection (no client library: its CPU would compete)."""
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    data = json.dumps(body).encode() if body is not None else b""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + data)
    status = int((await reader.readline()).split()[1])
    await reader.read()
    writer.close()
    return status


async def probe(
    base: str, method: str, paths: list[str], key: str, rate: float, seconds: float
) -> list[float]:
    """Open loop: ``rate`` requests a second for ``seconds``; latencies from when each was due."""
    latencies: list[float] = []
    t0 = time.perf_counter()

    async def one(path: str, due: float) -> None:
        status = await request(base, method, path, key)
        if status >= 500 and "finalize" in path:
            raise SystemExit(f"{path}: {status}")
        latencies.append(time.perf_counter() - due)

    pending = []
    for n in range(int(rate * seconds)):
        due = t0 + n / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        pending.append(asyncio.create_task(one(paths[n % len(paths)], due)))
    await asyncio.gather(*pending)
    return latencies


async def attack(
    base: str, attackers: list[tuple[str, str]], stop: asyncio.Event
) -> dict[str, int]:
    """Each attacker dry-runs its catastrophic task as fast as it is answered."""
    counts: dict[str, int] = {}

    async def one(key: str, task_id: str) -> None:
        while not stop.is_set():
            status = await request(
                base, "POST", f"/api/v1/tasks/{task_id}/dry-run", key, {"result": ATTACK_TEXT}
            )
            counts[str(status)] = counts.get(str(status), 0) + 1

    await asyncio.gather(*(one(k, t) for k, t in attackers))
    return counts


def summary(latencies: list[float]) -> dict[str, float]:
    """p50, p99 and max in milliseconds."""
    ms = sorted(x * 1000 for x in latencies)
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 1),
        "p99_ms": round(ms[max(0, int(len(ms) * 0.99) - 1)], 1),
        "max_ms": round(ms[-1], 1),
    }


async def phase(
    base: str, worker: str, ids: list[str], seconds: float, attackers: list[tuple[str, str]] | None
) -> dict[str, Any]:
    """Health and finalize probes for ``seconds``, with the attack running or not."""
    stop = asyncio.Event()
    hammer = asyncio.create_task(attack(base, attackers, stop)) if attackers else None
    if hammer is not None:
        await asyncio.sleep(1.0)  # let the attack fill the pool first
    health, finalize = await asyncio.gather(
        probe(base, "GET", ["/api/v1/health"], worker, 20, seconds),
        probe(base, "POST", [f"/api/v1/tasks/{t}/finalize" for t in ids], worker, 5, seconds),
    )
    stop.set()
    out: dict[str, Any] = {"health": summary(health), "finalize": summary(finalize)}
    if hammer is not None:
        out["dry_run_answers"] = await hammer
    return out


def main() -> None:
    """Seed, serve, measure without and with the attack, report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="Database URL (default: a temporary SQLite file).")
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each phase.")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    url = args.db or f"sqlite:///{Path(tmp.name) / 'bench.db'}"
    per_phase = int(5 * args.seconds) + 5
    attackers, worker, ids = seed(url, 2 * per_phase)
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "adjudge.cli",
            "serve",
            "--db",
            url,
            "--port",
            str(port),
            "--signing-key",
            str(Path(tmp.name) / "key.pem"),
            "--server-key",
            str(Path(tmp.name) / "server-key"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/api/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        quiet = asyncio.run(phase(base, worker, ids[:per_phase], args.seconds, None))
        loud = asyncio.run(phase(base, worker, ids[per_phase:], args.seconds, attackers))
    finally:
        server.terminate()
        server.wait(timeout=20)
        tmp.cleanup()
    figures = {
        "database": url.split(":", 1)[0],
        "cpus": os.cpu_count(),
        "attackers": ATTACKERS,
        "without_attack": quiet,
        "under_attack": loud,
    }
    print(json.dumps(figures, indent=None if args.json else 2))


def _free_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    main()
