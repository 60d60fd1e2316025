"""The gateway's speed: verified, signed and settled paid calls through the MCP endpoint.

What it measures, over loopback, with one ``adjudge serve`` process (or, with ``--processes``,
several on one PostgreSQL database):

- **calls per second, closed loop**: C clients each sending ``tools/call`` (the goassay client's
  stateless request, an idempotency key on each) as soon as the last one answered. Every call
  is forwarded signed to the provider, verified against the tool's contract and policy, signed
  into a receipt and settled in the ledger; each answer is checked to have settled.
- **the latency the gateway adds**, open loop at ``--rate`` calls per second: the same request
  sent straight to the provider and through the gateway, side by side in one run (two streams
  at the rate each, every request timed from when it was due), p50 and p99 of each and the
  difference.
- **the bare work of a call** (``work_floor_us``): what any gateway that forwards, signs, judges
  and settles must do, done directly in this process with nothing around it — one request to
  the provider on a kept connection (the same minimal client), its JSON answer parsed, two
  Ed25519 signatures (the request's and the receipt's, each over its size), and two commits of
  a call-sized row (the reservation's and the settlement's) on the benchmark's kind of
  database — and the server's CPU per call as a multiple of it, in the same run.
- **CPU per call by stage** (``--stages``): a second server run with the stage timers on
  (``ADJUDGE_STAGE_TIMES``, see ``adjudge.app.timing``) reports the CPU each stage of the hot
  path spent per call (MCP parse, argument check, signing, the provider round trip, verification,
  receipt, commit …), and each thread's CPU per call.

The provider answers instantly: a few lines of raw asyncio that read a request and write a
fixed forecast (``--provider raw``, the default: no signature is verified, so the figures are
the gateway's), or the same forecast from a Starlette app behind the unmodified
``goassay-provider-verify`` middleware under uvicorn (``--provider verified``: every call's
signature is checked against the gateway's JWKS; the direct calls go to the same app without
the middleware). It runs in a process of its own, as do the clients: a minimal HTTP/1.1
keep-alive client (about 0.1 ms of CPU per request; httpx costs several), so on a small machine
the figures are the server's. All three share the machine's CPUs; their CPU per call is reported,
and the whole machine's (``machine_cpu_ms_per_call``, every core: less the three, the database's).

    .venv/bin/python benchmarks/gateway.py                        # SQLite, a temporary file
    .venv/bin/python benchmarks/gateway.py --stages
    .venv/bin/python benchmarks/gateway.py --terms --calls 10000 --segments 10 --latency-calls 0
    .venv/bin/python benchmarks/gateway.py --db postgresql+psycopg://postgres@127.0.0.1/bench
    .venv/bin/python benchmarks/gateway.py --db postgresql+psycopg://… --terms --processes 2
    .venv/bin/python benchmarks/gateway.py --db … --processes 2 --finalizes 2000

``--finalizes N`` has the caller, who is also an agent, finalize N auto tasks it took while its
calls run (each pays its wallet and the platform's fee, as the calls debit that wallet): the
finalizes per second beside the calls, and, with several processes, the deadlocks PostgreSQL
broke between the two kinds of work (the server's CPU "per call" then counts the finalizes'
too).

A PostgreSQL database is emptied (its tables dropped) before seeding.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy
from floors import bare_commit
from loadgen import Http, machine_cpu

from adjudge.app import App, Settings
from adjudge.app.demo import WEATHER_POLICY, weather_tool
from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.store import Store
from adjudge.store.schema import metadata
from service import drive, submitted_tasks

PROVIDER = "skycast"
PRICE = 25
FORECAST = {
    "latitude": 52.52,
    "longitude": 13.41,
    "issued": "2026-01-01T12:00:00Z",
    "daily": [
        {
            "date": f"2026-01-{10 + d:02d}",
            "temperature_2m_max": 5.0 + d,
            "temperature_2m_min": -1.0,
            "precipitation_probability_max": 40,
        }
        for d in range(3)
    ],
}
PATH = "/v1/forecast/berlin?days=3"


def tool(base_url: str) -> dict[str, Any]:
    """The benchmark's tool: the demo's forecast (a GET with a path and a query argument, a
    mapped contract) sold by the benchmark's provider."""
    return weather_tool(base_url, provider=PROVIDER, price=PRICE)


POLICY = WEATHER_POLICY


# --- the provider -----------------------------------------------------------------------------


class _Instant(asyncio.Protocol):
    """HTTP/1.1 keep-alive: every request (pipelined or not) gets the same forecast at once."""

    ANSWER = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
        + str(len(json.dumps(FORECAST))).encode()
        + b"\r\n\r\n"
        + json.dumps(FORECAST).encode()
    )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport  # uvloop's transports are not asyncio.Transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            self.buffer = self.buffer[length:]  # a GET has no body; a POST's is not read
            self.transport.write(self.ANSWER)


def serve_provider(port: int, kind: str, jwks_url: str | None, direct_port: int) -> None:
    """Run the provider (in its own process) until killed."""
    _fast_loop()
    if kind == "raw":

        async def run() -> None:
            loop = asyncio.get_running_loop()
            server = await loop.create_server(_Instant, "127.0.0.1", port, backlog=1024)
            await server.serve_forever()

        asyncio.run(run())
        return
    import uvicorn  # noqa: PLC0415
    from goassay_provider_verify import AssayVerifyMiddleware  # noqa: PLC0415
    from starlette.applications import Starlette  # noqa: PLC0415
    from starlette.responses import Response  # noqa: PLC0415
    from starlette.routing import Route  # noqa: PLC0415

    body = json.dumps(FORECAST).encode()

    async def forecast(_: Any) -> Response:
        return Response(body, media_type="application/json")

    app = Starlette(routes=[Route("/v1/forecast/{city}", forecast)])
    guarded = AssayVerifyMiddleware(app, provider=PROVIDER, jwks_url=jwks_url)

    async def both() -> None:
        configs = [
            uvicorn.Config(guarded, port=port, log_level="warning", lifespan="off"),
            uvicorn.Config(app, port=direct_port, log_level="warning", lifespan="off"),
        ]
        await asyncio.gather(*(uvicorn.Server(c).serve() for c in configs))

    asyncio.run(both())


def _fast_loop() -> None:
    """uvloop's event loop where it exists: less CPU per request on both ends."""
    with contextlib.suppress(ImportError):
        import uvloop  # noqa: PLC0415

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


# --- the load generator -----------------------------------------------------------------------


def mcp_call(n: int) -> bytes:
    """The ``tools/call`` the goassay client sends, with a fresh idempotency key."""
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {
                "name": "weather_forecast",
                "arguments": {"city": "berlin", "days": 3},
                "_meta": {
                    "assay/idempotency-key": str(uuid.uuid4()),
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                },
            },
        }
    ).encode()


def mcp_headers(key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "weather_forecast",
    }


def _settled(status: int, body: bytes) -> bool:
    if status != 200:
        return False
    result = json.loads(body).get("result") or {}
    receipt = (result.get("_meta") or {}).get("assay/receipt") or {}
    return receipt.get("status") == "settled" and "structuredContent" in result


async def closed_loop(base: str, key: str, calls: int, clients: int) -> list[float]:
    """``calls`` gateway calls by ``clients`` clients, each sending as soon as answered."""
    http = Http(base, mcp_headers(key))
    counter = iter(range(calls))
    latencies: list[float] = []
    failures: list[bytes] = []

    async def client() -> None:
        for n in counter:
            started = time.perf_counter()
            status, body = await http.request("POST", "/", mcp_call(n))
            latencies.append(time.perf_counter() - started)
            if not _settled(status, body):
                failures.append(body[:300])

    try:
        await asyncio.gather(*(client() for _ in range(clients)))
    finally:
        await http.close()
    if failures:
        raise SystemExit(f"{len(failures)} calls did not settle, e.g. {failures[0]!r}")
    return latencies


async def side_by_side(
    base: str, key: str, provider: str, rate: float, count: int
) -> tuple[list[float], list[float]]:
    """``count`` requests at ``rate``/s straight to the provider and as many through the
    gateway, interleaved on one schedule; each timed from when it was due."""
    gateway = Http(base, mcp_headers(key))
    direct = Http(provider, {"Accept": "application/json"})
    through: list[float] = []
    straight: list[float] = []
    failures: list[bytes] = []
    t0 = time.perf_counter() + 0.05

    async def one_gateway(n: int, due: float) -> None:
        status, body = await gateway.request("POST", "/", mcp_call(n))
        through.append(time.perf_counter() - due)
        if not _settled(status, body):
            failures.append(body[:300])

    async def one_direct(due: float) -> None:
        status, body = await direct.request("GET", PATH)
        straight.append(time.perf_counter() - due)
        if status != 200:
            failures.append(body[:300])

    pending: list[asyncio.Task[None]] = []
    for n in range(count):
        due = t0 + n / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        pending.append(asyncio.create_task(one_gateway(n, due)))
        half = due + 0.5 / rate  # the direct request half a period later, on the same clock
        await asyncio.sleep(max(0.0, half - time.perf_counter()))
        pending.append(asyncio.create_task(one_direct(half)))
    await asyncio.gather(*pending)
    await gateway.close()
    await direct.close()
    if failures:
        raise SystemExit(f"{len(failures)} requests failed, e.g. {failures[0]!r}")
    return through, straight


# --- the run ----------------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status_kb(pid: int, field: str) -> int | None:
    """A field of the process's /proc status in kB (None where /proc is missing)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name == field:
                return int(value.split()[0])
    except OSError:
        pass
    return None


def _rss_kb(pid: int) -> int | None:
    """The server's resident memory now: if it grows with the calls served, something keeps
    what it should not."""
    return _status_kb(pid, "VmRSS")


def _peak_kb(pid: int) -> int | None:
    """The server's peak resident memory so far."""
    return _status_kb(pid, "VmHWM")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(url: str) -> None:
    for _ in range(400):
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not come up")


#: Quality terms the provider declares with ``--terms``: every observed call then moves its
#: quality window (a rate no PASS-only run reaches, so no proposal is made).
TERMS = {"declared_failure_rate": "1/2", "sample_gate": 100, "window_days": 30}


def seed(url: str, provider_url: str, terms: bool = False, tasks: int = 0) -> tuple[str, list[str]]:
    """Accounts, the tool and its policy (and the provider's quality terms), and ``tasks``
    auto tasks the caller took and submitted (to finalize beside its calls); returns the
    caller's API key and the tasks' ids."""
    store = Store(url)
    if store.dialect == "postgresql":
        with store.engine.begin() as conn:
            metadata.drop_all(conn)
            conn.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
    store.migrate()
    app = App(
        store,
        issuer=SignedReceipts(SigningKey.generate()),
        settings=Settings(allow_private_providers=True),
    )
    admin = app.accounts.authenticate(
        app.accounts.create(None, "admin", ["admin"]).value["api_key"]
    )
    provider = app.accounts.create(None, PROVIDER, ["provider"]).value["api_key"]
    caller = app.accounts.create(None, "agent", ["agent"]).value["api_key"]
    app.accounts.deposit(admin, "agent", 10**15)
    seller = app.accounts.authenticate(provider)
    app.tools.register(seller, tool(provider_url))
    app.calls.register_policy(seller, "weather_forecast", POLICY)  # a tool's rules are its own
    if terms:
        app.calls.register_tool(seller, {"tool": "terms", "version": "1"}, TERMS)
    ids = submitted_tasks(app, admin, "agent", tasks) if tasks else []
    app.close()
    return str(caller), ids


class Service:
    """``adjudge serve`` on the seeded database, in a process of its own."""

    def __init__(self, url: str, directory: Path, threads: int, env: dict[str, str]) -> None:
        self.port = _port()
        self.base = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "adjudge.cli", "serve", "--db", url]
        command += ["--port", str(self.port), "--threads", str(threads)]
        command += ["--signing-key", str(directory / "signing-key.pem")]
        command += ["--server-key", str(directory / "server-key"), "--allow-private-providers"]
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
        )
        _wait_for(f"{self.base}/api/v1/health")

    def cpu(self) -> float | None:
        return _cpu_seconds(self.process.pid)

    def stop(self) -> None:
        # SIGINT, not SIGTERM: uvicorn re-raises the signal it stopped on, and only an
        # interrupt lets the interpreter exit through its atexit hooks (the stage timers').
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=30)


def _ms(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1000 for v in values)
    return {
        "p50": round(statistics.median(ms), 2),
        "p99": round(ms[max(0, int(len(ms) * 0.99) - 1)], 2),
        "max": round(ms[-1], 2),
    }


def _per_call(before: float | None, after: float | None, calls: int) -> float | None:
    if before is None or after is None:
        return None
    return round((after - before) * 1000 / calls, 3)


def work_floor_us(url: str, directory: Path, provider_url: str, repeat: int = 2000) -> float:
    """The bare work of one paid call (see the module), microseconds of this process's CPU:
    the client side's only, as the server's figure is its process's only."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )

    key = Ed25519PrivateKey.generate()
    base = b"x" * 400  # an RFC 9421 signature base of a forecast request is about this size
    statement = json.dumps({"call": str(uuid.uuid4()), "forecast": FORECAST} | _CHECKS).encode()
    reservation, settlement = statement.hex()[:300], statement.hex()[:3000]
    commit, close = bare_commit(url, directory)

    async def calls(count: int) -> None:
        http = Http(provider_url, {})
        try:
            for _ in range(count):
                commit(reservation)
                key.sign(base)
                status, body = await http.request("GET", PATH)
                if status != 200:
                    raise SystemExit(f"The provider answered {status} to the floor's request.")
                json.loads(body)
                key.sign(statement)
                commit(settlement)
        finally:
            await http.close()

    try:
        asyncio.run(calls(200))
        started = time.process_time()
        asyncio.run(calls(repeat))
        return (time.process_time() - started) / repeat * 1e6
    finally:
        close()


#: A receipt's checks, roughly: its statement is about 3 KB (eight checks with their reasons).
_CHECKS = {
    "checks": [
        {
            "name": f"check_{n}",
            "authority": "deterministic",
            "verdict": "PASS",
            "evidence": ["sha256:" + "0" * 64],
            "reason": "3 value(s) met the rule " * 4,
        }
        for n in range(8)
    ]
}


async def spread(
    services: list[Service],
    key: str,
    calls: int,
    clients: int,
    tasks: Sequence[str] = (),
    finalized: list[float] | None = None,
) -> list[float]:
    """``calls`` closed-loop calls shared by the ``services`` (one ``serve`` process each, on
    one database), ``clients`` clients in all, each process its share of both; and, as many
    clients again, the caller's finalizes of ``tasks`` (each process its share; when each
    share ended is added to ``finalized``): the calls' latencies."""
    finalized = [] if finalized is None else finalized
    n = len(services)
    each = max(1, clients // n)

    async def finalizing(base: str, share: list[str]) -> list[float]:
        latencies = await drive(base, key, share, each)
        finalized.append(time.perf_counter())
        return latencies

    shares = await asyncio.gather(
        *(closed_loop(s.base, key, calls // n, each) for s in services),
        *(finalizing(s.base, list(tasks[i::n])) for i, s in enumerate(services) if tasks),
    )
    return [latency for share in shares[:n] for latency in share]


def _cpu_sum(services: list[Service]) -> float | None:
    spent = [s.cpu() for s in services]
    return None if None in spent else sum(x for x in spent if x is not None)


def deadlocks(url: str) -> int | None:
    """How many deadlocks PostgreSQL has broken in this database (None on SQLite)."""
    if not url.startswith("postgresql"):
        return None
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.exec_driver_sql(
                "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
            ).scalar_one()
    finally:
        engine.dispose()
    return int(found)


def closed_loop_figures(
    services: list[Service],
    provider: subprocess.Popen[bytes],
    key: str,
    args: argparse.Namespace,
    tasks: list[str],
) -> dict[str, Any]:
    """(1) closed loop: the most the gateway sustains, in segments (CPU per call and memory
    after each, so a cost that grows with the calls already made shows as a rising figure);
    with several processes on one PostgreSQL database, their CPU summed and the deadlocks
    PostgreSQL broke meanwhile. With ``tasks``, the caller finalizes them meanwhile, each
    process its share, through as many clients again (``--finalizes``)."""
    url = args.db or ""
    broken0 = deadlocks(url)
    cpu0, peer0, me0 = _cpu_sum(services), _cpu_seconds(provider.pid), time.process_time()
    machine0 = machine_cpu()
    started = time.perf_counter()
    latencies, segments, memory, finalized = [], [], [], []
    size = max(len(services), args.calls // args.segments // len(services) * len(services))
    for _ in range(args.segments):
        before = _cpu_sum(services)
        latencies += asyncio.run(spread(services, key, size, args.clients, tasks, finalized))
        segments.append(_per_call(before, _cpu_sum(services), size))
        memory.append(_rss_kb(services[0].process.pid))
    elapsed = time.perf_counter() - started
    cpu1, peer1, me1 = _cpu_sum(services), _cpu_seconds(provider.pid), time.process_time()
    machine1 = machine_cpu()
    done = size * args.segments
    figures: dict[str, Any] = {
        "calls": done,
        "clients": args.clients,
        "processes": len(services),
        "quality_terms": args.terms,
        "per_second": round(done / elapsed, 1),
        "finalizes": len(tasks),
        "finalizes_per_second": round(len(tasks) / (max(finalized) - started), 1) if tasks else 0,
        "latency_ms": _ms(latencies),
        "server_cpu_ms_per_call": _per_call(cpu0, cpu1, done),
        "provider_cpu_ms_per_call": _per_call(peer0, peer1, done),
        "client_cpu_ms_per_call": round((me1 - me0) * 1000 / done, 3),
    }
    if machine0 is not None and machine1 is not None:
        # The whole machine's, every core (the server, the database, the provider and this
        # driver): the share busy, and its CPU a call; less the three above, the database's.
        busy = machine1[0] - machine0[0]
        figures["machine_busy"] = round(busy / max(machine1[1] - machine0[1], 1e-9), 2)
        figures["machine_cpu_ms_per_call"] = round(busy * 1000 / done, 3)
    if args.segments > 1 and segments[0] and segments[-1]:
        figures["server_cpu_ms_per_call_by_segment"] = segments
        figures["last_over_first"] = round(segments[-1] / segments[0], 2)
        figures["server_rss_kb_by_segment"] = memory
    figures["server_peak_rss_kb"] = _peak_kb(services[0].process.pid)
    if broken0 is not None:
        time.sleep(1.5)  # a backend reports its counts within a second of its transaction
        broken1 = deadlocks(url)
        figures["deadlocks"] = None if broken1 is None else broken1 - broken0
    return figures


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Seed, serve, drive, measure."""
    tmp = tempfile.TemporaryDirectory()
    directory = Path(tmp.name)
    url = args.db or f"sqlite:///{directory / 'bench.db'}"
    provider_port, direct_port = _port(), _port()
    provider_url = f"http://127.0.0.1:{provider_port}"
    direct_url = provider_url if args.provider == "raw" else f"http://127.0.0.1:{direct_port}"
    key, tasks = seed(url, provider_url, args.terms, args.finalizes)
    figures: dict[str, Any] = {
        "database": url.split(":", 1)[0],
        "provider": args.provider,
        "cpus": os.cpu_count(),
    }
    services = [Service(url, directory, args.threads, {}) for _ in range(args.processes)]
    service = services[0]
    provider = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve-provider",
            str(provider_port),
            "--provider",
            args.provider,
            "--jwks-url",
            f"{service.base}/.well-known/assay-request-keys.json",
            "--direct-port",
            str(direct_port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(f"{direct_url}{PATH}")
        asyncio.run(spread(services, key, args.warmup, args.clients))
        figures["closed_loop"] = closed_loop_figures(services, provider, key, args, tasks)
        floor = work_floor_us(url, directory, direct_url)
        server = figures["closed_loop"]["server_cpu_ms_per_call"]
        figures["closed_loop"]["work_floor_us"] = round(floor, 1)
        if server is not None:
            figures["closed_loop"]["server_cpu_over_work_floor"] = round(server * 1000 / floor, 1)
        # (2) open loop at the offered rate: direct and through the gateway, side by side
        if args.latency_calls:
            through, straight = asyncio.run(
                side_by_side(service.base, key, direct_url, args.rate, args.latency_calls)
            )
            gateway_ms, direct_ms = _ms(through), _ms(straight)
            figures["open_loop"] = {
                "offered_per_second": args.rate,
                "calls": args.latency_calls,
                "gateway_ms": gateway_ms,
                "direct_ms": direct_ms,
                "added_ms": {
                    "p50": round(gateway_ms["p50"] - direct_ms["p50"], 2),
                    "p99": round(gateway_ms["p99"] - direct_ms["p99"], 2),
                },
            }
    finally:
        for each in services:
            each.stop()
    if args.stages:
        # (3) the stage timers, in a run of their own (they cost a little themselves)
        path = directory / "stages.json"
        service = Service(url, directory, args.threads, {"ADJUDGE_STAGE_TIMES": str(path)})
        try:
            total = args.warmup + args.stage_calls
            asyncio.run(closed_loop(service.base, key, total, args.clients))
        finally:
            service.stop()
        figures["stages"] = stage_figures(json.loads(path.read_text()), total)
    provider.terminate()
    provider.wait(timeout=10)
    tmp.cleanup()
    return figures


RECEIPT = ["gateway.receipt", "gateway.receipt.sign"]
#: The stages as reported: (label, the timers it sums, the timers it subtracts).
STAGES = [
    ("MCP parse (body, envelope, headers)", ["mcp.parse"], []),
    ("tool, policy and credential read (one read transaction)", ["gateway.read"], []),
    ("argument check and request build", ["gateway.arguments"], []),
    ("reserve (transaction 1)", ["gateway.reserve"], []),
    ("signing (RFC 9421, Ed25519)", ["gateway.sign"], []),
    ("provider round trip (the forwarder's thread)", ["thread:adjudge-forwarder"], []),
    ("verification (contract, policy)", ["gateway.verify"], []),
    ("receipt (determination, canonical JSON, Ed25519, DSSE)", ["gateway.receipt"], []),
    (
        "commit (transaction 2: receipt log, ledger, record)",
        ["gateway.settle"],
        ["gateway.receipt"],
    ),
    ("MCP answer (tool result, JSON)", ["mcp.answer"], []),
]


def stage_figures(raw: dict[str, Any], calls: int) -> dict[str, Any]:
    """The timers' totals as microseconds of CPU per call, and what no stage covers (the HTTP
    server, the framework, thread hand-offs, the caller's authentication)."""
    totals = {name: t["cpu_ns"] for name, t in raw["stages"].items()}
    totals.update({f"thread:{name}": ns for name, ns in raw["threads"].items()})
    out: dict[str, float] = {}
    for label, plus, minus in STAGES:
        ns = sum(totals.get(n, 0) for n in plus) - sum(totals.get(n, 0) for n in minus)
        out[label] = round(ns / calls / 1000, 1)
    covered = sum(out.values())
    process = raw["process"] / calls / 1000
    out["everything else (HTTP server, framework, threads, auth)"] = round(process - covered, 1)
    out["total"] = round(process, 1)
    return {"cpu_us_per_call": out}


def main() -> None:
    """Parse the options, run, report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="Database URL (default: a temporary SQLite file).")
    parser.add_argument("--calls", type=int, default=3000, help="Closed-loop calls timed.")
    parser.add_argument("--clients", type=int, default=16, help="Closed-loop clients.")
    parser.add_argument("--warmup", type=int, default=300, help="Calls before timing.")
    parser.add_argument("--rate", type=float, default=200.0, help="Open-loop calls per second.")
    parser.add_argument("--latency-calls", type=int, default=2000, help="Open-loop calls.")
    parser.add_argument("--threads", type=int, default=0, help="Passed to adjudge serve.")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="adjudge serve processes on the one database (PostgreSQL: --db), the closed "
        "loop's calls and clients shared among them; the deadlocks PostgreSQL broke reported.",
    )
    parser.add_argument("--provider", choices=["raw", "verified"], default="raw")
    parser.add_argument("--stages", action="store_true", help="Also time each stage.")
    parser.add_argument("--terms", action="store_true", help="The provider declares quality terms.")
    parser.add_argument(
        "--segments", type=int, default=1, help="Report the closed loop's CPU per call in parts."
    )
    parser.add_argument("--stage-calls", type=int, default=2000, help="Calls of the stage run.")
    parser.add_argument(
        "--finalizes",
        type=int,
        default=0,
        help="Auto tasks the caller finalizes during the closed loop (it is their agent: each "
        "pays its wallet and the platform's fee), through as many clients again.",
    )
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    parser.add_argument("--serve-provider", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--jwks-url", help=argparse.SUPPRESS)
    parser.add_argument("--direct-port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.processes > 1 and not (args.db or "").startswith("postgresql"):
        parser.error("--processes above 1 needs a PostgreSQL database (--db)")
    if args.processes > 1 and args.stages:
        parser.error("--stages times one process: leave --processes at 1")
    if args.finalizes and args.segments > 1:
        parser.error("--finalizes runs beside one closed loop: leave --segments at 1")
    if args.serve_provider:
        serve_provider(args.serve_provider, args.provider, args.jwks_url, args.direct_port)
        return
    _fast_loop()
    figures = run(args)
    print(json.dumps(figures, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
