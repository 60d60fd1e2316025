"""``adjudge worker``: a client of the service that signs each verdict with the verifier's key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.receipts import SigningKey
from adjudge.store import Store
from support.harness import make_harness
from support.live import free_port, serving
from support.model_server import completion, model_server, user_data


def passes(request: dict[str, Any]) -> tuple[int, str, float]:
    data = user_data(request)
    quotes = [{"from": "brief", "text": data["brief"][:5]}, {"from": "result", "text": "summary"}]
    return 200, completion(json.dumps({"passed": True, "reasons": [], "quotes": quotes})), 0.0


def test_the_worker_is_a_client_that_needs_the_verifiers_key(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """No key, a key file others may read, a key the verifier did not register, the wrong
    account or no service: exit 2 before judging, saying why; with the verifier's API key and
    registered key it judges."""
    h = make_harness(sqlite_store)
    tid = h.post("agent")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the summary."})
    vera = tmp_path / "vera.pem"
    vera.write_bytes(h.signers["vera"].to_pem())
    other = tmp_path / "other.pem"
    other.write_bytes(SigningKey.generate().to_pem())
    other.chmod(0o600)
    runner = CliRunner()
    with serving(h.app) as service, model_server(passes) as (url, seen):

        def run(*args: str, at: str = service, key: str = h.keys["vera"]) -> tuple[int, str, str]:
            base = ["worker", "--url", at, "--key", key, "--base-url", url, "--model", "m"]
            r = runner.invoke(app, [*base, "--once", *args])
            assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
            return r.exit_code, r.stdout, r.stderr

        code, _, err = run()
        assert code == 2 and "--verifier-key" in err
        code, _, err = run("--verifier-key", str(tmp_path / "missing.pem"))
        assert code == 2 and "Cannot read the verifier key file" in err
        vera.chmod(0o644)  # as written under the usual umask: open to every account
        code, _, err = run("--verifier-key", str(vera))
        assert code == 2 and "KEY_FILE_UNPROTECTED" in err and f"chmod 600 {vera}" in err
        vera.chmod(0o600)
        code, _, err = run("--verifier-key", str(other))
        assert code == 2 and "active key is" in err
        code, _, err = run("--verifier-key", str(vera), key=h.keys["bob"])
        assert code == 2 and "not a verifier" in err
        code, _, err = run("--verifier-key", str(vera), key="adj_wrong")
        assert code == 2 and "UNAUTHORIZED" in err
        nowhere = f"http://127.0.0.1:{free_port()}"
        code, _, err = run("--verifier-key", str(vera), at=nowhere)
        assert code == 2 and "Cannot reach the service" in err and "adjudge serve" in err
        assert seen == []
        code, out, _ = run("--verifier-key", str(vera))
        assert code == 0 and f"judged   {tid}" in out, out
    view = h.ok("pat", "GET", f"/tasks/{tid}")
    assert view["ending"] == "paid_on_pass"
    signed = view["verdicts"][0]["verification_result"]["verifier_signature"]
    assert signed["public_key"] == h.signers["vera"].public_key.to_base64()


@pytest.mark.parametrize("option", ["--poll", "--timeout"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-5", "1e300", "soon"])
def test_a_wait_that_is_no_number_of_seconds_exits_2_naming_its_option(
    option: str, value: str
) -> None:
    """``--poll`` and ``--timeout`` are seconds above 0, finite, at most a day: anything else
    exits 2 naming the option before anything is read or called (``--poll nan`` crashed the
    worker in ``time.sleep`` after its first round, ``--poll 0`` polled without pause)."""
    r = CliRunner().invoke(app, ["worker", "--model", "m", "--key", "k", f"{option}={value}"])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert f"'{option}'" in r.stderr and "number of seconds" in r.stderr, r.stderr


def test_a_wait_in_seconds_is_read_as_a_number() -> None:
    """A fraction of a second is a wait: the command goes on to its next question."""
    r = CliRunner().invoke(app, ["worker", "--model", "m", "--key", "k", "--poll", "0.5"])
    assert r.exit_code == 2 and "--verifier-key" in r.stderr, r.stderr
