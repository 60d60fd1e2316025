"""Does one account's slow patterns slow everyone else's regex checks?

One account (``flood``) runs a pattern that passes every posting screen yet runs to the 100 ms
limit on its text (``.*foo`` on 20,000 ``a``: quadratic, so the polynomial screen lets it
through) from eight threads, as fast as it is answered. Meanwhile four other accounts each run
an ordinary check through the worker pool (``"status":\\s*"ok"`` on a 1 KB text) ten times a
second, open loop: each check is timed from when it was due, so time spent queueing counts.

Two levels, each measured in the same run without and with fairness:

* ``pool`` (the default): the match pool itself, in this process. "Without" is one queue,
  first come first served (no owners), with one worker (the old default on two CPUs) and with
  two; "with" is the fair pool (owners set, at most all workers but one per owner, the waiting
  owner served longest ago first) with two workers, and with one to show why two is the floor.
* ``http``: the service over HTTP, the flooder's and the others' dry runs of seeded tasks, each
  phase after a quiet one as its baseline. "Without" starts the service with its scheduling
  patched back to what it was (one queue, one worker, a slow lane of two; the service has no
  switch for it); "with" is the service as it is.

Target (issue 16): the other accounts' checks at p99 under 100 ms. Run from the repository root:

    .venv/bin/python benchmarks/regex_fairness.py [--level pool|http] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from adjudge.autocheck import _sandbox, jsregex, redos

SLOW_PATTERN = ".*foo"
SLOW_TEXT = "a" * 20_000
NORMAL_PATTERN = '"status":\\s*"ok"'
NORMAL_TEXT = ('{"id": 7, "note": "' + "x" * 960 + '", "status": "ok"}')[:1024]
FLOOD_THREADS = 8
OTHERS = 4
RATE = 10.0  # checks a second, per other account


def _passes_the_screens(pattern: str) -> None:
    if redos.ambiguous_repeat(pattern) or redos.slow_run(pattern) or not jsregex.is_safe(pattern):
        raise SystemExit(f"{pattern} no longer passes the posting screens; pick another")


def summary(latencies: Sequence[float]) -> dict[str, float]:
    """Count, p50, p99 and max in milliseconds."""
    ms = sorted(x * 1000 for x in latencies)
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[max(0, int(len(ms) * 0.99) - 1)], 2),
        "max_ms": round(ms[-1], 1),
    }


# --- the pool ---------------------------------------------------------------------------------


def pool_phase(size: int, fair: bool, seconds: float) -> dict[str, Any]:
    """The flood and the others' checks against a fresh pool of ``size`` workers."""
    pool = _sandbox._Pool(size, None if fair else size)
    _sandbox._pool = pool
    stop = threading.Event()
    counts = {"timeouts": 0, "answers": 0, "busy": 0}
    lock = threading.Lock()

    def owned(name: str) -> Any:
        return jsregex.owned_by(name if fair else "")

    def flood() -> None:
        with owned("flood"):
            while not stop.is_set():
                try:
                    jsregex.test(SLOW_PATTERN, SLOW_TEXT)
                    key = "answers"
                except jsregex.PatternTimeout:
                    key = "timeouts"
                except jsregex.EngineUnavailable:
                    key = "busy"
                with lock:
                    counts[key] += 1

    latencies: list[float] = []
    refused = [0]

    def check(name: str, due: float) -> None:
        with owned(name):
            try:
                assert jsregex.test(NORMAL_PATTERN, NORMAL_TEXT)
            except jsregex.EngineUnavailable:
                refused[0] += 1
                return
        with lock:
            latencies.append(time.perf_counter() - due)

    with jsregex.owned_by("warm"):
        jsregex.test(NORMAL_PATTERN, NORMAL_TEXT)  # start a worker outside the measurement
    flooders = [threading.Thread(target=flood, daemon=True) for _ in range(FLOOD_THREADS)]
    for thread in flooders:
        thread.start()
    time.sleep(1.0)  # let the flood fill the pool first
    with concurrent.futures.ThreadPoolExecutor(max_workers=64) as executor:
        t0 = time.perf_counter()
        for n in range(int(RATE * OTHERS * seconds)):
            due = t0 + n / (RATE * OTHERS)
            time.sleep(max(0.0, due - time.perf_counter()))
            executor.submit(check, f"other{n % OTHERS}", due)
    stop.set()
    for thread in flooders:
        thread.join(15)
    pool.shutdown()
    return {"others": summary(latencies), "others_refused": refused[0], "flood": counts}


def pool_level(seconds: float) -> dict[str, Any]:
    """Every pool configuration, one after another, in this run."""
    phases: list[tuple[str, int, bool]] = [
        ("without fairness, 1 worker", 1, False),
        ("without fairness, 2 workers", 2, False),
        ("with fairness, 1 worker", 1, True),
        ("with fairness, 2 workers", 2, True),
    ]
    out: dict[str, Any] = {}
    quiet = _sandbox._Pool(2)
    _sandbox._pool = quiet
    latencies = []
    for _ in range(200):
        started = time.perf_counter()
        jsregex.test(NORMAL_PATTERN, NORMAL_TEXT)
        latencies.append(time.perf_counter() - started)
    quiet.shutdown()
    out["no flood"] = {"others": summary(latencies)}
    for name, size, fair in phases:
        out[name] = pool_phase(size, fair, seconds)
        print(name, json.dumps(out[name]), file=sys.stderr, flush=True)
    return out


# --- the service ------------------------------------------------------------------------------


def seed(url: str, floods: int, per_other: int) -> tuple[str, list[str], list[tuple[str, str]]]:
    """The flooder's key and its tasks; each other agent's (key, task) pairs."""
    from adjudge.app import App, settlement  # noqa: PLC0415
    from adjudge.market import Accept, Context, Draft, post, step  # noqa: PLC0415
    from adjudge.store import Store, records  # noqa: PLC0415
    from adjudge.store.schema import metadata  # noqa: PLC0415

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
    tasks = floods + OTHERS * per_other
    app.accounts.deposit(admin, "poster", 1_000 * tasks)
    names = ["flood"] + [f"other{i}" for i in range(OTHERS)]
    keys = {n: app.accounts.create(None, n, ["agent"]).value["api_key"] for n in names}
    now = datetime.now(UTC)
    ctx = Context(now=now, checker=app.checker)
    flood_tasks: list[str] = []
    other_tasks: list[tuple[str, str]] = []
    with store.write() as tx:
        for n in range(tasks):
            agent = "flood" if n < floods else f"other{(n - floods) % OTHERS}"
            pattern = SLOW_PATTERN if agent == "flood" else NORMAL_PATTERN
            criteria = {"regex_pattern": pattern, "min_length": 1}
            draft = Draft("poster", 1_000, now + timedelta(days=1), "auto", criteria)
            out = post(f"task_{n:05d}", draft, ctx)
            stored = settlement.post(tx, out, title="t", brief="", at=now)
            records.update_task(tx, stored, step(out.task, Accept(agent), ctx).task)
            if agent == "flood":
                flood_tasks.append(out.task.id)
            else:
                other_tasks.append((keys[agent], out.task.id))
    store.dispose()
    return keys["flood"], flood_tasks, other_tasks


async def request(base: str, path: str, key: str, body: Any) -> int:
    """One HTTP/1.1 POST on a fresh connection (no client library: its CPU would compete)."""
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + data)
    status = int((await reader.readline()).split()[1])
    await reader.read()
    writer.close()
    return status


async def http_phase(
    base: str,
    flood: tuple[str, list[str]] | None,
    others: Iterator[tuple[str, str]],
    seconds: float,
) -> dict[str, Any]:
    """The others' dry runs, open loop, with the flood running or not; ``others`` hands out
    (key, task) pairs, each no more often than the dry-run quota allows."""
    stop = asyncio.Event()
    statuses: dict[str, int] = {}
    dry = "/api/v1/tasks/{}/dry-run"

    async def flooder(key: str, tasks: list[str], start: int) -> None:
        n = start
        while not stop.is_set():
            task = tasks[n % len(tasks)]
            status = await request(base, dry.format(task), key, {"result": SLOW_TEXT})
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            n += FLOOD_THREADS

    hammer = None
    if flood is not None:
        key, tasks = flood
        hammer = asyncio.gather(*(flooder(key, tasks, i) for i in range(FLOOD_THREADS)))
        await asyncio.sleep(1.0)
    latencies: list[float] = []
    bad: dict[str, int] = {}

    async def one(key: str, task: str, due: float) -> None:
        status = await request(base, dry.format(task), key, {"result": NORMAL_TEXT})
        if status != 200:
            bad[str(status)] = bad.get(str(status), 0) + 1
        latencies.append(time.perf_counter() - due)

    pending = []
    t0 = time.perf_counter()
    for n in range(int(RATE * OTHERS * seconds)):
        due = t0 + n / (RATE * OTHERS)
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        key, task = next(others)
        pending.append(asyncio.create_task(one(key, task, due)))
    await asyncio.gather(*pending)
    stop.set()
    if hammer is not None:
        await hammer
    out: dict[str, Any] = {"others": summary(latencies), "others_not_200": bad}
    if flood is not None:
        out["flood_answers"] = statuses
    return out


#: Starts the service as it scheduled regex work before fairness: one queue for everyone, one
#: worker (the old default on two CPUs), a slow lane of two. Patched in, for this benchmark only.
_UNFAIR = """
import sys
from contextvars import ContextVar
from adjudge.autocheck import _sandbox
from adjudge.service import deps
_sandbox._pool = _sandbox._Pool(1, 1)
_sandbox.regex_owner = ContextVar("nobody", default="")
deps.slow_checks = deps.owner_slow_checks = lambda: 2
from adjudge.cli import main
main()
"""


def http_level(seconds: float, url: str | None) -> dict[str, Any]:
    """Against a service without fairness, then one with: a quiet phase and a flooded one."""
    out: dict[str, Any] = {}
    for name, fair in (("without fairness", False), ("with fairness", True)):
        with tempfile.TemporaryDirectory() as tmp:
            out[name] = _serve_and_measure(seconds, url or f"sqlite:///{tmp}/bench.db", tmp, fair)
        print(name, json.dumps(out[name]), file=sys.stderr, flush=True)
    out["database"] = (url or "sqlite").split(":", 1)[0]
    return out


def _serve_and_measure(seconds: float, url: str, tmp: str, fair: bool) -> dict[str, Any]:
    import httpx  # noqa: PLC0415

    per_task = 20  # the dry-run quota per task and hour
    checks = int(RATE * OTHERS * (seconds * 2 + 1))
    floods = int(40 * (seconds + 2) / per_task) + FLOOD_THREADS
    flood_key, flood_tasks, others = seed(url, floods, checks // (OTHERS * per_task) + 2)
    port = _free_port()
    start = ["-m", "adjudge.cli"] if fair else ["-c", _UNFAIR]
    server = subprocess.Popen(
        [
            sys.executable,
            *start,
            "serve",
            "--db",
            url,
            "--port",
            str(port),
            "--signing-key",
            str(Path(tmp) / "key.pem"),
            "--server-key",
            str(Path(tmp) / "server-key"),
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
        uses = iter([pair for _ in range(per_task) for pair in others])
        asyncio.run(http_phase(base, None, uses, 1.0))  # warm the server up
        quiet = asyncio.run(http_phase(base, None, uses, seconds))
        loud = asyncio.run(http_phase(base, (flood_key, flood_tasks), uses, seconds))
    finally:
        server.terminate()
        server.wait(timeout=20)
    return {"no flood": quiet, "flood": loud}


def _free_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    """Measure the chosen level and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", choices=["pool", "http"], default="pool")
    parser.add_argument("--seconds", type=float, default=10.0, help="Length of each phase.")
    parser.add_argument("--db", help="Database URL for --level http (default: SQLite).")
    args = parser.parse_args()
    _passes_the_screens(SLOW_PATTERN)
    levels: Mapping[str, Callable[[], dict[str, Any]]] = {
        "pool": lambda: pool_level(args.seconds),
        "http": lambda: http_level(args.seconds, args.db),
    }
    figures = {
        "level": args.level,
        "cpus": os.cpu_count(),
        "slow": f"{SLOW_PATTERN} on {len(SLOW_TEXT)} characters, {FLOOD_THREADS} threads",
        "others": f"{OTHERS} accounts x {RATE:g}/s of {NORMAL_PATTERN} on 1 KB",
        **levels[args.level](),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
