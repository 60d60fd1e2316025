"""``kill -9`` under load: the service is killed at random moments while clients post, take,
deliver and finalize tasks, and restarted; clients retry each request with its Idempotency-Key
until it is answered. Afterwards nothing is lost or done twice: every verdict has its receipt,
the signed chain verifies, the ledger balances and holds exactly the deposits, no task is in an
impossible state, and each task a client posted exists once."""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from adjudge.receipts import SigningKey, canonical_bytes, verify_chain
from adjudge.receipts.checkpoints import CHECKPOINT_ABOUT
from adjudge.store import Store, receipt_log
from support import http
from support.audit import audit
from support.live import free_port

KILLS = 5
CLIENTS = 4
ROUNDS = 6  # tasks each client walks through at least, and on until the last kill is done
MAX_ROUNDS = 200
RESULT = "An escrow holds the reward until the work is judged, then pays or refunds it."


class Server:
    """``adjudge serve`` as a child process, restartable on the same database and key."""

    def __init__(self, db: str, key: Path) -> None:
        self.db, self.key, self.port = db, key, free_port()
        self.process: subprocess.Popen[str] | None = None
        self.admin_key: str | None = None

    def start(self) -> None:
        log = self.key.with_suffix(f".{time.monotonic_ns()}.log")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "adjudge.cli",
                "serve",
                "--db",
                self.db,
                "--port",
                str(self.port),
                "--signing-key",
                str(self.key),
                "--server-key",
                str(self.key.with_name("server-key")),
            ],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},  # the key's line before it serves
        )
        deadline = time.monotonic() + 180  # a busy shared machine starts Python slowly
        while time.monotonic() < deadline:
            try:
                up = http.get(f"{self.url}/api/v1/health", timeout=1).status_code == 200
            except httpx.TransportError:
                up = False
            for line in log.read_text().splitlines():  # read after the answer, never before
                if "API key (shown once):" in line:
                    self.admin_key = line.rsplit(" ", 1)[1].strip()
            if up:
                return
            time.sleep(0.05)
        raise AssertionError("the service did not come up:\n" + log.read_text()[-3000:])

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _until_answered(
    server: Server,
    api_key: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    key: str | None = None,
) -> httpx.Response:
    """Send one request, retrying with the same Idempotency-Key until the service answers."""
    headers = {"Authorization": f"Bearer {api_key}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    for _ in range(2000):
        try:
            r = http.request(
                method, server.url + "/api/v1" + path, json=body, headers=headers, timeout=10
            )
        except httpx.TransportError:
            time.sleep(0.05)
            continue
        if r.status_code in (409,) and r.json()["error"]["code"] == "CONCURRENT_UPDATE":
            continue
        assert r.status_code < 500, (path, r.status_code, r.text[:300])
        return r
    raise AssertionError(f"{path} was never answered")


@pytest.mark.slow
def test_kill_9_under_load_loses_nothing_and_doubles_nothing(store: Store, tmp_path: Path) -> None:
    """See the module."""
    _kill_9_under_load(store, tmp_path, processes=1)


@pytest.mark.slow
@pytest.mark.postgres
def test_kill_9_two_processes_on_one_database(store: Store, tmp_path: Path) -> None:
    """The same with two ``serve`` processes on one PostgreSQL database, clients spread over
    both and each killed in turn: their commits chain on lanes of one log, which verifies."""
    if store.dialect != "postgresql":
        pytest.skip("two serve processes share one database on PostgreSQL")
    _kill_9_under_load(store, tmp_path, processes=2)


def _kill_9_under_load(store: Store, tmp_path: Path, *, processes: int) -> None:
    store.dispose()
    key_file = tmp_path / "signing.pem"
    servers = [Server(store.url, key_file)]
    servers[0].start()  # the first makes the key and the admin account
    for _ in range(1, processes):
        servers.append(Server(store.url, key_file))
        servers[-1].start()
    server = servers[0]
    assert server.admin_key is not None
    admin = server.admin_key
    keys: dict[str, str] = {}
    for name, roles in [("pat", ["poster"])] + [(f"a{i}", ["agent"]) for i in range(CLIENTS)]:
        made = _until_answered(
            server, admin, "POST", "/accounts", {"id": name, "roles": roles}, key=f"mk-{name}"
        )
        keys[name] = made.json()["api_key"]
    deposited = 0
    amount = 10_000_000
    r = _until_answered(
        server, admin, "POST", "/accounts/pat/deposits", {"amount": str(amount)}, key="dep-1"
    )
    assert r.status_code == 200
    deposited += amount
    posted: dict[str, str] = {}  # post key -> task id
    lock = threading.Lock()
    done = threading.Event()
    failures: list[str] = []

    def client(i: int) -> None:
        agent = keys[f"a{i}"]
        server = servers[i % len(servers)]
        try:
            n = 0
            while n < ROUNDS or (not done.is_set() and n < MAX_ROUNDS):
                post_key = f"post-{i}-{n}-{uuid.uuid4().hex[:6]}"
                body = {
                    "title": f"crash {i}/{n}",
                    "reward": "1000",
                    "deadline_hours": 24,
                    "mode": "auto",
                    "criteria": {"min_length": 20},
                }
                r = _until_answered(server, keys["pat"], "POST", "/tasks", body, key=post_key)
                assert r.status_code == 201, r.text
                tid = r.json()["id"]
                with lock:
                    posted[post_key] = tid
                for action, body2 in (
                    ("accept", None),
                    ("submissions", {"result": RESULT}),
                    ("finalize", None),
                ):
                    r = _until_answered(
                        server,
                        agent,
                        "POST",
                        f"/tasks/{tid}/{action}",
                        body2,
                        key=f"{action}-{tid}",
                    )
                    assert r.status_code == 200, (action, r.text)
                n += 1
        except AssertionError as exc:
            failures.append(str(exc))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    rng = random.Random(os.getpid())
    kills = 0
    while kills < KILLS and any(t.is_alive() for t in threads):
        time.sleep(rng.uniform(0.2, 1.2))
        victim = servers[kills % len(servers)]
        victim.kill()
        kills += 1
        victim.start()
    done.set()  # the load walks on until here, however fast the machine
    for t in threads:
        t.join(timeout=300)
    for each in servers:
        each.stop()
    assert failures == []
    assert kills == KILLS, f"the load ended after {kills} kills"

    counts = audit(store, deposited)
    with store.read() as tx:
        chain = receipt_log.chain(tx)
        titles = [row[0] for row in tx.conn.exec_driver_sql("SELECT title FROM tasks")]
    assert len(titles) == len(set(titles)) == len(posted) >= CLIENTS * ROUNDS
    lines = [canonical_bytes(dict(r.body["envelope"])) for r in chain]
    fingerprint = SigningKey.from_pem(key_file.read_bytes()).keyid
    report = verify_chain(lines, fingerprint)
    statements = [json.loads(base64.b64decode(r.body["envelope"]["payload"])) for r in chain]
    verdicts = [s for s in statements if s["predicate"].get("about") != CHECKPOINT_ABOUT]
    assert report.count == len(chain) == len(verdicts) + report.checkpoints
    assert len(verdicts) == counts["verdicts"]
    assert all(s["predicate"]["verdict"] == "PASS" for s in verdicts)
    print(
        f"\nkill -9 on {store.dialect}, {processes} process(es): {kills} kills, {len(posted)} "
        f"tasks, {len(chain)} receipts on {len(report.lanes)} lane(s)"
    )
