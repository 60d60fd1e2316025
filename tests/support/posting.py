"""An auto task posted through the use cases, in process: what the tests of where posting, a
reveal and a finalize check and write start from."""

from __future__ import annotations

from typing import Any

from adjudge.app import App
from adjudge.store import Account

#: The reward of the tasks these tests post (minor units).
REWARD = 2_000_000


def post_auto(
    app: App,
    poster: Account,
    criteria: dict[str, Any],
    *,
    title: str = "t",
    brief: str = "b",
    **extra: Any,
) -> Any:
    """``poster``'s auto task under ``criteria``, due in a day (``extra``: more of the post's
    fields, a seal or a take window); the use case's answer."""
    return app.tasks.post(
        poster,
        title=title,
        brief=brief,
        reward=REWARD,
        mode="auto",
        criteria=criteria,
        deadline_hours=24,
        **extra,
    )


def parties(app: App) -> dict[str, Account]:
    """An admin (root), a poster (pat) holding ten rewards, and an agent (ann), signed in."""
    keys = {
        name: app.accounts.create(None, name, roles).value["api_key"]
        for name, roles in (("root", ["admin"]), ("pat", ["poster"]), ("ann", ["agent"]))
    }
    signed = {name: app.accounts.authenticate(key) for name, key in keys.items()}
    app.accounts.deposit(signed["root"], "pat", 10 * REWARD)
    return signed
