"""``adjudge worker``: judge, as one verifier agent, the results awaiting it, with a model.

A client of the service: it leases work over the API with the verifier's API key and signs each
verdict with the verifier's private key; it needs no database.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from adjudge.cli._common import seconds
from adjudge.errors import Error


def register(app: typer.Typer) -> None:
    """Add ``worker`` to the ``adjudge`` command."""
    app.command("worker")(worker)


def worker(
    *,
    url: Annotated[
        str, typer.Option(envvar="ADJUDGE_URL", help="The service's base URL.")
    ] = "http://127.0.0.1:8000",
    key: Annotated[
        str | None,
        typer.Option(envvar="ADJUDGE_API_KEY", help="The verifier account's API key."),
    ] = None,
    verifier_key: Annotated[
        Path | None,
        typer.Option(help="The verifier's private key (PEM): the key its account registered."),
    ] = None,
    base_url: Annotated[
        str,
        typer.Option(
            envvar="ADJUDGE_MODEL_BASE_URL",
            help="An OpenAI-compatible API base, e.g. http://127.0.0.1:11434/v1.",
        ),
    ] = "http://127.0.0.1:11434/v1",
    model: Annotated[str, typer.Option(envvar="ADJUDGE_MODEL", help="The model name.")] = "",
    api_key: Annotated[
        str | None, typer.Option(envvar="ADJUDGE_MODEL_API_KEY", help="The model endpoint's key.")
    ] = None,
    poll: Annotated[
        float, typer.Option(parser=seconds, metavar="SECONDS", help="Seconds between polls.")
    ] = 5.0,
    once: Annotated[bool, typer.Option(help="Poll once and exit.")] = False,
    timeout: Annotated[
        float,
        typer.Option(parser=seconds, metavar="SECONDS", help="Seconds to wait for the model."),
    ] = 60.0,
) -> None:
    """Lease the results awaiting this verifier, judge each with the model, post the verdicts."""
    from adjudge.cli import keyfiles  # noqa: PLC0415
    from adjudge.client import Client, ServiceUnavailable  # noqa: PLC0415 - keep --help fast
    from adjudge.workers import ChatCompletionsJudge, ReviewWorker  # noqa: PLC0415

    if not model:
        _stop("Name the model with --model (or ADJUDGE_MODEL).")
    if not key:
        _stop("Give the verifier account's API key with --key (or ADJUDGE_API_KEY).")
    if verifier_key is None:
        _stop(
            "Give the verifier's private key with --verifier-key FILE (the key its account "
            "registered): verdicts are signed as the verifier."
        )
    try:
        signer = keyfiles.read_signing_key(verifier_key, "verifier key file")
    except Error as exc:
        _stop(f"{exc.code}: {exc.message}")
    client = Client(url, key)
    try:
        me = client.me()
    except ServiceUnavailable as exc:
        _stop(f"{exc.message} Is `adjudge serve` running there?")
    except Error as exc:
        _stop(f"{exc.code}: {exc.message}")
    if "verifier" not in me.get("roles", []):
        _stop(f"Account {me.get('id')} is not a verifier.")
    if me.get("verifier_key") != signer.keyid:
        _stop(
            f"Verifier {me.get('id')}'s active key is {me.get('verifier_key')}, but "
            f"--verifier-key holds {signer.keyid}: register it first "
            "(POST /api/v1/accounts/me/verifier-keys)."
        )
    judge = ChatCompletionsJudge(base_url, model, api_key, timeout=timeout)
    review = ReviewWorker(client, judge, signer)
    typer.echo(f"adjudge worker judging for {me['id']} with {model} at {base_url}")
    while True:
        try:
            report = review.poll()
        except ServiceUnavailable as exc:
            typer.echo(f"poll failed: {exc.message}", err=True)
            if once:
                raise typer.Exit(2) from exc
        except Error as exc:
            typer.echo(f"poll refused: {exc.code}: {exc.message}", err=True)
            if once:
                raise typer.Exit(1) from exc
        else:
            for name in ("judged", "failed", "gave_up", "skipped", "unreported"):
                for task_id in getattr(report, name):
                    why = report.why.get(task_id)
                    typer.echo(f"{name:8} {task_id}" + (f"  ({why})" if why else ""))
        if once:
            return
        time.sleep(poll)


def _stop(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(2)
