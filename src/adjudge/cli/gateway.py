"""``adjudge tools …`` and ``adjudge calls …``: the gateway's tools and the paid calls made
through it, on a running service (a client of the API, like ``adjudge task``).

``adjudge call verify`` (singular) checks a pasted response locally; ``adjudge calls`` reads
the calls the service itself forwarded, verified and settled. Exit codes: 0 done, 1 refused by
the service (or, for ``tools call``, a call that did not settle), 2 bad input or no service.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from adjudge.cli._common import (
    DEFAULT_URL,
    EXIT_REFUSED,
    IdemKeyOption,
    JsonFlag,
    KeyOption,
    Session,
    UrlOption,
    format_amount,
    money,
    price_of,
    print_json,
    print_table,
    remember_json,
    say_if_empty,
    stop,
    wants_json,
    whole_option,
    wire_json,
    words,
)
from adjudge.input_files import read_input

tools_app = typer.Typer(
    name="tools",
    help="Callable tools on a running service: list, show, register, import, call.",
    no_args_is_help=True,
)
calls_app = typer.Typer(
    name="calls",
    help="Paid calls the service forwarded: list, show, report, rule, provider quality.",
    no_args_is_help=True,
)

LimitOption = Annotated[int, whole_option(least=1, most=200, help="How many on one page.")]
CursorOption = Annotated[
    str | None, typer.Option(help="The page to read (the `next_cursor` a list printed).")
]


class VerdictChoice(StrEnum):
    """The call verdicts ``calls list --verdict`` filters by."""

    PASS = "PASS"
    FAIL = "FAIL"
    DEGRADED = "DEGRADED"
    MISAPPLIED = "MISAPPLIED"
    EMPTY_UNVERIFIED = "EMPTY_UNVERIFIED"


class ReportStatus(StrEnum):
    """The states of a call report."""

    open = "open"
    upheld = "upheld"
    dismissed = "dismissed"


def register(app: typer.Typer) -> None:
    """Add ``tools`` and ``calls`` to the ``adjudge`` command."""
    app.add_typer(tools_app)
    app.add_typer(calls_app)


def _options(ctx: typer.Context, url: str, key: str | None, as_json: bool) -> None:
    remember_json(ctx, as_json)
    ctx.obj = Session(url, key)


@tools_app.callback()
def _tools_options(
    ctx: typer.Context,
    url: UrlOption = DEFAULT_URL,
    key: KeyOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Callable tools on a running service: list, show, register, import, call."""
    _options(ctx, url, key, as_json)


@calls_app.callback()
def _calls_options(
    ctx: typer.Context,
    url: UrlOption = DEFAULT_URL,
    key: KeyOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Paid calls the service forwarded: list, show, report, rule, provider quality."""
    _options(ctx, url, key, as_json)


def _session(ctx: typer.Context, as_json: bool) -> Session:
    session = ctx.obj
    assert isinstance(session, Session)
    session.as_json = wants_json(ctx, as_json)
    return session


# --- reading input --------------------------------------------------------------------------


def _json_key(key: Any) -> Any:
    """The member name a mapping's key becomes in JSON (``200`` and ``"200"`` are one name;
    so are ``true`` and ``"true"``), or the key itself where JSON has no name for it (the
    document is then refused as JSON cannot carry it)."""
    if isinstance(key, str) or not isinstance(key, int | float | None):
        return key
    return next(iter(json.loads(json.dumps({key: None}))))


def _read_yaml(text: str) -> Any:
    """YAML text as values, read safely and refusing (``yaml.YAMLError``) a mapping with one
    key twice: YAML keeps the last of them, where JSON's reading here refuses the document, and
    a reader that keeps the first would read another tool. Keys merged in with ``<<`` are
    YAML's way to override and stay allowed."""
    import yaml  # noqa: PLC0415 - only YAML documents need it

    class UniqueKeys(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            names: set[Any] = set()
            keys: set[Any] = set()  # 1 and 1.0 are one key to a dict, two names in JSON
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                name = _json_key(key)
                try:
                    twice = name in names or key in keys
                except TypeError:  # a key no dict can hold: the loader says so itself
                    continue
                if twice:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"the key {str(name)[:80]!r} appears twice in one mapping",
                        key_node.start_mark,
                    )
                names.add(name)
                keys.add(key)
            return super().construct_mapping(node, deep=deep)

    return yaml.load(text, Loader=UniqueKeys)  # a SafeLoader: no tag makes an object


def _document(path: Path, what: str) -> Any:
    """A JSON or YAML file (OpenAPI documents are often YAML) as JSON values; exit 2 if not."""
    try:
        text = read_input(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        stop(f"Cannot read the {what} {path}: {exc}")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml  # noqa: PLC0415 - only YAML documents need it

        try:
            loaded = _read_yaml(text)
            # YAML has values JSON lacks (dates, NaN): what the service cannot take is said here.
            json.dumps(loaded, allow_nan=False)
        except (yaml.YAMLError, TypeError, ValueError) as exc:
            stop(f"The {what} {path} is not YAML that JSON can carry: {exc}")
        return loaded
    try:
        return wire_json(text)
    except (ValueError, RecursionError) as exc:  # a number past Python's digits, too deep
        stop(f"The {what} {path} is not JSON: {exc}")


def _policy(text: str | None) -> dict[str, Any] | None:
    """``weather-standard`` (its newest version) or ``weather-standard@2``."""
    if text is None:
        return None
    name, at, version = text.partition("@")
    if not name or (at and not version.isdigit()):
        stop(f"--policy {text!r}: write a policy id, or id@version (weather-standard@2).")
    return {"id": name, **({"version": int(version)} if at else {})}


# --- printing -------------------------------------------------------------------------------


def _money(price: dict[str, Any] | None) -> str:
    """``{amount: "25", asset: "USD", decimals: 2}`` as "0.25 USD"."""
    if not price:
        return "-"
    return f"{format_amount(price['amount'], int(price['decimals']))} {price['asset']}"


def _tool_cells(t: dict[str, Any]) -> list[str]:
    policy = t.get("policy")
    rules = f"policy {policy['id']}" if policy else "no policy"
    return [t["name"], t["provider"], _money(t["price"]), rules, t["description"]]


def _tool_line(t: dict[str, Any]) -> str:
    return "  ".join(_tool_cells(t))


#: A list's columns: their names, a row's cells, and the columns aligned right.
_Table = tuple[tuple[str, ...], Callable[[dict[str, Any]], list[str]], frozenset[int]]
_TOOLS: _Table = (
    ("NAME", "PROVIDER", "PRICE", "POLICY", "DESCRIPTION"),
    _tool_cells,
    frozenset({2}),
)


def _show_tool(t: dict[str, Any]) -> None:
    typer.echo(f"{t['name']} (version {t['version']}) by {t['provider']}")
    typer.echo(f"  {t['description']}")
    typer.echo(f"  price: {_money(t['price'])} a call")
    pending = t.get("pending_price")
    if pending:
        typer.echo(f"  announced: {_money(pending)} a call from {pending['from']}")
    policy = t.get("policy")
    judged = t.get("judged_by")
    if judged:
        pinned = "" if policy and policy.get("version") is not None else " (its newest version)"
        typer.echo(
            f"  judged by: policy {judged['id']} version {judged['version']}{pinned}, "
            f"{judged['mode']}; bad results reportable for {judged['report_window_hours']} h"
        )
        if judged.get("acts_as"):
            typer.echo(
                f"  acts as {judged['acts_as']}: registered by {judged.get('registered_by')}, "
                "not the provider, so it refunds and strikes nothing"
            )
        panel = judged.get("judges")
        if panel:
            typer.echo(
                f"  meaning judged by: {', '.join(panel['keys'])} ({panel['quorum']} of "
                f"{len(panel['keys'])} must cite a conflict), sample rate {panel['sample_rate']}, "
                f"{panel['when']}"
            )
        corroboration = judged.get("corroboration")
        if corroboration:
            typer.echo(
                f"  empty answers corroborated by: {corroboration['tool']}, paid by the "
                f"{corroboration['paid_by']} (at most {_money(corroboration['max_price'])} each); "
                f"you pay {_money(corroboration['caller_pays'])} for it"
            )
    elif policy:
        typer.echo(f"  policy: {policy['id']} is not registered yet (calls are refused)")
    else:
        typer.echo("  policy: none (calls are checked against the contract's schema only)")
    if t.get("refunded_output") == "return":
        typer.echo("  a refunded call still returns the provider's output")
    typer.echo(f"  registered: {t['registered_at']}  digest: {t['digest']}")
    definition = t.get("definition") or {}
    for label, key in (("input schema", "inputSchema"), ("output schema", "outputSchema")):
        if key in definition:
            typer.echo(f"  {label}:")
            for line in json.dumps(definition[key], indent=2, ensure_ascii=False).splitlines():
                typer.echo(f"    {line}")


def _call_cells(c: dict[str, Any]) -> list[str]:
    money = c.get("money") or {}
    verdict = c.get("verdict") or ("request error" if c.get("status") else "running")
    return [c["id"], c["started_at"], c["tool"], c["provider"], verdict, _money_state(money)]


def _call_line(c: dict[str, Any]) -> str:
    return "  ".join(_call_cells(c))


_CALLS: _Table = (
    ("ID", "STARTED", "TOOL", "PROVIDER", "VERDICT", "MONEY"),
    _call_cells,
    frozenset(),
)


def _money_state(money: dict[str, Any]) -> str:
    """A call's money as it stands, in words: "charged 0.25 USDC, held until …"."""
    state = money.get("state", "")
    charged = _money(money.get("charged"))
    if state == "held":
        return f"charged {charged}, held until {money.get('held_until')}"
    if state == "reported":
        return f"charged {charged}, held while its report is ruled on"
    if state == "paid":
        return f"charged {charged}, paid to the provider"
    if state == "refunded_after_report":
        return f"refunded {_money(money.get('refunded'))} after a report"
    if state == "reserved":
        return f"{charged} reserved (running)"
    return f"{words(state)}, nothing charged"


def _check_rows(checks: list[dict[str, Any]]) -> None:
    for row in checks:
        where = f" at {row['path']}" if row.get("path") else ""
        typer.echo(f"    {words(row['outcome']):8} {row['name']} ({row['stage']}){where}")
        if row.get("reason"):
            typer.echo(f"             {row['reason']}")


def _show_answer(answer: dict[str, Any]) -> None:
    verdict = answer.get("verdict") or "none (request error)"
    typer.echo(f"  status: {words(answer['status'])}  verdict: {verdict}")
    listed, charged = _money(answer.get("listedPrice")), _money(answer.get("chargedPrice"))
    strike = "yes" if answer.get("strike") else "no"
    typer.echo(
        f"  listed {listed}, charged {charged}  payment: {answer.get('payment')}  strike: {strike}"
    )
    if answer.get("decidedBy"):
        typer.echo(f"  decided by: {answer['decidedBy']}")
    error = answer.get("error")
    if error:
        typer.echo(f"  error: {error.get('code')}: {error.get('message')}")
    if answer.get("checks"):
        typer.echo("  checks:")
        _check_rows(answer["checks"])
    found = answer.get("corroboration")
    if found and found.get("call_id"):
        said = "nothing found" if found.get("empty") else "found results"
        if not found.get("available", True):
            said = "could not say"
        typer.echo(
            f"  corroborated by: {found.get('tool')} ({found.get('source')}), {said}; "
            f"its call {found['call_id']}, receipt {found.get('receipt_id') or 'none'}"
        )
    if answer.get("outputWithheld"):
        typer.echo("  output: withheld (the call was not paid for)")
    if answer.get("failing"):
        typer.echo(f"  failing: {', '.join(answer['failing'])}")
    if answer.get("output") is not None:
        typer.echo("  output:")
        for line in json.dumps(answer["output"], indent=2, ensure_ascii=False).splitlines():
            typer.echo(f"    {line}")
    if answer.get("receiptId"):
        typer.echo(f"  receipt: {answer['receiptId']}")


def _report_line(r: dict[str, Any]) -> str:
    filed = f"by {r['filed_by']} {r['filed_at']}"
    return f"{r['call_id']}  {r['status']}  {r['provider']}  {filed}  {r['reason']}"


def _report_lines(report: dict[str, Any]) -> None:
    typer.echo(f"  report: {report['status']}, filed by {report['filed_by']} {report['filed_at']}")
    typer.echo(f"    reason: {report['reason']}")
    if report.get("ruled_by"):
        minor = report.get("refunded_minor")
        refund = "nothing" if minor is None else money(minor)
        typer.echo(f"    ruled by {report['ruled_by']} {report['ruled_at']}; refunded {refund}")
        for reason in report.get("ruling") or []:
            typer.echo(f"    - {reason}")
        if report.get("receipt_id"):
            typer.echo(f"    ruling receipt: {report['receipt_id']}")


def _print_page(
    session: Session,
    page: dict[str, Any],
    items: str,
    line: Callable[[dict[str, Any]], str],
    command: str,
    first: bool,
    table: _Table | None = None,
    later: str = "older",
) -> None:
    """A list answer: as JSON, or a line per item (in columns under their names, with
    ``table``) and where the next page is (on stderr)."""
    if session.as_json:
        print_json(page)
        return
    say_if_empty(page, items, first=first, later=later)
    if table is None:
        for item in page[items]:
            typer.echo(line(item))
    else:
        headers, cells, right = table
        print_table(headers, [cells(item) for item in page[items]], right=right)
    if page.get("next_cursor"):
        typer.echo(f"More: adjudge {command} --cursor {page['next_cursor']}", err=True)


# --- tools ----------------------------------------------------------------------------------


@tools_app.command("list")
def list_tools(
    ctx: typer.Context,
    query: Annotated[
        str | None, typer.Option(help="Only tools whose name or text has this.")
    ] = None,
    limit: LimitOption = 50,
    cursor: CursorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Callable tools by name: provider, price a call, policy."""
    session = _session(ctx, as_json)
    page = session.call(lambda api: api.tools(query=query, limit=limit, cursor=cursor))
    # The next page's command keeps the search: a cursor alone lists every tool after it.
    command = "tools list" if query is None else f"tools list --query {shlex.quote(query)}"
    _print_page(session, page, "tools", _tool_line, command, cursor is None, _TOOLS, "later")


@tools_app.command("show")
def show_tool(ctx: typer.Context, name: str, as_json: JsonFlag = False) -> None:
    """One tool: provider, price, policy, input and output schemas."""
    session = _session(ctx, as_json)
    found = session.call(lambda api: api.tool(name))
    if session.as_json:
        print_json(found)
    else:
        _show_tool(found)


def _registered(session: Session, made: dict[str, Any]) -> None:
    if session.as_json:
        print_json(made)
    else:
        typer.echo(f"Registered {_tool_line(made)}")


@tools_app.command("register")
def register_tool(
    ctx: typer.Context,
    document: Annotated[Path, typer.Argument(help="The tool document (JSON or YAML).")],
    as_json: JsonFlag = False,
) -> None:
    """Register a callable tool (providers): endpoint, input schema, contract, price, policy."""
    session = _session(ctx, as_json)
    doc = _document(document, "tool document")
    _registered(session, session.call(lambda api: api.register_tool(doc)))


PriceOption = Annotated[
    str, typer.Option(help="What a call costs, in the currency's units (0.25).", show_default=False)
]
CurrencyOption = Annotated[
    str, typer.Option(help="The price's currency: the service's ledger takes USDC.")
]
PolicyOption = Annotated[
    str | None, typer.Option(help="The decision policy: id, or id@version.", show_default=False)
]


@tools_app.command("import-openapi")
def import_openapi(
    ctx: typer.Context,
    document: Annotated[Path, typer.Argument(help="The OpenAPI 3.0/3.1 document (JSON or YAML).")],
    price: PriceOption,
    currency: CurrencyOption = "USDC",
    operation: Annotated[str | None, typer.Option(help="The operationId to import.")] = None,
    method: Annotated[str | None, typer.Option(help="Or: the operation's method …")] = None,
    path: Annotated[str | None, typer.Option(help="… and its path (/forecast/{city}).")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="The server to call (default: the document's first).")
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="The tool's name (default: from the operation).")
    ] = None,
    policy: PolicyOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Make a tool of one operation of an OpenAPI document (providers): its parameters and
    body become the input schema, its response schema the output schema."""
    session = _session(ctx, as_json)
    doc = _document(document, "OpenAPI document")
    body = price_of(price, currency)
    wanted = _policy(policy)
    made = session.call(
        lambda api: api.import_openapi(
            doc,
            price=body,
            operation=operation,
            method=method,
            path=path,
            base_url=base_url,
            name=name,
            policy=wanted,
        )
    )
    _registered(session, made)


@tools_app.command("import-mcp")
def import_mcp(
    ctx: typer.Context,
    definition: Annotated[Path, typer.Argument(help="The MCP tool definition (JSON or YAML).")],
    base_url: Annotated[str, typer.Option(help="The HTTP endpoint that serves the tool.")],
    price: PriceOption,
    currency: CurrencyOption = "USDC",
    method: Annotated[str, typer.Option(help="The endpoint's method.")] = "POST",
    path: Annotated[str, typer.Option(help="The path under the base URL.")] = "",
    policy: PolicyOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Make a tool of an MCP tool definition (`inputSchema`, `outputSchema`) and its endpoint."""
    session = _session(ctx, as_json)
    doc = _document(definition, "MCP tool definition")
    body = price_of(price, currency)
    wanted = _policy(policy)
    made = session.call(
        lambda api: api.import_mcp(
            doc, base_url=base_url, price=body, method=method, path=path, policy=wanted
        )
    )
    _registered(session, made)


@tools_app.command("add-policy")
def add_policy(
    ctx: typer.Context,
    tool: str,
    document: Annotated[Path, typer.Argument(help="The decision policy (JSON or YAML).")],
    as_json: JsonFlag = False,
) -> None:
    """Register a version of a tool's decision policy (its provider, or an admin; one that
    declares a corroborator, paid from the provider's wallet, only its provider)."""
    session = _session(ctx, as_json)
    doc = _document(document, "policy")
    made = session.call(lambda api: api.add_policy(tool, doc))
    if session.as_json:
        print_json(made)
    else:
        typer.echo(
            f"Registered policy {made.get('policy')} version {made.get('version')} for {tool}"
        )


@tools_app.command("call")
def call_tool(
    ctx: typer.Context,
    name: str,
    arguments: Annotated[str, typer.Argument(help="The arguments as a JSON object.")] = "{}",
    idempotency_key: IdemKeyOption = None,
    max_price: Annotated[
        str | None,
        typer.Option(
            help="The most you accept to pay, in USDC (0.25): a dearer call is refused before "
            "the provider is called."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Call a tool through the gateway and print its verdict, charge, checks and output; exits
    1 when the call did not settle (refunded or voided)."""
    session = _session(ctx, as_json)
    try:
        args = wire_json(arguments)
    except (ValueError, RecursionError) as exc:
        stop(f"The arguments are not JSON: {exc}")
    if not isinstance(args, dict):
        stop('The arguments are a JSON object, like \'{"city": "berlin"}\'.')
    most = None if max_price is None else price_of(max_price, "USDC", "--max-price")["amount_minor"]
    answer = session.call(
        lambda api: api.call_tool(
            name, args, max_price_minor=most, idempotency_key=idempotency_key
        ),
        keyed=True,
    )
    if session.as_json:
        print_json(answer)
    else:
        typer.echo(f"Call {answer['intentId']} to {answer['tool']} ({answer['provider']})")
        _show_answer(answer)
    if answer.get("status") != "settled":
        raise typer.Exit(EXIT_REFUSED)


# --- calls ----------------------------------------------------------------------------------


@calls_app.command("list")
def list_calls(
    ctx: typer.Context,
    tool: Annotated[str | None, typer.Option(help="Only this tool's calls.")] = None,
    provider: Annotated[str | None, typer.Option(help="Only this provider's calls.")] = None,
    verdict: Annotated[
        VerdictChoice | None,
        typer.Option(help="Only calls with this verdict.", case_sensitive=False),
    ] = None,
    limit: LimitOption = 50,
    cursor: CursorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Forwarded calls newest first (an admin's all, anyone else's own): tool, provider,
    status, verdict, charge."""
    session = _session(ctx, as_json)
    chosen = None if verdict is None else verdict.value
    page = session.call(
        lambda api: api.calls(
            tool=tool, provider=provider, verdict=chosen, limit=limit, cursor=cursor
        )
    )
    _print_page(session, page, "calls", _call_line, "calls list", cursor is None, _CALLS)
    if not session.as_json and page["calls"]:
        charged = sum(
            int((c.get("money") or {}).get("charged", {}).get("amount", 0)) for c in page["calls"]
        )
        typer.echo(f"Charged on this page, as it stands: {format_amount(charged)} USDC")


@calls_app.command("show")
def show_call(ctx: typer.Context, call_id: str, as_json: JsonFlag = False) -> None:
    """One call: verdict, charge, the deciding clause, every check row, the output, its
    receipt, the report window and any report."""
    session = _session(ctx, as_json)
    found = session.call(lambda api: api.call(call_id))
    if session.as_json:
        print_json(found)
        return
    typer.echo(
        f"Call {found['id']} to {found['tool']} ({found['provider']}) by {found['caller']}, "
        f"{found['started_at']}"
    )
    if found.get("answer"):
        _show_answer(found["answer"])
    else:
        typer.echo(f"  {words(found['state'])}: no answer yet")
    if found.get("money"):
        typer.echo(f"  money now: {_money_state(found['money'])}")
    if found.get("meaning"):
        typer.echo(f"  {_meaning_line(found['meaning'])}")
    if found.get("report"):
        _report_lines(found["report"])
    elif found.get("report_deadline"):
        typer.echo(f"  a bad result can be reported until {found['report_deadline']}")


def _meaning_line(meaning: dict[str, Any]) -> str:
    """A call's meaning check judged after the answer: pending, or its final outcome."""
    if meaning["state"] == "pending":
        return f"meaning: pending (judged after the answer; queued {meaning['queued_at']})"
    return (
        f"meaning: {words(meaning['outcome'] or '')} (judged {meaning['judged_at']}, "
        f"receipt {meaning['receipt_id']})"
    )


@calls_app.command("judgments")
def pending_judgments(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """The calls waiting for a meaning judgment signed by one of your verifier keys: what to
    judge (the tool, the arguments, the output) and until when."""
    session = _session(ctx, as_json)
    found = session.call(lambda api: api.meaning_judgments())
    if session.as_json:
        print_json(found)
        return
    if not found["judgments"]:
        typer.echo("No call waits for your judgment.")
    for j in found["judgments"]:
        typer.echo(f"{j['call_id']}  {j['tool']}  as {j['judge_key']}  until {j['due_at']}")
        typer.echo(f"  arguments: {json.dumps(j['arguments'])}")
        typer.echo(f"  output: {json.dumps(j['output'])[:2000]}")


@calls_app.command("judge-pending")
def judge_pending(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Judge the calls waiting for their meaning judges now (admins): one bounded pass, as the
    service's upkeep runs every little while."""
    session = _session(ctx, as_json)
    done = session.call(lambda api: api.run_judgments())
    if session.as_json:
        print_json(done)
    else:
        typer.echo(f"Judged {done['judged']} call(s) after their answers.")


@calls_app.command("judge")
def judge_call(
    ctx: typer.Context,
    call_id: str,
    *,
    verifier_key: Annotated[
        Path,
        typer.Option(
            metavar="FILE",
            help="Your verifier private key (PEM), the one your account registered; the "
            "judgment is signed with it.",
        ),
    ],
    conflict: Annotated[
        bool,
        typer.Option(
            "--conflict/--no-conflict", help="Whether the answer conflicts with the request."
        ),
    ] = False,
    cite: Annotated[
        list[str] | None,
        typer.Option(
            metavar="POINTER",
            help="A JSON Pointer into the output the conflict relies on (repeat); the value "
            "there is quoted.",
        ),
    ] = None,
    reason: Annotated[str, typer.Option(help="Why, in a sentence.")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Give your verifier key's signed meaning judgment of a call judged after its answer: a
    conflict counts only with citations into the output, and no judgment is ever a pass."""
    from adjudge.calls.meaning import judgment_payload  # noqa: PLC0415
    from adjudge.calls.pointers import resolve  # noqa: PLC0415
    from adjudge.cli import keyfiles  # noqa: PLC0415
    from adjudge.digests import sha256_digest  # noqa: PLC0415
    from adjudge.errors import Error  # noqa: PLC0415
    from adjudge.receipts import canonical_bytes  # noqa: PLC0415

    session = _session(ctx, as_json)
    try:
        signer = keyfiles.read_signing_key(verifier_key, "verifier key file")
    except Error as exc:
        stop(f"{exc.code}: {exc.message}")
    judge = f"key:{signer.keyid}"
    waiting = session.call(lambda api: api.meaning_judgments())["judgments"]
    shown = next((j for j in waiting if j["call_id"] == call_id and j["judge_key"] == judge), None)
    if shown is None:
        stop(
            f"No judgment of the call {call_id} waits for {judge}; list them with "
            "`adjudge calls judgments`."
        )
    citations = []
    for pointer in cite or []:
        found, value = resolve(shown["output"], pointer)
        if not found:
            stop(f"The pointer {pointer} resolves to nothing in the call's output.")
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        citations.append({"pointer": pointer, "quote_sha256": sha256_digest(text.encode())})
    payload = judgment_payload(
        call_id=call_id,
        response_digest=shown["response_digest"],
        judge_key=judge,
        conflict=conflict,
        reason=reason,
        citations=citations,
    )
    body = dict(payload) | {
        "signature": base64.b64encode(signer.sign(canonical_bytes(payload))).decode("ascii"),
        "public_key": signer.public_key.to_base64(),
    }
    del body["type"], body["call_id"]
    kept = session.call(lambda api: api.judge_meaning(call_id, body))
    if session.as_json:
        print_json(kept)
    else:
        verb = "a cited conflict" if conflict else "no conflict"
        typer.echo(f"Judged call {call_id} as {judge}: {verb}; the service folds it next pass.")


@calls_app.command("report")
def report_call(
    ctx: typer.Context,
    call_id: str,
    reason: Annotated[str, typer.Argument(help="What was wrong with the result.")],
    as_json: JsonFlag = False,
) -> None:
    """Report a bad result despite the checks (the caller, within the report window): it
    opens a review for an admin and moves no money by itself."""
    session = _session(ctx, as_json)
    filed = session.call(lambda api: api.report_call(call_id, reason))
    if session.as_json:
        print_json(filed)
    else:
        typer.echo(f"Reported call {call_id}; an admin will rule on it.")
        _report_lines(filed)


@calls_app.command("rule")
def rule_report(
    ctx: typer.Context,
    call_id: str,
    uphold: Annotated[
        bool,
        typer.Option(
            "--uphold/--dismiss", help="Uphold (refund the caller) or dismiss.", show_default=False
        ),
    ],
    reason: Annotated[
        list[str],
        typer.Option("--reason", metavar="TEXT", help="Why (repeat it for more reasons)."),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Rule once on a call's report (admins who are neither its caller nor its provider);
    upheld refunds the caller against the ruling's receipt and never strikes."""
    session = _session(ctx, as_json)
    ruled = session.call(lambda api: api.rule_report(call_id, upheld=uphold, reasons=reason))
    if session.as_json:
        print_json(ruled)
    else:
        typer.echo(f"Ruled on the report of call {call_id}:")
        _report_lines(ruled)


@calls_app.command("reports")
def list_reports(
    ctx: typer.Context,
    status: Annotated[ReportStatus | None, typer.Option(help="Only reports in this state.")] = None,
    limit: LimitOption = 50,
    cursor: CursorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The review queue of call reports, oldest first (admins)."""
    session = _session(ctx, as_json)
    chosen = None if status is None else status.value
    page = session.call(lambda api: api.call_reports(status=chosen, limit=limit, cursor=cursor))
    _print_page(session, page, "reports", _report_line, "calls reports", cursor is None)


@calls_app.command("quality")
def quality(
    ctx: typer.Context,
    provider: str,
    window_days: Annotated[
        int | None,
        whole_option(least=1, most=3650, help="The window (default: the provider's terms)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """A provider's quality window over the calls the gateway itself forwarded: counts, the
    failure rate, upheld reports, the penalty assessment and its latest proposal."""
    session = _session(ctx, as_json)
    found = session.call(lambda api: api.provider_quality(provider, window_days=window_days))
    if session.as_json:
        print_json(found)
        return
    w = found["window"]
    typer.echo(f"{provider}: {w['start']} to {w['end']}")
    typer.echo(
        f"  pass {w['pass']}  fail {w['fail']}  not counted {w['not_counted']}  "
        f"request errors {w['request_errors']}  system errors {w['system_errors']}"
    )
    rate = found.get("failure_rate")
    typer.echo(f"  failure rate: {rate if rate is not None else 'no observations'}")
    typer.echo(f"  upheld reports: {found.get('upheld_reports', 0)}")
    if found.get("terms") is None:
        typer.echo("  no quality terms declared: no penalty is assessed")
    if found.get("assessment") is not None:
        typer.echo(f"  assessment: {json.dumps(found['assessment'], ensure_ascii=False)}")
    if found.get("proposal") is not None:
        typer.echo(f"  latest proposal: {json.dumps(found['proposal'], ensure_ascii=False)}")
