"""``adjudge criteria lint``: advice on criteria before a task is posted, offline.

Exit codes: 0 no findings, 1 findings (the gaming margin alone is not one: almost every
criteria have some cheap result that passes), 2 a file that cannot be read, is not JSON, or
holds criteria that do not parse (``CRITERIA_INVALID``, ``CRITERIA_OVER_LIMIT``).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from adjudge.cli._common import wants_json
from adjudge.errors import Error
from adjudge.input_files import read_input

EXIT_CLEAN, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2
#: How much of the margin's result the text output shows (``--json`` has all of it).
SHOWN_RESULT_CHARS = 400

out = Console()
err = Console(stderr=True, soft_wrap=True)  # a sentence is never broken to fit 80 columns
criteria_app = typer.Typer(
    help="Advice on criteria before you post: what an agent could game.", no_args_is_help=True
)


def _bad_input(code: str, message: str) -> typer.Exit:
    err.print(f"[bold red]error[/] {code}: {escape(message)}")
    return typer.Exit(EXIT_BAD_INPUT)


def _read(source: str, what: str) -> str:
    try:
        return read_input(source, stdin=True).decode("utf-8")
    except OSError as exc:
        raise _bad_input(
            "FILE_UNREADABLE", f"cannot read {what} {source}: {exc.strerror}."
        ) from exc
    except UnicodeDecodeError as exc:
        raise _bad_input("INVALID_TEXT", f"{what} {source} is not UTF-8 text.") from exc


def _render(answer: dict[str, Any]) -> None:
    findings = answer["findings"]
    if findings:
        noun = "finding" if len(findings) == 1 else "findings"
        out.print(f"[bold yellow]{len(findings)} {noun}[/]")
    else:
        out.print("[bold green]no findings[/]")
    for f in findings:
        refused = " [red](posting refuses this)[/]" if f["posting_refuses"] else ""
        out.print(f"  • [bold]{f['code']}[/] {escape(f['field'])}{refused}")
        indent = " " * 4
        wrapped = textwrap.fill(
            f["message"], max(40, out.width), initial_indent=indent, subsequent_indent=indent
        )
        out.print(Text(wrapped), soft_wrap=True)
    margin = answer["margin"]
    out.print()
    summary = textwrap.fill(f"Gaming margin: {answer['summary']}", max(40, out.width))
    out.print(Text(summary), soft_wrap=True)
    if margin is not None:
        shown = margin["result"]
        if len(shown) > SHOWN_RESULT_CHARS:
            shown = shown[:SHOWN_RESULT_CHARS] + f"… ({margin['length']:,} characters in all)"
        for line in shown.splitlines() or [""]:
            out.print(Text(f"  │ {line}"), soft_wrap=True)
    out.print("[dim]Advice only: it changes no verdict and refuses no post.[/]")


def lint(
    ctx: typer.Context,
    criteria: Annotated[str, typer.Argument(help="Criteria JSON file, or - for standard input.")],
    brief: Annotated[
        Path | None,
        typer.Option(
            "--brief",
            "-b",
            help="A file of the task's brief (text; - for standard input): what an agent "
            "could copy.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON answer.")] = False,
) -> None:
    """Find what an agent could game in CRITERIA, and the gaming margin: the shortest cheap
    result the auto check passes, with its score. Exit 0 no findings, 1 findings, 2 bad file.

    Each finding has a stable code, the field it concerns and what to do. `--json` prints the
    same answer as `POST /api/v1/criteria/lint`. Runs offline: nothing is posted or stored.
    """
    from adjudge.app.criteria import CriteriaAdvice  # noqa: PLC0415 - keep `adjudge --help` fast

    as_json = wants_json(ctx, as_json)
    text = _read(criteria, "criteria")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _bad_input("INVALID_JSON", f"criteria {criteria} is not valid JSON: {exc}.") from exc
    brief_text = _read(str(brief), "brief") if brief is not None else None
    try:
        answer = CriteriaAdvice().lint(raw, brief=brief_text)
    except Error as exc:
        raise _bad_input(exc.code, exc.message) from exc
    if as_json:
        sys.stdout.write(json.dumps(answer, indent=2, ensure_ascii=False) + "\n")
    else:
        _render(answer)
    raise typer.Exit(EXIT_FINDINGS if answer["findings"] else EXIT_CLEAN)


criteria_app.command("lint")(lint)


def register(app: typer.Typer) -> None:
    """Add the ``criteria`` command group to the ``adjudge`` command."""
    app.add_typer(criteria_app, name="criteria")
