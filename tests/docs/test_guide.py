"""The getting-started guide cannot rot: its `sh` blocks run, in order, in one shell, against
`adjudge serve --demo` on loopback, with the keys and fingerprint the demo prints, and every
command succeeds."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.store import Store
from support import http
from support.harness import make_harness
from support.live import serving

ROOT = Path(__file__).parent.parent.parent
GUIDE = ROOT / "docs" / "guide" / "getting-started.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


PAID_CALLS = ROOT / "docs" / "guide" / "paid-calls.md"


def _blocks(kind: str, guide: Path = GUIDE) -> list[str]:
    return [body for info, body in BLOCK.findall(guide.read_text(encoding="utf-8")) if info == kind]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_guide_names_only_commands_it_runs() -> None:
    """Every `adjudge …` command the guide shows in a shell session is in a block the test
    runs (the console blocks only start the server and set variables)."""
    runnable = "\n".join(_blocks("sh"))
    assert runnable.count("adjudge ") >= 20
    for block in _blocks("console"):
        for line in block.splitlines():
            assert "adjudge " not in line.removeprefix("$ "), line
    used = set(
        re.findall(r"adjudge (?:--\S+ \S+ )?(task|receipt) (?:--key \S+ )?([a-z-]+)", runnable)
    )
    assert {
        ("receipt", "verify"),
        ("receipt", "verify-chain"),
        ("receipt", "export"),
        ("receipt", "bundle"),
    } <= used


@pytest.mark.slow
def test_the_getting_started_commands_run(tmp_path: Path) -> None:
    """Start the demo as the guide does, then run each `sh` block as a reader would."""
    out = _run_guide(GUIDE, tmp_path)
    # What the guide says happens, happened.
    assert "paid_on_pass" in out and "the draft would fail" in out
    assert "round 2 · submitted" in out and "Five bullet points, please." in out
    assert "VALID receipt" in out and "VALID log:" in out
    assert out.count("paid_on_pass") >= 4  # manual, auto, agent and a panel each paid
    assert "2 of 2: vera PASS, vic not yet" in out  # the panel's first vote
    assert "window    6 hours to submit after taking; the current take lapses at" in out
    assert "SAME: the re-derived statement is byte for byte the signed one" in out  # replayed


@pytest.mark.slow
def test_the_paid_calls_guide_runs(tmp_path: Path) -> None:
    """The demo's paid tool, as the paid-calls guide walks it: calls settle and refund, a
    retry replays, a receipt verifies, a report is upheld, a tool is imported from YAML."""
    out = _run_guide(PAID_CALLS, tmp_path)
    assert out.count("status: settled  verdict: PASS") == 4  # berlin, paris, its replay, show
    assert "status: refunded  verdict: FAIL" in out and "not settled" in out
    assert "refused" in out and "VALID receipt" in out
    assert "report: upheld" in out and "upheld reports: 1" in out
    assert "Registered sky_daily  sky  0.1 USDC  no policy" in out
    assert "call verdict PASS, payment settle" in out and "SAME: the re-derived" in out
    # Corroborated empty answers: shown before paying, confirmed, and contradicted.
    assert "empty answers corroborated by: nimbus_outlook, paid by the provider" in out
    assert "status: settled  verdict: EMPTY_CONFIRMED" in out
    assert "corroborated by: nimbus_outlook (nimbus), nothing found" in out
    assert "corroborated by: nimbus_outlook (nimbus), found results" in out
    assert "contradicted" in out
    # Meaning judges: a split goes to review, a quorum of one cited conflict fails the call.
    assert "meaning judged by: demo-careful, demo-lenient (2 of 2 must cite a conflict)" in out
    assert "split: 1 of 2 judges cited a conflict (demo-careful)" in out
    assert "Sent to review by the meaning judges" in out
    assert "status: refunded  verdict: FAIL" in out and "judged a conflict" in out
    # Judged after the answer: pending at first, then failed and refunded by one pass.
    assert "meaning: pending (judged after the answer" in out
    assert "Judged 1 call(s) after their answers." in out and "meaning: fail" in out


SEALED = ROOT / "docs" / "guide" / "sealed-criteria.md"


@pytest.mark.slow
def test_the_sealed_criteria_guide_runs(tmp_path: Path) -> None:
    """A sealed task as the guide walks it: the commitment shown, the finalize waiting for the
    reveal, the reveal paying, the agent's offline check, the replay, a doctored reveal
    refused and escalated."""
    out = _run_guide(SEALED, tmp_path)
    assert "commitment sha256:" in out and "committed: sha256:" in out
    assert "awaiting_verification" in out and "paid_on_pass" in out
    assert "SEALED: the answer judged is the one committed at posting" in out
    assert "SAME: the re-derived statement is byte for byte the signed one" in out
    assert "the reveal was refused" in out and "status    escalated" in out
    assert "is not the commitment" in out


def test_the_sealed_criteria_guide_names_only_commands_it_runs() -> None:
    """The guide shows no `adjudge` command it does not run, and runs each sealing command."""
    for block in _blocks("console", SEALED):
        for line in block.splitlines():
            assert "adjudge " not in line.removeprefix("$ "), line
    runnable = "\n".join(_blocks("sh", SEALED))
    for command in ("task seal", "--seal", '" reveal "', "task verify-seal", "adjudge replay"):
        assert command in runnable, command


def test_the_paid_calls_guide_names_only_commands_it_runs() -> None:
    for block in _blocks("console", PAID_CALLS):
        for line in block.splitlines():
            assert "adjudge " not in line.removeprefix("$ "), line
    assert len(_blocks("sh", PAID_CALLS)) >= 8


def _run_guide(guide: Path, tmp_path: Path) -> str:
    """Serve a fresh demo, run ``guide``'s `sh` blocks in order in one shell with the keys and
    fingerprint the demo printed; their output (each must succeed)."""
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("ADJUDGE_API_KEY", None)
    serve = [
        sys.executable,
        "-m",
        "adjudge.cli",
        "serve",
        "--demo",
        "--db",
        f"sqlite:///{tmp_path / 'demo.db'}",
        "--port",
        str(port),
        "--signing-key",
        str(tmp_path / "signing-key.pem"),
        "--no-access-log",
        # The walk-throughs run the upkeep's passes themselves where they show one (`adjudge
        # calls judge-pending`): a pass of its own in the middle of a walk would judge a call
        # before the page shows it waiting.
        "--upkeep-seconds",
        "3600",
    ]
    server = subprocess.Popen(
        serve, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        assert server.stdout is not None
        printed = []
        for line in server.stdout:
            printed.append(line)
            if "serving" in line:
                break
        out = "".join(printed)
        keys = dict(re.findall(r"^  (admin|pat|ann|bob|vera|vic|sky)\s+(adj_\S+)$", out, re.M))
        pems = re.findall(r"-----BEGIN PRIVATE KEY-----.*?-----END PRIVATE KEY-----\n", out, re.S)
        pem = re.search(r"-----BEGIN PRIVATE KEY-----.*?-----END PRIVATE KEY-----\n", out, re.S)
        fingerprint = re.search(r"Receipts are signed by key ([0-9a-f]{64})", out)
        assert keys.keys() >= {"admin", "pat", "ann", "vera", "sky"} and pem and fingerprint, out
        (tmp_path / "vera.pem").write_text(pem.group(0))
        (tmp_path / "vera.pem").chmod(0o600)  # as the guide says
        assert len(pems) == 2, out  # vera's, then vic's
        (tmp_path / "vic.pem").write_text(pems[1])
        (tmp_path / "vic.pem").chmod(0o600)
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                if http.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        env.update(
            ADJUDGE_URL=url,
            PAT=keys["pat"],
            ANN=keys["ann"],
            VERA=keys["vera"],
            VIC=keys["vic"],
            ADMIN=keys["admin"],
            SKY=keys["sky"],
            FINGERPRINT=fingerprint.group(1),
        )
        script = "set -euo pipefail\n" + "\n".join(
            f"echo '--- block {i}' >&2\n{body}" for i, body in enumerate(_blocks("sh", guide), 1)
        )
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,  # the paid-calls walk makes some 30 paid calls on a shared machine
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    finally:
        server.terminate()
        server.wait(timeout=10)
    return done.stdout


CLIENT_GUIDE = ROOT / "docs" / "guide" / "python-client.md"


def test_the_python_client_guide_runs(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each `python` block of the client guide runs, in order, in one namespace, against a
    served instance with signed receipts and the real auto check."""
    h = make_harness(sqlite_store, real_checker=True, issuer=SignedReceipts(SigningKey.generate()))
    text = CLIENT_GUIDE.read_text(encoding="utf-8")
    blocks = [body for info, body in BLOCK.findall(text) if info == "python"]
    assert len(blocks) >= 4
    namespace: dict[str, object] = {}
    with serving(h.app) as url:
        monkeypatch.setenv("ADJUDGE_URL", url)
        monkeypatch.setenv("PAT", h.keys["pat"])
        monkeypatch.setenv("ANN", h.keys["ann"])
        for number, block in enumerate(blocks, 1):
            exec(compile(block, f"{CLIENT_GUIDE.name} block {number}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "completed paid_on_pass" in printed and "ILLEGAL_TRANSITION" in printed
    assert "Did you mean `min_length`?" in printed
