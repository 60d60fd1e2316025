"""``adjudge call verify`` and ``adjudge provider report``: the paid-call commands.

The edge: reads files, reads the clock (for the call's time when none is given, and for a
receipt's decision time), writes a signed receipt when asked, prints. Every decision is made by
the pure ``adjudge.calls`` package.

Exit codes of ``call verify``: 0 when the call settles, 1 on refund or void, 2 on bad input
(the error's code and sentence are printed), including a receipt that cannot be issued.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from adjudge.cli._common import money
from adjudge.cli.receipts import read_signing_key, write_receipt
from adjudge.digests import sha256_digest
from adjudge.errors import CriteriaError, Error, ReceiptError
from adjudge.input_files import read_input

if TYPE_CHECKING:
    from adjudge.calls import CallResult, ProviderResponse
    from adjudge.calls.quality import Observation, QualityTerms

# The calls package is imported by the commands that use it, not when the CLI starts: every
# `adjudge` command would otherwise pay for importing it.

__all__ = ["register"]

call_app = typer.Typer(
    help="Verify a paid call's response offline, from files (`calls`: a service's calls).",
    no_args_is_help=True,
)
provider_app = typer.Typer(
    help="Provider quality from a call log file, offline: windows, failure rates, penalties."
)


def register(app: typer.Typer) -> None:
    """Add the ``call`` and ``provider`` command groups to the ``adjudge`` app."""
    app.add_typer(call_app, name="call")
    app.add_typer(provider_app, name="provider")


def _refuse(error: Error, as_json: bool) -> NoReturn:
    if as_json:
        typer.echo(json.dumps({"error": error.to_dict()}, indent=2))
    else:
        typer.echo(str(error), err=True)
    raise typer.Exit(2)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        return read_input(path)
    except OSError as exc:
        raise CriteriaError(f"Cannot read {what} {path}: {exc}", code="INPUT_UNREADABLE") from None


def _parse(data: bytes, path: Path, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, too deep, too long
        raise CriteriaError(f"Cannot read {what} {path}: {exc}", code="INPUT_UNREADABLE") from None


def _load(path: Path, what: str) -> Any:
    """A JSON file's value; unreadable or invalid JSON is refused as ``INPUT_UNREADABLE``."""
    return _parse(_read_bytes(path, what), path, what)


def _time(text: str | None) -> datetime | None:
    from adjudge.calls.policy import parse_time  # noqa: PLC0415

    return None if text is None else parse_time(text, "--at", "CALL_INPUT_INVALID")


def _optional(path: Path | None, what: str, parse: Callable[[object], Any]) -> Any:
    return None if path is None else parse(_load(path, what))


@call_app.command("verify")
def verify_command(
    *,
    contract: Annotated[Path, typer.Option("--contract", help="The tool contract (JSON).")],
    request: Annotated[Path, typer.Option("--request", help="The call request (JSON).")],
    response: Annotated[Path, typer.Option("--response", help="The provider response (JSON).")],
    policy: Annotated[
        Path | None, typer.Option("--policy", help="The decision policy; none: UNVERIFIED.")
    ] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="The call's time (ISO 8601); default: the request's.")
    ] = None,
    judgment: Annotated[
        Path | None, typer.Option("--judgment", help="A meaning judgment from a judge worker.")
    ] = None,
    corroboration: Annotated[
        Path | None, typer.Option("--corroboration", help="Independent corroboration of empty.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the call record as JSON.")] = False,
    sign: Annotated[
        Path | None, typer.Option("--sign", help="Private key file: sign a receipt of this call.")
    ] = None,
    receipt: Annotated[
        Path | None, typer.Option("--receipt", help="Where to write the signed receipt.")
    ] = None,
) -> None:
    """Verify one call: print the verdict, payment decision, strike and every check row.

    With `--sign KEY --receipt OUT` the call's kernel determination (the integrity of the
    response, every check with its kernel verdict, and the policy's verdict and payment beside
    it) is also written as a signed receipt, verifiable offline with `adjudge receipt verify`.
    """
    from adjudge.calls import (  # noqa: PLC0415
        Payment,
        parse_corroboration,
        parse_judgment,
        parse_request,
        parse_response,
        register_contract,
        register_policy,
        verify_call,
    )

    if (sign is None) != (receipt is None):
        pair = "--sign and --receipt go together; give both."
        _refuse(CriteriaError(pair, code="SIGN_NEEDS_RECEIPT"), as_json)
    try:
        contract_bytes = _read_bytes(contract, "the contract")
        registered = register_contract(_parse(contract_bytes, contract, "the contract"))
        policy_bytes = None if policy is None else _read_bytes(policy, "the policy")
        governing = (
            None
            if policy is None or policy_bytes is None
            else register_policy(_parse(policy_bytes, policy, "the policy"), registered)
        )
        call = parse_request(_load(request, "the request"))
        answer = parse_response(_load(response, "the response"))
        when = _time(at) or call.at or datetime.now(UTC)
        result = verify_call(
            registered,
            governing,
            call,
            answer,
            when,
            judgment=_optional(judgment, "the judgment", parse_judgment),
            corroboration=_optional(corroboration, "the corroboration", parse_corroboration),
        )
        if sign is not None and receipt is not None:
            _sign_receipt(sign, receipt, result, answer, contract_bytes, policy_bytes)
    except Error as exc:
        _refuse(exc, as_json)
    record = result.to_dict()
    if as_json:
        typer.echo(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        _print_call(record)
    raise typer.Exit(0 if result.effect.payment is Payment.SETTLE else 1)


def _sign_receipt(
    key: Path,
    out_path: Path,
    result: CallResult,
    answer: ProviderResponse,
    contract_bytes: bytes,
    policy_bytes: bytes | None,
) -> None:
    """Issue and write the signed receipt of one verified call (the clock is read here).

    The integrity check needs the bytes the response digest covers. Without a declared
    `digest` that is the body's canonical form, which this command holds; a declared digest
    covers the bytes as the edge received them, which it does not, so no integrity check runs
    and a PASS cannot be signed (`INTEGRITY_PROOF_REQUIRED`).
    """
    from adjudge.calls import determine_call  # noqa: PLC0415
    from adjudge.calls.verify import digested_bytes  # noqa: PLC0415
    from adjudge.receipts import issue  # noqa: PLC0415

    signer = read_signing_key(key)
    stored = None if answer.digest else digested_bytes(answer.body)
    try:
        determination = determine_call(
            result,
            now=datetime.now(UTC),
            response_bytes=stored,
            policy_digest=None if policy_bytes is None else sha256_digest(policy_bytes),
            contract_digest=sha256_digest(contract_bytes),
        )
    except ReceiptError as exc:
        if exc.code != "INTEGRITY_PROOF_REQUIRED" or stored is not None:
            raise
        raise ReceiptError(
            f"{exc.message} The response declares the digest {answer.digest} of bytes this "
            "command does not hold, so it cannot prove them; sign where the bytes were received.",
            code=exc.code,
        ) from exc
    issued = issue(determination, signer)
    write_receipt(out_path, issued)
    # The receipt's verdict is what the evidence establishes; the call's own verdict (how it is
    # paid) is printed beside it, so an UNVERIFIED call never reads as a bare PASS.
    call = "none" if result.verdict is None else result.verdict.value
    typer.echo(
        f"receipt {issued.receipt_id} (evidence {issued.verdict.value}; call {call}, "
        f"{result.effect.payment.value}) written to {out_path}",
        err=True,
    )


def _print_call(record: dict[str, Any]) -> None:
    console = Console(highlight=False, soft_wrap=True)
    policy = record["policy"]
    named = (
        "none" if policy is None else f"{policy['policy']} v{policy['version']} ({policy['mode']})"
    )
    console.print(f"call      {record['call_id']}  ({record['tool']} by {record['provider']})")
    console.print(f"policy    {named}")
    if record["error"] is not None:
        error = record["error"]
        console.print(f"error     {error['kind']}: {error['code']} {error['message']}".rstrip())
    verdict = record["verdict"] or "none (error)"
    if record["policy_verdict"] not in (None, record["verdict"]):
        verdict += f" (policy verdict {record['policy_verdict']})"
    console.print(f"verdict   {verdict}")
    console.print(f"decided   {record['decided_by']}")
    price = record["price"]
    console.print(
        f"payment   {record['payment']} (charge {money(record['charge_minor'], price['currency'])} "
        f"of {money(price['amount_minor'], price['currency'])})"
    )
    console.print(f"strike    {'yes' if record['strike'] else 'no'}")
    if not record["effect"]["enforced"]:
        effect = record["effect"]
        console.print(
            f"enforced  no (under an enforcing policy: {effect['table_payment']}, "
            f"strike {'yes' if effect['table_strike'] else 'no'})"
        )
    if not record["checks"]:
        console.print("checks    none ran")
        return
    table = Table("check", "authority", "outcome", "weight", "reason")
    table.columns[0].no_wrap = table.columns[2].no_wrap = True
    for row in record["checks"]:
        at_path = f"{row['path']}: " if row["path"] and row["path"] not in row["reason"] else ""
        table.add_row(
            row["name"] + ("" if row["declared"] else " *"),
            row["authority"],
            row["outcome"],
            "" if row["weight"] is None else str(row["weight"]),
            at_path + row["reason"],
        )
    console.print(table)
    if any(not row["declared"] for row in record["checks"]):
        console.print("* recorded, but not a check the policy counts")


@provider_app.command("report")
def report_command(
    log: Annotated[Path, typer.Argument(help="A JSON-lines log of call records.")],
    at: Annotated[
        str | None, typer.Option("--at", help="End of the window (ISO 8601); default: last call.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Replay a call log; print each provider's window, failure rate and any penalty proposal.

    Lines are call records as `adjudge call verify --json` prints them, and provider terms:
    `{"type": "provider", "provider", "declared_failure_rate", "sample_gate", "window_days"}`.
    """
    try:
        observations, terms = _read_log(log)
        end = _time(at) or max((o.at for o in observations), default=None)
    except Error as exc:
        _refuse(exc, as_json)
    providers = sorted({o.provider for o in observations} | set(terms))
    reports = []
    for provider in providers:
        reports.append(_provider_report(provider, observations, terms.get(provider), end))
    if as_json:
        typer.echo(
            json.dumps(
                {"at": None if end is None else end.isoformat(), "providers": reports}, indent=2
            )
        )
        return
    console = Console(highlight=False, soft_wrap=True)
    if not reports:
        console.print("no calls and no providers in the log")
    for item in reports:
        window = item["window"]
        rate = window["failure_rate"] if window else None
        console.print(f"[bold]{item['provider']}[/bold]")
        if window is None:
            console.print("  no calls in the log: no measured rate")
        else:
            console.print(f"  window        {window['start']} .. {window['end']}")
            console.print(
                f"  counted       {window['pass']} PASS, {window['fail']} FAIL"
                f"  (not counted {window['not_counted']}; request errors "
                f"{window['request_errors']}, system errors {window['system_errors']})"
            )
            shown = (
                "no measured rate (no PASS or FAIL observations)"
                if rate is None
                else f"{rate} ({_percent(rate)})"
            )
            console.print(f"  failure rate  {shown}")
        console.print(f"  penalty       {item['assessment']}")
        proposal = item["proposal"]
        if proposal is not None:
            console.print(
                f"  proposal      {money(proposal['penalty_minor'])}, {proposal['status']}; "
                f"enforceable from {proposal['enforceable_at']}, lapses {proposal['lapses_at']}"
            )


def _percent(ratio: str) -> str:
    num, den = ratio.split("/")
    return f"{100 * int(num) / int(den):.2f}%"


def _read_log(path: Path) -> tuple[list[Observation], dict[str, QualityTerms]]:
    try:
        lines = read_input(path).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CriteriaError(f"Cannot read the log {path}: {exc}", code="INPUT_UNREADABLE") from None
    from adjudge.calls.quality import observation_from_record, parse_terms  # noqa: PLC0415

    observations: list[Observation] = []
    terms: dict[str, QualityTerms] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            raise CriteriaError(
                f"Line {number} is not JSON: {exc}", code="CALL_LOG_INVALID"
            ) from None
        try:
            if isinstance(record, dict) and record.get("type") == "provider":
                terms[str(record.get("provider"))] = parse_terms(record)
            else:
                observations.append(observation_from_record(record))
        except CriteriaError as exc:
            raise CriteriaError(f"Line {number}: {exc.message}", code=exc.code) from None
    return observations, terms


def _provider_report(
    provider: str,
    observations: list[Observation],
    terms: QualityTerms | None,
    end: datetime | None,
) -> dict[str, Any]:
    from adjudge.calls import assess_penalty, quality_window  # noqa: PLC0415

    if end is None:
        return {
            "provider": provider,
            "window": None,
            "assessment": "no calls, so no measured rate and no penalty",
            "proposal": None,
        }
    if terms is not None:
        span = terms.window
    else:
        # Without declared terms there is no declared window: the report covers the whole log
        # (a provider without terms is listed only because it has calls, so there is a first).
        span = end - min(o.at for o in observations) + timedelta(seconds=1)
    window = quality_window(observations, provider, end, span)
    if terms is None:
        return {
            "provider": provider,
            "window": window.to_dict(),
            "assessment": "no declared terms in the log, so no penalty is assessed",
            "proposal": None,
        }
    assessment = assess_penalty(window, terms, end)
    proposal = None
    if assessment.proposal is not None:
        proposal = assessment.proposal.to_dict() | {"status": assessment.proposal.status(end).value}
    return {
        "provider": provider,
        "window": window.to_dict(),
        "assessment": assessment.reason,
        "proposal": proposal,
    }
