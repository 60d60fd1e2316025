"""The `adjudge check` and `adjudge check-batch` commands: output, exit codes, warnings."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.market.proof import criteria_digest
from adjudge.receipts import SigningKey, verify

runner = CliRunner()
EXAMPLES = Path(__file__).parent.parent / "examples"


def test_check_pass_prints_table_and_exits_0() -> None:
    """A passing result exits 0 and shows the breakdown."""
    res = runner.invoke(
        app, ["check", "-c", str(EXAMPLES / "criteria.json"), str(EXAMPLES / "report.md")]
    )
    assert res.exit_code == 0, res.output
    assert "PASS" in res.output and "contains_keywords" in res.output


def test_check_fail_json_exits_1(tmp_path: Path) -> None:
    """--json prints the exact verificationResult; a fail exits 1."""
    crit = tmp_path / "c.json"
    crit.write_text('{"required_fields": ["name", "price", "currency"]}')
    res = runner.invoke(
        app,
        ["check", "-c", str(crit), "--json", "-"],
        input='{"name": "Acme Widget", "price": "", "currency": "USD"}',
    )
    assert res.exit_code == 1
    assert json.loads(res.stdout) == {
        "passed": False,
        "score": 73,
        "reasons": ["required_fields: 67%"],
        "breakdown": [
            {"name": "required_fields", "score": 0.6666666666666666, "weight": 2, "reason": ""},
            {"name": "system_failure_detection", "score": 1, "weight": 0.5, "reason": ""},
        ],
        "errors": {},
    }


def test_check_json_flag(tmp_path: Path) -> None:
    """The JSON form is byte-for-byte what the reference serializes."""
    crit = tmp_path / "c.json"
    crit.write_text('{"expected_answer": "42"}')
    res = runner.invoke(app, ["check", "-c", str(crit), "--json", "-"], input="The answer is 42.")
    assert res.exit_code == 0
    assert res.stdout.startswith(
        '{"passed":true,"score":100,"reasons":["All verification criteria met"]'
    )


def test_a_json_string_result_is_read_as_its_json_text(tmp_path: Path) -> None:
    """--result-json (and a .json file): the file is the agent's JSON result, so a top-level
    string is read as its JSON text (spec 000: "otherwise it reads the whole result as JSON")."""
    crit = tmp_path / "c.json"
    crit.write_text('{"min_length": 1}')
    res = runner.invoke(app, ["check", "-c", str(crit), "--json", "--result-json", "-"], input='""')
    assert res.exit_code == 1
    assert json.loads(res.stdout)["reasons"] == ["Output too short: 2 characters, minimum 20"]
    result = tmp_path / "result.json"
    result.write_text('"The capital of France is Paris."')
    res = runner.invoke(app, ["check", "-c", str(crit), "--json", str(result)])
    assert res.exit_code == 0, res.output  # the 33 characters of the JSON text, quotes included


def test_bad_criteria_exit_2(tmp_path: Path) -> None:
    """Wrong types and unreadable files are bad input: exit 2 with the code and a sentence."""
    crit = tmp_path / "c.json"
    crit.write_text('{"min_length": "ten"}')
    res = runner.invoke(app, ["check", "-c", str(crit), "-"], input="hello world and more")
    assert res.exit_code == 2
    assert "CRITERIA_INVALID" in res.stderr and "min_length" in res.stderr
    res = runner.invoke(app, ["check", "-c", str(tmp_path / "missing.json"), "-"], input="x")
    assert res.exit_code == 2 and "FILE_UNREADABLE" in res.stderr
    crit.write_text("{not json")
    res = runner.invoke(app, ["check", "-c", str(crit), "-"], input="x")
    assert res.exit_code == 2 and "INVALID_JSON" in res.stderr


def test_dropped_field_warns(tmp_path: Path) -> None:
    """A misspelled field is dropped, as the spec says, and the CLI warns about it."""
    crit = tmp_path / "c.json"
    crit.write_text('{"min_lenght": 500, "min_length": 10}')
    res = runner.invoke(
        app, ["check", "-c", str(crit), "-"], input="The capital of France is Paris."
    )
    assert res.exit_code == 0
    assert "min_lenght" in res.stderr


def test_over_limit_is_a_verdict_with_a_warning(tmp_path: Path) -> None:
    """Criteria past a limit fail the check (as the reference does) and say which limit."""
    crit = tmp_path / "c.json"
    crit.write_text(json.dumps({"contains_keywords": ["k"] * 51}))
    res = runner.invoke(
        app, ["check", "-c", str(crit), "-"], input="The capital of France is Paris."
    )
    assert res.exit_code == 1
    assert "CRITERIA_OVER_LIMIT" in res.stderr and "exceed the supported size" in res.stdout


def test_check_batch(tmp_path: Path) -> None:
    """JSONL in, JSONL out in order, a summary, and exit 2 when a line is unusable."""
    cases = tmp_path / "cases.jsonl"
    lines = [
        {"id": "a", "result": "The capital of France is Paris.", "criteria": {"min_length": 10}},
        {"id": "b", "result": "Paris", "criteria": {"min_length": 10}},
        {
            "id": "c",
            "result": {"output": "The answer is 42."},
            "criteria": {"expected_answer": "42"},
        },
    ]
    cases.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "out.jsonl"
    res = runner.invoke(app, ["check-batch", str(cases), "--out", str(out), "--workers", "2"])
    assert res.exit_code == 0, res.output
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(g["id"], g["passed"]) for g in got] == [("a", True), ("b", False), ("c", True)]
    assert "3 checked, 2 passed" in res.stderr
    cases.write_text(cases.read_text() + "not json\n")
    res = runner.invoke(app, ["check-batch", str(cases), "--out", str(out), "--workers", "1"])
    assert res.exit_code == 2


def test_check_signs_a_receipt_that_verifies(tmp_path: Path) -> None:
    """--sign/--receipt write a receipt `adjudge receipt verify` accepts; a tampered one fails."""
    keys = tmp_path / "keys"
    res = runner.invoke(app, ["keys", "new", "--out", str(keys)])
    assert res.exit_code == 0, res.output
    key_file = next(p for p in keys.iterdir() if "pub" not in p.name)
    fingerprint = next(
        w for w in res.output.split() if len(w) == 64 and all(c in "0123456789abcdef" for c in w)
    )
    receipt = tmp_path / "receipt.json"
    res = runner.invoke(
        app,
        [
            "check",
            "-c",
            str(EXAMPLES / "criteria.json"),
            str(EXAMPLES / "report.md"),
            "--sign",
            str(key_file),
            "--receipt",
            str(receipt),
        ],
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["receipt", "verify", str(receipt), "--key", fingerprint])
    assert res.exit_code == 0, res.output
    receipt.write_text(receipt.read_text().replace('"payload":"', '"payload":"A', 1))
    res = runner.invoke(app, ["receipt", "verify", str(receipt), "--key", fingerprint])
    assert res.exit_code != 0


def test_sign_without_receipt_is_bad_input() -> None:
    """--sign alone is refused with a code: nothing is checked or written half-way."""
    res = runner.invoke(
        app, ["check", "-c", str(EXAMPLES / "criteria.json"), "--sign", "k.pem", "-"], input="x"
    )
    assert res.exit_code == 2 and "SIGN_NEEDS_RECEIPT" in res.stderr


def _keys(tmp_path: Path) -> tuple[Path, str]:
    res = runner.invoke(app, ["keys", "new", "--out", str(tmp_path / "keys")])
    assert res.exit_code == 0, res.output
    key_file = next(p for p in (tmp_path / "keys").iterdir() if p.suffix == ".key")
    return key_file, next(w for w in res.output.split() if len(w) == 64)


def _signed_check(key: Path, log: Path, result: str, *extra: str) -> Any:
    crit = log.parent / "criteria.json"
    crit.write_text('{"min_length": 10}')
    return runner.invoke(
        app,
        ["check", "-c", str(crit), "--sign", str(key), "--receipt", str(log), *extra, "-"],
        input=result,
    )


def test_a_re_run_appends_a_new_receipt_and_never_overwrites(tmp_path: Path) -> None:
    """Signing a second run to the same file appends a second receipt chained after the first;
    the first line is untouched and the log verifies."""
    key, fingerprint = _keys(tmp_path)
    log = tmp_path / "receipts.jsonl"
    assert _signed_check(key, log, "short").exit_code == 1
    first = log.read_bytes()
    assert _signed_check(key, log, "now long enough to pass").exit_code == 0
    data = log.read_bytes()
    assert data.startswith(first) and len(data.splitlines()) == 2
    receipts = [verify(line, fingerprint) for line in data.splitlines()]
    assert [r.sequence for r in receipts] == [0, 1]
    assert receipts[1].previous == receipts[0].receipt_id
    assert receipts[1].supersedes is None
    res = runner.invoke(app, ["receipt", "verify-chain", str(log), "--key", fingerprint])
    assert res.exit_code == 0 and "VALID log: 2 receipts" in res.output


def test_a_re_run_can_supersede_the_receipt_it_repairs(tmp_path: Path) -> None:
    """--supersedes names the earlier receipt: a fail, a repair and a pass leave both on the
    record, the pass naming the fail; both are about the same criteria."""
    key, fingerprint = _keys(tmp_path)
    log = tmp_path / "receipts.jsonl"
    _signed_check(key, log, "short")
    failed = verify(log.read_bytes().splitlines()[0], fingerprint)
    res = _signed_check(key, log, "now long enough to pass", "--supersedes", failed.receipt_id)
    assert res.exit_code == 0, res.output
    passed = verify(log.read_bytes().splitlines()[1], fingerprint)
    assert passed.supersedes == failed.receipt_id and passed.about == failed.about
    assert failed.about is not None and failed.about.startswith("criteria:sha256:")
    res = runner.invoke(app, ["receipt", "verify-chain", str(log), "--key", fingerprint])
    assert res.exit_code == 0 and "superseded receipts: 1" in res.output


def test_a_refused_append_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    """Superseding a receipt not on the log, or one about another subject, or appending to a
    file that is not a log under this key: exit 2 with the code, and not a byte changes."""
    key, _ = _keys(tmp_path)
    log = tmp_path / "receipts.jsonl"
    _signed_check(key, log, "short")
    before = log.read_bytes()
    missing = _signed_check(key, log, "long enough text", "--supersedes", "sha256:" + "0" * 64)
    assert missing.exit_code == 2 and "RECEIPT_CHAIN_BROKEN" in missing.stderr
    first = verify(before.splitlines()[0], SigningKey.from_pem(key.read_bytes()).keyid)
    other = _signed_check(
        key, log, "long enough text", "--supersedes", first.receipt_id, "--about", "task:other"
    )
    assert other.exit_code == 2 and "RECEIPT_SUPERSESSION_INVALID" in other.stderr
    assert log.read_bytes() == before
    other_key, _ = _keys(tmp_path / "other")
    foreign = _signed_check(other_key, log, "long enough text")
    assert foreign.exit_code == 2 and "RECEIPT_LOG_INVALID" in foreign.stderr
    assert log.read_bytes() == before
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"not a receipt\n")
    assert _signed_check(key, junk, "long enough text").exit_code == 2
    assert junk.read_bytes() == b"not a receipt\n"


def test_supersedes_needs_a_receipt_log(tmp_path: Path) -> None:
    """--supersedes or --about without --sign/--receipt is refused before anything runs."""
    crit = tmp_path / "c.json"
    crit.write_text('{"min_length": 1}')
    res = runner.invoke(app, ["check", "-c", str(crit), "--about", "t", "-"], input="x")
    assert res.exit_code == 2 and "SIGN_NEEDS_RECEIPT" in res.stderr


def test_check_batch_writes_and_opens_the_viewer_page(tmp_path: Path, monkeypatch: Any) -> None:
    """--html writes one page embedding each verdict with its case's text; --open writes a
    page too and hands its file URI to the browser."""
    cases = tmp_path / "cases.jsonl"
    lines = [
        {
            "id": "a",
            "result": "The escrow holds the reward until a refund.",
            "criteria": {"min_length": 20, "contains_keywords": ["escrow"]},
        },
        {"id": "b", "result": "</script><script>alert(1)</script>", "criteria": {"min_length": 20}},
    ]
    cases.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out, page = tmp_path / "out.jsonl", tmp_path / "view.html"
    res = runner.invoke(
        app, ["check-batch", str(cases), "--out", str(out), "--html", str(page), "--workers", "1"]
    )
    assert res.exit_code == 0, res.output
    block = re.search(
        r'<script type="application/json" id="batch-data">(.*?)</script>', page.read_text()
    )
    assert block is not None and "<" not in block.group(1)
    embedded = json.loads(block.group(1))["runs"][0]
    verdicts = [json.loads(x) for x in out.read_text().splitlines()]
    assert embedded["name"] == "cases.jsonl"
    assert embedded["records"] == [
        {**v, "result": c["result"], "criteria": c["criteria"]}
        for v, c in zip(verdicts, lines, strict=True)
    ]
    opened: list[str] = []
    monkeypatch.setattr("adjudge.cli.check.webbrowser.open", lambda uri: opened.append(uri) or True)
    res = runner.invoke(app, ["check-batch", str(cases), "--open", "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert len(opened) == 1 and opened[0].startswith("file://")
    written = Path(opened[0].removeprefix("file://"))
    assert "batch-data" in written.read_text()
    written.unlink()


def test_a_signed_check_binds_the_criteria_as_the_service_does(tmp_path: Path) -> None:
    """The receipt binds the criteria by the digest of their RFC 8785 JSON, as the service's
    task receipts do: two files writing the same criteria with other spaces and key order (and a
    number with a point) sign one digest, the service's (the file's bytes were digested: each
    spelling its own digest, none the service's)."""
    key, _ = _keys(tmp_path)
    criteria = {"min_length": 10, "pass_threshold": 60.5}
    digests = []
    for i, text in enumerate(
        (
            '{"min_length": 10, "pass_threshold": 60.5}',
            '{ "pass_threshold":60.5,\n"min_length":10 }',
        )
    ):
        crit, log = tmp_path / f"c{i}.json", tmp_path / f"r{i}.jsonl"
        crit.write_text(text)
        res = runner.invoke(
            app,
            ["check", "-c", str(crit), "--sign", str(key), "--receipt", str(log), "-"],
            input="long enough to pass the check",
        )
        assert res.exit_code == 0, res.output
        envelope = json.loads(log.read_text().splitlines()[0])
        statement = json.loads(base64.b64decode(envelope["payload"]))
        digests.append(statement["predicate"]["criteriaDigest"])
    assert digests == [criteria_digest(criteria)] * 2
