"""The ``adjudge keys`` and ``adjudge receipt`` commands, run in-process."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.cli.receipts import read_signing_key, write_receipt
from adjudge.digests import sha256_digest
from adjudge.kernel import Authority, Check, Pending, TrustPolicy, Verdict, determine, oracle
from adjudge.receipts import ReceiptLog, SigningKey, verify
from adjudge.receipts import envelope as env
from adjudge.receipts.canonical import canonical_bytes
from adjudge.receipts.envelope import IN_TOTO_PAYLOAD_TYPE

RUNNER = CliRunner()
KEY = SigningKey.from_seed(bytes(range(32)))
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _log(n: int) -> ReceiptLog:
    log = ReceiptLog()
    for i in range(n):
        text = b"r%d" % i
        checks = [
            oracle.integrity(oracle.Record(text), sha256_digest(text)),
            Check("auto-check", Verdict.PASS, Authority.DETERMINISTIC),
        ]
        log.append(determine(sha256_digest(text), checks, now=NOW), KEY)
    return log


def test_keys_new_writes_a_private_key_only_its_owner_can_read(tmp_path: Path) -> None:
    """keys new writes the key pair, the private half mode 0600, and prints the fingerprint."""
    result = RUNNER.invoke(app, ["keys", "new", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    private = next(tmp_path.glob("*.key"))
    public = next(tmp_path.glob("*.pub"))
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    loaded = SigningKey.from_pem(private.read_bytes())
    assert f"fingerprint: {loaded.keyid}" in result.output
    assert public.read_bytes() == loaded.public_key.to_pem()


def test_receipt_verify_valid_says_what_it_proves_and_does_not(tmp_path: Path) -> None:
    """A valid receipt exits 0 and states both what it proves and what it does not."""
    path = tmp_path / "receipt.json"
    path.write_bytes(_log(1).receipts[0].to_bytes())
    result = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", KEY.keyid])
    assert result.exit_code == 0, result.output
    assert "VALID" in result.output and "verdict:       PASS" in result.output
    assert "What this proves" in result.output
    assert "What this does not prove" in result.output
    assert "not the tenant's key" in result.output or "tenant's key" in result.output
    assert "process-distinct, not party-distinct" in result.output


def test_receipt_verify_by_public_key_file(tmp_path: Path) -> None:
    """--key may name a public key file instead of a fingerprint."""
    path = tmp_path / "receipt.json"
    path.write_bytes(_log(1).receipts[0].to_bytes())
    pub = tmp_path / "key.pub"
    pub.write_bytes(KEY.public_key.to_pem())
    result = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", str(pub)])
    assert result.exit_code == 0, result.output


def test_receipt_verify_tampered_exits_1(tmp_path: Path) -> None:
    """A receipt that fails verification exits 1."""
    path = tmp_path / "receipt.json"
    path.write_bytes(_log(1).receipts[0].to_bytes())
    other = SigningKey.from_seed(bytes(32)).keyid
    result = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", other])
    assert result.exit_code == 1
    assert "INVALID" in result.output


def test_receipt_verify_bad_input_exits_2(tmp_path: Path) -> None:
    """Unreadable files, non-envelopes and unusable keys exit 2."""
    missing = RUNNER.invoke(app, ["receipt", "verify", str(tmp_path / "no"), "--key", KEY.keyid])
    assert missing.exit_code == 2
    junk = tmp_path / "junk.json"
    junk.write_text("not json")
    assert RUNNER.invoke(app, ["receipt", "verify", str(junk), "--key", KEY.keyid]).exit_code == 2
    good = tmp_path / "receipt.json"
    good.write_bytes(_log(1).receipts[0].to_bytes())
    bad_key = RUNNER.invoke(app, ["receipt", "verify", str(good), "--key", "nonsense"])
    assert bad_key.exit_code == 2


def test_verify_chain(tmp_path: Path) -> None:
    """verify-chain exits 0 on an intact log and 1 when a line was deleted or the head is off."""
    log = _log(3)
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(log.lines()) + b"\n")
    ok = RUNNER.invoke(app, ["receipt", "verify-chain", str(path), "--key", KEY.keyid])
    assert ok.exit_code == 0, ok.output
    assert "VALID log: 3 receipts" in ok.output
    head = log.receipts[-1].receipt_id
    pinned = RUNNER.invoke(
        app, ["receipt", "verify-chain", str(path), "--key", KEY.keyid, "--head", head]
    )
    assert pinned.exit_code == 0, pinned.output
    lines = log.lines()
    del lines[1]
    path.write_bytes(b"\n".join(lines))
    broken = RUNNER.invoke(app, ["receipt", "verify-chain", str(path), "--key", KEY.keyid])
    assert broken.exit_code == 1
    assert "RECEIPT_CHAIN_BROKEN" in broken.output


@pytest.mark.parametrize("jobs", ["1", "2", "3"])
def test_verify_chain_with_jobs_names_a_fault_in_a_later_range(tmp_path: Path, jobs: str) -> None:
    """--jobs N verifies N ranges at once and answers as one pass: a receipt edited in the last
    range is refused (exit 1) naming its line, as a valid log is reported whole (exit 0)."""
    log = _log(6)
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(log.lines()) + b"\n")
    args = ["receipt", "verify-chain", str(path), "--key", KEY.keyid, "--jobs", jobs]
    ok = RUNNER.invoke(app, args)
    assert ok.exit_code == 0, ok.output
    assert "VALID log: 6 receipts" in ok.output
    lines = log.lines()
    lines[4] = lines[4].replace(b'"keyid":"', b'"keyid":"0', 1)
    path.write_bytes(b"\n".join(lines) + b"\n")
    broken = RUNNER.invoke(app, args)
    assert broken.exit_code == 1, broken.output
    assert "RECEIPT_SIGNATURE_INVALID" in broken.output
    assert "line 5: " in broken.output


def test_signing_helpers_for_other_commands(tmp_path: Path) -> None:
    """read_signing_key loads a key file (exit 2 when it cannot: not a key, missing, a
    directory, open to others); write_receipt writes one line."""
    key_file = tmp_path / "k.key"
    key_file.write_bytes(KEY.to_pem())
    key_file.chmod(0o600)
    assert read_signing_key(key_file).keyid == KEY.keyid
    (tmp_path / "bad.key").write_text("nope")
    (tmp_path / "bad.key").chmod(0o600)
    (tmp_path / "open.key").write_bytes(KEY.to_pem())
    (tmp_path / "open.key").chmod(0o640)
    for bad in ("bad.key", "missing.key", "open.key", "."):
        with pytest.raises(typer.Exit) as exit_info:
            read_signing_key(tmp_path / bad)
        assert exit_info.value.exit_code == 2
    out = tmp_path / "r.json"
    write_receipt(out, _log(1).receipts[0])
    assert out.read_bytes().endswith(b"\n") and out.read_bytes().count(b"\n") == 1


def test_verify_chain_against_a_head_it_does_not_end_at(tmp_path: Path) -> None:
    """A log cut short fails against the head pinned before the cut (exit 1)."""
    log = _log(3)
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\n".join(log.lines()[:2]))
    head = log.receipts[-1].receipt_id
    result = RUNNER.invoke(
        app, ["receipt", "verify-chain", str(path), "--key", KEY.keyid, "--head", head]
    )
    assert result.exit_code == 1
    assert "truncated" in result.output


def test_receipt_verify_shows_a_pass_on_the_posters_trust(tmp_path: Path) -> None:
    """A PASS resting on the named verifier's key is shown as exactly that, not as a plain PASS."""
    verifier = "1" * 64
    checks = [
        oracle.integrity(oracle.Record(b"r"), sha256_digest(b"r")),
        Check("agent-review", Verdict.PASS, Authority.SEMANTIC, verifier_key=verifier),
    ]
    policy = TrustPolicy().with_verifier(verifier)
    log = ReceiptLog()
    log.append(determine(sha256_digest(b"r"), checks, now=NOW, policy=policy), KEY)
    path = tmp_path / "receipt.json"
    path.write_bytes(log.receipts[0].to_bytes())
    result = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", KEY.keyid])
    assert result.exit_code == 0, result.output
    assert f"PASS on the poster's trust in verifier key {verifier}" in result.output


def test_receipt_verify_reads_a_pending_verdict_as_of_now(tmp_path: Path) -> None:
    """A receipt signed PENDING, read eleven months past its deadline, shows the verdict it
    resolved to, the deadline, and that it was signed PENDING — and the file is not rewritten."""
    deadline = datetime(2026, 1, 15, tzinfo=UTC)
    checks = [
        oracle.integrity(oracle.Record(b"r"), sha256_digest(b"r")),
        Check(
            "manual-review",
            Verdict.PENDING,
            Authority.HUMAN,
            pending=Pending(deadline, Verdict.UNKNOWN),
        ),
    ]
    log = ReceiptLog()
    log.append(determine(sha256_digest(b"r"), checks, now=NOW), KEY)
    path = tmp_path / "receipt.json"
    path.write_bytes(log.receipts[0].to_bytes())
    before = path.read_bytes()
    at = "2026-12-15T00:00:00Z"
    result = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", KEY.keyid, "--at", at])
    assert result.exit_code == 0, result.output
    assert f"verdict:       UNKNOWN as of {at}" in result.output
    assert "signed PENDING" in result.output
    assert "manual-review: 2026-01-15T00:00:00Z, passed: resolved to UNKNOWN" in result.output
    assert path.read_bytes() == before
    early = RUNNER.invoke(
        app, ["receipt", "verify", str(path), "--key", KEY.keyid, "--at", "2026-01-10T00:00:00Z"]
    )
    assert "verdict:       PENDING as of" in early.output
    assert "not yet reached: UNKNOWN from then on" in early.output
    bad = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", KEY.keyid, "--at", "soon"])
    assert bad.exit_code == 2 and "TIME_INVALID" in bad.output


#: JSON no offline command can use: a number past Python's digits, and nesting past its depth.
HUGE_NUMBER = '{"a":' + "1" * 5000 + "}"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "args",
    [
        ["receipt", "verify", "{bad}", "--key", KEY.keyid],
        ["receipt", "verify-chain", "{bad}", "--key", KEY.keyid],
        ["replay", "{bundle}", "--key", KEY.keyid],
        ["check", "{result}", "-c", "{bad}"],
        ["check", "{bad}", "-c", "{criteria}", "--json"],
        ["task", "verify-seal", "--receipt", "{bad}", "--reveal", "{bad}", "--key", KEY.keyid],
        [
            "task",
            "verify-seal",
            "--receipt",
            "{criteria}",
            "--reveal",
            "{criteria}",
            "--criteria",
            "@{bad}",
            "--key",
            KEY.keyid,
        ],
    ],
)
@pytest.mark.parametrize("bad", [HUGE_NUMBER, DEEP], ids=["huge-number", "deep"])
def test_no_offline_command_crashes_on_json_it_cannot_use(
    tmp_path: Path, args: list[str], bad: str
) -> None:
    """Each is refused with a sentence and exit 1 or 2, never a traceback."""
    from support.bundles import edited  # noqa: PLC0415
    from test_replay import BUNDLE  # noqa: PLC0415

    files = {
        "bad": tmp_path / "bad.json",
        "result": tmp_path / "result.txt",
        "criteria": tmp_path / "criteria.json",
        "bundle": tmp_path / "bundle.zip",
    }
    files["bad"].write_text(bad)
    files["result"].write_text("An escrow holds the reward.")
    files["criteria"].write_text('{"min_length": 5}')
    files["bundle"].write_bytes(edited(BUNDLE, "receipt.json", lambda _: bad.encode()))
    result = RUNNER.invoke(app, [a.format(**files) for a in args])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (1, 2), result.output


def _resigned(edit: Any) -> bytes:
    """A receipt of this key's, its statement edited by ``edit`` and signed again (what any
    key's holder can make)."""
    log = _log(1)
    body = json.loads(log.receipts[0].envelope.payload)
    edit(body["predicate"])
    return env.sign(canonical_bytes(body), IN_TOTO_PAYLOAD_TYPE, KEY).to_bytes()


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p["checks"][1].pop("name"),
        lambda p: p["trustPolicy"].pop("verifierKeys"),
    ],
    ids=["an unnamed check", "a policy without verifier keys"],
)
def test_receipt_verify_prints_every_receipt_that_verifies(tmp_path: Path, edit: Any) -> None:
    """A statement the kernel accepts (a check need not be named; a policy without verifier
    keys trusts none) is printed and exits 0, never a traceback (before: a KeyError after the
    receipt had verified)."""
    line = _resigned(edit)
    verify(line, KEY.keyid)
    path = tmp_path / "r.json"
    path.write_bytes(line)
    r = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", KEY.keyid])
    assert r.exit_code == 0 and r.exception is None, (r.output, r.exception)
    assert "What this proves:" in r.output


def test_a_pending_check_without_a_name_is_read_as_of_now(tmp_path: Path) -> None:
    """A PENDING check with no name reads as of now without a traceback."""
    pending = Check(
        "manual-review",
        Verdict.PENDING,
        Authority.HUMAN,
        pending=Pending(datetime(2026, 1, 15, tzinfo=UTC), Verdict.UNKNOWN),
    )
    log = ReceiptLog()
    log.append(determine(sha256_digest(b"r"), [pending], now=NOW), KEY)
    body = json.loads(log.receipts[0].envelope.payload)
    del body["predicate"]["checks"][0]["name"]
    line = env.sign(canonical_bytes(body), IN_TOTO_PAYLOAD_TYPE, KEY).to_bytes()
    path = tmp_path / "r.json"
    path.write_bytes(line)
    r = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", KEY.keyid])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert "(unnamed)" in r.output


def test_receipt_verify_shows_a_signed_escape_sequence_as_text(tmp_path: Path) -> None:
    """A policy decision the checked party chose (a provider's policy id) holding a terminal
    escape sequence and carriage returns is printed as escapes: it cannot move the cursor up
    and rewrite the line ``verdict: FAIL`` to read PASS (before: written raw to the terminal)."""
    text = b"x"
    checks = [
        oracle.integrity(oracle.Record(text), sha256_digest(text)),
        Check("auto-check", Verdict.FAIL, Authority.DETERMINISTIC, (sha256_digest(text),)),
    ]
    spoof = "web\x1b[9A\r\x1b[2Kverdict:       PASS\u202e\x1b[9B\rpolicy: web"
    decided = determine(sha256_digest(text), checks, now=NOW, policy_decision={"policy": spoof})
    log = ReceiptLog()
    log.append(decided, KEY, about="call:c\u2028d")
    path = tmp_path / "receipt.json"
    path.write_bytes(log.receipts[0].to_bytes())
    result = RUNNER.invoke(app, ["receipt", "verify", str(path), "--key", KEY.keyid], color=True)
    assert result.exit_code == 0, result.output
    assert "verdict:       FAIL" in result.output
    assert not any(c in result.output for c in "\x1b\r\u202e\u2028")
    assert "policy: web\\x1b[9A\\x0d\\x1b[2Kverdict:       PASS\\u202e" in result.output
