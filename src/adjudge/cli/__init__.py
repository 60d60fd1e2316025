"""The ``adjudge`` command: one Typer app; each area registers its commands from its own module.

Each command module exposes ``register(app)``; adding an area is one import and one entry in
``AREAS`` below.
"""

from __future__ import annotations

import typer

from adjudge.cli import calls, check, receipts, serve, tasks, webhooks, worker

AREAS = (check, receipts, calls, serve, tasks, webhooks, worker)

app = typer.Typer(
    name="adjudge",
    help="Decide whether paid work gets paid, and prove why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Decide whether paid work gets paid, and prove why."""


for _area in AREAS:
    _area.register(app)


def main() -> None:
    """Entry point of the ``adjudge`` console script."""
    app()
