"""What the commands that run the service share: the settings file option, flags whose help is
read from :class:`adjudge.settings.Settings`, and loading the settings or exiting 2.

The settings library is imported only when a command runs (or shows its help), so every other
command starts without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand, TyperOption

from adjudge.errors import Error

if TYPE_CHECKING:
    from adjudge.settings import Settings

#: The settings file of ``adjudge serve`` and ``adjudge webhooks deliver``.
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        envvar="ADJUDGE_CONFIG",
        metavar="FILE",
        help="A TOML file of settings (docs/guide/operating.md); flags and ADJUDGE_* "
        "environment variables override it.",
    ),
]


class SettingsCommand(TyperCommand):
    """A command whose flags are settings: a flag named as a setting and given no help of its
    own shows the setting's description, default and environment variable, read when the help
    is shown, so no default or description is written twice."""

    # Typer's own Click types (it ships a copy of Click) are private: the two are passed on.
    def format_help(self, ctx: Any, formatter: Any) -> None:
        from adjudge.settings import Settings, env_name  # noqa: PLC0415

        for param in self.params:
            name = param.name or ""
            field = Settings.model_fields.get(name)
            if isinstance(param, TyperOption) and field is not None and not param.help:
                default = field.default
                shown = str(default).lower() if isinstance(default, bool) else str(default)
                param.help = f"{field.description} [default: {shown}; {env_name(name)}]"
        super().format_help(ctx, formatter)


def load_settings(flags: Mapping[str, object], config: Path | None) -> Settings:
    """The settings from ``flags`` (None: not given), the environment and ``config``; a bad
    one is printed as its code and sentence, and the command exits 2."""
    from adjudge.settings import Settings  # noqa: PLC0415

    try:
        return Settings.load(flags, config=config)
    except Error as exc:
        typer.echo(f"{exc.code}: {exc.message}", err=True)
        raise typer.Exit(2) from exc
