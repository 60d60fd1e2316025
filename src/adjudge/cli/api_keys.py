"""``adjudge api-keys …``: an account's extra API keys and their spending limits, on a running
service (a client of the API). Made with the account's own key; an extra key is shown once.

Amounts are typed in USDC (``--max-per-call 0.50``); ``none`` lifts a limit. Exit codes: 0 done,
1 refused by the service, 2 bad input or no service.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from adjudge.cli._common import (
    DEFAULT_URL,
    JsonFlag,
    KeyOption,
    Session,
    UrlOption,
    format_amount,
    price_of,
    print_json,
    remember_json,
    wants_json,
    whole_option,
)

keys_app = typer.Typer(
    name="api-keys",
    help="Extra API keys for your agents, with spending limits: create, list, limit, revoke.",
    no_args_is_help=True,
)

LimitText = Annotated[
    str | None,
    typer.Option(metavar="USDC", help="In USDC (0.50), or none for no limit.", show_default=False),
]


def register(app: typer.Typer) -> None:
    """Add ``api-keys`` to the ``adjudge`` command (``keys`` is the signing keys' group)."""
    app.add_typer(keys_app)


@keys_app.callback()
def _options(
    ctx: typer.Context,
    url: UrlOption = DEFAULT_URL,
    key: KeyOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Extra API keys for your agents, with spending limits: create, list, limit, revoke."""
    remember_json(ctx, as_json)
    ctx.obj = Session(url, key)


def _session(ctx: typer.Context, as_json: bool) -> Session:
    session = ctx.obj
    assert isinstance(session, Session)
    session.as_json = wants_json(ctx, as_json)
    return session


def _limit(text: str | None, flag: str) -> int | None:
    if text is None or text.strip().lower() == "none":
        return None
    return int(price_of(text, "USDC", flag)["amount_minor"])


def _line(k: dict[str, Any]) -> str:
    def shown(minor: object) -> str:
        return "no limit" if minor is None else f"{format_amount(minor)} USDC"

    state = "revoked" if k.get("revoked_at") else "live"
    today = k.get("spent_today_minor")
    spent = "" if today is None else f"  spent today {format_amount(today)} USDC"
    return (
        f"{k['id']}  {state}  {k['label']}  per call {shown(k['max_per_call_minor'])}  "
        f"per day {shown(k['max_per_day_minor'])}{spent}"
    )


@keys_app.command("create")
def create(
    ctx: typer.Context,
    label: Annotated[str, typer.Argument(help="What the key is for (agent-1, nightly-job).")],
    max_per_call: LimitText = None,
    max_per_day: LimitText = None,
    as_json: JsonFlag = False,
) -> None:
    """Make an extra key with optional spending limits; the key is printed this once."""
    session = _session(ctx, as_json)
    per_call, per_day = _limit(max_per_call, "--max-per-call"), _limit(max_per_day, "--max-per-day")
    made = session.call(
        lambda api: api.create_api_key(
            label, max_per_call_minor=per_call, max_per_day_minor=per_day
        )
    )
    if session.as_json:
        print_json(made)
        return
    typer.echo(_line(made["key"]))
    typer.echo(f"The key (shown only now): {made['api_key']}")


@keys_app.command("list")
def list_keys(
    ctx: typer.Context,
    revoked: Annotated[
        bool, typer.Option("--revoked", help="The keys you revoked, newest first, by page.")
    ] = False,
    limit: Annotated[
        int | None,
        whole_option(least=1, most=100, help="With --revoked: how many on one page (50)."),
    ] = None,
    cursor: Annotated[
        str | None, typer.Option(help="With --revoked: the page to read (printed under one).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Your live extra keys, their limits and what each spent today (UTC); with --revoked, the
    keys you revoked, a page at a time."""
    if not revoked and (limit is not None or cursor is not None):
        raise typer.BadParameter("pages only the revoked keys: add --revoked.")
    session = _session(ctx, as_json)
    if revoked:
        page = session.call(lambda api: api.revoked_api_keys(limit=limit or 50, cursor=cursor))
    else:
        page = {"keys": session.call(lambda api: api.api_keys()), "next_cursor": None}
    if session.as_json:
        print_json(page)
        return
    if not page["keys"]:
        kind = "revoked" if revoked else "live extra"
        typer.echo(f"No {kind} keys." if cursor is None else f"No more {kind} keys.")
    for k in page["keys"]:
        typer.echo(_line(k))
    if page["next_cursor"]:
        typer.echo(
            f"More: adjudge api-keys list --revoked --cursor {page['next_cursor']}", err=True
        )


@keys_app.command("limit")
def limit(
    ctx: typer.Context,
    key_id: str,
    max_per_call: LimitText = None,
    max_per_day: LimitText = None,
    as_json: JsonFlag = False,
) -> None:
    """Replace a key's limits (a limit not given is lifted); they hold from its next call."""
    session = _session(ctx, as_json)
    per_call, per_day = _limit(max_per_call, "--max-per-call"), _limit(max_per_day, "--max-per-day")
    changed = session.call(
        lambda api: api.limit_api_key(
            key_id, max_per_call_minor=per_call, max_per_day_minor=per_day
        )
    )
    if session.as_json:
        print_json(changed)
    else:
        typer.echo(_line(changed))


@keys_app.command("revoke")
def revoke(ctx: typer.Context, key_id: str, as_json: JsonFlag = False) -> None:
    """End a key: it pays for nothing from now on."""
    session = _session(ctx, as_json)
    ended = session.call(lambda api: api.revoke_api_key(key_id))
    if session.as_json:
        print_json(ended)
    else:
        typer.echo(_line(ended))
