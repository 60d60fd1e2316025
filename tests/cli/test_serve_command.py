"""``adjudge serve --demo`` starts a real server on loopback that answers with the demo data."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_demo_on_loopback(tmp_path: Path) -> None:
    """The demo prints keys; the poster's key lists the demo tasks; a second seed is refused."""
    port = _free_port()
    db = f"sqlite:///{tmp_path / 'demo.db'}"
    key = str(tmp_path / "signing-key.pem")
    cmd = [sys.executable, "-m", "adjudge.cli", "serve", "--demo", "--db", db, "--port", str(port)]
    cmd += ["--signing-key", key, "--server-key", str(tmp_path / "server-key")]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        lines: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "serving" in line:
                break
        out = "".join(lines)
        pat = re.search(r"^  pat\s+(\S+)", out, re.M)
        assert pat, out
        assert "Receipts are signed by key" in out and Path(key).exists()
        assert (tmp_path / "server-key").stat().st_mode & 0o777 == 0o600
        assert "Delivering webhooks from this process" in out
        assert "Verifier vera's private key" in out and "BEGIN PRIVATE KEY" in out
        headers = {"Authorization": f"Bearer {pat.group(1)}"}
        for _ in range(100):
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/v1/tasks", headers=headers)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert r.status_code == 200
        modes = {t["mode"] for t in r.json()["tasks"]}
        assert {"manual", "agent"} <= modes
        httpx.get(f"http://127.0.0.1:{port}/api/v1/nowhere", headers={"X-Request-Id": "abc-1"})
    finally:
        proc.terminate()
        rest, _ = proc.communicate(timeout=10)
    # One JSON access line per request, on the server's standard error.
    logged = [json.loads(x) for x in rest.splitlines() if x.startswith('{"time"')]
    listing = next(x for x in logged if x["path"] == "/api/v1/tasks")
    assert listing["status"] == 200 and listing["account"] == "pat"
    assert listing["method"] == "GET" and len(listing["request_id"]) == 32
    missing = next(x for x in logged if x["path"] == "/api/v1/nowhere")
    assert missing["status"] == 404 and missing["request_id"] == "abc-1"
    again = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60, env=env)
    assert again.returncode == 2 and "ACCOUNT_EXISTS" in again.stderr
