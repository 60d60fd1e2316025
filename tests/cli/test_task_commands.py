"""``adjudge task …`` walks a task through its life against a real server on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.receipts import SigningKey
from adjudge.store import Store
from support.harness import FUNDS, make_harness
from support.live import free_port, serving


def test_walk_a_manual_task_from_the_terminal(sqlite_store: Store, tmp_path: Path) -> None:
    """Post, accept, submit, reject, resubmit, approve; refusals exit 1 with their code."""
    h = make_harness(sqlite_store)
    runner = CliRunner()
    result_file = tmp_path / "result.txt"
    result_file.write_text("Here is the summary.", encoding="utf-8")
    with serving(h.app) as url:

        def run(who: str, *args: str) -> tuple[int, str, str]:
            r = runner.invoke(app, ["task", "--url", url, "--key", h.keys[who], *args])
            return r.exit_code, r.stdout, r.stderr

        code, out, _ = run("pat", "post", "--title", "Summary", "--reward", "2")
        assert code == 0 and "manual  funded" in out
        tid = out.split()[0]
        assert run("ann", "accept", tid)[0] == 0
        assert run("ann", "submit", tid, str(result_file))[0] == 0
        code, out, _ = run("pat", "review", tid, "--reject", "--reason", "Too short.")
        assert code == 0 and "FAIL" in out and "Too short." in out
        code, _, err = run("pat", "review", tid)
        assert code == 1 and err.startswith("ILLEGAL_TRANSITION:")
        assert run("ann", "submit", tid, str(result_file))[0] == 0
        code, _, err = run("pat", "review", tid, "--attempt", "1")  # read before it
        assert code == 1 and err.startswith("SUBMISSION_CHANGED:")
        code, out, _ = run("pat", "review", tid, "--attempt", "2")
        assert code == 0 and "paid_on_pass" in out
        code, out, _ = run("pat", "list", "--mine")
        assert tid in out and "completed" in out
        code, out, _ = run("pat", "--json", "show", tid)
        assert code == 0 and '"ending": "paid_on_pass"' in out
    gone = runner.invoke(
        app, ["task", "--url", f"http://127.0.0.1:{free_port()}", "--key", "k", "list"]
    )
    assert gone.exit_code == 2 and "Cannot reach" in gone.stderr


def test_a_verifier_signs_its_verdict_from_the_terminal(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """`task verdict --verifier-key` signs the latest submission; another key is refused, and
    so is a key file others may read."""
    h = make_harness(sqlite_store)
    runner = CliRunner()
    tid = h.post("agent")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the summary."})
    mine = tmp_path / "vera.pem"
    mine.write_bytes(h.signers["vera"].to_pem())
    other = tmp_path / "other.pem"
    other.write_bytes(SigningKey.generate().to_pem())
    other.chmod(0o600)
    with serving(h.app) as url:

        def run(*args: str) -> tuple[int, str, str]:
            r = runner.invoke(app, ["task", "--url", url, "--key", h.keys["vera"], *args])
            return r.exit_code, r.stdout, r.stderr

        code, _, err = run("verdict", tid, "--verifier-key", str(other))
        assert code == 1 and "VERDICT_SIGNATURE_INVALID:" in err and "not grounded" in err
        code, _, err = run("verdict", tid, "--verifier-key", str(tmp_path / "none.pem"))
        assert code == 2 and "Cannot read" in err
        mine.chmod(0o644)  # as written under the usual umask: open to every account
        code, _, err = run("verdict", tid, "--verifier-key", str(mine))
        assert code == 2 and "KEY_FILE_UNPROTECTED" in err and f"chmod 600 {mine}" in err
        mine.chmod(0o600)
        code, _, err = run(
            "verdict", tid, "--verifier-key", str(mine), "--quote-result", "not in it"
        )
        assert code == 2 and "word for word" in err
        code, out, _ = run(
            "verdict",
            tid,
            "--verifier-key",
            str(mine),
            "--reason",
            "Fine.",
            "--quote-brief",
            "summary",
            "--quote-result",
            "Here is",
        )
        assert code == 0 and "paid_on_pass" in out
    verdict = h.ok("pat", "GET", f"/tasks/{tid}")["verdicts"][0]
    assert verdict["verification_result"]["verifier_signature"]["payload"]["reasons"] == ["Fine."]


def test_posting_from_the_terminal_refuses_typos_and_keeps_disputes(sqlite_store: Store) -> None:
    """A misspelled criteria field is refused with the field meant; --lenient posts it; one
    hour is a valid deadline; a dispute's reason is kept and shown; a silent agent is released."""
    h = make_harness(sqlite_store)
    runner = CliRunner()
    with serving(h.app) as url:

        def run(who: str, *args: str) -> tuple[int, str, str]:
            r = runner.invoke(app, ["task", "--url", url, "--key", h.keys[who], *args])
            return r.exit_code, r.stdout, r.stderr

        post = ["post", "--title", "T", "--reward-minor", "1000", "--mode", "auto"]
        typo = '{"contains_keyword": ["escrow"], "min_length": 10}'
        code, _, err = run("pat", *post, "--criteria", typo)
        assert code == 1 and err.startswith("CRITERIA_UNKNOWN_FIELD:")
        assert "`contains_keyword`" in err and "Did you mean `contains_keywords`?" in err
        code, out, _ = run("pat", *post, "--criteria", typo, "--lenient", "--hours", "1")
        assert code == 0 and "auto  funded" in out
        code, out, _ = run("pat", "post", "--title", "M", "--reward-minor", "1000", "--hours", "72")
        tid = out.split()[0]
        assert run("ann", "accept", tid)[0] == 0
        code, _, err = run("pat", "release", tid)
        assert code == 1 and err.startswith("RELEASE_TOO_EARLY:")
        h.advance(hours=24)
        code, out, _ = run("pat", "release", tid)
        assert code == 0 and "manual  funded" in out
        assert run("bob", "accept", tid)[0] == 0
        h.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the work."})
        assert run("pat", "review", tid, "--reject", "--reason", "No.")[0] == 0
        code, out, _ = run("bob", "dispute", tid, "--reason", "It is all there.")
        assert code == 0 and "dispute on round 1 by bob" in out and "It is all there." in out


def test_a_take_window_from_the_terminal(sqlite_store: Store) -> None:
    """`task post --take-window-hours` sets the window; taking shows when the take lapses;
    after it the task view shows the lapse, the agent's submission is refused with
    TAKE_LAPSED, and a window reaching the deadline is refused with its reason."""
    h = make_harness(sqlite_store)
    runner = CliRunner()
    with serving(h.app) as url:

        def run(who: str, *args: str) -> tuple[int, str, str]:
            r = runner.invoke(app, ["task", "--url", url, "--key", h.keys[who], *args])
            return r.exit_code, r.stdout, r.stderr

        post = ["post", "--title", "W", "--reward-minor", "1000", "--hours", "24"]
        code, _, err = run("pat", *post, "--take-window-hours", "24")
        assert code == 1 and err.startswith("INVALID_TAKE_WINDOW:") and "shorter" in err
        code, out, _ = run("pat", *post, "--take-window-hours", "6")
        assert code == 0 and "manual  funded" in out
        tid = out.split()[0]
        code, out, _ = run("ann", "show", tid)
        assert "window    6 hours to submit after taking" in out and "lapses at" not in out
        code, out, _ = run("ann", "accept", tid)
        lapses = h.ok("ann", "GET", f"/tasks/{tid}")["take_lapses_at"]
        assert code == 0 and f"take lapses {lapses}" in out
        code, out, _ = run("pat", "show", tid)
        assert f"the current take lapses at {lapses} unless the agent submits" in out
        h.advance(hours=6)
        code, out, _ = run("pat", "show", tid)
        assert "status    funded" in out and f"take by ann lapsed at {lapses}" in out
        code, _, err = run("ann", "submit", tid, "-")
        assert code == 1 and err.startswith("TAKE_LAPSED:")


def test_a_sealed_task_from_the_terminal(sqlite_store: Store, tmp_path: Path) -> None:
    """`task seal` writes a reveal it never overwrites, `post --seal` sends only the
    commitment, `reveal` opens it, and `verify-seal` exits 0 when the receipt ties the verdict
    to the commitment, 1 for another reveal or commitment, 2 for a receipt that does not
    verify."""
    import json  # noqa: PLC0415

    from adjudge.app.wiring import SignedReceipts  # noqa: PLC0415

    issuer = SignedReceipts(SigningKey.generate())
    h = make_harness(sqlite_store, real_checker=True, issuer=issuer)
    runner = CliRunner()
    reveal = tmp_path / "reveal.json"
    made = runner.invoke(app, ["task", "seal", "--answer", "42", "--out", str(reveal)])
    assert made.exit_code == 0 and "commitment sha256:" in made.stdout
    assert reveal.stat().st_mode & 0o777 == 0o600
    again = runner.invoke(app, ["task", "seal", "--answer", "43", "--out", str(reveal)])
    assert again.exit_code == 2 and json.loads(reveal.read_text())["criteria"] == {
        "expected_answer": "42"
    }
    answer = tmp_path / "answer.txt"
    answer.write_text("The answer is 42.", encoding="utf-8")
    with serving(h.app) as url:

        def run(who: str, *args: str) -> tuple[int, str, str]:
            r = runner.invoke(app, ["task", "--url", url, "--key", h.keys[who], *args])
            return r.exit_code, r.stdout, r.stderr

        code, out, _ = run(
            "pat", "post", "--title", "Six times seven", "--reward-minor", "1000", "--mode", "auto",
            "--seal", str(reveal),
        )  # fmt: skip
        assert code == 0
        tid = out.split()[0]
        commitment = made.stdout.split("commitment ")[1].split()[0]
        code, out, _ = run("ann", "show", tid)
        assert f"commit    {commitment}" in out and '"expected_answer": "42"' not in out
        assert run("ann", "accept", tid)[0] == 0
        assert run("ann", "submit", tid, str(answer))[0] == 0
        code, out, _ = run("ann", "finalize", tid)
        assert code == 0 and "awaiting_verification" in out
        code, out, _ = run("pat", "reveal", tid, str(reveal))
        assert code == 0 and "paid_on_pass" in out
        envelope = h.ok(
            "ann",
            "GET",
            f"/receipts/{h.ok('ann', 'GET', f'/tasks/{tid}')['receipts'][-1]}/envelope",
        )
    receipt = tmp_path / "receipt.json"
    receipt.write_text(json.dumps(envelope), encoding="utf-8")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(reveal.read_text().replace('"42"', '"43"'), encoding="utf-8")
    base = ["task", "verify-seal", "--receipt", str(receipt), "--key", issuer.fingerprint]
    ok = runner.invoke(app, [*base, "--reveal", str(reveal), "--commitment", commitment])
    assert ok.exit_code == 0 and "SEALED" in ok.stdout, ok.stdout + ok.stderr
    bad = runner.invoke(app, [*base, "--reveal", str(wrong), "--criteria", "{}"])
    assert bad.exit_code == 1 and "NOT SEALED" in bad.stdout
    other = runner.invoke(
        app, [*base, "--reveal", str(reveal), "--commitment", "sha256:" + "0" * 64]
    )
    assert other.exit_code == 1
    forged = runner.invoke(
        app,
        ["task", "verify-seal", "--receipt", str(receipt), "--reveal", str(reveal),
         "--key", SigningKey.generate().keyid],
    )  # fmt: skip
    assert forged.exit_code == 2 and "RECEIPT_" in forged.stderr
    # The answer twice, the first a lie that a viewer keeping the first key would show: refused
    # (before: SEALED, json reading the last).
    twice = tmp_path / "twice.json"
    twice.write_text(
        reveal.read_text().replace(
            '"expected_answer"', '"expected_answer": "43", "expected_answer"'
        ),
        encoding="utf-8",
    )
    assert json.loads(twice.read_text())["criteria"] == {"expected_answer": "42"}
    doubled = runner.invoke(app, [*base, "--reveal", str(twice), "--commitment", commitment])
    assert doubled.exit_code == 2 and "appears twice" in doubled.stderr, doubled.stdout


def test_a_reward_is_typed_in_usdc_and_an_old_minor_units_command_is_refused(
    sqlite_store: Store,
) -> None:
    """`--reward 2.5` and `--reward "0.5 USDC"` are units, `--reward-minor` the exact minor
    units; a bare `--reward 2000000` (2 USDC as it was once read, or 2,000,000 USDC) is refused
    with both readings and moves nothing, as is a seventh decimal."""
    h = make_harness(sqlite_store)
    runner = CliRunner()
    with serving(h.app) as url:

        def run(*args: str) -> tuple[int, str, str]:
            r = runner.invoke(app, ["task", "--url", url, "--key", h.keys["pat"], "post", *args])
            return r.exit_code, r.stdout, r.stderr

        before = h.balance("wallet:pat")
        code, out, _ = run("--title", "A", "--reward", "2.5")
        assert code == 0 and "reward 2.5 USDC" in out
        code, out, _ = run("--title", "B", "--reward", "0.5 USDC")
        assert code == 0 and "reward 0.5 USDC" in out
        code, out, _ = run("--title", "C", "--reward-minor", "2000000")
        assert code == 0 and "reward 2 USDC" in out
        assert before - h.balance("wallet:pat") == 5_000_000

        code, _, err = run("--title", "D", "--reward", "2000000")
        assert code == 2 and err.startswith("AMOUNT_AMBIGUOUS: --reward 2000000 is ambiguous")
        assert "2000000 USDC" in err and "(2 USDC)" in err and "--reward-minor 2000000" in err
        code, _, err = run("--title", "E", "--reward", "0.0000001")
        assert code == 2 and err.startswith("AMOUNT_TOO_PRECISE:")
        assert "6 decimals at most (this has 7)" in err
        code, _, err = run("--title", "F", "--reward", "2 EUR")
        assert code == 2 and err.startswith("INVALID_AMOUNT:")
        code, _, err = run("--title", "G", "--reward", "2", "--reward-minor", "2000000")
        assert code == 2 and "Give the reward once" in err
        assert before - h.balance("wallet:pat") == 5_000_000


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--hours", "nan"], "Invalid value for '--hours'"),
        (["--hours", "inf"], "Invalid value for '--hours'"),
        (["--hours", "1e400"], "Invalid value for '--hours'"),
        (["--mode", "auto", "--criteria", '{"min_length": NaN}'], "NaN is not JSON"),
        (["--mode", "auto", "--criteria", '{"min_length": 1e400}'], "1e400"),
        (
            [
                "--mode",
                "auto",
                "--criteria",
                '{"min_length": 5, "pass_threshold": 90, "pass_threshold": 10}',
            ],
            "pass_threshold",
        ),
    ],
)
def test_a_number_json_cannot_carry_or_a_key_twice_is_refused_before_posting(
    sqlite_store: Store, args: list[str], said: str
) -> None:
    """`--hours nan` or `inf` (a usage error: the option takes a plain decimal), criteria
    holding NaN, a number past a double or one key twice exit 2 with what to fix, and nothing
    is posted (the first three crashed the command with a traceback; a key given twice was read
    as its last value, while the service itself refuses such a body)."""
    h = make_harness(sqlite_store)
    runner = CliRunner()
    with serving(h.app) as url:
        post = ["task", "--url", url, "--key", h.keys["pat"], "post", "--title", "T"]
        r = runner.invoke(app, [*post, "--reward", "2", *args])
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        assert r.exit_code == 2 and said in r.stderr, r.stderr
    assert h.balance("wallet:pat") == FUNDS
    assert h.ok("pat", "GET", "/tasks?mine=true")["tasks"] == []


def test_a_panel_of_verifiers_from_the_terminal(sqlite_store: Store, tmp_path: Path) -> None:
    """`task post --verifier A --verifier B --quorum 2` posts a panel; each verifier votes with
    `task verdict`, `task show` lists the votes, and the second agreeing vote pays."""
    h = make_harness(sqlite_store)
    h.ok("vic", "PATCH", "/accounts/me", {"verifier_opt_in": True})
    runner = CliRunner()
    with serving(h.app) as url:

        def run(who: str, *args: str) -> tuple[int, str, str]:
            r = runner.invoke(app, ["task", "--url", url, "--key", h.keys[who], *args])
            return r.exit_code, r.stdout, r.stderr

        code, out, err = run(
            "pat", "post", "--title", "Summary", "--reward", "2", "--mode", "agent",
            "--brief", "Write a summary.", "--verifier", "vera", "--verifier", "vic",
            "--quorum", "3",
        )  # fmt: skip
        assert code == 1 and err.startswith("QUORUM_INVALID:")
        code, out, _ = run(
            "pat", "post", "--title", "Summary", "--reward", "2", "--mode", "agent",
            "--brief", "Write a summary.", "--verifier", "vera", "--verifier", "vic",
            "--quorum", "2",
        )  # fmt: skip
        assert code == 0, out
        tid = out.split()[0]
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the summary."})
        votes = ("--reason", "Fine.", "--quote-brief", "summary", "--quote-result", "Here is")
        for who in ("vera", "vic"):
            pem = tmp_path / f"{who}.pem"
            pem.write_bytes(h.signers[who].to_pem())
            pem.chmod(0o600)
            code, out, err = run(who, "verdict", tid, "--verifier-key", str(pem), *votes)
            assert code == 0, err
            if who == "vera":
                code, shown, _ = run("pat", "show", tid)
                assert "2 of 2: vera PASS, vic not yet" in shown
        assert "paid_on_pass" in out
