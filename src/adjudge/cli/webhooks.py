"""``adjudge webhooks …``: an account's endpoints and delivery log (a client of the API), and
the delivery worker (``deliver``, which reads the database like ``serve``).

The service is found with ``--url`` (or ``ADJUDGE_URL``) and the caller with ``--key`` (or
``ADJUDGE_API_KEY``). Exit codes: 0 done, 1 refused by the service (its code and message are
printed), 2 bad input or no service.
"""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from adjudge.cli import keyfiles
from adjudge.cli._common import say_if_empty, whole_option
from adjudge.cli._settings import ConfigOption, SettingsCommand, load_settings
from adjudge.errors import Error

if TYPE_CHECKING:
    from adjudge.client import Client
    from adjudge.gateway.sealed import SecretBox

T = TypeVar("T")

webhooks_app = typer.Typer(
    name="webhooks",
    help="Webhook endpoints, their delivery log and replays; and the delivery worker.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add ``webhooks`` to the ``adjudge`` command."""
    app.add_typer(webhooks_app)


@dataclass
class _Options:
    url: str
    key: str | None
    as_json: bool


@webhooks_app.callback()
def _options(
    ctx: typer.Context,
    url: Annotated[
        str, typer.Option(envvar="ADJUDGE_URL", help="The service's base URL.")
    ] = "http://127.0.0.1:8000",
    key: Annotated[str | None, typer.Option(envvar="ADJUDGE_API_KEY", help="Your API key.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full JSON answer.")] = False,
) -> None:
    """Webhook endpoints, their delivery log and replays; and the delivery worker."""
    ctx.obj = _Options(url, key, as_json)


def _call(ctx: typer.Context, fn: Callable[[Client], T]) -> T:
    """Run ``fn`` with a client of the service; a refusal prints ``CODE: message``, exit 1."""
    from adjudge.client import ApiError, Client, ServiceUnavailable  # noqa: PLC0415

    opts = ctx.obj
    assert isinstance(opts, _Options)
    with Client(opts.url, opts.key) as client:
        try:
            return fn(client)
        except ApiError as exc:
            typer.echo(f"{exc.code}: {exc.message}", err=True)
            raise typer.Exit(1) from exc
        except ServiceUnavailable as exc:
            typer.echo(exc.message, err=True)
            raise typer.Exit(2) from exc


def _json(ctx: typer.Context, value: Any) -> bool:
    if ctx.obj.as_json:
        typer.echo(json.dumps(value, indent=2))
        return True
    return False


def _endpoint_line(e: dict[str, Any]) -> str:
    types = ",".join(e["event_types"]) if e.get("event_types") else "all events"
    state = "enabled" if e["enabled"] else f"disabled {e['disabled_at']}"
    return f"{e['id']}  {state}  {e['url']}  ({types})"


def _delivery_line(d: dict[str, Any]) -> str:
    parts = [d["id"], d["type"], d["status"], f"attempts {d['attempts']}/{d['max_attempts']}"]
    if d.get("last_status") is not None:
        parts.append(f"last HTTP {d['last_status']}")
    if d.get("next_attempt_at"):
        parts.append(f"next {d['next_attempt_at']}")
    if d.get("last_error"):
        parts.append(f"error: {d['last_error']}")
    return "  ".join(parts)


@webhooks_app.command("create")
def create(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="The https:// URL to send events to.")],
    event: Annotated[
        list[str] | None,
        typer.Option(
            "--event", metavar="TYPE", help="An event type to send (repeat it); all types without."
        ),
    ] = None,
    description: Annotated[str, typer.Option(help="A note for yourself.")] = "",
) -> None:
    """Register an endpoint and print its signing secret (shown only now: keep it)."""
    made = _call(
        ctx, lambda c: c.create_webhook(url, event_types=event or None, description=description)
    )
    if _json(ctx, made):
        return
    typer.echo(_endpoint_line(made))
    typer.echo(f"Signing secret (shown only now; verify deliveries with it): {made['secret']}")


@webhooks_app.command("list")
def list_endpoints(
    ctx: typer.Context,
    disabled: Annotated[
        bool, typer.Option("--disabled", help="The endpoints you deleted, newest first, by page.")
    ] = False,
    limit: Annotated[
        int | None,
        whole_option(least=1, most=100, help="With --disabled: how many on one page (50)."),
    ] = None,
    cursor: Annotated[
        str | None, typer.Option(help="With --disabled: the page to read (printed under one).")
    ] = None,
) -> None:
    """Your enabled endpoints; with --disabled, the ones you deleted, a page at a time."""
    if not disabled and (limit is not None or cursor is not None):
        raise typer.BadParameter("pages only the deleted endpoints: add --disabled.")
    if disabled:
        page = _call(ctx, lambda c: c.disabled_webhooks(limit=limit or 50, cursor=cursor))
    else:
        page = {"endpoints": _call(ctx, lambda c: c.webhooks()), "next_cursor": None}
    if _json(ctx, page):
        return
    if not page["endpoints"]:
        kind = "disabled endpoints" if disabled else "endpoints"
        typer.echo(f"No {kind}." if cursor is None else f"No more {kind}.")
    for e in page["endpoints"]:
        typer.echo(_endpoint_line(e))
    if page["next_cursor"]:
        more = f"More: adjudge webhooks list --disabled --cursor {page['next_cursor']}"
        typer.echo(more, err=True)


@webhooks_app.command("delete")
def delete(ctx: typer.Context, endpoint_id: str) -> None:
    """Disable an endpoint for good (its pending deliveries end failed)."""
    gone = _call(ctx, lambda c: c.delete_webhook(endpoint_id))
    if not _json(ctx, gone):
        typer.echo(_endpoint_line(gone))


@webhooks_app.command("test")
def test(ctx: typer.Context, endpoint_id: str) -> None:
    """Queue a webhook.test event for an endpoint."""
    queued = _call(ctx, lambda c: c.test_webhook(endpoint_id))
    if not _json(ctx, queued):
        typer.echo(_delivery_line(queued))


@webhooks_app.command("deliveries")
def deliveries(
    ctx: typer.Context,
    endpoint: Annotated[str | None, typer.Option(help="One endpoint's deliveries only.")] = None,
    status: Annotated[str | None, typer.Option(help="pending, delivered or failed.")] = None,
    limit: Annotated[int, whole_option(least=1, most=200, help="How many, newest first.")] = 50,
    cursor: Annotated[str | None, typer.Option(help="The next page's cursor.")] = None,
) -> None:
    """Your delivery log: status, attempts, the last answer or error, the next attempt."""
    page = _call(
        ctx, lambda c: c.deliveries(endpoint=endpoint, status=status, limit=limit, cursor=cursor)
    )
    if _json(ctx, page):
        return
    say_if_empty(page, "deliveries", first=cursor is None)
    for d in page["deliveries"]:
        typer.echo(_delivery_line(d))
    if page.get("next_cursor"):
        typer.echo(f"More: --cursor {page['next_cursor']}")


@webhooks_app.command("show")
def show(ctx: typer.Context, delivery_id: str) -> None:
    """One delivery and the event it carries."""
    found = _call(ctx, lambda c: c.delivery(delivery_id))
    if _json(ctx, found):
        return
    typer.echo(_delivery_line(found))
    typer.echo(json.dumps(found.get("payload"), indent=2))


@webhooks_app.command("replay")
def replay(ctx: typer.Context, delivery_id: str) -> None:
    """Send a delivery again now: the same event and webhook-id, signed anew."""
    again = _call(ctx, lambda c: c.replay(delivery_id))
    if not _json(ctx, again):
        typer.echo(_delivery_line(again))


def server_box(path: Path) -> SecretBox:
    """The server key(s) in ``path`` (one base64url key a line: the first seals, every one
    opens), made with a new key, readable by its owner only, if it does not exist.

    The file is checked as :func:`adjudge.cli.keyfiles.read_server_keys` checks it.
    """
    if not keyfiles.present(path):
        keyfiles.write_private(path, keyfiles.new_server_key_text(), "server key file")
        typer.echo(f"Made a server key for sealed secrets: {path}")
    box = keyfiles.read_server_keys(path)
    warn_burnt(path, box)
    return box


def warn_burnt(path: Path, box: SecretBox) -> None:
    """Say loudly, on standard error, that ``box`` still opens with a burnt key."""
    for kid in keyfiles.burnt_keys_in(box):
        typer.echo(
            f"WARNING: {path} still holds the burnt server key {kid} (below the first line, "
            "so it only opens). Seal every secret anew and remove that line "
            "(docs/guide/operating.md, A burnt server key).",
            err=True,
        )


@webhooks_app.command("deliver", cls=SettingsCommand)
def deliver(
    config: ConfigOption = None,
    db: Annotated[str | None, typer.Option()] = None,
    server_key: Annotated[Path | None, typer.Option()] = None,
    once: Annotated[
        bool, typer.Option("--once", help="Deliver what is due now, then exit.")
    ] = False,
    allow_private: Annotated[
        bool | None,
        typer.Option(
            "--allow-private/--no-allow-private",
            help="Also send to loopback and private addresses (local tests); the setting "
            "`webhooks_allow_private` (ADJUDGE_WEBHOOKS_ALLOW_PRIVATE).",
        ),
    ] = None,
) -> None:
    """Run the delivery worker: send due events, retry on the schedule, until stopped.

    Several workers (and `adjudge serve` processes) may run against one database: each
    delivery is leased by one at a time. It reads the settings `adjudge serve` does (the same
    --config file and ADJUDGE_* variables).
    """
    from adjudge.app import App, DeliveryWorker  # noqa: PLC0415
    from adjudge.webhooks import Sender  # noqa: PLC0415

    flags = {"db": db, "server_key": server_key, "webhooks_allow_private": allow_private}
    settings = load_settings(flags, config)
    server_key = settings.server_key
    if not keyfiles.present(server_key):
        typer.echo(
            f"No server key at {server_key}: point --server-key at the file `adjudge serve` "
            "made, or endpoint secrets cannot be opened.",
            err=True,
        )
        raise typer.Exit(2)
    try:
        box = server_box(server_key)
        app = App.open(settings.db, settings=settings, secrets=box)
    except Error as exc:
        typer.echo(f"{exc.code}: {exc.message}", err=True)
        raise typer.Exit(2) from exc
    sender = Sender(allow_private=settings.webhooks_allow_private)
    try:
        if once:
            total = 0
            while n := app.webhooks.deliver_due(sender):
                total += n
            counts = app.webhooks.counts()
            typer.echo(
                f"Made {total} attempts; deliveries now: "
                + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            )
            return
        worker = DeliveryWorker(app.webhooks, sender)
        signal.signal(signal.SIGTERM, lambda *_: worker.stop_soon())
        typer.echo(f"Delivering webhooks from {app.dialect}; Ctrl-C stops.")
        with contextlib.suppress(KeyboardInterrupt):
            worker.run()
    finally:
        sender.close()
        app.close()
