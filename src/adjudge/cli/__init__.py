"""The ``adjudge`` command: one Typer app; each area registers its commands from its own module.

Each command module exposes ``register(app)``; adding an area is one import and one call below.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="adjudge",
    help="Decide whether paid work gets paid, and prove why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


from adjudge.cli import calls  # noqa: E402  (each area registers after the app exists)

calls.register(app)


@app.callback()
def _root() -> None:
    """Decide whether paid work gets paid, and prove why."""


def main() -> None:
    """Entry point of the ``adjudge`` console script."""
    app()
