"""``adjudge worker`` signs each verdict with the verifier's registered key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.receipts import SigningKey
from adjudge.store import Store
from support.harness import make_harness
from support.model_server import completion, model_server


def passes(request: dict[str, Any]) -> tuple[int, str, float]:
    return 200, completion(json.dumps({"passed": True, "reasons": []})), 0.0


def test_the_worker_needs_the_verifiers_registered_key(sqlite_store: Store, tmp_path: Path) -> None:
    """No key or a key nobody registered: exit 2 before judging; the registered key judges."""
    h = make_harness(sqlite_store)
    tid = h.post("agent")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the summary."})
    service_key = tmp_path / "service.pem"
    service_key.write_bytes(SigningKey.generate().to_pem())
    vera = tmp_path / "vera.pem"
    vera.write_bytes(h.signers["vera"].to_pem())
    other = tmp_path / "other.pem"
    other.write_bytes(SigningKey.generate().to_pem())
    runner = CliRunner()
    with model_server(passes) as (url, seen):

        def run(*args: str) -> tuple[int, str, str]:
            base = ["worker", "--db", sqlite_store.url, "--base-url", url]
            r = runner.invoke(
                app, [*base, "--model", "m", "--signing-key", str(service_key), "--once", *args]
            )
            assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
            return r.exit_code, r.stdout, r.stderr

        code, _, err = run()
        assert code == 2 and "--verifier-key" in err
        code, _, err = run("--verifier-key", str(other))
        assert code == 2 and "No opted-in verifier" in err
        code, _, err = run("--verifier-key", str(other), "--verifier", "vera")
        assert code == 2 and "verifier vera registered" in err
        assert seen == []
        code, out, _ = run("--verifier-key", str(vera))
        assert code == 0 and f"judged   {tid}" in out, out
    view = h.ok("pat", "GET", f"/tasks/{tid}")
    assert view["ending"] == "paid_on_pass"
    signed = view["verdicts"][0]["verification_result"]["verifier_signature"]
    assert signed["public_key"] == h.signers["vera"].public_key.to_base64()
