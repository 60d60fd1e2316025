"""``adjudge webhooks …``: the endpoint and delivery-log commands as clients of a served
instance, and ``deliver`` as the worker on the same database and server key."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from adjudge.app import Settings
from adjudge.cli import app
from adjudge.cli.webhooks import server_box
from adjudge.store import Store
from support.harness import make_harness
from support.live import free_port, serving
from support.receiver import Receiver


def test_webhooks_commands_over_the_api(sqlite_store: Store, tmp_path: Path) -> None:
    """create prints the secret once, list never; test queues an event; deliver --once sends
    it signed; deliveries shows the log; replay and show work; delete disables; refusals exit 1
    with the code, no service exits 2."""
    key_file = tmp_path / "server-key"
    box = server_box(key_file)
    assert key_file.stat().st_mode & 0o777 == 0o600
    h = make_harness(sqlite_store, settings=Settings(webhooks_allow_private=True), secrets=box)
    runner = CliRunner()
    receiver = Receiver().up()
    try:
        with serving(h.app) as service:

            def run(*args: str) -> tuple[int, str, str]:
                base = ["webhooks", "--url", service, "--key", h.keys["pat"]]
                r = runner.invoke(app, [*base, *args])
                assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
                return r.exit_code, r.stdout, r.stderr

            code, out, _ = run("create", receiver.url("pat"), "--event", "webhook.test")
            assert code == 0, out
            secret = re.search(r"(whsec_\S+)", out)
            endpoint = re.search(r"(whep_[0-9a-f]+)", out)
            assert secret and endpoint
            receiver.secrets["/pat"] = secret.group(1)
            code, out, _ = run("list")
            assert code == 0 and endpoint.group(1) in out and "whsec_" not in out
            code, out, _ = run("test", endpoint.group(1))
            assert code == 0 and "pending" in out
            delivery = re.search(r"(whd_[0-9a-f]+)", out)
            assert delivery

            worker = ["webhooks", "deliver", "--db", h.app.store.url, "--once"]
            r = runner.invoke(app, [*worker, "--server-key", str(key_file), "--allow-private"])
            assert r.exit_code == 0 and "delivered 1" in r.stdout, r.stdout
            assert len(receiver.verified("pat")) == 1
            r = runner.invoke(app, [*worker, "--server-key", str(tmp_path / "none")])
            assert r.exit_code == 2 and "No server key" in r.stderr

            code, out, _ = run("deliveries")
            assert code == 0 and "delivered" in out and "attempts 1/10" in out
            code, out, _ = run("--json", "show", delivery.group(1))
            assert code == 0 and '"webhook.test"' in out
            code, out, _ = run("replay", delivery.group(1))
            assert code == 0 and "pending" in out
            code, out, _ = run("delete", endpoint.group(1))
            assert code == 0 and "disabled" in out
            code, out, _ = run("list")
            assert code == 0 and out == "No endpoints.\n"
            code, _, err = run("list", "--limit", "1")  # a page of what? said, not ignored
            assert code == 2 and "add --disabled" in err
            code, out, err = run("list", "--disabled", "--limit", "1")
            assert code == 0 and endpoint.group(1) in out and err == ""
            code, out, _ = run("--json", "list", "--disabled")
            assert code == 0 and '"next_cursor": null' in out and endpoint.group(1) in out
            _, out, _ = run("create", receiver.url("pat"))
            second = re.search(r"(whep_[0-9a-f]+)", out)
            assert second and run("delete", second.group(1))[0] == 0
            code, out, err = run("list", "--disabled", "--limit", "1")  # one moment: by id
            more = re.search(r"--cursor (\S+)", err)
            assert code == 0 and endpoint.group(1) in out and more
            code, out, err = run("list", "--disabled", "--limit", "1", "--cursor", more.group(1))
            assert code == 0 and second.group(1) in out and err == ""
            code, _, err = run("test", endpoint.group(1))
            assert code == 1 and "WEBHOOK_ENDPOINT_DISABLED" in err
            code, _, err = run("create", "ftp://example.com/")
            assert code == 1 and "WEBHOOK_URL_INVALID" in err
        nowhere = f"http://127.0.0.1:{free_port()}"
        r = runner.invoke(app, ["webhooks", "--url", nowhere, "--key", "k", "list"])
        assert r.exit_code == 2 and "Cannot reach the service" in r.stderr
    finally:
        receiver.down()
