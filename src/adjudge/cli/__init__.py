"""The ``adjudge`` command: one Typer app; each area registers its commands from its own module.

Each command module exposes ``register(app)``; adding an area is one import and one entry in
``AREAS`` below. Help text is Markdown (Typer's ``markdown`` mode): write `code` in single
backticks, never reStructuredText's double ones, which would show as they are.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from typer import _click, rich_utils
from typer.core import TyperOption

import adjudge
from adjudge import input_files
from adjudge.cli import (
    api_keys,
    calls,
    check,
    criteria,
    gateway,
    receipts,
    replay,
    serve,
    tasks,
    webhooks,
    worker,
)
from adjudge.cli._common import JsonFlag, remember_json

AREAS = (
    check,
    criteria,
    receipts,
    replay,
    calls,
    gateway,
    api_keys,
    serve,
    tasks,
    webhooks,
    worker,
)


def _flag_type(self: TyperOption, ctx: typer.Context) -> str | None:
    # Typer's rich help prints a flag's type as `<bool>`; its plain help prints nothing there,
    # which is what a flag (present or absent) needs. Every other option keeps its type.
    if self.is_flag:
        return None
    return _typed(self, ctx)


_typed = TyperOption.display_type_rich
TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign,assignment]


def _usage_error(error: _click.ClickException) -> None:
    # Typer draws a usage error in a box as wide as the terminal, wrapping its sentence inside;
    # where stderr is not a terminal (a log, a pipe, a CI job) that box would break sentences
    # mid-line, so the error is printed plainly there: the usage, the hint, one line of error.
    if sys.stderr.isatty():
        _boxed(error)
    else:
        error.show()


_boxed = rich_utils.rich_format_error
rich_utils.rich_format_error = _usage_error  # type: ignore[assignment]  # its parameter is `self`

app = typer.Typer(
    name="adjudge",
    help="Decide whether paid work gets paid, and prove why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"adjudge {adjudge.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    as_json: JsonFlag = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Decide whether paid work gets paid, and prove why."""
    remember_json(ctx, as_json)
    input_files.new_command()  # standard input is read once a command, each command anew


for _area in AREAS:
    _area.register(app)


def main() -> None:
    """Entry point of the ``adjudge`` console script."""
    app()
