"""``adjudge check`` and ``adjudge check-batch``: the auto check from a terminal."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import webbrowser
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from adjudge.cli._common import wants_json, whole_option
from adjudge.cli.receipts import append_receipt, read_signing_key
from adjudge.errors import CriteriaError
from adjudge.input_files import read_input

if TYPE_CHECKING:
    from adjudge.autocheck import VerificationResult
    from adjudge.receipts import Receipt, ReceiptLog

# The auto check, the kernel and the batch viewer are imported by the commands that use them,
# not when the CLI starts: the other commands would pay for them.

EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2

out = Console()
err = Console(stderr=True, soft_wrap=True)  # a sentence is never broken to fit 80 columns


def _bad_input(code: str, message: str) -> typer.Exit:
    err.print(f"[bold red]error[/] {code}: {message}")
    return typer.Exit(EXIT_BAD_INPUT)


def _read_json(path: Path, what: str) -> tuple[Any, bytes]:
    """A JSON file's value, and its bytes as read (once: what a receipt's digest covers)."""
    try:
        raw = read_input(path)
        return json.loads(raw.decode("utf-8")), raw
    except OSError as exc:
        raise _bad_input("FILE_UNREADABLE", f"cannot read {what} {path}: {exc.strerror}.") from exc
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, too deep, too long a number
        raise _bad_input("INVALID_JSON", f"{what} {path} is not valid JSON: {exc}.") from exc


def _read_result(source: str, as_json: bool) -> tuple[Any, bytes]:
    """The result to check, and its bytes as stored (what a receipt's digest covers)."""
    try:
        raw = read_input(source, stdin=True)
        text = raw.decode("utf-8")
    except OSError as exc:
        raise _bad_input(
            "FILE_UNREADABLE", f"cannot read result {source}: {exc.strerror}."
        ) from exc
    except UnicodeDecodeError as exc:
        raise _bad_input("INVALID_TEXT", f"result {source} is not UTF-8 text.") from exc
    if not (as_json or source.endswith(".json")):
        return text, raw
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _bad_input("INVALID_JSON", f"result {source} is not valid JSON: {exc}.") from exc
    if not isinstance(value, dict | str):
        raise _bad_input("INVALID_RESULT", "a JSON result must be an object or a string.")
    return value, raw


def _validate(criteria: Any) -> None:
    """Refuse criteria of the wrong shape (exit 2); warn about dropped fields and limits."""
    from adjudge.autocheck import parse  # noqa: PLC0415

    try:
        parsed = parse(criteria)
    except CriteriaError as exc:
        if exc.code == "CRITERIA_INVALID":
            raise _bad_input(exc.code, exc.message) from exc
        # Over a limit: the check itself fails it, as the reference does; say which limit.
        err.print(f"[yellow]warning[/] {exc.code}: {exc.message}")
        return
    for name in parsed.dropped:
        err.print(f"[yellow]warning[/] unknown criteria field {name!r} was dropped (misspelled?)")


def _render(verdict: VerificationResult) -> None:
    from adjudge.autocheck.jsvalues import to_fixed0  # noqa: PLC0415

    colour = "green" if verdict.passed else "red"
    out.print(f"[bold {colour}]{'PASS' if verdict.passed else 'FAIL'}[/]  score {verdict.score}")
    for reason in verdict.reasons:
        out.print(f"  • {reason}")
    if verdict.breakdown:
        table = Table("item", "score", "weight", "gate")
        for item in verdict.breakdown:
            table.add_row(
                item.name,
                to_fixed0(item.score * 100) + "%",
                f"{item.weight:g}",
                "gate" if item.gate else "",
            )
        out.print(table)


def check(
    ctx: typer.Context,
    criteria: Annotated[Path, typer.Option("--criteria", "-c", help="Criteria JSON file.")],
    result: Annotated[str, typer.Argument(help="Result file, or - for standard input.")] = "-",
    as_json: Annotated[bool, typer.Option("--json", help="Print the exact JSON verdict.")] = False,
    result_json: Annotated[
        bool, typer.Option("--result-json", help="Read the result as JSON (.json files are).")
    ] = False,
    sign: Annotated[
        Path | None, typer.Option("--sign", help="Private key file: sign a receipt of this check.")
    ] = None,
    receipt: Annotated[
        Path | None,
        typer.Option("--receipt", help="Receipt log to append the signed receipt to."),
    ] = None,
    supersedes: Annotated[
        str | None,
        typer.Option("--supersedes", help="Receipt id on the log that this re-run supersedes."),
    ] = None,
    about: Annotated[
        str | None,
        typer.Option(
            "--about", help="What the verdict is about (default: criteria:<criteria digest>)."
        ),
    ] = None,
) -> None:
    """Score one result against criteria. Exit 0 on pass, 1 on fail, 2 on bad input.

    With ``--sign KEY --receipt LOG`` the determination (the integrity of the result's bytes and
    the check's outcome) is also appended to the receipt log LOG as a signed receipt a third
    party can verify offline (``adjudge receipt verify-chain``). A re-run is a new receipt
    after the earlier ones, never an overwrite; ``--supersedes ID`` names the receipt it
    replaces, which must be about the same subject (``--about``; by default the criteria).
    """
    as_json = wants_json(ctx, as_json)
    if (sign is None) != (receipt is None) or (
        sign is None and (supersedes is not None or about is not None)
    ):
        raise _bad_input(
            "SIGN_NEEDS_RECEIPT",
            "--sign and --receipt go together, and --supersedes and --about need both.",
        )
    from adjudge.autocheck import auto_check  # noqa: PLC0415

    raw_criteria, _ = _read_json(criteria, "criteria")
    _validate(raw_criteria)
    value, stored = _read_result(result, result_json)
    # A result read as JSON is the agent's JSON value: a string there is read as its JSON text.
    verdict = auto_check(value, raw_criteria, json_value=result_json or result.endswith(".json"))
    if sign is not None and receipt is not None:
        _sign_receipt(sign, receipt, stored, verdict, raw_criteria, supersedes, about)
    if as_json:
        sys.stdout.write(verdict.to_json() + "\n")
    else:
        _render(verdict)
    raise typer.Exit(EXIT_PASS if verdict.passed else EXIT_FAIL)


def _sign_receipt(
    key: Path,
    log_path: Path,
    stored: bytes,
    verdict: VerificationResult,
    criteria: Mapping[str, Any],
    supersedes: str | None,
    about: str | None,
) -> None:
    """Issue the signed receipt of one standalone check and append it to the receipt log (the
    clock is read here). It binds the criteria as the service's receipts bind a task's: the
    digest of their RFC 8785 JSON, however the file spaces or orders them (the file's bytes were
    digested, so the same criteria had one digest here and another on the service)."""
    from adjudge.kernel.adapters import determine_auto_check  # noqa: PLC0415
    from adjudge.kernel.oracle import Record  # noqa: PLC0415
    from adjudge.market.proof import criteria_digest as digest_of  # noqa: PLC0415

    signer = read_signing_key(key)
    criteria_digest = digest_of(criteria)
    determination = determine_auto_check(
        Record(stored), verdict, now=datetime.now(UTC), criteria_digest=criteria_digest
    )
    subject = about if about is not None else f"criteria:{criteria_digest}"

    def append(log: ReceiptLog) -> Receipt:
        return log.append(determination, signer, supersedes=supersedes, about=subject)

    issued = append_receipt(log_path, signer, append)
    replaces = f", superseding {issued.supersedes}" if issued.supersedes else ""
    err.print(
        f"receipt {issued.receipt_id} appended to {log_path} (sequence {issued.sequence}{replaces})"
    )


def _bad(number: int, case_id: Any, code: str, message: str) -> dict[str, Any]:
    return {"line": number, "id": case_id, "error": {"code": code, "message": message}}


def _check_line(numbered: tuple[int, str]) -> dict[str, Any]:
    """One JSONL case → one JSONL verdict, or an error record naming the line; never raises.

    A line that is not an object with ``result`` and ``criteria``, a result of the wrong type,
    or criteria of the wrong shape (``CRITERIA_INVALID``: a string where a list goes, say) is a
    bad line, reported with its number, never scored. Criteria over a size limit are scored as
    the reference scores them (the hard failure), as ``adjudge check`` does.
    """
    from adjudge.autocheck import auto_check, parse  # noqa: PLC0415
    from adjudge.autocheck.spans import matched_spans  # noqa: PLC0415

    number, line = numbered
    try:
        case = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _bad(number, None, "INVALID_JSON", f"line {number} is not JSON: {exc}")
    if not isinstance(case, dict) or "result" not in case or "criteria" not in case:
        return _bad(
            number,
            case.get("id") if isinstance(case, dict) else None,
            "INVALID_LINE",
            f"line {number} must be an object with result and criteria",
        )
    case_id = case.get("id")
    result = case["result"]
    if not isinstance(result, dict | str):
        return _bad(
            number, case_id, "INVALID_RESULT", f"line {number}: result must be a string or object"
        )
    try:
        parse(case["criteria"])
    except CriteriaError as exc:
        if exc.code == "CRITERIA_INVALID":
            return _bad(number, case_id, exc.code, f"line {number}: {exc.message}")
    verdict = auto_check(result, case["criteria"])
    out = {"line": number, "id": case_id, **verdict.to_dict()}
    # Where the check found each keyword and forbidden phrase, for the viewer to mark (none
    # when they cannot be carried back to the text exactly: the viewer then marks nothing).
    found = matched_spans(result, case["criteria"])
    if found is not None:
        out["spans"] = [span.to_dict() for span in found]
    return out


def _check_chunk(lines: list[tuple[int, str]]) -> list[dict[str, Any]]:
    return [_check_line(line) for line in lines]


def _chunks(lines: list[tuple[int, str]], size: int) -> Iterator[list[tuple[int, str]]]:
    for start in range(0, len(lines), size):
        yield lines[start : start + size]


def check_batch(
    cases: Annotated[Path, typer.Argument(help="JSONL file: one {id, result, criteria} per line.")],
    output: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write verdicts as JSONL here.")
    ] = None,
    workers: Annotated[
        int,
        whole_option(
            least=0, most=256, help="Processes, at most 256 (0, the default: every core)."
        ),
    ] = 0,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write the results as a self-contained viewer page."),
    ] = None,
    open_page: Annotated[
        bool,
        typer.Option("--open", help="Open the viewer page in a browser (--html or a temp file)."),
    ] = False,
) -> None:
    """Check many results on all cores; print a summary. Exit 2 if any line was unusable.

    Each output line carries its input `line` number and `id`; a bad line (not JSON, not an
    object with `result` and `criteria`, criteria of the wrong type) is an `error` record
    instead of a verdict, listed with its line number and counted apart in the summary.
    `--html FILE` writes the batch viewer (pass rate per rule, the failing records with their
    text marked) as one HTML file with the results and texts in it; `--open` opens it.
    """
    try:
        text = read_input(cases).decode("utf-8")
    except OSError as exc:
        raise _bad_input("FILE_UNREADABLE", f"cannot read {cases}: {exc.strerror}.") from exc
    except UnicodeDecodeError as exc:
        raise _bad_input("INVALID_TEXT", f"{cases} is not UTF-8 text.") from exc
    lines = [(n, ln) for n, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    procs = workers or os.cpu_count() or 1
    chunk = max(1, min(256, len(lines) // (procs * 8) or 1))
    verdicts: list[dict[str, Any]] = []
    with Progress(console=err, transient=True) as progress:
        bar = progress.add_task("checking", total=len(lines))
        with ProcessPoolExecutor(max_workers=procs) as pool:
            for done in pool.map(_check_chunk, _chunks(lines, chunk)):
                verdicts.extend(done)
                progress.advance(bar, len(done))
    sink = output.open("w", encoding="utf-8") if output else sys.stdout
    try:
        for verdict in verdicts:
            sink.write(json.dumps(verdict, ensure_ascii=False) + "\n")
    finally:
        if output:
            sink.close()
    _summary(verdicts)
    if html is not None or open_page:
        _write_viewer(cases.name, lines, verdicts, html, open_page)
    if any("error" in v for v in verdicts):
        raise typer.Exit(EXIT_BAD_INPUT)


def _write_viewer(
    name: str,
    lines: list[tuple[int, str]],
    verdicts: list[dict[str, Any]],
    html: Path | None,
    open_page: bool,
) -> None:
    """Write the viewer page of this run (each verdict with its case's result and criteria) to
    ``html``, or to a new private temp file for ``--open``; open it if asked."""
    from adjudge.web.batch import batch_html  # noqa: PLC0415

    cases: dict[int, Any] = {}
    for number, line in lines:
        try:
            case = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(case, dict):
            cases[number] = {k: case[k] for k in ("result", "criteria") if k in case}
    page = batch_html(name, [{**v, **cases.get(v["line"], {})} for v in verdicts])
    if html is None:
        fd, temp = tempfile.mkstemp(prefix="adjudge-batch-", suffix=".html")
        os.close(fd)
        html = Path(temp)
    try:
        html.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise _bad_input("FILE_UNWRITABLE", f"cannot write {html}: {exc.strerror}.") from exc
    err.print(f"viewer written to {html}", markup=False, highlight=False)
    if open_page and not webbrowser.open(html.resolve().as_uri()):
        err.print("no browser to open it with: open that file yourself", markup=False)


#: Bad lines listed one by one in the summary; the rest are counted.
SHOWN_BAD_LINES = 20


def _summary(verdicts: list[dict[str, Any]]) -> None:
    judged = [v for v in verdicts if "error" not in v]
    bad = [v for v in verdicts if "error" in v]
    passed = sum(1 for v in judged if v["passed"])
    rate = f"{100 * passed / len(judged):.1f}%" if judged else "n/a"
    line = f"{len(judged)} checked, {passed} passed ({rate})"
    if bad:
        noun = "line" if len(bad) == 1 else "lines"
        line += f"; {len(bad)} bad {noun} not checked"
    err.print(line, markup=False, highlight=False)
    for record in bad[:SHOWN_BAD_LINES]:
        e = record["error"]
        err.print(f"  line {record['line']}: {e['code']}: {e['message']}", markup=False)
    if len(bad) > SHOWN_BAD_LINES:
        err.print(f"  … and {len(bad) - SHOWN_BAD_LINES} more bad lines (see the output)")
    histogram = Counter(min(v["score"] // 10, 9) for v in judged)
    table = Table("score", "results", title="Scores")
    for bucket in range(10):
        table.add_row(
            f"{bucket * 10}–{bucket * 10 + (10 if bucket == 9 else 9)}", str(histogram[bucket])
        )
    err.print(table)
    reasons = Counter(r.split(":")[0] for v in judged if not v["passed"] for r in v["reasons"])
    if reasons:
        top = Table("reason", "failed results", title="Top failure reasons")
        for reason, count in reasons.most_common(8):
            top.add_row(reason, str(count))
        err.print(top)


def register(app: typer.Typer) -> None:
    """Add ``check`` and ``check-batch`` to the ``adjudge`` command."""
    app.command("check")(check)
    app.command("check-batch")(check_batch)
