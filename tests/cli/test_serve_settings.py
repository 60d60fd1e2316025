"""``adjudge serve`` and ``adjudge webhooks deliver`` read their settings through one object:
each flag is a setting, `--config`/ADJUDGE_CONFIG names the file, flags beat the environment,
which beats the file; a bad value is a code and a sentence on standard error and exit 2."""

from __future__ import annotations

import gc
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from adjudge.app import App
from adjudge.cli import app as cli
from adjudge.service.http11 import BoundedHttpTools
from adjudge.settings import Settings, flag_name, has_flag
from adjudge.store import open_store


@pytest.fixture(autouse=True)
def _no_adjudge_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts from an environment that names no setting and no file."""
    for name in os.environ:
        if name.startswith("ADJUDGE_") and (
            name == "ADJUDGE_CONFIG" or name[8:].lower() in Settings.model_fields
        ):
            monkeypatch.delenv(name)


def _options(command: str, *group: str) -> dict[str, list[str]]:
    """A command's options: each parameter's name to its flags (``--x`` and ``--no-x``)."""
    found: Any = typer.main.get_command(cli)
    for name in (*group, command):
        found = found.commands[name]
    return {p.name: [*p.opts, *p.secondary_opts] for p in found.params}


def test_every_serve_flag_is_a_setting_and_every_setting_a_flag() -> None:
    """``serve``'s flags are the settings' (spelled as the table says), plus `--config` and
    the `--demo` act; tuning settings have none."""
    options = _options("serve")
    assert options.pop("config") == ["--config"] and options.pop("demo") == ["--demo"]
    wanted = {
        name: flag_name(name, field).split("/")
        for name, field in Settings.model_fields.items()
        if has_flag(field)
    }
    assert options == wanted


def test_deliver_flags_are_settings_too() -> None:
    """``webhooks deliver`` takes `--db`, `--server-key` and `--allow-private` for the
    settings `db`, `server_key` and `webhooks_allow_private`."""
    options = _options("deliver", "webhooks")
    assert set(options) == {"config", "db", "server_key", "once", "allow_private"}
    assert options["allow_private"] == ["--allow-private", "--no-allow-private"]


def test_serve_help_shows_each_settings_default_and_variable() -> None:
    """The help of a flag is its setting's: the description, the default, the variable."""
    shown = CliRunner().invoke(cli, ["serve", "--help"], env={"COLUMNS": "300"}).output
    assert "Platform fee in basis points" in shown and "ADJUDGE_FEE_BPS" in shown
    assert "[default: 1000;" in shown and "ADJUDGE_CONFIG" in shown


def _served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str]
) -> tuple[App, dict[str, Any]]:
    """Run ``adjudge serve`` until it would serve: the app it built and uvicorn's arguments."""
    seen: dict[str, Any] = {}

    def run(asgi: Any, **kwargs: Any) -> None:
        seen.update(kwargs, app=asgi.state.adjudge, frozen=gc.get_freeze_count())

    monkeypatch.setattr("uvicorn.run", run)
    monkeypatch.chdir(tmp_path)  # the key files' defaults are relative to the working directory
    try:
        r = CliRunner().invoke(cli, ["serve", "--no-access-log", *args], env=env)
    finally:
        gc.unfreeze()  # what serve froze is this test process's: the collector's again
    assert r.exit_code == 0, r.output
    app = seen.pop("app")
    assert isinstance(app, App)
    app.close()
    return app, seen


def test_serve_takes_the_file_the_environment_and_the_flags_in_that_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file sets four settings, the environment overrides two, a flag overrides one; the
    served app and uvicorn got the result."""
    config = tmp_path / "adjudge.toml"
    config.write_text(
        f'db = "sqlite:///{tmp_path / "a.db"}"\nfee_bps = 700\ntake_limit = 7\nport = 9001\n'
        "webhooks = false\n",
        encoding="utf-8",
    )
    env = {"ADJUDGE_TAKE_LIMIT": "8", "ADJUDGE_PORT": "9002"}
    app, uvicorn = _served(tmp_path, monkeypatch, ["--config", str(config), "--port", "9003"], env)
    s = app.settings
    assert (s.fee_bps, s.take_limit, s.port, s.webhooks) == (700, 8, 9003, False)
    assert (uvicorn["host"], uvicorn["port"]) == ("127.0.0.1", 9003)
    # A request's head and body bounded, and an address's connections (service.http11).
    assert issubclass(uvicorn["http"], BoundedHttpTools)
    assert uvicorn["http"].per_address == s.connections_per_address == 64
    assert (tmp_path / "a.db").exists() and (tmp_path / "adjudge-signing-key.pem").exists()


def test_serve_freezes_what_it_made_to_start_before_it_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The modules, the app and what they hold live as long as the process: frozen before
    serving, the collector's full passes (every few seconds under load) no longer walk them."""
    gc.unfreeze()
    _, uvicorn = _served(tmp_path, monkeypatch, ["--db", f"sqlite:///{tmp_path / 'a.db'}"], {})
    assert uvicorn["frozen"] > 10_000
    assert gc.get_freeze_count() == 0


def test_serve_reads_the_file_adjudge_config_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADJUDGE_CONFIG names the file when `--config` does not; the app's webhooks and gateway
    read their settings from it."""
    config = tmp_path / "deploy.toml"
    config.write_text(
        f'db = "sqlite:///{tmp_path / "b.db"}"\nwebhooks_allow_private = true\n'
        "webhooks_max_endpoints = 3\nallow_private_providers = true\n",
        encoding="utf-8",
    )
    app, _ = _served(tmp_path, monkeypatch, ["--no-webhooks"], {"ADJUDGE_CONFIG": str(config)})
    assert app.webhooks.settings.allow_private and app.webhooks.settings.max_endpoints == 3
    assert app.settings.allow_private_providers


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (["--fee-bps", "5000"], {}, "INVALID_FEE: --fee-bps 5000: "),
        ([], {"ADJUDGE_TAKE_LIMIT": "0"}, "INVALID_TAKE_LIMIT: ADJUDGE_TAKE_LIMIT=0: "),
        (["--price-notice-hours", "3000"], {}, "INVALID_SETTING: --price-notice-hours 3000: "),
        (["--config", "missing.toml"], {}, "FILE_UNREADABLE: cannot read the settings file"),
        (["--config", "switch.toml"], {}, "INVALID_SETTING: port = True in switch.toml: "),
        ([], {"ADJUDGE_UPKEEP_SECONDS": "1e10"}, "INVALID_SETTING: ADJUDGE_UPKEEP_SECONDS=1e10"),
        ([], {"ADJUDGE_PORT": "8_000"}, "INVALID_SETTING: ADJUDGE_PORT=8_000: this setting is a"),
        ([], {"ADJUDGE_WEBHOOKS": "yes"}, "INVALID_SETTING: ADJUDGE_WEBHOOKS=yes: this setting is"),
        ([], {"ADJUDGE_UPKEEP_SECONDS": "nan"}, "INVALID_SETTING: ADJUDGE_UPKEEP_SECONDS=nan: "),
        (["--threads", "1000000"], {}, "INVALID_SETTING: --threads 1000000: "),
        ([], {"ADJUDGE_CONFIG": "typo.toml"}, "CONFIG_FILE_INVALID: the settings file typo"),
    ],
)
def test_serve_refuses_a_bad_setting_with_its_code_and_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    said: str,
) -> None:
    """A bad value from any layer stops `serve` before it opens anything: its code and a
    sentence on standard error, exit 2, no traceback, no database made."""
    monkeypatch.setattr("uvicorn.run", lambda *_, **__: pytest.fail("served"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "typo.toml").write_text("take_limt = 3\n", encoding="utf-8")
    (tmp_path / "switch.toml").write_text("port = true\n", encoding="utf-8")
    r = CliRunner().invoke(cli, ["serve", *args], env=env)
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr.startswith(said), r.stderr
    assert not (tmp_path / "adjudge.db").exists()
    assert not (tmp_path / "adjudge-signing-key.pem").exists()


def test_deliver_reads_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`webhooks deliver --once` finds the database and server key the settings file names."""
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "adjudge.toml"
    config.write_text(
        f'db = "sqlite:///{tmp_path / "c.db"}"\nserver_key = "{tmp_path / "sk"}"\n',
        encoding="utf-8",
    )
    r = CliRunner().invoke(cli, ["webhooks", "deliver", "--once", "--config", str(config)])
    assert r.exit_code == 2 and f"No server key at {tmp_path / 'sk'}" in r.stderr
    bad = CliRunner().invoke(
        cli, ["webhooks", "deliver", "--once"], env={"ADJUDGE_WEBHOOKS_BATCH": "0"}
    )
    assert bad.exit_code == 2 and bad.stderr.startswith("INVALID_SETTING: ADJUDGE_WEBHOOKS_BATCH=0")


def test_serve_sizes_the_regex_pool_from_its_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADJUDGE_REGEX_WORKERS reaches the pool through the settings (the pool itself reads no
    environment); a bad count is refused before anything starts."""
    from adjudge.autocheck import _sandbox, jsregex  # noqa: PLC0415

    monkeypatch.setattr(_sandbox, "_pool", _sandbox._Pool(2))
    env = {"ADJUDGE_REGEX_WORKERS": "3", "ADJUDGE_DB": f"sqlite:///{tmp_path / 'r.db'}"}
    _served(tmp_path, monkeypatch, ["--no-webhooks"], env)
    assert jsregex.pool_size() == 3
    r = CliRunner().invoke(cli, ["serve"], env={"ADJUDGE_REGEX_WORKERS": "0"})
    assert r.exit_code == 2 and r.stderr.startswith("INVALID_SETTING: ADJUDGE_REGEX_WORKERS=0")


@pytest.mark.parametrize(
    "db",
    [
        "nonsense",
        "sqlite:////nonexistent/folder/x.db",
        "postgresql+psycopg://u:pw1234@127.0.0.1:1/x",
    ],
)
def test_serve_refuses_a_database_it_cannot_open_with_a_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    """A URL no driver reads, a file in a missing folder, a server that does not answer:
    `STORAGE_ERROR` and what went wrong, exit 2, no traceback, and never the URL's password."""
    monkeypatch.setattr("uvicorn.run", lambda *_, **__: pytest.fail("served"))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["serve", "--db", db])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr.startswith("STORAGE_ERROR: "), r.stderr
    assert "pw1234" not in r.output and "Traceback" not in r.output


def test_serve_refuses_a_database_a_newer_adjudge_migrated_with_a_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revision this adjudge does not know: `STORAGE_ERROR` saying so, exit 2."""
    path = tmp_path / "x.db"
    open_store(f"sqlite:///{path}").dispose()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE alembic_version SET version_num = '0999'")
    monkeypatch.setattr("uvicorn.run", lambda *_, **__: pytest.fail("served"))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["serve", "--db", f"sqlite:///{path}"])
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr.startswith("STORAGE_ERROR: ") and "newer adjudge" in r.stderr, r.stderr
