"""``adjudge serve``: the HTTP service on an embedded SQLite file, or on PostgreSQL by URL."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from adjudge.cli._common import number_option, whole_option
from adjudge.cli._settings import ConfigOption, SettingsCommand, load_settings
from adjudge.errors import BadInput, Error

if TYPE_CHECKING:
    from adjudge.app import App
    from adjudge.gateway.sealed import SecretBox
    from adjudge.receipts import SigningKey
    from adjudge.settings import Settings


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the ``adjudge`` command."""
    app.command("serve", cls=SettingsCommand)(serve)


def serve(
    *,
    config: ConfigOption = None,
    db: Annotated[str | None, typer.Option()] = None,
    host: Annotated[str | None, typer.Option()] = None,
    port: Annotated[int | None, whole_option()] = None,
    fee_bps: Annotated[int | None, whole_option()] = None,
    price_notice_hours: Annotated[float | None, number_option()] = None,
    upkeep_seconds: Annotated[float | None, number_option()] = None,
    take_limit: Annotated[int | None, whole_option()] = None,
    signing_key: Annotated[Path | None, typer.Option()] = None,
    server_key: Annotated[Path | None, typer.Option()] = None,
    allow_private_providers: Annotated[bool | None, typer.Option()] = None,
    threads: Annotated[int | None, whole_option()] = None,
    connections_per_address: Annotated[int | None, whole_option()] = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="Seed demo accounts and tasks into an empty database (an act, not a setting: "
            "it also lets tools call loopback providers).",
        ),
    ] = False,
    access_log: Annotated[bool | None, typer.Option("--access-log/--no-access-log")] = None,
    webhooks: Annotated[bool | None, typer.Option("--webhooks/--no-webhooks")] = None,
    webhooks_allow_private: Annotated[
        bool | None,
        typer.Option(
            "--webhooks-allow-private/--no-webhooks-allow-private",
        ),
    ] = None,
    judges: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Start the service: migrate the database, print how to reach it, and serve the API.

    On an empty database it creates the first admin account and prints its API key once.
    Each setting comes from its flag, else its ADJUDGE_* environment variable, else the
    --config file, else its default (docs/guide/operating.md lists them).
    """
    # Imported here so the rest of the CLI starts without loading the web stack.
    import uvicorn  # noqa: PLC0415

    from adjudge.app import (  # noqa: PLC0415
        App,
        DeliveryWorker,
        MaintenanceWorker,
    )
    from adjudge.app import maintenance as upkeep  # noqa: PLC0415
    from adjudge.receipts import SignedReceipts  # noqa: PLC0415
    from adjudge.service import (  # noqa: PLC0415
        BoundedHttpTools,
        create_app,
        enable_access_log,
    )
    from adjudge.webhooks import Sender  # noqa: PLC0415

    flags = {
        "db": db,
        "host": host,
        "port": port,
        "fee_bps": fee_bps,
        "price_notice_hours": price_notice_hours,
        "upkeep_seconds": upkeep_seconds,
        "take_limit": take_limit,
        "signing_key": signing_key,
        "server_key": server_key,
        "allow_private_providers": allow_private_providers,
        "threads": threads,
        "connections_per_address": connections_per_address,
        "access_log": access_log,
        "webhooks": webhooks,
        "webhooks_allow_private": webhooks_allow_private,
        "judges": judges,
    }
    settings = load_settings(flags, config)
    _configure_process(settings)
    try:
        if demo:  # the demo's provider answers beside it, on loopback
            settings = settings.model_copy(update={"allow_private_providers": True})
        key, box = _keys(settings.signing_key, settings.server_key)
        app = App.open(
            settings.db,
            settings=settings,
            issuer=SignedReceipts(key),
            secrets=box,
            judges=_judges(
                [j.strip() for j in settings.judges.split(",") if j.strip()],
                demo_port=settings.port if demo else None,
            ),
        )
        upkeep.run_once(app)  # calls a stopped process left pending, holds that matured meanwhile
    except Error as exc:
        typer.echo(f"{exc.code}: {exc.message}", err=True)
        raise typer.Exit(2) from exc
    host, port = settings.host, settings.port
    base = f"http://{host}:{port}"
    provider_secret = None
    if demo:
        provider_secret = _seed_demo(app, base, port)
    else:
        _bootstrap_admin(app)
    typer.echo(f"Receipts are signed by key {key.keyid}")
    worker = None
    if settings.webhooks:
        sender = Sender(allow_private=settings.webhooks_allow_private)
        worker = DeliveryWorker(app.webhooks, sender).start()
        typer.echo("Delivering webhooks from this process (--no-webhooks to leave it to others)")
    # Takes whose window ended lapse even when nobody reads or acts on their task.
    typer.echo(
        f"adjudge serving {base}/api/v1 on {app.dialect}; web UI at {base}/, "
        f"API docs at {base}/docs"
    )

    if settings.access_log:
        enable_access_log()
    asgi = create_app(app, threads=_threads(settings.threads, app.dialect))
    upkeeper = MaintenanceWorker(app).start()
    if provider_secret is not None:
        _mount_demo(asgi, provider_secret)
    # What the process made to start (the modules, their tables, the app) lives as long as it
    # does: frozen, the collector's full passes no longer walk it. Those passes came every few
    # seconds under load and stopped the event loop for 70-80 ms each, finding nothing to free.
    gc.freeze()
    try:
        http = BoundedHttpTools.bounded(settings.connections_per_address)
        uvicorn.run(asgi, host=host, port=port, log_level="warning", http=http)
    finally:
        upkeeper.stop()
        if worker is not None:
            worker.stop()


def _threads(setting: int, dialect: str) -> int:
    """The threads running requests: the setting's, or by default 8 on SQLite, which takes
    one writer at a time (more threads only contend for it and the GIL: at 250 finalizes/s
    offered, p99 16 ms with 8 threads, 81 ms with 40), and 40 on PostgreSQL."""
    if setting:
        return setting
    return 8 if dialect == "sqlite" else 40


def _mount_demo(asgi: Any, provider_secret: str) -> None:
    """Serve the demo's providers and its stand-in meaning judges beside it."""
    from adjudge.service import (  # noqa: PLC0415
        DEMO_JUDGE_MOUNT,
        DEMO_PROVIDER_MOUNT,
        judges_app,
        skycast_app,
    )

    asgi.mount(DEMO_PROVIDER_MOUNT, skycast_app(provider_secret))
    asgi.mount(DEMO_JUDGE_MOUNT, judges_app())


#: The demo's meaning judges (served beside it when no --judges is given): key -> model.
DEMO_JUDGES = {"demo-careful": "careful", "demo-lenient": "lenient"}


def _judges(specs: list[str], *, demo_port: int | None = None) -> dict[str, Any]:
    """The meaning judges of the ``judges`` setting (``KEY=MODEL@BASE_URL``), by key; the
    demo's own two when serving the demo without any."""
    import os  # noqa: PLC0415

    from adjudge.workers import ChatCompletionsCallJudge  # noqa: PLC0415

    if demo_port is not None and not specs:
        base = f"http://127.0.0.1:{demo_port}/demo/judges/v1"
        return {key: ChatCompletionsCallJudge(base, model) for key, model in DEMO_JUDGES.items()}
    judges: dict[str, Any] = {}
    for spec in specs:
        key, _, rest = spec.partition("=")
        model, _, url = rest.partition("@")
        if not key or not model or not url.startswith(("http://", "https://")) or key in judges:
            raise BadInput(
                f"judges: {spec!r} is not KEY=MODEL@BASE_URL (an http(s) URL, each key once).",
                code="INVALID_SETTING",
            )
        judges[key] = ChatCompletionsCallJudge(
            url, model, os.environ.get("ADJUDGE_JUDGE_API_KEY") or None
        )
    return judges


def _configure_process(settings: Settings) -> None:
    """Size what is one per process from the settings, before anything runs on it: the regex
    worker pool, and the stage timers (on when the settings name their file)."""
    from adjudge.app import timing  # noqa: PLC0415
    from adjudge.autocheck import jsregex  # noqa: PLC0415

    jsregex.configure_pool(settings.regex_workers)
    if settings.stage_times is not None:
        timing.enable(settings.stage_times)


def _keys(signing_key: Path, server_key: Path) -> tuple[SigningKey, SecretBox]:
    """The receipt signing key and the server keys, each made (0600) if its file is missing.

    Every key file there is is read and checked before a missing one is made: a malformed
    server key leaves no new signing key behind, and the reverse.
    """
    from adjudge.cli import keyfiles  # noqa: PLC0415
    from adjudge.cli.webhooks import warn_burnt  # noqa: PLC0415
    from adjudge.receipts import SigningKey  # noqa: PLC0415

    box = keyfiles.read_server_keys(server_key) if keyfiles.present(server_key) else None
    key = (
        keyfiles.read_signing_key(signing_key, "signing key file")
        if keyfiles.present(signing_key)
        else None
    )
    if box is None:
        keyfiles.write_private(server_key, keyfiles.new_server_key_text(), "server key file")
        typer.echo(f"Made a server key for sealed secrets: {server_key}")
        box = keyfiles.read_server_keys(server_key)
    if key is None:
        key = SigningKey.generate()
        keyfiles.write_private(signing_key, key.to_pem(), "signing key file")
        typer.echo(f"Made a receipt signing key: {signing_key}")
    warn_burnt(server_key, box)
    return key, box


def _bootstrap_admin(app: App) -> None:
    """On a database without accounts, create the first admin and print its key once."""
    if app.accounts.exist():
        return
    key = app.accounts.create(None, "admin", ["admin"]).value["api_key"]
    typer.echo(f"Created the first admin account 'admin'. Its API key (shown once): {key}")


def _seed_demo(app: App, base: str, port: int) -> str | None:
    """Seed the demo and print what it made; the demo provider's credential (None: none)."""
    from adjudge.app.demo import seed  # noqa: PLC0415
    from adjudge.service import DEMO_PROVIDER_MOUNT as MOUNT  # noqa: PLC0415

    try:
        seeded = seed(app, provider_url=f"http://127.0.0.1:{port}{MOUNT}")
    except Error as exc:
        typer.echo(
            f"{exc.code}: the demo seeds an empty database only ({exc.message}). "
            "Start from a new file, or drop --demo.",
            err=True,
        )
        raise typer.Exit(2) from exc
    typer.echo("Demo accounts (API keys are shown only now):")
    for account_id, key in seeded.keys.items():
        typer.echo(f"  {account_id:6} {key}")
    for account_id, pem in seeded.verifier_keys.items():
        typer.echo(
            f"Verifier {account_id}'s private key (shown only now; save it to a file only "
            "you can read, `chmod 600`, for `adjudge task verdict --verifier-key` or "
            "`adjudge worker --verifier-key`):"
        )
        typer.echo(pem.rstrip("\n"))
    typer.echo("Demo tasks:")
    for task_id, mode, status, note in seeded.tasks:
        typer.echo(f"  {task_id}  {mode:6} {status:22} {note}")
    for note in seeded.skipped:
        typer.echo(f"  (skipped {note})")
    pat = seeded.keys["pat"]
    typer.echo(f"Try:  curl -s -H 'Authorization: Bearer {pat}' {base}/api/v1/tasks")
    typer.echo(f"  or: ADJUDGE_URL={base} ADJUDGE_API_KEY={pat} adjudge task list")
    typer.echo(
        f"Demo paid tool: weather_forecast (0.25 USDC a call) by sky, answering at {base}{MOUNT}; "
        "this demo lets tools call loopback addresses."
    )
    typer.echo(
        f"  call it: ADJUDGE_URL={base} ADJUDGE_API_KEY={seeded.keys['ann']} "
        """adjudge tools call weather_forecast '{"city": "berlin"}'"""
    )
    return seeded.provider_secret
