"""The CLI as a person meets it, each item against a real server on loopback: `task show` whole,
`--json` anywhere, `--version`, dry-run exit codes, filters that refuse what does not exist,
paging, help text, grammatical refusals, `check-batch`'s bad lines, and the receipt export that
`verify-chain` reads with the API's sequence numbers."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from adjudge import client, errors
from adjudge.cli import app
from adjudge.client import ApiError, Client, Conflict, Forbidden, NotFound, Unauthorized
from adjudge.receipts import SignedReceipts, SigningKey, verify_chain
from adjudge.store import Store, pages
from support.harness import Harness, make_harness
from support.live import serving

runner = CliRunner()


def _runner(h: Harness, url: str):  # type: ignore[no-untyped-def]
    def run(who: str, *args: str, before: tuple[str, ...] = ()) -> tuple[int, str, str]:
        r = runner.invoke(app, [*before, "task", "--url", url, "--key", h.keys[who], *args])
        return r.exit_code, r.stdout, r.stderr

    return run


def test_show_prints_the_brief_every_round_its_verdict_disputes_and_receipts(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """`task show` prints the brief, each round's submitted text with its verdict and reasons,
    the disputes and the receipt ids; the reward in USDC, never in minor units."""
    h = make_harness(sqlite_store)
    first, second = tmp_path / "1.txt", tmp_path / "2.txt"
    first.write_text("A first try at the summary.", encoding="utf-8")
    second.write_text("The summary, with the table.", encoding="utf-8")
    with serving(h.app) as url:
        run = _runner(h, url)
        code, out, _ = run(
            "pat", "post", "--title", "Summary", "--reward", "1.5", "--brief", "Summarise it."
        )
        tid = out.split()[0]
        run("ann", "accept", tid)
        run("ann", "submit", tid, str(first))
        run("pat", "review", tid, "--reject", "--reason", "The table is missing.")
        run("ann", "dispute", tid, "--reason", "There is no table to make.")
        code, out, err = run("pat", "show", tid)
    assert code == 0, err
    assert "Summary" in out and "Summarise it." in out
    assert "reward    1.5 USDC\n" in out and "1500000" not in out
    assert "status    disputed" in out
    assert "round 1 · submitted" in out and "| A first try at the summary." in out
    assert "verdict: FAIL" in out and "- The table is missing." in out
    assert "dispute on round 1 by ann" in out and "There is no table to make." in out
    task = h.ok("pat", "GET", f"/tasks/{tid}")
    assert task["receipts"] and all(r in out for r in task["receipts"])
    assert f"receipt: {task['verdicts'][0]['receipt_id']}" in out


def test_json_works_before_and_after_the_subcommand(sqlite_store: Store) -> None:
    """`--json` before the group, after it, or after the command gives the same JSON."""
    h = make_harness(sqlite_store)
    tid = h.post("manual")
    with serving(h.app) as url:
        run = _runner(h, url)
        answers = [
            run("pat", "show", tid, before=("--json",)),
            run("pat", "--json", "show", tid),
            run("pat", "show", tid, "--json"),
            run("pat", "list", "--json"),
        ]
    for code, out, err in answers[:3]:
        assert code == 0, err
        assert json.loads(out)["id"] == tid
    assert json.loads(answers[3][1])["tasks"][0]["id"] == tid


def test_version() -> None:
    """`adjudge --version` prints the package's version and exits 0."""
    import adjudge  # noqa: PLC0415

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"adjudge {adjudge.__version__}"


def test_a_failing_dry_run_exits_1(sqlite_store: Store, tmp_path: Path) -> None:
    """A draft that would fail exits 1 (scripts can test it); one that would pass exits 0."""
    h = make_harness(sqlite_store, real_checker=True)
    tid = h.post("auto", criteria={"min_length": 40})
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    short, good = tmp_path / "short.txt", tmp_path / "good.txt"
    short.write_text("Too short.", encoding="utf-8")
    good.write_text("A draft that is long enough to clear the content floor here.", "utf-8")
    with serving(h.app) as url:
        run = _runner(h, url)
        code, out, _ = run("ann", "dry-run", tid, str(short))
        assert code == 1 and out.startswith("FAIL 0") and "Output too short" in out
        code, out, _ = run("ann", "dry-run", tid, str(good))
        assert code == 0 and out.startswith("PASS 100")
        code, out, _ = run("ann", "dry-run", tid, str(short), "--json")
        assert code == 1 and json.loads(out)["passed"] is False


def test_an_unknown_status_is_an_error_not_an_empty_list(sqlite_store: Store) -> None:
    """`task list --status bogus` is refused with the states it knows; so does the API (422)."""
    h = make_harness(sqlite_store)
    h.post("manual")
    with serving(h.app) as url:
        run = _runner(h, url)
        code, out, err = run("pat", "list", "--status", "bogus")
        assert code == 2 and out == "" and "awaiting_verification" in err
        code, out, _ = run("pat", "list", "--mode", "oracle")
        assert code == 2 and out == ""
        code, out, _ = run("pat", "list", "--status", "awaiting_verification")
        assert code == 0 and out.strip() == "No tasks."
    assert h.refused("pat", "GET", "/tasks?status=bogus") == (422, "INVALID_REQUEST")


def test_list_pages_with_limit_and_cursor(sqlite_store: Store) -> None:
    """`--limit` cuts a page; the cursor printed under it fetches the next, to the end."""
    h = make_harness(sqlite_store)
    posted = []
    for i in range(5):
        posted.append(h.post("manual", title=f"Task {i}"))
        h.advance(minutes=1)
    with serving(h.app) as url:
        read = _every_page(_runner(h, url), "list", "--limit", "2")
    assert [line.split()[0] for page in read for line in page] == list(reversed(posted))


def _every_page(run: Any, *args: str) -> list[list[str]]:
    """Each page's lines of `task list ARGS`, following the cursor printed under each (five
    pages at most)."""
    pages, more = [], None
    for _ in range(5):
        code, out, err = run("pat", *args, *(("--cursor", more) if more else ()))
        assert code == 0, err
        pages.append(out.splitlines())
        found = re.search(r"--cursor (\S+)", err)
        if found is None:
            break
        more = found.group(1)
    return pages


def test_a_short_filtered_page_says_older_tasks_may_match(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of a mode its range does not lead with reads a bounded share of the tasks (cut
    here to two): an empty page with a cursor says older tasks may match, and following the
    cursors finds the one auto task behind four manual ones."""
    monkeypatch.setattr(pages, "SIFTED_ROWS", 2)
    h = make_harness(sqlite_store)
    oldest = h.post("auto")
    for _ in range(4):
        h.advance(minutes=1)
        h.post("manual")
    with serving(h.app) as url:
        read = _every_page(_runner(h, url), "list", "--mode", "auto")
    seen = [line.split()[0] for page in read for line in page if line.startswith("task")]
    said = [page[0] for page in read]
    assert seen == [oldest]
    assert said[0] == "No tasks on this page; older ones may match."


def test_list_shows_rewards_in_usdc(sqlite_store: Store) -> None:
    """`task list` prints each reward in USDC with its decimals, never its minor units."""
    h = make_harness(sqlite_store)
    h.post("manual", reward="1500000")
    with serving(h.app) as url:
        code, out, err = _runner(h, url)("pat", "list")
    assert code == 0, err
    assert " 1.5 USDC  " in out and "1500000" not in out


def test_a_closed_pipe_ends_the_listing_quietly(sqlite_store: Store) -> None:
    """`adjudge task list | head -1`: a reader that closed the pipe gets no traceback and no
    message on stderr."""
    h = make_harness(sqlite_store)
    for i in range(60):
        h.post("manual", title=f"A long title to fill the pipe {i} " + "x" * 150, reward="1000")
    with serving(h.app) as url:
        command = [sys.executable, "-m", "adjudge.cli", "task", "--url", url, "--key"]
        shown = subprocess.Popen(
            [*command, h.keys["pat"], "list", "--limit", "200"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert shown.stdout is not None and shown.stderr is not None
        shown.stdout.read(1)
        shown.stdout.close()
        err = shown.stderr.read()
        code = shown.wait(timeout=60)
    assert err == b"", err.decode()
    assert code in (0, 1)


def _commands(group: Any, path: list[str]) -> list[list[str]]:
    found = [path]
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group (Typer's own Click)
            found += _commands(command, [*path, name])
        else:
            found.append([*path, name])
    return found


def test_help_shows_no_bool_and_no_literal_markup() -> None:
    """Every command's help: no `<bool>` type on flags, no reST ``code`` or rich tags left as
    they are, and the flags themselves present."""
    root = typer.main.get_command(app)
    commands = _commands(root, [])
    assert ["task", "show"] in commands and ["receipt", "export"] in commands
    for path in commands:
        r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
        assert r.exit_code == 0, (path, r.output)
        text = r.output
        assert "<bool>" not in text and "<list[" not in text, path
        assert "``" not in text and "[bold" not in text and "[/]" not in text, path
    r = runner.invoke(app, ["task", "post", "--help"], env={"COLUMNS": "100"})
    assert "--private" in r.output and "MINOR_UNITS" in r.output


def test_refusals_are_grammatical(sqlite_store: Store) -> None:
    """A refused transition names the state in words with the right article."""
    h = make_harness(sqlite_store)
    tid = h.post("agent")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    with serving(h.app) as url:
        run = _runner(h, url)
        code, _, err = run("bob", "accept", tid)
        assert code == 1 and "An assigned task cannot be accepted." in err
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the summary."})
        code, _, err = run("pat", "cancel", tid)
        assert code == 1 and "A task awaiting verification cannot be cancelled" in err


def test_check_batch_reports_bad_lines_by_number(tmp_path: Path) -> None:
    """A line that is not JSON, one without criteria, and one whose criteria have the wrong type
    are reported with their line numbers and counted apart; a good line is still scored, and
    criteria over a size limit are scored as the reference scores them."""
    cases = tmp_path / "cases.jsonl"
    lines = [
        json.dumps({"id": "ok", "result": "The capital of France is Paris.", "criteria": {}}),
        "",
        "not json",
        json.dumps({"id": "typed", "result": "Paris is it.", "criteria": {"min_length": "10"}}),
        json.dumps({"id": "nocrit", "result": "Paris"}),
        json.dumps({"id": "big", "result": "Paris", "criteria": {"min_length": 10**7}}),
    ]
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    r = runner.invoke(app, ["check-batch", str(cases), "--out", str(out), "--workers", "1"])
    assert r.exit_code == 2
    got = {g["id"]: g for g in map(json.loads, out.read_text().splitlines()) if g["id"]}
    bad = [json.loads(x) for x in out.read_text().splitlines() if "error" in json.loads(x)]
    assert [(b["line"], b["error"]["code"]) for b in bad] == [
        (3, "INVALID_JSON"),
        (4, "CRITERIA_INVALID"),
        (5, "INVALID_LINE"),
    ]
    assert got["ok"]["passed"] is True and got["ok"]["line"] == 1
    assert "min_length must be a number" in got["typed"]["error"]["message"]
    assert got["big"]["reasons"] == [
        "Verification criteria exceed the supported size — cannot auto-verify against them"
    ]
    assert "2 checked, 1 passed (50.0%); 3 bad lines not checked" in r.stderr
    assert "line 4: CRITERIA_INVALID" in r.stderr


def test_a_log_on_lanes_is_exported_through_a_checkpoint_and_verifies(
    store: Store, tmp_path: Path
) -> None:
    """On a log of several lanes (PostgreSQL's), the export asks for a checkpoint, cuts the log
    there and names it as the head to pin; verify-chain checks the lanes against it. The API
    refuses an export of such a log without one (CHECKPOINT_REQUIRED). On SQLite (one lane) the
    export pins the last receipt, as before lanes."""
    key = SigningKey.generate()
    h = make_harness(store, issuer=SignedReceipts(key))
    for _ in range(2):
        tid = h.post("manual")
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the summary."})
        h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True})
    head = h.ok("root", "GET", "/receipts/head")
    lanes = len(head["lanes"])
    assert lanes == (1 if store.dialect == "sqlite" else 4) and head["count"] == 2
    assert h.refused("pat", "POST", "/receipts/checkpoint") == (403, "ROLE_REQUIRED")
    if lanes > 1:
        assert h.refused("root", "GET", "/receipts") == (400, "CHECKPOINT_REQUIRED")
        made = h.call("root", "POST", "/receipts/checkpoint")
        assert made.status_code == 201
        named = made.json()["heads"]
        assert [x["lane"] for x in named] == [0, 1, 2, 3] and named[0]["sequence"] == 1
        page = h.ok("root", "GET", f"/receipts?through={made.json()['id']}")
        assert [r["position"] for r in page["receipts"]] == [0, 1, 2]
    log = tmp_path / "log.jsonl"
    with serving(h.app) as url:
        done = runner.invoke(
            app, ["receipt", "export", "--url", url, "--key", h.keys["root"], "--out", str(log)]
        )
    assert done.exit_code == 0, done.output
    pin = re.search(r"--head (sha256:[0-9a-f]{64})", done.stderr)
    assert pin is not None, done.stderr
    written = log.read_bytes().splitlines()
    assert len(written) == (2 if lanes == 1 else 4)  # and the checkpoint asked for above
    assert ("checkpoint: " in done.stderr) == (lanes > 1)
    checked = runner.invoke(
        app, ["receipt", "verify-chain", str(log), "--key", key.keyid, "--head", pin.group(1)]
    )
    assert checked.exit_code == 0, checked.output
    if lanes > 1:
        assert "checkpoints: 2" in checked.stdout
        log.write_bytes(b"\n".join(written[1:]) + b"\n")
        refused = runner.invoke(
            app, ["receipt", "verify-chain", str(log), "--key", key.keyid, "--head", pin.group(1)]
        )
        assert refused.exit_code == 1 and "RECEIPT_CHAIN_BROKEN" in refused.stdout


def test_receipt_export_feeds_verify_chain_and_sequences_agree(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """`adjudge receipt export` pages through the log into the JSONL `verify-chain` checks; the
    API's `sequence`, the head's and `--after` count as the signed receipts do, from 0."""
    key = SigningKey.generate()
    h = make_harness(sqlite_store, issuer=SignedReceipts(key))
    for _ in range(3):
        tid = h.post("manual")
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the summary."})
        h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": False})
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here it is, whole."})
        h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True})
    head = h.ok("root", "GET", "/receipts/head")
    assert head["count"] == 6 and head["sequence"] == 5
    page = h.ok("root", "GET", "/receipts?limit=4")
    assert [r["sequence"] for r in page["receipts"]] == [0, 1, 2, 3]
    assert page["next_after"] == 3
    rest = h.ok("root", "GET", "/receipts?after=3&limit=4")
    assert [r["sequence"] for r in rest["receipts"]] == [4, 5] and rest["next_after"] is None
    assert rest["receipts"][-1]["digest"] == head["digest"]
    assert h.refused("pat", "GET", "/receipts") == (403, "ROLE_REQUIRED")
    log = tmp_path / "log.jsonl"
    with serving(h.app) as url:
        done = runner.invoke(
            app,
            ["receipt", "export", "--url", url, "--key", h.keys["root"], "--out", str(log)],
        )
        assert done.exit_code == 0, done.output
        assert "6 receipts written" in done.stderr and "(sequence 5)" in done.stderr
        refused = runner.invoke(
            app, ["receipt", "export", "--url", url, "--key", h.keys["pat"], "-o", str(log)]
        )
        assert refused.exit_code == 1 and refused.stderr.startswith("ROLE_REQUIRED:")
        assert (
            runner.invoke(
                app, ["receipt", "export", "--url", url, "--key", h.keys["root"], "-o", str(log)]
            ).exit_code
            == 0
        )
    report = verify_chain(log.read_bytes().splitlines(), key.keyid, expected_head=head["digest"])
    assert report.count == 6 and report.head is not None and report.head.sequence == 5
    checked = runner.invoke(
        app, ["receipt", "verify-chain", str(log), "--key", key.keyid, "--head", head["digest"]]
    )
    assert checked.exit_code == 0, checked.output
    assert f"head: {head['digest']} (sequence 5)" in checked.stdout
    for receipt in page["receipts"]:
        one = h.ok("root", "GET", f"/receipts/{receipt['id']}")
        assert one["statement"]["predicate"]["sequence"] == one["sequence"]
        assert one["as_of"]["verdict"] == one["statement"]["predicate"]["verdict"]


def test_receipt_get_saves_an_envelope_that_verifies(sqlite_store: Store, tmp_path: Path) -> None:
    """`adjudge receipt get` saves a receipt's envelope by id or by task (its latest); it
    verifies offline; a private task's receipt is refused to outsiders."""
    key = SigningKey.generate()
    h = make_harness(sqlite_store, issuer=SignedReceipts(key))
    tid = h.post("manual", private=True)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here is the summary."})
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": True})
    rid = h.ok("pat", "GET", f"/tasks/{tid}")["receipts"][-1]
    saved = tmp_path / "r.json"
    with serving(h.app) as url:
        base = ["receipt", "get", "--url", url, "--key", h.keys["pat"]]
        got = runner.invoke(app, [*base, "--task", tid, "--out", str(saved)])
        assert got.exit_code == 0 and f"receipt {rid} saved" in got.stderr
        by_id = runner.invoke(app, [*base, rid])
        assert by_id.exit_code == 0 and by_id.stdout.encode() == saved.read_bytes()
        outsider = ["receipt", "get", "--url", url, "--key", h.keys["bob"], rid]
        refused = runner.invoke(app, outsider)
        assert refused.exit_code == 1 and refused.stderr.startswith("NOT_A_PARTY:")
        assert runner.invoke(app, [*base]).exit_code == 2
    checked = runner.invoke(app, ["receipt", "verify", str(saved), "--key", key.keyid])
    assert checked.exit_code == 0 and "VALID receipt" in checked.stdout


def test_the_client_raises_a_class_per_status_with_the_request_id(sqlite_store: Store) -> None:
    """A refusal is the subclass for its status and of its code's kind, carries the service's
    code and the request id the service logged; the CLI prints that id after the message."""
    h = make_harness(sqlite_store)
    tid = h.post("manual")
    with serving(h.app) as url:
        with Client(url, key=h.keys["pat"]) as api:
            for call, by_status, kind, code in [
                (lambda: api.task("task_none"), NotFound, errors.NotFound, "TASK_NOT_FOUND"),
                (lambda: api.accept(tid), Forbidden, errors.NotAllowed, "ROLE_REQUIRED"),
                (
                    lambda: api.review(tid, passed=True),
                    Conflict,
                    errors.StateError,
                    "ILLEGAL_TRANSITION",
                ),
            ]:
                try:
                    call()
                except ApiError as refusal:
                    assert type(refusal).__mro__[1] is by_status and isinstance(refusal, kind)
                    assert refusal.code == code
                    assert refusal.request_id and len(refusal.request_id) == 32
                else:
                    raise AssertionError(code)
        with Client(url, key="adj_wrong") as stranger:
            try:
                stranger.me()
            except Unauthorized as refusal:
                assert refusal.status == 401
        code, _, err = _runner(h, url)("pat", "show", "task_none")
    assert code == 1 and re.fullmatch(r"TASK_NOT_FOUND: .* \(request [0-9a-f]{32}\)\n", err)


def test_a_usage_error_is_one_plain_line_on_a_pipe() -> None:
    """A usage error on a stderr that is not a terminal is the usage, the hint and one line
    `Error: …` — no box, and no sentence broken to fit 80 columns."""
    result = runner.invoke(
        app, ["task", "review", "some-task", "--a-long-option-name-nobody-ever-declared-here"]
    )
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[-1] == "Error: No such option: --a-long-option-name-nobody-ever-declared-here"
    assert not any(c in result.stderr for c in "╭╰│")


def test_a_list_at_a_terminal_aligns_its_columns_under_their_names(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`task list` at a terminal: a header line, each column starting where its name does and
    the rewards' right edges under REWARD's; through a pipe the same rows without the header."""
    h = make_harness(sqlite_store)
    h.post("manual", reward="1500000", title="Short")
    h.post("auto", reward="12345000", title="A longer title", criteria={"min_length": 5})
    with serving(h.app) as url:
        code, piped, _ = _runner(h, url)("pat", "list")
        monkeypatch.setattr("adjudge.cli._common.at_terminal", lambda: True)
        code, out, err = _runner(h, url)("pat", "list")
    assert code == 0, err
    head, *rows = out.splitlines()
    assert head.split() == ["ID", "MODE", "STATUS", "REWARD", "TITLE"]
    assert piped.splitlines() == rows and len(rows) == 2
    for name in ("MODE", "STATUS", "TITLE"):  # left-aligned: each cell starts under its name
        at = head.index(name)
        assert all(row[at - 2 : at] == "  " and row[at] != " " for row in rows), name
    edge = head.index("REWARD") + len("REWARD")
    assert sorted(row[:edge].rsplit("  ", 1)[-1].strip() for row in rows) == [
        "1.5 USDC",
        "12.345 USDC",
    ]
    assert all(row[edge : edge + 2] == "  " and row[edge - 1] == "C" for row in rows)


def test_the_client_reads_every_verifier_page_by_page(sqlite_store: Store) -> None:
    """``verifiers`` follows ``next_cursor`` to the end; ``verifiers_page`` is one page."""
    h = make_harness(sqlite_store)
    h.ok("vic", "PATCH", "/accounts/me", {"verifier_opt_in": True})
    with serving(h.app) as url, Client(url, key=h.keys["pat"]) as api:
        assert [v["id"] for v in api.iter_verifiers(page_size=1)] == ["vera", "vic"]
        assert [v["id"] for v in api.verifiers()] == ["vera", "vic"]
        page = api.verifiers_page(limit=1)
        assert [v["id"] for v in page["verifiers"]] == ["vera"] and page["next_cursor"]


def test_the_client_reads_the_ledger_and_its_recount(sqlite_store: Store) -> None:
    """``ledger()`` is the view (no recount: its sums are null); ``recount=True`` sends
    ``recount=true`` and gets the audit; ``limit`` and ``cursor`` page the balances, and
    ``balances()`` reads every page."""
    h = make_harness(sqlite_store)
    with serving(h.app) as url, Client(url, key=h.keys["root"]) as api:
        view = api.ledger()
        assert view["sum_of_balances"] is None and view["sum_of_entries"] is None
        counted = api.ledger(recount=True)
        assert (counted["sum_of_entries"], counted["unmatched"]) == ("0", [])
        assert counted["balances"] == view["balances"]
        first = api.ledger(limit=1)
        assert len(first["balances"]) == 1 and first["next_cursor"] == next(iter(first["balances"]))
        assert api.balances(page_size=2) == view["balances"]


def test_clients_share_one_tls_context_that_still_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client for each of many keys reads the CA roots once, not once each (tens of
    milliseconds a client), and the context they share verifies certificates and host names
    as httpx's own would."""
    reads: list[object] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        reads.append(args or kwargs)
        load(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    client._tls.cache_clear()
    clients = [Client("https://adjudge.example", key=f"adj_{n}") for n in range(5)]
    for each in clients:
        each.close()
    assert len(reads) == 1
    shared = client._tls()
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert shared.cert_store_stats()["x509_ca"] > 0
