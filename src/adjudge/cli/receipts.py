"""``adjudge keys …`` and ``adjudge receipt …``: make a signing key; verify receipts offline;
export a service's receipt log; fetch a verdict's replay bundle (:mod:`adjudge.cli.replay`).

Sequence numbers are the signed statement's own: the first receipt on a log is sequence 0, as
the API's ``sequence`` fields and ``after`` parameter count them too.

Exit codes of the verify commands: 0 the receipt (or log) is valid, 1 it is not, 2 bad input
(a file that cannot be read or is not a DSSE envelope, a key that is neither a fingerprint nor a
public key file).
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from adjudge.cli import keyfiles, ranges
from adjudge.cli._common import DEFAULT_URL, KeyOption, Session, UrlOption, printable, whole_option
from adjudge.errors import BadInput, CriteriaError, Error, ReceiptError
from adjudge.input_files import read_input
from adjudge.kernel.authority import trust_basis
from adjudge.kernel.verdicts import format_time, parse_time
from adjudge.receipts import (
    Receipt,
    ReceiptLog,
    SigningKey,
    Standing,
    VerifyingKey,
    as_of,
    verify,
)
from adjudge.receipts.canonical import canonical_bytes
from adjudge.receipts.envelope import Envelope

try:  # POSIX: two runs appending to one log at once must not fork its chain
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: appends are not locked
    fcntl = None  # type: ignore[assignment]

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_BAD_INPUT = 2

_FINGERPRINT = re.compile(r"[0-9a-fA-F]{64}")

#: Spec 002, *What this does not claim*, said where the verdict is read.
DOES_NOT_PROVE = (
    "that the key is the tenant's key. If you obtained the key or its fingerprint from the same "
    "system that issued the verdict, a forged receipt re-signed under an attacker's key verifies "
    "exactly as cleanly as a genuine one. Confirm the fingerprint through a channel this system "
    "does not control, then pin it.",
    "that the verifier was an adversarial third party. Independence today is process-distinct, "
    "not party-distinct: a verifier in a separate boundary on the same machine, under the same "
    "operator, is structurally separated from the producer, nothing more.",
    "that the checks were right, or that they were re-run now. The verdict is re-derived from the "
    "recorded checks and trust policy, not from the work itself.",
    "that this is the latest word on the result: a later receipt may supersede it. Verify the "
    "whole log with `adjudge receipt verify-chain`, against a head you pinned.",
)


def register(app: typer.Typer) -> None:
    """Add the ``keys`` and ``receipt`` command groups to ``app``."""
    keys = typer.Typer(help="Ed25519 signing keys for receipts.", no_args_is_help=True)
    receipt = typer.Typer(
        help="Verify receipts offline; export a service's receipt log; fetch a replay bundle.",
        no_args_is_help=True,
    )
    keys.command("new")(keys_new)
    receipt.command("verify")(receipt_verify)
    receipt.command("verify-chain")(receipt_verify_chain)
    receipt.command("export")(receipt_export)
    receipt.command("get")(receipt_get)
    app.add_typer(keys, name="keys")
    app.add_typer(receipt, name="receipt")


def keys_new(
    out: Annotated[
        Path, typer.Option("--out", help="Directory to write the key pair into.")
    ] = Path("."),
) -> None:
    """Make a new Ed25519 key pair; print the fingerprint to pin.

    Writes adjudge-FINGERPRINT_PREFIX.key (private, PKCS#8 PEM, mode 0600) and .pub (public,
    PEM). Never overwrites an existing file (exit 2).
    """
    key = SigningKey.generate()
    stem = out / f"adjudge-{key.keyid[:16]}"
    private, public = stem.with_suffix(".key"), stem.with_suffix(".pub")
    try:
        out.mkdir(parents=True, exist_ok=True)
        # Created 0600 from the first byte: the private key is never readable by others.
        fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(key.to_pem())
        with public.open("xb") as handle:
            handle.write(key.public_key.to_pem())
    except OSError as exc:
        typer.echo(f"KEY_WRITE_FAILED: cannot write the key pair: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    typer.echo(f"private key: {private}  (mode 0600; keep it secret)")
    typer.echo(f"public key:  {public}")
    typer.echo(f"fingerprint: {key.keyid}")
    typer.echo("Publish the fingerprint through a channel you control; verifiers pin it.")


def receipt_verify(
    receipt_file: Annotated[Path, typer.Argument(metavar="RECEIPT.json")],
    key: Annotated[str, typer.Option("--key", help="Pinned fingerprint, or a public key file.")],
    at: Annotated[
        str | None,
        typer.Option("--at", help="Read the verdict as of this RFC 3339 time (default: now)."),
    ] = None,
) -> None:
    """Verify one receipt offline against a pinned key; say what that proves and what it does not.

    The verdict is shown as of now (or ``--at``): a check signed PENDING whose deadline has
    passed reads as what it expired into, with its deadline beside it; the file is not touched.
    Exit 0 valid, 1 invalid, 2 bad input.
    """
    moment = _moment(at)
    pinned = pinned_key(key)
    data = read_file(receipt_file)
    try:
        Envelope.from_bytes(data.strip())
    except ReceiptError as exc:
        _fail(exc, EXIT_BAD_INPUT)
    try:
        receipt = verify(data.strip(), pinned)
    except BadInput as exc:  # the check could not run: not a verdict on the receipt
        _fail(exc, EXIT_BAD_INPUT)
    except ReceiptError as exc:
        typer.echo(f"INVALID: {printable(exc)}")
        typer.echo("Nothing in this receipt can be relied on.")
        raise typer.Exit(EXIT_INVALID) from exc
    _report(receipt, as_of(receipt, moment))


def _moment(text: str | None) -> datetime:
    """``--at`` parsed, or the clock now (the CLI is where the clock is read)."""
    if text is None:
        return datetime.now(UTC)
    try:
        return parse_time(text, "--at")
    except CriteriaError as exc:
        typer.echo(f"{exc.code}: {exc.message}")
        raise typer.Exit(EXIT_BAD_INPUT) from exc


def receipt_verify_chain(
    log_file: Annotated[Path, typer.Argument(metavar="LOG.jsonl")],
    key: Annotated[str, typer.Option("--key", help="Pinned fingerprint, or a public key file.")],
    head: Annotated[
        str | None,
        typer.Option("--head", help="The receipt id the log must end at (detects truncation)."),
    ] = None,
    jobs: Annotated[
        int | None,
        whole_option(
            "--jobs",
            least=1,
            most=256,
            help="Processes verifying ranges of the log at once, at most 256 (default: one a "
            f"core, and none with fewer than {ranges.LINES_PER_JOB:,} lines; 1: one pass).",
        ),
    ] = None,
) -> None:
    """Verify a receipt log: every receipt, and the hash chain that links them.

    Exit 0 valid, 1 invalid (a receipt edited, deleted, reordered or truncated), 2 bad input.
    """
    pinned = pinned_key(key)
    lines = read_file(log_file).splitlines()
    if jobs is None:
        jobs = ranges.default_jobs(len(lines))
    try:
        report = ranges.verify_in_ranges(lines, pinned, expected_head=head, jobs=jobs)
    except BadInput as exc:  # the check could not run: not a verdict on the log
        _fail(exc, EXIT_BAD_INPUT)
    except ReceiptError as exc:
        typer.echo(f"INVALID: {printable(exc)}")
        raise typer.Exit(EXIT_INVALID) from exc
    fingerprint = pinned.keyid if isinstance(pinned, VerifyingKey) else pinned
    noun = "receipt" if report.count == 1 else "receipts"
    typer.echo(f"VALID log: {report.count} {noun}, all signed by key {fingerprint}")
    lanes = len(report.lanes) > 1
    if lanes or report.checkpoints:
        typer.echo(f"lanes: {len(report.lanes)}, checkpoints: {report.checkpoints}")
    if lanes:
        for lane in report.lanes:
            typer.echo(f"  lane {lane.lane}: {lane.receipt_id} (sequence {lane.sequence})")
    if report.head is not None:
        what = "checkpoint" if lanes else "head"
        typer.echo(f"{what}: {report.head.receipt_id} (sequence {report.head.sequence})")
    typer.echo(f"superseded receipts: {len(report.superseded)}")
    typer.echo("What this proves:")
    ends = (
        "; every lane ends where the checkpoint you pinned ends it;"
        if lanes
        else ("; the log ends at the head you pinned;")
    )
    _bullets(
        [
            (
                "no receipt was edited, and none was deleted, inserted or reordered on its lane"
                if lanes
                else "no receipt was edited, and none was deleted, inserted or reordered"
            )
            + (ends if head else ";"),
            *(
                ["every checkpoint on the log names heads that are on it."]
                if report.checkpoints
                else []
            ),
            "every verdict follows from the checks and trust policy its receipt records.",
        ]
    )
    typer.echo("What this does not prove:")
    if head is None:
        _bullets(
            [
                "that the log is complete: receipts cut from the end of a lane leave no trace. "
                "Pin the checkpoint (--head) you obtained through a channel this system does not "
                "control."
                if lanes
                else "that the log is complete: receipts cut from its end leave no trace. Pin "
                "the head (--head) you obtained through a channel this system does not control."
            ]
        )
    _bullets(DOES_NOT_PROVE[:3])


def receipt_get(
    receipt_id: Annotated[
        str | None,
        typer.Argument(metavar="RECEIPT_ID", help="The receipt (rcpt_…); or give --task."),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option(metavar="TASK_ID", help="Instead: the latest receipt of this task."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", metavar="FILE", help="Write the envelope here (default: stdout)."
        ),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    key: KeyOption = None,
) -> None:
    """Save a receipt's signed envelope from a service, for `adjudge receipt verify`.

    Prints the receipt's id on stderr. Exit 0 saved, 1 refused by the service (no such
    receipt, not yours to read), 2 bad input or no service.
    """
    if (receipt_id is None) == (task is None):
        typer.echo("Name a receipt, or give --task TASK_ID (one of them).", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    session = Session(url, key)
    if receipt_id is None:
        assert task is not None
        found = session.call(lambda api: api.task(task)).get("receipts") or []
        if not found:
            typer.echo(f"Task {task} has no receipt yet (or none you may read).", err=True)
            raise typer.Exit(EXIT_INVALID)
        receipt_id = found[-1]
    chosen = receipt_id
    envelope = session.call(lambda api: api.envelope(chosen))
    line = canonical_bytes(envelope) + b"\n"
    if out is None:
        sys.stdout.write(line.decode("ascii"))
    else:
        try:
            out.write_bytes(line)
        except OSError as exc:
            typer.echo(f"FILE_UNWRITABLE: cannot write {out}: {exc.strerror}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from exc
    typer.echo(f"receipt {chosen}" + (f" saved to {out}" if out else ""), err=True)


def receipt_export(
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="FILE", help="Write the log here (default: stdout)."),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    key: KeyOption = None,
    after: Annotated[
        int | None,
        whole_option(
            least=0,
            metavar="POSITION",
            help="Only the receipts after this position (the first receipt is 0; on a log of "
            "one lane, a receipt's position is its sequence).",
        ),
    ] = None,
) -> None:
    """Export a service's receipt log (admins) as the JSONL `verify-chain` reads.

    Pages through `GET /api/v1/receipts` in the order the log was written and writes one signed
    envelope per line. A log of several lanes is cut at a checkpoint the service issues first,
    which the export ends at. Exit 0 written, 1 refused by the service, 2 no service or a file
    that cannot be written. Then check it against the key you pinned: `adjudge receipt
    verify-chain FILE --key FP --head ID`, with the head printed here (obtained from the
    service) or, better, one pinned through another channel.
    """
    session = Session(url, key)
    count = 0
    last: dict[str, object] | None = None
    head = session.call(lambda api: api.receipts_head())
    checkpoint = None
    if len(head.get("lanes") or ()) > 1:
        checkpoint = session.call(lambda api: api.checkpoint_receipts())
    through = None if checkpoint is None else str(checkpoint["id"])
    try:
        sink = out.open("w", encoding="utf-8") if out else sys.stdout
    except OSError as exc:
        typer.echo(f"FILE_UNWRITABLE: cannot write {out}: {exc.strerror}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    try:
        pages = session.call(lambda api: list(api.iter_receipts(after=after, through=through)))
        for record in pages:
            envelope = record["receipt"].get("envelope")
            if not isinstance(envelope, dict):
                continue  # an unsigned receipt has nothing a verifier can check
            sink.write(canonical_bytes(envelope).decode("ascii") + "\n")
            count += 1
            last = dict(record)
    finally:
        if out:
            sink.close()
    where = str(out) if out else "stdout"
    typer.echo(f"{count} {'receipt' if count == 1 else 'receipts'} written to {where}", err=True)
    if checkpoint is not None:
        lanes = len(checkpoint.get("heads") or ())
        typer.echo(f"checkpoint: {checkpoint['digest']} (its {lanes} lanes end there)", err=True)
        pin = str(checkpoint["digest"])
    elif last is not None:
        typer.echo(f"last: {last['digest']} (sequence {last['sequence']})", err=True)
        pin = str(last["digest"])
    else:
        return
    typer.echo(
        f"verify: adjudge receipt verify-chain {out or 'FILE'} "
        f"--key {head['key'] or 'FINGERPRINT'} "
        f"--head {pin}",
        err=True,
    )


def _bullets(lines: list[str] | tuple[str, ...]) -> None:
    for line in lines:
        typer.echo(
            textwrap.fill(
                line,
                width=88,
                initial_indent="  - ",
                subsequent_indent="    ",
                break_on_hyphens=False,
                break_long_words=False,
            )
        )


def _report(receipt: Receipt, standing: Standing) -> None:
    p = receipt.predicate
    trusted_key = p.get("trustedVerifierKey")
    typer.echo(f"VALID receipt {receipt.receipt_id}")
    signed = "" if standing.verdict is standing.signed else f"; signed {standing.signed.value}"
    typer.echo(f"verdict:       {standing.verdict.value} as of {format_time(standing.at)}{signed}")
    for deadline in standing.deadlines:
        typer.echo(f"deadline:      {printable(deadline.describe())}")
    if trusted_key is not None:
        typer.echo(f"basis:         {printable(trust_basis(trusted_key))}")
    typer.echo(f"subject:       {receipt.subject_digest}")
    typer.echo(f"decided at:    {printable(p['decidedAt'])}")
    typer.echo(f"signed by key: {receipt.keyid}")
    if receipt.about is not None:
        typer.echo(f"about:         {printable(receipt.about)}")
    previous = receipt.previous or "none (first on its log)"
    typer.echo(f"log position:  sequence {receipt.sequence}, previous {printable(previous)}")
    if receipt.supersedes is not None:
        typer.echo(f"supersedes:    {printable(receipt.supersedes)}")
    # Read as the kernel does (a policy without verifier keys trusts none; a check need not be
    # named): a receipt that verifies is printed, never a traceback.
    policy = p["trustPolicy"]
    keys = [f"key {k}" for k in policy.get("verifierKeys") or []]
    trusted = ", ".join([*policy.get("authorities", []), *keys])
    typer.echo(f"trusted:       {printable(trusted or 'nothing')}")
    typer.echo("checks:")
    for check in p["checks"]:
        name = check.get("name", "(unnamed)")
        typer.echo(
            f"  {printable(check['verdict']):<9} {printable(check['authority']):<14} "
            f"{printable(name)}"
        )
    decision = p.get("policyDecision")
    if decision is not None:
        typer.echo("policy decision (recorded and signed; not part of the verdict above):")
        for name in sorted(decision):
            typer.echo(f"  {printable(name)}: {printable(_scalar(decision[name]))}")
    typer.echo("What this proves:")
    proves = [
        f"the receipt has not been altered since the holder of key {receipt.keyid} signed it;",
        "its verdict follows, by adjudge's rules, from the checks and the trust policy it records;",
    ]
    if decision is not None:
        proves.append(
            "the policy decision is the one the key holder signed with these checks; it is "
            "recorded, not re-derived (re-deriving it needs the policy named by the criteria "
            "digest);"
        )
    if receipt.verdict.value == "PASS":
        proves.append(
            "it carries the oracle's evidence-integrity proof: the judged result is the one "
            f"with digest {receipt.subject_digest}."
        )
    _bullets(proves)
    typer.echo("What this does not prove:")
    if trusted_key is not None:
        _bullets(
            [
                f"that the work is right by any deterministic or human check: this PASS rests on "
                f"the poster's trust in verifier key {printable(trusted_key)}, a verifier the "
                "poster named "
                "for this task, and on nothing else a model said."
            ]
        )
    _bullets(DOES_NOT_PROVE)


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_signing_key(path: Path) -> SigningKey:
    """Load a private key file for ``--sign``; unreadable or not a key: exit 2 with the reason.

    For command modules that sign (``adjudge check --sign KEY --receipt OUT``).
    """
    try:
        return keyfiles.read_signing_key(path, "signing key file")
    except Error as exc:
        _fail(exc, EXIT_BAD_INPUT)


def write_receipt(path: Path, receipt: Receipt) -> None:
    """Write one receipt (canonical JSON, one line); a write failure exits 2 with the reason."""
    try:
        path.write_bytes(receipt.to_bytes() + b"\n")
    except OSError as exc:
        typer.echo(f"FILE_UNWRITABLE: cannot write {path}: {exc.strerror}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc


def append_receipt(
    path: Path, signer: SigningKey, append: Callable[[ReceiptLog], Receipt]
) -> Receipt:
    """Append one receipt to the receipt log at ``path`` (created when missing); never rewrite.

    The file is locked, read and verified as a log under ``signer``'s key; ``append`` issues the
    new receipt on it (at its head, superseding what it names); its one line is written at the
    end. A file that is not such a log (``RECEIPT_LOG_INVALID``) or a receipt the log refuses
    (``RECEIPT_CHAIN_BROKEN``, ``RECEIPT_SUPERSESSION_INVALID``, ``ABOUT_INVALID``, …) exits 2,
    leaving the file byte for byte as it was (a file this call created is removed again).
    """
    existed = path.exists()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        typer.echo(f"FILE_UNWRITABLE: cannot open {path}: {exc.strerror}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    with os.fdopen(fd, "r+b") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            data = handle.read()
            try:
                log = ReceiptLog.load(data.splitlines(), signer.public_key)
            except ReceiptError as exc:
                raise ReceiptError(
                    f"{path} is not a receipt log signed by key {signer.keyid}: {exc.message} "
                    "Nothing was appended; name another file.",
                    code="RECEIPT_LOG_INVALID",
                ) from exc
            receipt = append(log)
            # A last line without its newline (a receipt written by hand) gets one first.
            handle.write((b"\n" if data and not data.endswith(b"\n") else b"") + receipt.to_bytes())
            handle.write(b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        except (ReceiptError, BadInput) as exc:
            if not existed and not data:
                path.unlink(missing_ok=True)
            _fail(exc, EXIT_BAD_INPUT)
        except OSError as exc:
            typer.echo(f"FILE_UNWRITABLE: cannot append to {path}: {exc.strerror}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from exc
    return receipt


#: The most bytes read of a public key file, and of a receipt log or envelope file.
KEY_BYTES = 64 * 1024
LOG_BYTES = 1024 * 1024 * 1024


def pinned_key(value: str) -> VerifyingKey | str:
    """``--key``: a 64-hex fingerprint, or a public key file (PEM or hex); exit 2 otherwise."""
    if _FINGERPRINT.fullmatch(value):
        return value.lower()
    path = Path(value)
    try:
        return VerifyingKey.from_text(read_input(path, KEY_BYTES))
    except OSError:
        typer.echo(
            f"KEY_INVALID: --key {value!r} is neither a 64-hex fingerprint nor a readable public "
            "key file.",
            err=True,
        )
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except BadInput as exc:
        _fail(exc, EXIT_BAD_INPUT)


def read_file(path: Path) -> bytes:
    """The bytes of ``path`` (a regular file of at most :data:`LOG_BYTES`); an unreadable
    file exits 2 with the reason."""
    try:
        return read_input(path, LOG_BYTES)
    except OSError as exc:
        typer.echo(f"FILE_UNREADABLE: cannot read {path}: {exc.strerror}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc


def _fail(exc: Error, code: int) -> NoReturn:
    typer.echo(printable(exc), err=True)
    raise typer.Exit(code) from exc
