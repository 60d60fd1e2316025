"""``adjudge worker``: judge results awaiting a verifier agent with a model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from adjudge.errors import Error


def register(app: typer.Typer) -> None:
    """Add ``worker`` to the ``adjudge`` command."""
    app.command("worker")(worker)


def worker(
    *,
    db: Annotated[str, typer.Option(help="Database URL, as for `adjudge serve`.")] = (
        "sqlite:///adjudge.db"
    ),
    base_url: Annotated[
        str,
        typer.Option(
            envvar="ADJUDGE_MODEL_BASE_URL",
            help="An OpenAI-compatible API base, e.g. http://127.0.0.1:11434/v1.",
        ),
    ] = "http://127.0.0.1:11434/v1",
    model: Annotated[str, typer.Option(envvar="ADJUDGE_MODEL", help="The model name.")] = "",
    api_key: Annotated[
        str | None, typer.Option(envvar="ADJUDGE_MODEL_API_KEY", help="The endpoint's key.")
    ] = None,
    verifier: Annotated[
        list[str] | None,
        typer.Option(help="Judge for this verifier account (repeat); default: all opted in."),
    ] = None,
    signing_key: Annotated[
        Path, typer.Option(help="The receipt signing key `adjudge serve` uses (PEM).")
    ] = Path("adjudge-signing-key.pem"),
    verifier_key: Annotated[
        list[Path] | None,
        typer.Option(
            help="A verifier's private key (PEM), the one its account registered (repeat); "
            "each verdict is signed with it."
        ),
    ] = None,
    poll: Annotated[float, typer.Option(help="Seconds between polls.")] = 5.0,
    once: Annotated[bool, typer.Option(help="Poll once and exit.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the model.")] = 60.0,
) -> None:
    """Poll the agent-review queue, judge each result with the model, record the verdicts."""
    from adjudge.receipts import SigningKey  # noqa: PLC0415 - keep `adjudge --help` fast
    from adjudge.service import Marketplace  # noqa: PLC0415
    from adjudge.service.wiring import SignedReceipts  # noqa: PLC0415
    from adjudge.store import Store  # noqa: PLC0415
    from adjudge.workers import ChatCompletionsJudge, ReviewWorker  # noqa: PLC0415

    if not model:
        typer.echo("Name the model with --model (or ADJUDGE_MODEL).", err=True)
        raise typer.Exit(2)
    if not signing_key.exists():
        typer.echo(f"No signing key at {signing_key}: start `adjudge serve` first.", err=True)
        raise typer.Exit(2)
    if not verifier_key:
        typer.echo(
            "Give each verifier's private key with --verifier-key FILE (the key its account "
            "registered): verdicts are signed as the verifier.",
            err=True,
        )
        raise typer.Exit(2)
    try:
        issuer = SignedReceipts(SigningKey.from_pem(signing_key.read_bytes()))
        keys = [SigningKey.from_pem(path.read_bytes()) for path in verifier_key]
        store = Store(db)
        store.migrate()
    except OSError as exc:
        typer.echo(f"Cannot read a key file: {exc}", err=True)
        raise typer.Exit(2) from exc
    except Error as exc:
        typer.echo(f"{exc.code}: {exc.message}", err=True)
        raise typer.Exit(2) from exc
    with store.read() as tx:
        accounts = [tx.account(v) for v in verifier] if verifier else tx.verifiers()
    held = {key.keyid for key in keys}
    if verifier:
        for name, account in zip(verifier, accounts, strict=True):
            if account is None or account.verifier_key not in held:
                typer.echo(f"No --verifier-key is the key verifier {name} registered.", err=True)
                raise typer.Exit(2)
    served = [a.id for a in accounts if a is not None and a.verifier_key in held]
    if not served:
        typer.echo("No opted-in verifier registered any of these keys.", err=True)
        raise typer.Exit(2)
    judge = ChatCompletionsJudge(base_url, model, api_key, timeout=timeout)
    review = ReviewWorker(Marketplace(store, issuer=issuer), judge, keys=keys, verifiers=verifier)
    typer.echo(f"adjudge worker judging for {', '.join(served)} with {model} at {base_url}")
    while True:
        report = review.poll()
        for name in ("judged", "failed", "gave_up"):
            for task_id in getattr(report, name):
                typer.echo(f"{name:8} {task_id}")
        if once:
            return
        time.sleep(poll)
