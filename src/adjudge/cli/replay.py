"""``adjudge receipt bundle`` and ``adjudge replay``: a verdict with everything it depended on,
re-run offline, the same byte for byte or each difference and its cause.

``receipt bundle`` fetches a task's or a call's bundle from the service with your API key (its
parties and admins only) and writes the zip; ``replay`` needs no service and no network.

Exit codes of ``replay``: 0 the same verdict (the re-derived statement is byte for byte the
signed one), 1 a difference (a changed file, a receipt that does not verify, another engine, an
input the receipt does not bind, another verdict), 2 an unusable bundle or bad input.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from adjudge.cli._common import (
    DEFAULT_URL,
    KeyOption,
    Session,
    UrlOption,
    printable,
    stop,
    wants_json,
    whole_option,
)
from adjudge.cli.receipts import EXIT_BAD_INPUT, pinned_key, read_file
from adjudge.errors import Error

if TYPE_CHECKING:
    from adjudge.replay import Report

# The replay package (the auto check, the market and the calls package behind it) is imported
# by the commands that use it, not when the CLI starts.


def register(app: typer.Typer) -> None:
    """Add ``adjudge replay`` to ``app``, and ``bundle`` to its ``receipt`` group (which
    :mod:`adjudge.cli.receipts` registers first: this module builds on its readers, never the
    reverse)."""
    app.command("replay")(replay_bundle)
    receipt = next(g.typer_instance for g in app.registered_groups if g.name == "receipt")
    assert receipt is not None
    receipt.command("bundle")(receipt_bundle)


def receipt_bundle(
    out: Annotated[Path, typer.Option("--out", "-o", metavar="FILE", help="The zip to write.")],
    task: Annotated[
        str | None, typer.Option(metavar="TASK_ID", help="A task's auto-check verdict.")
    ] = None,
    call: Annotated[
        str | None, typer.Option(metavar="CALL_ID", help="Instead: a paid call's verdict.")
    ] = None,
    attempt: Annotated[
        int | None,
        whole_option(
            least=1, metavar="ROUND", help="With --task: the verdict of this round (the latest)."
        ),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    key: KeyOption = None,
) -> None:
    """Write the replay bundle of a task's or a paid call's verdict, for `adjudge replay`.

    The zip holds the signed receipt, the service's receipt key, the stored result and criteria
    (a task) or the request, response, contract, policy and judgments (a call), the engine's
    versions and a manifest with each file's sha256. Only the task's or call's parties and
    admins may fetch it. Never overwrites a file. Exit 0 written, 1 refused by the service, 2
    bad input or no service.
    """
    if (task is None) == (call is None):
        stop("Name a task (--task TASK_ID) or a call (--call CALL_ID), one of them.")
    if attempt is not None and task is None:
        stop("--attempt names a round of a task; give --task too.")
    session = Session(url, key)
    if task is not None:
        answer = session.call(lambda api: api.task_bundle(task, attempt=attempt))
    else:
        assert call is not None
        answer = session.call(lambda api: api.call_bundle(call))
    from adjudge.replay import from_answer  # noqa: PLC0415

    try:
        data = from_answer(answer)
    except Error as exc:
        stop(str(exc))
    try:
        # Created 0600: a bundle holds what the API shows only to the parties (a call's
        # request and answer, a task's result and hidden criteria).
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except FileExistsError:
        stop(f"FILE_EXISTS: {out} exists; a bundle never overwrites a file. Name another.")
    except OSError as exc:
        stop(f"FILE_UNWRITABLE: cannot write {out}: {exc.strerror}")
    keyid, receipt = answer["key"]["keyid"], answer["receipt"]["id"]
    typer.echo(f"bundle of {answer['subject']} (receipt {receipt}) written to {out}")
    typer.echo(f"signed by key {keyid}")
    typer.echo(f"replay it offline: adjudge replay {out} --key {keyid}")


def replay_bundle(
    ctx: typer.Context,
    bundle_file: Annotated[Path, typer.Argument(metavar="BUNDLE.zip")],
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="Pin the receipt key: its fingerprint, or a public key file (recommended).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Re-run a bundle's verdict offline and compare it with the signed receipt.

    Prints the verdict and what the check said, then SAME (the re-derived statement is byte
    for byte the signed one) or DIFFERENT with each difference and its cause. Exit 0 the same,
    1 different, 2 an unusable bundle or bad input.
    """
    from adjudge.replay import replay  # noqa: PLC0415

    pinned = None if key is None else pinned_key(key)
    data = read_file(bundle_file)
    try:
        report = replay(data, pinned)
    except Error as exc:
        stop(printable(exc), EXIT_BAD_INPUT)  # names what the bundle holds: its text
    if wants_json(ctx, as_json):
        text = json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
        # A lone surrogate (a bundle's manifest may hold one) as its JSON escape: no UTF-8 can
        # carry it, and writing it raw crashed the command (exit 1, read as DIFFERENT).
        typer.echo(text.encode("utf-8", "backslashreplace").decode("utf-8"))
    else:
        _print(report, pinned is not None)
    raise typer.Exit(report.exit_status)


def _print(report: Report, pinned: bool) -> None:
    from adjudge.replay.engine import PARTS  # noqa: PLC0415

    # Every value but the counts comes from the bundle, whose manifest nothing signs; the
    # receipt is named by its signed statement's digest, and the manifest's id is said to be
    # unsigned.
    typer.echo(f"replay of {printable(report.subject)} (receipt {report.receipt_id})")
    if report.receipt_label is not None:
        label = printable(report.receipt_label)
        typer.echo(f"label:    {label} (the service's id, as the manifest says: unsigned)")
    typer.echo(f"key:      {printable(report.keyid)}")
    if not pinned:
        _wrapped(
            "Compare it with the key the service publishes (GET /api/v1/receipts/head), "
            "obtained through a channel you trust, and pin it with --key: a bundle carries its "
            "own key, so unpinned it proves only that the receipt and its inputs agree."
        )
    recorded = printable(", ".join(f"{p} {report.recorded_engine[p]}" for p in PARTS))
    here = ", ".join(f"{p} {report.engine[p]}" for p in PARTS)
    same = "the same here" if recorded == here else f"this replay runs {here}"
    typer.echo(f"engine:   {recorded} (recorded); {same}")
    signed = printable(report.signed_verdict)
    typer.echo(f"verdict:  {report.verdict or 'not re-derived'} (signed {signed})")
    for line in report.lines:
        typer.echo(f"  {printable(line)}")
    for note in report.notes:
        _wrapped(f"note: {note}", indent="")
    if not report.differences:
        typer.echo(
            f"SAME: the re-derived statement is byte for byte the signed one "
            f"({report.statement_digest})"
        )
        return
    count = len(report.differences)
    typer.echo(f"DIFFERENT: {count} {'difference' if count == 1 else 'differences'}")
    for difference in report.differences:
        _wrapped(difference.describe(), indent="  - ")


def _wrapped(text: str, indent: str = "          ") -> None:
    typer.echo(
        textwrap.fill(
            printable(text),
            width=100,
            initial_indent=indent,
            subsequent_indent=" " * max(len(indent), 4),
            break_long_words=False,
            break_on_hyphens=False,
        )
    )
