"""Take a migrated store back to an earlier revision, as a migration test starts from one."""

from __future__ import annotations

from importlib.resources import files

from alembic import command
from alembic.config import Config

from adjudge.store import Store


def downgrade(store: Store, revision: str) -> None:
    """Downgrade ``store`` to ``revision`` (``store.migrate()`` brings it back up)."""
    config = Config()
    config.set_main_option("script_location", str(files("adjudge.store") / "migrations"))
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
