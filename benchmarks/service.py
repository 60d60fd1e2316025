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
    .venv/bin/python benchmarks/service.py --db postgresql+psycopg://… --scale   # 1, then 2

``--scale`` serves the one PostgreSQL database with one process and then with two, and reports
both (finalizes per second, p50, p99) and the two-process/one-process ratio, in one run
(``--turns N`` alternates them N times and gives the median ratio); ``--lanes 1`` measures the
receipt log as one chain, which every writer waits for. Each run also gives how busy the whole
machine was (every core) and its CPU a finalize: where it is near 1.0, the processes, the
database and this driver share cores that are all in use, and a second process can only add
what the first left idle.

Beside the server's CPU per finalize, two floors from the same run: the bare auto check of the
benchmark's result, and the bare work of a finalize (one auto check, one Ed25519 signature and
one commit on the same kind of database: :func:`work_floor_us`), and the ratio to each.

``--keyed`` sends each finalize with an Idempotency-Key of its own, as a client that retries
safely does: its answer is then stored with it and counted in the poster's hour.

A PostgreSQL database is emptied (its tables dropped) before seeding.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from floors import bare_commit
from loadgen import Http, machine_cpu

from adjudge.app import Account, App, settlement
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
    agent_key = app.accounts.create(None, "agent", ["agent"]).value["api_key"]
    ids = submitted_tasks(app, app.accounts.authenticate(admin_key), "agent", count)
    app.close()
    store.dispose()
    return agent_key, ids


def submitted_tasks(app: App, admin: Account, agent: str, count: int) -> list[str]:
    """``count`` auto tasks a new account "poster" posted and funded, each taken by ``agent``
    and submitted with a result that passes: the task ids, ready to finalize."""
    store = app.store
    app.accounts.create(None, "poster", ["poster"])
    app.accounts.deposit(admin, "poster", 1_000_000 * count)
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
                task = step(task, Accept(agent), ctx).task
                task = step(task, Submit(agent, RESULT), ctx).task
                stored = records.update_task(tx, stored, task)
                assert task.result_digest is not None
                records.add_submission(tx, Submission(task.id, 1, RESULT, task.result_digest, now))
                ids.append(task.id)
    return ids


async def drive(
    base: str,
    key: str,
    ids: list[str],
    clients: int,
    rate: float | None = None,
    keyed: bool = False,
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
        headers = {"Idempotency-Key": f"finalize-{task_id}"} if keyed else None
        status, body = await http.request(
            "POST", f"/api/v1/tasks/{task_id}/finalize", headers=headers
        )
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


def floor_us(repeat: int = 2000) -> float:
    """The bare work's CPU: one auto check of the benchmark's result, in this process (the
    floor a finalize is measured against, in the same run)."""
    from adjudge import auto_check  # noqa: PLC0415

    for _ in range(200):
        auto_check(RESULT, CRITERIA)
    started = time.process_time()
    for _ in range(repeat):
        auto_check(RESULT, CRITERIA)
    return (time.process_time() - started) / repeat * 1e6


def work_floor_us(url: str, directory: Path, repeat: int = 2000) -> float:
    """The bare work of a finalize, as the target names it, in this process: one auto check of
    the benchmark's result, one Ed25519 signature (the cryptography library's, over a
    receipt-sized statement) and one commit of one receipt-sized row on the benchmark's kind of
    database (SQLite: a file with the store's journal settings; PostgreSQL: the same server),
    each done directly, with nothing around it. The client side's CPU only, as the server's
    figure is its process's only."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )

    from adjudge import auto_check  # noqa: PLC0415

    key = Ed25519PrivateKey.generate()
    statement = json.dumps({"criteria": CRITERIA, "result": RESULT, "passed": True}).encode()
    row = statement.hex()[:1500]
    commit, close = bare_commit(url, directory)

    def once() -> None:
        auto_check(RESULT, CRITERIA)
        key.sign(statement)
        commit(row)

    try:
        for _ in range(200):
            once()
        started = time.process_time()
        for _ in range(repeat):
            once()
        return (time.process_time() - started) / repeat * 1e6
    finally:
        close()


def _rss_kb(pid: int) -> dict[str, int]:
    """A process's resident memory now and at its peak (kB; empty where /proc is missing)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0])
    return found


def _serve(url: str, directory: Path, args: argparse.Namespace, env: dict[str, str]) -> Any:
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
            str(directory / "signing-key.pem"),
            "--server-key",
            str(directory / "server-key"),
            *(["--no-access-log"] if args.no_access_log else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # a busy shared machine starts Python slowly
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/api/v1/health").status_code == 200:
                return server, base
        except httpx.TransportError:
            time.sleep(0.05)
    server.kill()
    raise SystemExit("adjudge serve did not come up within 180 s")


async def _drive_all(
    bases: list[str],
    key: str,
    ids: list[str],
    clients: int,
    rate: float | None,
    keyed: bool = False,
) -> list[float]:
    """The tasks split over the processes, each driven by its share of the clients."""
    shares = [ids[i :: len(bases)] for i in range(len(bases))]
    each = max(1, clients // len(bases))
    per = None if rate is None else rate / len(bases)
    runs = await asyncio.gather(
        *(drive(b, key, share, each, per, keyed) for b, share in zip(bases, shares, strict=True))
    )
    return [x for run in runs for x in run]


#: The finalize path's stages as reported: (label, the timers it sums, the timers it subtracts).
STAGES = [
    ("read: the task and its submission (before the write, for a long check)", ["task.read"], []),
    (
        "auto check (in the write when quick, else before it)",
        ["task.check", "task.check.write"],
        [],
    ),
    ("market step (the lifecycle, pure)", ["task.step"], ["task.check.write"]),
    ("settlement (state, verdict, ledger, events)", ["task.apply"], ["receipt.sign"]),
    ("receipt (kernel determination, canonical JSON, Ed25519, DSSE)", ["receipt.sign"], []),
    ("the task's view (the answer)", ["task.view"], []),
    (
        "the commit thread's own work (BEGIN, savepoints, idempotency, chain, COMMIT)",
        ["thread:adjudge-commits"],
        ["task.step", "task.apply", "task.view"],
    ),
]


def _stage_figures(raw: dict[str, Any], calls: int) -> dict[str, float]:
    totals = {name: t["cpu_ns"] for name, t in raw["stages"].items()}
    totals.update({f"thread:{name}": ns for name, ns in raw["threads"].items()})
    out: dict[str, float] = {}
    for label, plus, minus in STAGES:
        ns = sum(totals.get(n, 0) for n in plus) - sum(totals.get(n, 0) for n in minus)
        out[label] = round(ns / calls / 1000, 1)
    process = raw["process"] / calls / 1000
    out["everything else (HTTP server, framework, routes, threads, auth)"] = round(
        process - sum(out.values()), 1
    )
    out["total"] = round(process, 1)
    return out


def run(args: argparse.Namespace, processes: int) -> dict[str, Any]:
    """Seed a fresh database, serve it with ``processes`` processes, drive it; the figures."""
    tmp = tempfile.TemporaryDirectory()
    directory = Path(tmp.name)
    url = args.db or f"sqlite:///{directory / 'bench.db'}"
    key, ids = seed(url, args.tasks + args.warmup)
    stages_path = directory / "stages.json"
    env = {"ADJUDGE_STAGE_TIMES": str(stages_path)} if args.stages else {}
    if args.lanes is not None:
        env["ADJUDGE_CHAIN_LANES"] = str(args.lanes)
    servers = [_serve(url, directory, args, env) for _ in range(processes)]
    bases = [base for _, base in servers]
    pids = [server.pid for server, _ in servers]
    try:
        asyncio.run(_drive_all(bases, key, ids[: args.warmup], args.clients, None, args.keyed))
        cpu_before = [_cpu_seconds(pid) for pid in pids]
        machine_before = machine_cpu()
        client_before = time.process_time()
        started = time.perf_counter()
        latencies = asyncio.run(
            _drive_all(bases, key, ids[args.warmup :], args.clients, args.rate, args.keyed)
        )
        elapsed = time.perf_counter() - started
        client_cpu = time.process_time() - client_before
        cpu_after = [_cpu_seconds(pid) for pid in pids]
        machine_after = machine_cpu()
        memory = [_rss_kb(pid) for pid in pids]
    finally:
        for server, _ in servers:
            # SIGINT, not SIGTERM: only an interrupt exits through the atexit hooks (the
            # stage timers write their file there).
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)
    floor = floor_us()
    work = work_floor_us(url, directory)
    ms = sorted(x * 1000 for x in latencies)
    spent = [
        (after - before)
        for before, after in zip(cpu_before, cpu_after, strict=True)
        if before is not None and after is not None
    ]
    server_ms = round(sum(spent) * 1000 / len(ms), 2) if spent else None
    machine_busy = machine_ms = None
    if machine_before is not None and machine_after is not None:
        busy = machine_after[0] - machine_before[0]
        machine_busy = round(busy / max(machine_after[1] - machine_before[1], 1e-9), 2)
        machine_ms = round(busy * 1000 / len(ms), 2)
    figures: dict[str, Any] = {
        "database": url.split(":", 1)[0],
        "processes": processes,
        "lanes": args.lanes if args.lanes is not None else "default",
        "finalizes": len(ms),
        "clients": args.clients,
        "keyed": args.keyed,
        "offered_per_second": args.rate or "as fast as answered",
        "per_second": round(len(ms) / elapsed, 1),
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(ms[int(len(ms) * 0.95) - 1], 1),
        "p99_ms": round(ms[int(len(ms) * 0.99) - 1], 1),
        "max_ms": round(ms[-1], 1),
        "server_cpu_ms_per_finalize": server_ms,
        "bare_check_us": round(floor, 1),
        "server_cpu_over_bare_check": None
        if server_ms is None
        else round(server_ms * 1000 / floor, 1),
        "work_floor_us": round(work, 1),
        "server_cpu_over_work_floor": None
        if server_ms is None
        else round(server_ms * 1000 / work, 1),
        "client_cpu_ms_per_finalize": round(client_cpu * 1000 / len(ms), 2),
        # The whole machine's, every core: the share busy (1.0: none idle), and its CPU a
        # finalize (the servers', the database's, this driver's and anything else running).
        "machine_busy": machine_busy,
        "machine_cpu_ms_per_finalize": machine_ms,
        "server_rss_kb": memory,
        "cpus": os.cpu_count(),
    }
    if args.stages and stages_path.exists():
        figures["stages_us_per_finalize"] = _stage_figures(
            json.loads(stages_path.read_text()), args.tasks + args.warmup
        )
    tmp.cleanup()
    return figures


def scale(args: argparse.Namespace) -> dict[str, Any]:
    """One process, then two, on the one database, ``args.turns`` times in turn; each turn's
    two-process/one-process ratio of finalizes per second, and their median."""
    turns = []
    for _ in range(args.turns):
        one, two = run(args, 1), run(args, 2)
        turns.append(
            {
                "one": {k: one[k] for k in _SCALE_KEYS},
                "two": {k: two[k] for k in _SCALE_KEYS},
                "ratio": round(two["per_second"] / one["per_second"], 2),
            }
        )
    ratios = [t["ratio"] for t in turns]
    return {
        "database": args.db.split(":", 1)[0] if args.db else "sqlite",
        "lanes": args.lanes if args.lanes is not None else "default",
        "clients": args.clients,
        "finalizes": args.tasks,
        "turns": turns,
        "ratio_median": round(statistics.median(ratios), 2),
        "ratio_range": [min(ratios), max(ratios)],
        "cpus": os.cpu_count(),
    }


_SCALE_KEYS = (
    "per_second",
    "p50_ms",
    "p99_ms",
    "max_ms",
    "server_cpu_ms_per_finalize",
    "machine_busy",
    "machine_cpu_ms_per_finalize",
)


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
        "--processes", type=int, default=1, help="adjudge serve processes on the one database."
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="One process, then two, on the one database (PostgreSQL: --db): both figures "
        "and the ratio of their finalizes per second, in one run.",
    )
    parser.add_argument("--turns", type=int, default=1, help="With --scale: turns of 1 and 2.")
    parser.add_argument(
        "--lanes",
        type=int,
        help="Lanes of the receipt log (ADJUDGE_CHAIN_LANES; default: the store's, 4 on "
        "PostgreSQL; 1 is the one chain every writer waits for).",
    )
    parser.add_argument(
        "--no-access-log",
        action="store_true",
        help="Serve without the per-request access log line (to measure what it costs).",
    )
    parser.add_argument("--stages", action="store_true", help="Time each stage (one process).")
    parser.add_argument(
        "--keyed",
        action="store_true",
        help="Send each finalize with an Idempotency-Key of its own (its answer stored and "
        "counted in the poster's hour, as a client that retries safely sends it).",
    )
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    figures = scale(args) if args.scale else run(args, args.processes)
    if args.json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k}={v}")


if __name__ == "__main__":
    main()
