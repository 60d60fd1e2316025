"""``adjudge task …``: a client of a running service, to walk a task through its life.

Every command talks to the service through :class:`adjudge.client.Client`. The service is
found with ``--url`` (or ``ADJUDGE_URL``) and the caller with ``--key`` (or
``ADJUDGE_API_KEY``). Every state-changing command sends a fresh ``Idempotency-Key`` and reuses
it when it retries after a network failure, so a retry never pays twice. Exit codes: 0 done,
1 refused by the service (its code and message are printed) or a dry run that would fail, 2 bad
input or no service.
"""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from adjudge.cli._common import (
    CURRENCY,
    DEFAULT_URL,
    EXIT_BAD_INPUT,
    EXIT_REFUSED,
    PLAIN_UNITS_MOST,
    IdemKeyOption,
    JsonFlag,
    KeyOption,
    Session,
    UrlOption,
    money,
    number_option,
    print_json,
    print_table,
    remember_json,
    say_if_empty,
    stop,
    units_of,
    wants_json,
    whole_option,
    wire_json,
    words,
)
from adjudge.input_files import read_input

if TYPE_CHECKING:
    from adjudge.client import Client, Task

task_app = typer.Typer(
    name="task",
    help="Post, take, deliver, judge and settle tasks on a running service.",
    no_args_is_help=True,
)


class StatusChoice(StrEnum):
    """The task states ``task list --status`` filters by."""

    funded = "funded"
    assigned = "assigned"
    submitted = "submitted"
    awaiting_verification = "awaiting_verification"
    failed = "failed"
    disputed = "disputed"
    escalated = "escalated"
    completed = "completed"
    cancelled = "cancelled"


class ModeChoice(StrEnum):
    """The verification modes."""

    auto = "auto"
    agent = "agent"
    manual = "manual"


@task_app.callback()
def _options(
    ctx: typer.Context,
    url: UrlOption = DEFAULT_URL,
    key: KeyOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Post, take, deliver, judge and settle tasks on a running service."""
    remember_json(ctx, as_json)
    ctx.obj = Session(url, key)


def _session(ctx: typer.Context, as_json: bool) -> Session:
    session = ctx.obj
    assert isinstance(session, Session)
    session.as_json = wants_json(ctx, as_json)
    return session


# --- printing a task ------------------------------------------------------------------------


def _line(task: Task | dict[str, Any]) -> str:
    """One line: id, mode, status, reward, agent, attempts, ending (what state changes print)."""
    parts = [task["id"], task["mode"], task["status"], f"reward {money(task['reward'])}"]
    if task.get("agent"):
        parts.append(f"agent {task['agent']}")
    parts.append(f"attempts {task['attempts']}/{task['max_attempts']}")
    if task.get("take_lapses_at"):
        parts.append(f"take lapses {task['take_lapses_at']}")
    if task.get("ending"):
        parts.append(str(task["ending"]))
    return "  ".join(parts)


def _indented(text: str, prefix: str = "    ") -> None:
    for line in text.splitlines() or [""]:
        typer.echo(prefix + line)


def _verdict_lines(verdict: dict[str, Any], indent: str = "  ") -> None:
    mark = "PASS" if verdict["passed"] else "FAIL"
    score = f" · score {verdict['score']}" if verdict.get("score") is not None else ""
    who = ""
    if verdict.get("authority"):
        who = f" · {verdict['authority']}"
        who += f" ({verdict['judge']})" if verdict.get("judge") else ""
    when = f" · {verdict['at']}" if verdict.get("at") else ""
    kind = "ruling" if verdict.get("kind") == "ruling" else "verdict"
    typer.echo(f"{indent}{kind}: {mark}{score}{who}{when}")
    for reason in verdict.get("reasons") or []:
        typer.echo(f"{indent}  - {reason}")
    result = verdict.get("verification_result") or {}
    breakdown = result.get("breakdown") or []
    if breakdown:
        typer.echo(f"{indent}  breakdown:")
        width = max(len(str(item["name"])) for item in breakdown)
        for item in breakdown:
            pct = f"{round(float(item['score']) * 100)}%"
            note = f"  {item['reason']}" if item.get("reason") else ""
            typer.echo(
                f"{indent}    {item['name']:<{width}}  {pct:>4}  weight {item['weight']:g}{note}"
            )
    if verdict.get("receipt_id"):
        typer.echo(f"{indent}  receipt: {verdict['receipt_id']}")


def _panel_facts(task: Task | dict[str, Any]) -> list[tuple[str, str]]:
    """A panel's quorum and each verifier's vote on the latest submission, as one fact."""
    panel = task.get("panel")
    if not panel:
        return []
    votes = ", ".join(f"{v['verifier']} {v['vote'] or 'not yet'}" for v in panel["verifiers"])
    return [("quorum", f"{panel['quorum']} of {len(panel['verifiers'])}: {votes}")]


def _show_task(task: Task | dict[str, Any]) -> None:
    """The whole task as the caller may see it: facts, brief, criteria, every round with its
    submitted text and verdict, disputes, and the receipt ids."""
    typer.echo(f"{task['id']}  {task['title']}")
    status = words(task["status"])
    if task.get("ending"):
        status += f" ({words(task['ending'])})"
    facts = [
        ("status", status),
        ("mode", task["mode"] + (f", verifier {task['verifier']}" if task.get("verifier") else "")),
        *_panel_facts(task),
        ("reward", money(task["reward"])),
        ("poster", task["poster"]),
        ("agent", task.get("agent") or "none yet"),
        ("attempts", f"{task['attempts']} of {task['max_attempts']}"),
        ("posted", task["posted_at"]),
        ("deadline", task["deadline"]),
    ]
    window = task.get("take_window_hours")
    if window:
        lapses = task.get("take_lapses_at")
        until = f"; the current take lapses at {lapses} unless the agent submits" if lapses else ""
        facts.append(("window", f"{window} hours to submit after taking{until}"))
    if task.get("private"):
        facts.append(("private", "yes: others see only passed and score"))
    sealed = task.get("seal")
    if sealed:
        state = "revealed" if sealed["revealed"] else "not revealed"
        if sealed.get("reveal_due_at"):
            state += f"; the poster must reveal by {sealed['reveal_due_at']}"
        if sealed.get("broken"):
            state = f"broken: {sealed['broken']}"
        facts.append(("sealed", f"{', '.join(sealed['fields'])} ({state})"))
        facts.append(("commit", sealed["commitment"]))
    for name, value in facts:
        typer.echo(f"  {name:<9} {value}")
    if task.get("brief"):
        typer.echo("brief:")
        _indented(str(task["brief"]))
    if task.get("criteria"):
        typer.echo("criteria:")
        _indented(json.dumps(task["criteria"], ensure_ascii=False))
    if sealed and sealed.get("reveal"):
        typer.echo("reveal:")
        _indented(json.dumps(sealed["reveal"], ensure_ascii=False))
    submissions = {s["attempt"]: s for s in task.get("submissions") or []}
    verdicts: dict[int, list[dict[str, Any]]] = {}
    for verdict in task.get("verdicts") or []:
        verdicts.setdefault(int(verdict["attempt"]), []).append(dict(verdict))
    for attempt in sorted(set(submissions) | set(verdicts)):
        sub = submissions.get(attempt)
        head = f"round {attempt}"
        if sub is not None:
            head += f" · submitted {sub['submitted_at']} · {sub['digest']}"
        typer.echo(head)
        if sub is not None:
            _indented(sub["result"], "    | ")
        for verdict in verdicts.get(attempt, []):
            _verdict_lines(verdict)
    for lapse in task.get("lapses") or []:
        typer.echo(
            f"take by {lapse['agent']} lapsed at {lapse['at']} (taken {lapse['taken_at']}, "
            "nothing submitted)"
        )
    for dispute in task.get("disputes") or []:
        why = f": {dispute['reason']}" if dispute["reason"] else " (no reason given)"
        typer.echo(
            f"dispute on round {dispute['attempt']} by {dispute['by']} at {dispute['at']}{why}"
        )
    receipts = task.get("receipts") or []
    if receipts:
        typer.echo("receipts:")
        for receipt_id in receipts:
            typer.echo(f"  {receipt_id}")


def _changed(session: Session, task: Task) -> None:
    """What a state change prints: the task's line and its latest verdict."""
    if session.as_json:
        print_json(task)
        return
    typer.echo(_line(task))
    verdict = task.get("verification_result")
    if verdict:
        _verdict_lines(dict(verdict))
    for dispute in task.get("disputes") or []:
        why = f": {dispute['reason']}" if dispute["reason"] else ""
        typer.echo(
            f"  dispute on round {dispute['attempt']} by {dispute['by']} at {dispute['at']}{why}"
        )


def _read(source: str) -> str:
    try:
        return read_input(source, stdin=True).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        stop(f"Cannot read {source}: {getattr(exc, 'strerror', None) or exc}")


def _reward(amount: str | None, minor: int | None) -> int:
    """The reward from ``--reward`` (units) or ``--reward-minor`` (minor units): one of them."""
    if (amount is None) == (minor is None):
        stop("Give the reward once: --reward 2.5 (in USDC) or --reward-minor 2500000.")
    if minor is not None:
        if minor <= 0:
            stop(f"INVALID_REWARD: --reward-minor {minor}: a reward is 1 minor unit or more.")
        return minor
    assert amount is not None
    return units_of(
        amount, CURRENCY, "--reward", plain_most=PLAIN_UNITS_MOST, minor_flag="--reward-minor"
    )


# --- the commands ---------------------------------------------------------------------------


@task_app.command("post")
def post(
    ctx: typer.Context,
    *,
    title: Annotated[str, typer.Option(metavar="TEXT", help="A short title.")],
    reward: Annotated[
        str | None,
        typer.Option(
            metavar="AMOUNT",
            help="The reward in USDC: 2, 2.5 or '2.5 USDC' (6 decimals at most). A bare whole "
            f"number above {PLAIN_UNITS_MOST} is refused as ambiguous: add the currency.",
        ),
    ] = None,
    reward_minor: Annotated[
        int | None,
        whole_option(
            metavar="MINOR_UNITS",
            help="The reward in integer minor units instead: 2000000 is 2 USDC.",
        ),
    ] = None,
    brief: Annotated[
        str, typer.Option(metavar="TEXT", help="The brief, or @FILE to read it from a file.")
    ] = "",
    hours: Annotated[
        float, number_option(metavar="HOURS", help="The deadline, in hours from now (1 to 2160).")
    ] = 24.0,
    mode: Annotated[
        ModeChoice,
        typer.Option(
            metavar="MODE", help="Who judges: manual (you, the default), auto (the check), agent."
        ),
    ] = ModeChoice.manual,
    criteria: Annotated[
        str | None,
        typer.Option(metavar="JSON", help="The auto check's criteria as JSON, or @FILE."),
    ] = None,
    verifier: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ACCOUNT",
            help="The verifier agent that judges (agent mode); repeat it for a panel of up to "
            "9, each voting on every submission.",
        ),
    ] = None,
    quorum: Annotated[
        int | None,
        whole_option(
            metavar="K",
            help="With several --verifier: how many must agree (1 to their number; a majority "
            "by default). K PASS votes and no dissent pay; K FAIL votes fail; a split goes to "
            "an admin.",
        ),
    ] = None,
    private: Annotated[
        bool, typer.Option("--private", help="Others see only passed and score.")
    ] = False,
    lenient: Annotated[
        bool,
        typer.Option(
            "--lenient",
            help="Post criteria fields the auto check does not know (it ignores them); "
            "without it a misspelled field is refused.",
        ),
    ] = False,
    take_window_hours: Annotated[
        int | None,
        whole_option(
            metavar="HOURS",
            help="Hours an agent may hold the task without submitting; then its take lapses "
            "and the task is open again (whole hours, shorter than the deadline). Without it "
            "a take lasts until the deadline.",
        ),
    ] = None,
    seal: Annotated[
        Path | None,
        typer.Option(
            metavar="REVEAL.json",
            help="Auto tasks: seal the answer in this reveal file (from `adjudge task seal`). "
            "Only its commitment is sent; keep the file to reveal with `adjudge task reveal`.",
        ),
    ] = None,
    idempotency_key: IdemKeyOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Post a task and fund it from your wallet (once for one --idempotency-key)."""
    session = _session(ctx, as_json)
    minor = _reward(reward, reward_minor)
    named = list(verifier or ())
    commitment = None if seal is None else _reveal_file(seal)[0]
    parsed: dict[str, Any] = {}
    if criteria:
        text = _read(criteria[1:]) if criteria.startswith("@") else criteria
        try:
            value = wire_json(text)
        except (ValueError, RecursionError) as exc:  # a number past Python's digits, too deep
            stop(f"The criteria are not JSON: {exc}")
        if not isinstance(value, dict):
            stop('The criteria must be a JSON object, such as {"min_length": 200}.')
        parsed = value
    task = session.call(
        lambda api: api.post_task(
            title=title,
            reward=minor,
            brief=_read(brief[1:]) if brief.startswith("@") else brief,
            deadline_hours=hours,
            mode=mode.value,
            criteria=parsed,
            verifier=named[0] if len(named) == 1 else None,
            verifiers=named if len(named) > 1 else (),
            quorum=quorum,
            private=private,
            lenient_criteria=lenient,
            take_window_hours=take_window_hours,
            seal=commitment,
            idempotency_key=idempotency_key,
        ),
        keyed=True,
    )
    _changed(session, task)


def _reveal_file(path: Path) -> tuple[str, dict[str, Any]]:
    """The commitment of a reveal file and its document (exit 2 for one that is not)."""
    from adjudge.errors import Error  # noqa: PLC0415 - keep `adjudge --help` fast
    from adjudge.market.seal import parse_reveal  # noqa: PLC0415

    try:
        document = json.loads(_read(str(path)))
        reveal = parse_reveal(document)
    except (ValueError, RecursionError) as exc:
        stop(f"{path} is not JSON: {exc}")
    except Error as exc:
        stop(f"{exc.code}: {exc.message}")
    return reveal.digest, reveal.document()


@task_app.command("seal")
def seal_(
    *,
    answer: Annotated[
        str, typer.Option(metavar="TEXT", help="The expected answer to seal (or @FILE).")
    ],
    out: Annotated[
        Path, typer.Option("--out", metavar="REVEAL.json", help="Where to write the reveal.")
    ],
) -> None:
    """Seal an expected answer: write the reveal (the answer and a fresh random salt) to keep,
    and print its commitment. Offline; never overwrites a file.

    Post with `adjudge task post --mode auto --seal REVEAL.json`, reveal with
    `adjudge task reveal TASK_ID REVEAL.json` when a submission is to be judged.
    """
    from adjudge.client import seal_criteria  # noqa: PLC0415

    text = _read(answer[1:]) if answer.startswith("@") else answer
    commitment, reveal = seal_criteria({"expected_answer": text})
    try:
        # Created 0600: until it is revealed the file is the answer, and the salt with it.
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(reveal, ensure_ascii=False, indent=2) + "\n")
    except OSError as exc:
        stop(f"FILE_UNWRITABLE: cannot write {out}: {exc.strerror}")
    typer.echo(f"reveal written to {out} (keep it: without it the seal cannot be opened)")
    typer.echo(f"commitment {commitment}")


@task_app.command("reveal")
def reveal(
    ctx: typer.Context,
    task_id: str,
    reveal_file: Annotated[Path, typer.Argument(metavar="REVEAL.json")],
    as_json: JsonFlag = False,
) -> None:
    """Reveal a sealed task's criteria (posters), once a submission waits to be judged: if the
    agent is waiting, the check runs at once. A reveal that does not match the commitment is
    refused (SEAL_MISMATCH) and the task escalates."""
    _commitment, document = _reveal_file(reveal_file)
    _step(ctx, as_json, lambda api: api.reveal(task_id, document))


@task_app.command("verify-seal")
def verify_seal(
    *,
    receipt: Annotated[
        Path, typer.Option(metavar="RECEIPT.json", help="The verdict's receipt (its envelope).")
    ],
    reveal_file: Annotated[
        Path, typer.Option("--reveal", metavar="REVEAL.json", help="The poster's reveal.")
    ],
    key: Annotated[
        str, typer.Option("--key", help="The service's pinned fingerprint, or a public key file.")
    ],
    criteria: Annotated[
        str | None,
        typer.Option(metavar="JSON", help="The task's public criteria, as JSON or @FILE."),
    ] = None,
    commitment: Annotated[
        str | None,
        typer.Option(metavar="sha256:HEX", help="The commitment the task showed when you took it."),
    ] = None,
) -> None:
    """Check offline that a sealed task's verdict was judged against the committed answer: the
    receipt verifies under the pinned key, its oracle check names the commitment, the reveal
    opens it, and the criteria judged are the public ones with the revealed ones.

    Exit 0 it holds, 1 it does not, 2 bad input (a file that cannot be read, a receipt that
    does not verify).
    """
    from adjudge.cli.receipts import pinned_key, read_file  # noqa: PLC0415
    from adjudge.errors import Error  # noqa: PLC0415
    from adjudge.json_text import unique_keys  # noqa: PLC0415
    from adjudge.replay.seal import verify_seal as check  # noqa: PLC0415

    public: dict[str, Any] | None = None
    if criteria is not None:
        try:
            text = _read(criteria[1:]) if criteria.startswith("@") else criteria
            value = json.loads(text, object_pairs_hook=unique_keys)
        except (ValueError, RecursionError) as exc:  # a number past Python's digits, too deep
            stop(f"The criteria are not JSON: {exc}")
        if not isinstance(value, dict):
            stop("The criteria must be a JSON object.")
        public = value
    try:
        document = json.loads(read_file(reveal_file).decode("utf-8"), object_pairs_hook=unique_keys)
        report = check(
            read_file(receipt),
            pinned_key(key),
            document,
            criteria=public,
            commitment=commitment,
        )
    except (ValueError, RecursionError) as exc:
        stop(f"{reveal_file} is not JSON: {exc}")
    except Error as exc:
        stop(f"{exc.code}: {exc.message}")
    for line in report.lines:
        typer.echo(f"  ok  {line}")
    for finding in report.findings:
        typer.echo(f"  NO  {finding}")
    if not report.valid:
        typer.echo("NOT SEALED: the verdict cannot be tied to the committed answer")
        raise typer.Exit(EXIT_REFUSED)
    typer.echo(
        "SEALED: the answer judged is the one committed at posting"
        + ("" if commitment else " (pass --commitment to tie it to what the task showed you)")
        + ("" if public is not None else " (pass --criteria to check the criteria judged)")
    )


@task_app.command("list")
def list_(
    ctx: typer.Context,
    *,
    status: Annotated[
        StatusChoice | None,
        typer.Option(
            metavar="STATUS",
            help="Only tasks in this state: " + ", ".join(s.value for s in StatusChoice) + ".",
        ),
    ] = None,
    mode: Annotated[
        ModeChoice | None,
        typer.Option(metavar="MODE", help="Only tasks in this mode: auto, agent or manual."),
    ] = None,
    mine: Annotated[
        bool, typer.Option("--mine", help="Only tasks you posted, took or verify.")
    ] = False,
    limit: Annotated[
        int,
        whole_option(least=1, most=200, metavar="N", help="How many tasks per page (1 to 200)."),
    ] = 50,
    cursor: Annotated[
        str | None,
        typer.Option(metavar="CURSOR", help="Start after this cursor (printed under a page)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List tasks, newest first, one page at a time."""
    session = _session(ctx, as_json)
    page = session.call(
        lambda api: api.tasks(
            status=status.value if status else None,
            mode=mode.value if mode else None,
            mine=mine,
            limit=limit,
            cursor=cursor,
        )
    )
    if session.as_json:
        print_json(page)
        return
    say_if_empty(page, "tasks", first=cursor is None)
    print_table(
        ("ID", "MODE", "STATUS", "REWARD", "TITLE"),
        [[t["id"], t["mode"], t["status"], money(t["reward"]), t["title"]] for t in page["tasks"]],
        right={3},
    )
    if page["next_cursor"]:
        typer.echo(f"More: adjudge task list --cursor {page['next_cursor']}", err=True)


@task_app.command("show")
def show(ctx: typer.Context, task_id: str, as_json: JsonFlag = False) -> None:
    """Show one task: the brief, each round's result, verdict and breakdown, the disputes and
    the receipt ids."""
    session = _session(ctx, as_json)
    task = session.call(lambda api: api.task(task_id))
    if session.as_json:
        print_json(task)
    else:
        _show_task(task)


def _step(ctx: typer.Context, as_json: bool, fn: Any) -> None:
    session = _session(ctx, as_json)
    _changed(session, session.call(fn))


@task_app.command("accept")
def accept(ctx: typer.Context, task_id: str, as_json: JsonFlag = False) -> None:
    """Take a funded task (agents)."""
    _step(ctx, as_json, lambda api: api.accept(task_id))


@task_app.command("release")
def release(ctx: typer.Context, task_id: str, as_json: JsonFlag = False) -> None:
    """Take back a task whose agent delivered nothing within 24 hours of taking it (posters)."""
    _step(ctx, as_json, lambda api: api.release(task_id))


@task_app.command("submit")
def submit(
    ctx: typer.Context,
    task_id: str,
    result: Annotated[
        str, typer.Argument(metavar="FILE", help="A file with the result, or - for stdin.")
    ] = "-",
    as_json: JsonFlag = False,
) -> None:
    """Deliver a result (one of 3 submissions, before the deadline)."""
    text = _read(result)
    _step(ctx, as_json, lambda api: api.submit(task_id, text))


@task_app.command("finalize")
def finalize(ctx: typer.Context, task_id: str, as_json: JsonFlag = False) -> None:
    """Run the auto check on your latest submission (auto mode)."""
    _step(ctx, as_json, lambda api: api.finalize(task_id))


@task_app.command("dry-run")
def dry_run(
    ctx: typer.Context,
    task_id: str,
    result: Annotated[
        str, typer.Argument(metavar="FILE", help="A file with the draft, or - for stdin.")
    ] = "-",
    as_json: JsonFlag = False,
) -> None:
    """Check a draft against the task's criteria without using an attempt.

    Exits 0 when the draft would pass, 1 when it would fail.
    """
    session = _session(ctx, as_json)
    text = _read(result)
    out = session.call(lambda api: api.dry_run(task_id, text))
    if session.as_json:
        print_json(out)
    else:
        typer.echo(f"{'PASS' if out['passed'] else 'FAIL'} {out['score']} (dry run)")
        for reason in out["reasons"]:
            typer.echo(f"  - {reason}")
        typer.echo(out["note"])
    if not out["passed"]:
        raise typer.Exit(EXIT_REFUSED)


@task_app.command("review")
def review(
    ctx: typer.Context,
    task_id: str,
    *,
    reject: Annotated[bool, typer.Option("--reject", help="Reject instead of approving.")] = False,
    reason: Annotated[
        list[str] | None,
        typer.Option(metavar="TEXT", help="A reason (repeat it, up to 20)."),
    ] = None,
    attempt: Annotated[
        int | None,
        whole_option(
            least=1,
            help="The attempt you read (`adjudge task show`): refused if the agent has "
            "submitted again since.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Approve (the default) or reject a submitted result (manual mode, posters)."""
    _step(
        ctx,
        as_json,
        lambda api: api.review(task_id, passed=not reject, reasons=reason or [], attempt=attempt),
    )


@task_app.command("verdict")
def verdict(
    ctx: typer.Context,
    task_id: str,
    *,
    verifier_key: Annotated[
        Path,
        typer.Option(
            metavar="FILE",
            help="Your verifier private key (PEM), the one your account registered; the "
            "verdict is signed with it.",
        ),
    ],
    fail: Annotated[bool, typer.Option("--fail", help="Fail instead of passing.")] = False,
    reason: Annotated[
        list[str] | None,
        typer.Option(metavar="TEXT", help="A reason (repeat it, up to 10)."),
    ] = None,
    quote_brief: Annotated[
        list[str] | None,
        typer.Option(
            metavar="TEXT", help="An exact excerpt of the brief the verdict relies on (repeat)."
        ),
    ] = None,
    quote_result: Annotated[
        list[str] | None,
        typer.Option(
            metavar="TEXT", help="An exact excerpt of the result the verdict relies on (repeat)."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Judge the latest submission as the task's named verifier (agent mode), signed and
    grounded: quote the brief and the result, or the poster decides instead."""
    from adjudge.cli import keyfiles  # noqa: PLC0415
    from adjudge.errors import Error  # noqa: PLC0415 - keep `adjudge --help` fast
    from adjudge.kernel.oracle import Record  # noqa: PLC0415
    from adjudge.kernel.semantic import Quote  # noqa: PLC0415
    from adjudge.market.signed_verdicts import sign_verdict, verdict_payload  # noqa: PLC0415

    session = _session(ctx, as_json)
    try:
        signer = keyfiles.read_signing_key(verifier_key, "verifier key file")
    except Error as exc:
        stop(f"{exc.code}: {exc.message}")
    task = session.call(lambda api: api.task(task_id))
    if not task.get("result_digest"):
        stop("This task has no delivered result to judge.", EXIT_REFUSED)
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
        result_digest=str(task["result_digest"]),
        brief_digest=Record(brief.encode("utf-8"), "brief").digest,
        passed=not fail,
        reasons=reasons,
        quotes=quotes,
        verifier_key=signer.keyid,
    )
    signed = sign_verdict(signer, payload)

    def post_verdict(api: Client) -> Task:
        return api.verdict(
            task_id,
            passed=not fail,
            reasons=reasons,
            signature=signed["signature"],
            public_key=signed.get("public_key"),
            quotes=quotes,
        )

    _changed(session, session.call(post_verdict))


@task_app.command("dispute")
def dispute(
    ctx: typer.Context,
    task_id: str,
    reason: Annotated[str, typer.Option(metavar="TEXT", help="Why, for the admin who rules.")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Ask an admin to rule (the poster or the agent)."""
    _step(ctx, as_json, lambda api: api.dispute(task_id, reason))


@task_app.command("reclaim")
def reclaim(ctx: typer.Context, task_id: str, as_json: JsonFlag = False) -> None:
    """After the deadline: get the reward back, or escalate delivered work (posters)."""
    _step(ctx, as_json, lambda api: api.reclaim(task_id))


@task_app.command("collect")
def collect(ctx: typer.Context, task_id: str, as_json: JsonFlag = False) -> None:
    """Collect an escalated reward 14 days after escalation (agents)."""
    _step(ctx, as_json, lambda api: api.collect(task_id))


@task_app.command("cancel")
def cancel(ctx: typer.Context, task_id: str, as_json: JsonFlag = False) -> None:
    """Withdraw a task nobody has accepted (posters)."""
    _step(ctx, as_json, lambda api: api.cancel(task_id))


@task_app.command("rule")
def rule(
    ctx: typer.Context,
    task_id: str,
    *,
    pay_agent: Annotated[
        bool, typer.Option("--pay-agent/--refund", help="Pay the agent, or refund the poster.")
    ],
    note: Annotated[str, typer.Option(metavar="TEXT", help="Shown with the ruling.")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Rule on a disputed or escalated task (admins)."""
    _step(ctx, as_json, lambda api: api.rule(task_id, pay_agent=pay_agent, note=note))


def register(app: typer.Typer) -> None:
    """Add the ``task`` command group to the ``adjudge`` command."""
    app.add_typer(task_app, name="task")


__all__ = ["EXIT_BAD_INPUT", "register", "task_app"]
