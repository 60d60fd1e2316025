"""``adjudge task …``: a client of a running service, to walk a task through its life.

The service is found with ``--url`` (or ``ADJUDGE_URL``) and the caller with ``--key`` (or
``ADJUDGE_API_KEY``). Every state-changing command sends a fresh ``Idempotency-Key`` and reuses it
when it retries after a network failure, so a retry never pays twice. Exit codes: 0 done,
1 refused by the service (its code and message are printed), 2 bad input or no service.
"""

from __future__ import annotations

import json
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

task_app = typer.Typer(
    name="task", help="Post, take, deliver, judge and settle tasks on a running service."
)

#: Network failures retried (with the same Idempotency-Key) before giving up.
RETRIES = 3


@dataclass
class Client:
    """The service's URL, the caller's key, and how to print."""

    url: str
    key: str | None
    as_json: bool

    def call(self, method: str, path: str, body: Any = None, *, change: bool = False) -> Any:
        """Call the API; on a refusal print ``CODE: message`` and exit 1."""
        import httpx  # noqa: PLC0415 - keep `adjudge --help` fast

        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        if change:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        url = self.url.rstrip("/") + "/api/v1" + path
        for attempt in range(RETRIES):
            try:
                response = httpx.request(method, url, json=body, headers=headers, timeout=30)
                break
            except httpx.TransportError as exc:
                if attempt == RETRIES - 1:
                    typer.echo(f"Cannot reach the service at {self.url}: {exc}", err=True)
                    raise typer.Exit(2) from exc
        try:
            payload = response.json()
        except ValueError:
            payload = {"error": {"code": "BAD_RESPONSE", "message": response.text[:200]}}
        if response.status_code >= 400:
            err = payload.get("error", {}) if isinstance(payload, dict) else {}
            typer.echo(
                f"{err.get('code', response.status_code)}: {err.get('message', '')}", err=True
            )
            raise typer.Exit(1)
        return payload


def _client(ctx: typer.Context) -> Client:
    client = ctx.obj
    assert isinstance(client, Client)
    return client


@task_app.callback()
def _options(
    ctx: typer.Context,
    url: Annotated[
        str, typer.Option(envvar="ADJUDGE_URL", help="The service's base URL.")
    ] = "http://127.0.0.1:8000",
    key: Annotated[str | None, typer.Option(envvar="ADJUDGE_API_KEY", help="Your API key.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full JSON answer.")] = False,
) -> None:
    """Post, take, deliver, judge and settle tasks on a running service."""
    ctx.obj = Client(url, key, as_json)


def _show(client: Client, task: dict[str, Any]) -> None:
    if client.as_json:
        typer.echo(json.dumps(task, indent=2))
        return
    parts = [task["id"], task["mode"], task["status"], f"reward {task['reward']}"]
    if task.get("agent"):
        parts.append(f"agent {task['agent']}")
    parts.append(f"attempts {task['attempts']}/{task['max_attempts']}")
    if task.get("ending"):
        parts.append(task["ending"])
    typer.echo("  ".join(parts))
    verdict = task.get("verification_result")
    if verdict:
        mark = "PASS" if verdict["passed"] else "FAIL"
        score = f" {verdict['score']}" if verdict.get("score") is not None else ""
        typer.echo(f"  verdict: {mark}{score}")
        for reason in verdict.get("reasons", []):
            typer.echo(f"    - {reason}")
    for dispute in task.get("disputes") or []:
        why = f": {dispute['reason']}" if dispute["reason"] else ""
        typer.echo(
            f"  dispute on round {dispute['attempt']} by {dispute['by']} at {dispute['at']}{why}"
        )


def _read(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    path = Path(source)
    if not path.is_file():
        typer.echo(f"No such file: {source}", err=True)
        raise typer.Exit(2)
    return path.read_text(encoding="utf-8")


@task_app.command("post")
def post(
    ctx: typer.Context,
    *,
    title: Annotated[str, typer.Option(help="A short title.")],
    reward: Annotated[str, typer.Option(help="Integer minor units, e.g. 2000000 for 2 USDC.")],
    brief: Annotated[str, typer.Option(help="The brief, or @FILE to read it.")] = "",
    hours: Annotated[float, typer.Option(help="Deadline in hours (1 to 2160).")] = 24.0,
    mode: Annotated[str, typer.Option(help="manual (default), auto or agent.")] = "manual",
    criteria: Annotated[
        str | None, typer.Option(help="Auto-check criteria as JSON, or @FILE.")
    ] = None,
    verifier: Annotated[str | None, typer.Option(help="The verifier agent (agent mode).")] = None,
    private: Annotated[bool, typer.Option(help="Others see only passed and score.")] = False,
    lenient: Annotated[
        bool,
        typer.Option(
            help="Post criteria fields the auto check does not know (it ignores them); "
            "without it a misspelled field is refused."
        ),
    ] = False,
) -> None:
    """Post a task and fund it from your wallet."""
    client = _client(ctx)
    body: dict[str, Any] = {
        "title": title,
        "brief": _read(brief[1:]) if brief.startswith("@") else brief,
        "reward": reward,
        "deadline_hours": hours,
        "mode": mode,
        "private": private,
    }
    if criteria:
        text = _read(criteria[1:]) if criteria.startswith("@") else criteria
        try:
            body["criteria"] = json.loads(text)
        except json.JSONDecodeError as exc:
            typer.echo(f"The criteria are not JSON: {exc}", err=True)
            raise typer.Exit(2) from exc
    if verifier:
        body["verifier"] = verifier
    if lenient:
        body["lenient_criteria"] = True
    _show(client, client.call("POST", "/tasks", body, change=True))


@task_app.command("list")
def list_(
    ctx: typer.Context,
    *,
    status: Annotated[str | None, typer.Option(help="Only tasks in this state.")] = None,
    mode: Annotated[str | None, typer.Option(help="Only tasks in this mode.")] = None,
    mine: Annotated[bool, typer.Option(help="Only tasks you posted, took or verify.")] = False,
) -> None:
    """List tasks, newest first."""
    client = _client(ctx)
    query = [f"mine={str(mine).lower()}"]
    query += [f"status={status}"] if status else []
    query += [f"mode={mode}"] if mode else []
    found = client.call("GET", "/tasks?" + "&".join(query))
    if client.as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    for task in found["tasks"]:
        typer.echo(
            f"{task['id']}  {task['mode']:6} {task['status']:22} {task['reward']:>12}  "
            f"{task['title']}"
        )


@task_app.command("show")
def show(ctx: typer.Context, task_id: str) -> None:
    """Show one task."""
    client = _client(ctx)
    _show(client, client.call("GET", f"/tasks/{task_id}"))


@task_app.command("accept")
def accept(ctx: typer.Context, task_id: str) -> None:
    """Take a funded task (agents)."""
    client = _client(ctx)
    _show(client, client.call("POST", f"/tasks/{task_id}/accept", change=True))


@task_app.command("release")
def release(ctx: typer.Context, task_id: str) -> None:
    """Take back a task whose agent delivered nothing within 24 hours of taking it (posters)."""
    client = _client(ctx)
    _show(client, client.call("POST", f"/tasks/{task_id}/release", change=True))


@task_app.command("submit")
def submit(
    ctx: typer.Context,
    task_id: str,
    result: Annotated[str, typer.Argument(help="A file with the result, or - for stdin.")] = "-",
) -> None:
    """Deliver a result (one of 3 submissions, before the deadline)."""
    client = _client(ctx)
    body = {"result": _read(result)}
    _show(client, client.call("POST", f"/tasks/{task_id}/submissions", body, change=True))


@task_app.command("finalize")
def finalize(ctx: typer.Context, task_id: str) -> None:
    """Run the auto check on your latest submission (auto mode)."""
    client = _client(ctx)
    _show(client, client.call("POST", f"/tasks/{task_id}/finalize", change=True))


@task_app.command("dry-run")
def dry_run(
    ctx: typer.Context,
    task_id: str,
    result: Annotated[str, typer.Argument(help="A file with the draft, or - for stdin.")] = "-",
) -> None:
    """Check a draft against the task's criteria without using an attempt."""
    client = _client(ctx)
    out = client.call("POST", f"/tasks/{task_id}/dry-run", {"result": _read(result)})
    if client.as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    typer.echo(f"{'PASS' if out['passed'] else 'FAIL'} {out['score']}")
    for reason in out["reasons"]:
        typer.echo(f"  - {reason}")


@task_app.command("review")
def review(
    ctx: typer.Context,
    task_id: str,
    *,
    reject: Annotated[bool, typer.Option(help="Reject instead of approving.")] = False,
    reason: Annotated[list[str] | None, typer.Option(help="A reason (repeat, up to 20).")] = None,
) -> None:
    """Approve (default) or reject a submitted result (manual mode, posters)."""
    client = _client(ctx)
    body = {"passed": not reject, "reasons": reason or []}
    _show(client, client.call("POST", f"/tasks/{task_id}/review", body, change=True))


@task_app.command("verdict")
def verdict(
    ctx: typer.Context,
    task_id: str,
    *,
    verifier_key: Annotated[
        Path,
        typer.Option(
            help="Your verifier private key (PEM), the one your account registered; the "
            "verdict is signed with it."
        ),
    ],
    fail: Annotated[bool, typer.Option(help="Fail instead of passing.")] = False,
    reason: Annotated[list[str] | None, typer.Option(help="A reason (repeat, up to 10).")] = None,
    quote_brief: Annotated[
        list[str] | None,
        typer.Option(help="An exact excerpt of the brief the verdict relies on (repeat)."),
    ] = None,
    quote_result: Annotated[
        list[str] | None,
        typer.Option(help="An exact excerpt of the result the verdict relies on (repeat)."),
    ] = None,
) -> None:
    """Judge the latest submission as the task's named verifier (agent mode), signed and
    grounded: quote the brief and the result, or the poster decides instead."""
    from adjudge.app.signed_verdicts import sign_verdict, verdict_payload  # noqa: PLC0415
    from adjudge.errors import Error  # noqa: PLC0415 - keep `adjudge --help` fast
    from adjudge.kernel.oracle import Record  # noqa: PLC0415
    from adjudge.kernel.semantic import Quote  # noqa: PLC0415
    from adjudge.receipts import SigningKey  # noqa: PLC0415

    client = _client(ctx)
    try:
        signer = SigningKey.from_pem(verifier_key.read_bytes())
    except OSError as exc:
        typer.echo(f"Cannot read {verifier_key}: {exc}", err=True)
        raise typer.Exit(2) from exc
    except Error as exc:
        typer.echo(f"{exc.code}: {exc.message}", err=True)
        raise typer.Exit(2) from exc
    task = client.call("GET", f"/tasks/{task_id}")
    if not task.get("result_digest"):
        typer.echo("This task has no delivered result to judge.", err=True)
        raise typer.Exit(1)
    reasons = reason or []
    brief = task.get("brief") or ""
    result = task["submissions"][-1]["result"]
    quotes = []
    for artifact, text, excerpts in (
        ("brief", brief, quote_brief or []),
        ("result", result, quote_result or []),
    ):
        for excerpt in excerpts:
            at = text.find(excerpt)
            if at < 0:
                typer.echo(f"The {artifact} does not contain {excerpt!r} word for word.", err=True)
                raise typer.Exit(2)
            quotes.append(Quote.of(artifact, text, at, at + len(excerpt)).to_dict())
    if not quote_brief or not quote_result:
        typer.echo(
            "Without a quote from both the brief and the result the verdict is not grounded: "
            "the service sends the work to the poster to decide.",
            err=True,
        )
    payload = verdict_payload(
        task_id=task_id,
        attempt=task["attempts"],
        result_digest=task["result_digest"],
        brief_digest=Record(brief.encode("utf-8"), "brief").digest,
        passed=not fail,
        reasons=reasons,
        quotes=quotes,
        verifier_key=signer.keyid,
    )
    body = {
        "passed": not fail,
        "reasons": reasons,
        "quotes": quotes,
        **sign_verdict(signer, payload),
    }
    _show(client, client.call("POST", f"/tasks/{task_id}/verdict", body, change=True))


@task_app.command("dispute")
def dispute(
    ctx: typer.Context,
    task_id: str,
    reason: Annotated[str, typer.Option(help="Why.")] = "",
) -> None:
    """Ask an admin to rule (poster or agent)."""
    client = _client(ctx)
    body = {"reason": reason}
    _show(client, client.call("POST", f"/tasks/{task_id}/disputes", body, change=True))


@task_app.command("reclaim")
def reclaim(ctx: typer.Context, task_id: str) -> None:
    """After the deadline: get the reward back, or escalate delivered work (posters)."""
    client = _client(ctx)
    _show(client, client.call("POST", f"/tasks/{task_id}/reclaim", change=True))


@task_app.command("collect")
def collect(ctx: typer.Context, task_id: str) -> None:
    """Collect an escalated reward 14 days after escalation (agents)."""
    client = _client(ctx)
    _show(client, client.call("POST", f"/tasks/{task_id}/collect", change=True))


@task_app.command("cancel")
def cancel(ctx: typer.Context, task_id: str) -> None:
    """Withdraw a task nobody has accepted (posters)."""
    client = _client(ctx)
    _show(client, client.call("POST", f"/tasks/{task_id}/cancel", change=True))


@task_app.command("rule")
def rule(
    ctx: typer.Context,
    task_id: str,
    *,
    pay_agent: Annotated[bool, typer.Option("--pay-agent/--refund", help="The ruling.")],
    note: Annotated[str, typer.Option(help="Shown with the ruling.")] = "",
) -> None:
    """Rule on a disputed or escalated task (admins)."""
    client = _client(ctx)
    body = {"pay_agent": pay_agent, "note": note}
    _show(client, client.call("POST", f"/tasks/{task_id}/ruling", body, change=True))


def register(app: typer.Typer) -> None:
    """Add the ``task`` command group to the ``adjudge`` command."""
    app.add_typer(task_app, name="task")
