"""Finalize throughput and latency of the running service, driven over loopback.

What it measures: ``POST /api/v1/tasks/{id}/finalize`` of auto tasks, each of which runs the auto
check, issues a receipt, moves the escrow through the double-entry ledger and stores the new state
in one transaction. The target (issue 5): at least 300 finalizes per second on SQLite with one
``adjudge serve`` process, p99 under 50 ms with 50 concurrent clients. With 50 clients each
waiting for its answer, Little's law makes the mean latency 50 / throughput (167 ms at 300/s),
so the latency figure is measured open loop (``--rate``): 50 clients together offering a fixed
rate, each request timed from when it was due.

How: seed accounts and N submitted auto tasks straight into a fresh database, start
``adjudge serve`` on it as a separate process, then let C concurrent HTTP clients finalize every
task once, timing each request. The clients speak plain HTTP/1.1 over keep-alive sockets (about
0.2 ms of CPU per request, against about 5.5 ms with httpx), so on a small machine the figure is
the server's, not the load generator's; both CPU times are reported. Run from the repository root:

    .venv/bin/python benchmarks/service.py                       # SQLite, temporary file
    .venv/bin/python benchmarks/service.py --db postgresql+psycopg://postgres@127.0.0.1/bench

A PostgreSQL database is emptied (its tables dropped) before seeding.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from loadgen import Http

from adjudge.app import App, settlement
from adjudge.market import Accept, Context, Draft, Submit, post, step
from adjudge.store import Store, Submission, records
from adjudge.store.schema import metadata

CRITERIA = {"min_length": 40, "contains_keywords": ["escrow"], "pass_threshold": 60}
RESULT = (
    "An escrow holds the reward until the work is judged; a pass releases it to the agent and a "
    "refund returns it to the poster. Every verdict is recorded with a receipt."
)


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed(url: str, count: int) -> tuple[str, list[str]]:
    """Accounts and ``count`` submitted auto tasks; returns the agent's key and the task ids."""
    store = Store(url)
    if store.dialect == "postgresql":
        with store.engine.begin() as conn:
            metadata.drop_all(conn)
            conn.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
    store.migrate()
    app = App(store)
    admin_key = app.accounts.create(None, "admin", ["admin"]).value["api_key"]
    app.accounts.create(None, "poster", ["poster"])
    agent_key = app.accounts.create(None, "agent", ["agent"]).value["api_key"]
    app.accounts.deposit(app.accounts.authenticate(admin_key), "poster", 1_000_000 * count)
    now = datetime.now(UTC)
    ctx = Context(now=now, checker=app.checker)
    ids: list[str] = []
    for start in range(0, count, 500):
        with store.write() as tx:
            for i in range(start, min(count, start + 500)):
                draft = Draft("poster", 1_000_000, now + timedelta(days=1), "auto", CRITERIA)
                out = post(f"task_bench_{i:07d}", draft, ctx)
                task = out.task
                stored = settlement.post(
                    tx, out, title=f"bench {i}", brief="Explain escrow.", at=now
                )
                task = step(task, Accept("agent"), ctx).task
                task = step(task, Submit("agent", RESULT), ctx).task
                stored = records.update_task(tx, stored, task)
                assert task.result_digest is not None
                records.add_submission(tx, Submission(task.id, 1, RESULT, task.result_digest, now))
                ids.append(task.id)
    store.dispose()
    return agent_key, ids


async def drive(
    base: str, key: str, ids: list[str], clients: int, rate: float | None = None
) -> list[float]:
    """Finalize every task once with ``clients`` concurrent clients; returns latencies (s).

    Without ``rate`` each client sends its next request as soon as the last one answers (closed
    loop: the figure is the most the service sustains). With ``rate`` requests start on a fixed
    schedule of ``rate`` per second spread over the clients (open loop: the latency a service
    sees at that load), and a late answer does not delay the next request.
    """
    queue: asyncio.Queue[tuple[int, str]] = asyncio.Queue()
    for n, task_id in enumerate(ids):
        queue.put_nowait((n, task_id))
    latencies: list[float] = []
    failures: list[str] = []
    http = Http(base, {"Authorization": f"Bearer {key}"})
    t0 = time.perf_counter()

    async def one(task_id: str, due: float | None = None) -> None:
        started = due if due is not None else time.perf_counter()
        status, body = await http.request("POST", f"/api/v1/tasks/{task_id}/finalize")
        latencies.append(time.perf_counter() - started)
        if status != 200 or json.loads(body)["status"] != "completed":
            failures.append(f"{task_id}: {status} {body[:200]!r}")

    async def client() -> None:
        pending: list[asyncio.Task[None]] = []
        while not queue.empty():
            n, task_id = queue.get_nowait()
            if rate is None:
                await one(task_id)
                continue
            due = t0 + n / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            pending.append(asyncio.create_task(one(task_id, due)))
        await asyncio.gather(*pending)

    try:
        await asyncio.gather(*(client() for _ in range(clients)))
    finally:
        await http.close()
    if failures:
        raise SystemExit(f"{len(failures)} finalizes failed, e.g. {failures[0]}")
    return latencies


def main() -> None:
    """Seed, serve, drive, report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="Database URL (default: a temporary SQLite file).")
    parser.add_argument("--tasks", type=int, default=3000, help="Tasks to finalize.")
    parser.add_argument("--clients", type=int, default=50, help="Concurrent HTTP clients.")
    parser.add_argument("--warmup", type=int, default=200, help="Finalizes before timing.")
    parser.add_argument(
        "--rate", type=float, help="Offer this many finalizes per second (open loop)."
    )
    parser.add_argument("--threads", type=int, default=0, help="Passed to adjudge serve.")
    parser.add_argument(
        "--no-access-log",
        action="store_true",
        help="Serve without the per-request access log line (to measure what it costs).",
    )
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    url = args.db or f"sqlite:///{Path(tmp.name) / 'bench.db'}"
    key, ids = seed(url, args.tasks + args.warmup)
    port = _port()
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
            "--threads",
            str(args.threads),
            "--signing-key",
            str(Path(tmp.name) / "signing-key.pem"),
            "--server-key",
            str(Path(tmp.name) / "server-key"),
            *(["--no-access-log"] if args.no_access_log else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/api/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        asyncio.run(drive(base, key, ids[: args.warmup], args.clients))
        cpu_before = _cpu_seconds(server.pid)
        client_before = time.process_time()
        started = time.perf_counter()
        latencies = asyncio.run(drive(base, key, ids[args.warmup :], args.clients, args.rate))
        elapsed = time.perf_counter() - started
        client_cpu = time.process_time() - client_before
        cpu_after = _cpu_seconds(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=10)
        tmp.cleanup()
    ms = sorted(x * 1000 for x in latencies)
    figures = {
        "database": url.split(":", 1)[0],
        "finalizes": len(ms),
        "clients": args.clients,
        "offered_per_second": args.rate or "as fast as answered",
        "per_second": round(len(ms) / elapsed, 1),
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(ms[int(len(ms) * 0.95) - 1], 1),
        "p99_ms": round(ms[int(len(ms) * 0.99) - 1], 1),
        "max_ms": round(ms[-1], 1),
        "server_cpu_ms_per_finalize": (
            round((cpu_after - cpu_before) * 1000 / len(ms), 2)
            if cpu_before is not None and cpu_after is not None
            else None
        ),
        "client_cpu_ms_per_finalize": round(client_cpu * 1000 / len(ms), 2),
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
