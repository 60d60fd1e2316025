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
import pytest
from click.testing import Result
from typer.testing import CliRunner

from adjudge.cli import app, keyfiles
from adjudge.cli.serve import _keys
from adjudge.cli.webhooks import server_box
from adjudge.gateway.sealed import SecretBox
from adjudge.receipts import SigningKey
from support import http


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
                r = http.get(f"http://127.0.0.1:{port}/api/v1/tasks", headers=headers)
                break
            except httpx.ConnectError:
                time.sleep(0.05)
        assert r.status_code == 200
        modes = {t["mode"] for t in r.json()["tasks"]}
        assert {"manual", "agent"} <= modes
        http.get(f"http://127.0.0.1:{port}/api/v1/nowhere", headers={"X-Request-Id": "abc-1"})
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


@pytest.fixture(autouse=True)
def _never_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal the command missed fails the test here instead of serving for ever."""

    def served(*_: object, **__: object) -> None:
        raise AssertionError("the command served instead of refusing")

    monkeypatch.setattr("uvicorn.run", served)


def _serve(tmp_path: Path, signing: Path, server: Path) -> Result:
    """`adjudge serve` on a fresh SQLite file with these key files (it stops before serving
    when it refuses them)."""
    db = f"sqlite:///{tmp_path / 'refused.db'}"
    args = ["serve", "--db", db, "--signing-key", str(signing), "--server-key", str(server)]
    return CliRunner().invoke(app, args)


def _refused(r: Result, code: str) -> str:
    """Exit 2 with ``code`` and a sentence on standard error, not a traceback."""
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr.startswith(f"{code}: "), r.stderr
    return r.stderr


@pytest.mark.parametrize("which", ["signing", "server"])
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_key_file_open_to_others_is_refused(tmp_path: Path, which: str, mode: int) -> None:
    """A signing or server key file its group or others may read or write is refused with
    the chmod that fixes it, and nothing is made beside it."""
    signing, server = tmp_path / "signing.pem", tmp_path / "server-key"
    if which == "signing":
        signing.write_bytes(SigningKey.generate().to_pem())
        signing.chmod(mode)
    else:
        server.write_text(SecretBox.key_to_text(SecretBox.generate_key()) + "\n")
        server.chmod(mode)
    path = signing if which == "signing" else server
    err = _refused(_serve(tmp_path, signing, server), "KEY_FILE_UNPROTECTED")
    assert f"mode {mode:04o}" in err and f"chmod 600 {path}" in err
    assert not (server if which == "signing" else signing).exists()
    assert not (tmp_path / "refused.db").exists()


@pytest.mark.parametrize("content", ["nope\n", "", "\xff\xfe", "c2hvcnQ\n"])
def test_a_malformed_server_key_makes_no_signing_key(tmp_path: Path, content: str) -> None:
    """A server key file that holds no valid key is refused before a signing key is made."""
    signing, server = tmp_path / "signing.pem", tmp_path / "server-key"
    server.write_bytes(content.encode("latin-1"))
    server.chmod(0o600)
    err = _refused(_serve(tmp_path, signing, server), "SECRET_KEY_INVALID")
    assert str(server) in err
    assert not signing.exists()


def test_a_malformed_signing_key_makes_no_server_key(tmp_path: Path) -> None:
    """A signing key file that is not a PEM private key is refused, naming the file, before
    a server key is made."""
    signing, server = tmp_path / "signing.pem", tmp_path / "server-key"
    signing.write_text("not a key")
    signing.chmod(0o600)
    err = _refused(_serve(tmp_path, signing, server), "KEY_INVALID")
    assert str(signing) in err and not server.exists()


@pytest.mark.parametrize("which", ["signing", "server"])
def test_a_directory_as_a_key_file_is_a_clear_error(tmp_path: Path, which: str) -> None:
    """A directory named as the signing or server key file is exit 2 with a sentence."""
    folder = tmp_path / "keys"
    folder.mkdir()
    signing = folder if which == "signing" else tmp_path / "signing.pem"
    server = folder if which == "server" else tmp_path / "server-key"
    err = _refused(_serve(tmp_path, signing, server), "KEY_FILE_IS_DIRECTORY")
    assert f"{folder} is a directory" in err
    assert not (tmp_path / "signing.pem").exists() and not (tmp_path / "server-key").exists()


def test_key_files_the_service_makes_are_its_owners_alone(tmp_path: Path) -> None:
    """Under a permissive umask, the signing and server key files made are still 0600."""
    signing, server = tmp_path / "signing.pem", tmp_path / "server-key"
    old = os.umask(0o000)
    try:
        key, box = _keys(signing, server)
    finally:
        os.umask(old)
    assert signing.stat().st_mode & 0o777 == 0o600 and server.stat().st_mode & 0o777 == 0o600
    assert _keys(signing, server)[0].keyid == key.keyid  # read back, not made again
    assert _keys(signing, server)[1].key_ids() == box.key_ids()


def test_a_burnt_server_key_never_seals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A burnt key on the first line is refused; below a new key it only opens, and the
    start says so loudly."""
    burnt, fresh = SecretBox.generate_key(), SecretBox.generate_key()
    monkeypatch.setattr(keyfiles, "BURNT_SERVER_KEYS", frozenset({SecretBox.key_id(burnt)}))
    server = tmp_path / "server-key"
    server.write_text(SecretBox.key_to_text(burnt) + "\n")
    server.chmod(0o600)
    err = _refused(_serve(tmp_path, tmp_path / "signing.pem", server), "SERVER_KEY_BURNT")
    assert "Put a new key on the first line" in err
    assert not (tmp_path / "signing.pem").exists()
    server.write_text(f"{SecretBox.key_to_text(fresh)}\n{SecretBox.key_to_text(burnt)}\n")
    capsys.readouterr()
    box = server_box(server)
    assert box.key_ids()[0] == SecretBox.key_id(fresh)
    sealed = SecretBox([burnt]).seal("old", context="c")
    assert box.open_text(sealed, context="c") == "old"  # what it sealed still opens
    warned = capsys.readouterr().err
    assert f"WARNING: {server} still holds the burnt server key {SecretBox.key_id(burnt)}" in warned
