"""``adjudge call verify`` and ``adjudge provider report`` through typer's CliRunner."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adjudge.calls.verify import digest_of
from adjudge.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "calls"
runner = CliRunner()


def _verify(tool: str, kind: str, *extra: str) -> tuple[int, str]:
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(EXAMPLES / f"{tool}.contract.json"),
            "--policy",
            str(EXAMPLES / f"{tool}.policy.json"),
            "--request",
            str(EXAMPLES / f"{tool}.request.json"),
            "--response",
            str(EXAMPLES / f"{tool}.{kind}.response.json"),
            *extra,
        ],
    )
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("tool", "kind", "code", "effect"),
    [
        ("weather", "good", 0, ("PASS", "settle", False)),
        ("weather", "bad", 1, ("FAIL", "refund", True)),
        ("search", "good", 0, ("SKIPPED", "settle", False)),
        ("search", "bad", 1, ("FAIL", "refund", True)),
    ],
)
def test_shipped_examples(tool: str, kind: str, code: int, effect: tuple[str, str, bool]) -> None:
    """Each shipped example verifies to its documented verdict, effect and exit code."""
    exit_code, output = _verify(tool, kind, "--json")
    assert exit_code == code, output
    record = json.loads(output)
    assert (record["verdict"], record["payment"], record["strike"]) == effect
    assert record["checks"], "every check that ran is listed"


def test_table_output_lists_every_check() -> None:
    """Without --json the verdict, payment, strike and every check row are printed."""
    exit_code, output = _verify("weather", "bad")
    assert exit_code == 1
    assert "verdict   FAIL" in output
    assert "payment   refund" in output
    assert "strike    yes" in output
    for name in ("schema", "enough_days", "recent_issue", "plausible_highs", "one_row_per_day"):
        assert name in output


def test_at_overrides_the_request_time() -> None:
    """--at sets the call's time: the same forecast is stale two days later."""
    exit_code, output = _verify("weather", "good", "--json", "--at", "2026-12-01T19:00:00Z")
    assert exit_code == 1
    rows = {r["name"]: r["outcome"] for r in json.loads(output)["checks"]}
    assert rows["recent_issue"] == "fail"


def test_judgment_and_its_citation(tmp_path: Path) -> None:
    """A judgment passed with --judgment is grounded on the response digest and can FAIL."""
    body = json.loads((EXAMPLES / "search.good.response.json").read_text())["body"]
    policy = json.loads((EXAMPLES / "search.policy.json").read_text())
    policy["meaning"] = {"sample_rate": "1"}
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    title = body["web"]["results"][2]["title"]
    judgment = {
        "call_id": "call-search-0007",
        "response_digest": digest_of(body),
        "status": "judged",
        "conflict": True,
        "reason": "about executors in general, not a comparison",
        "citations": [{"path": "/results/2/title", "quote_sha256": digest_of(title)}],
    }
    (tmp_path / "judgment.json").write_text(json.dumps(judgment))
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(EXAMPLES / "search.contract.json"),
            "--policy",
            str(tmp_path / "policy.json"),
            "--request",
            str(EXAMPLES / "search.request.json"),
            "--response",
            str(EXAMPLES / "search.good.response.json"),
            "--judgment",
            str(tmp_path / "judgment.json"),
            "--json",
        ],
    )
    assert result.exit_code == 1, result.output
    record = json.loads(result.output)
    assert record["verdict"] == "FAIL"
    assert {r["name"]: r["outcome"] for r in record["checks"]}["meaning"] == "fail"


def test_no_policy_is_unverified() -> None:
    """Without --policy the call is UNVERIFIED and settles (exit 0)."""
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(EXAMPLES / "weather.contract.json"),
            "--request",
            str(EXAMPLES / "weather.request.json"),
            "--response",
            str(EXAMPLES / "weather.bad.response.json"),
            "--json",
        ],
    )
    assert result.exit_code == 0
    assert json.loads(result.output)["verdict"] == "UNVERIFIED"


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("{not json", "INPUT_UNREADABLE"),
        (
            '{"tool": "weather.forecast", "version": "2", "output_schema": {"type": "strin"}}',
            "CONTRACT_SCHEMA_INVALID",
        ),
    ],
)
def test_bad_contract_exits_2_with_the_code(tmp_path: Path, content: str, code: str) -> None:
    """Bad input exits 2 and prints the error's stable code and sentence."""
    (tmp_path / "c.json").write_text(content)
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(tmp_path / "c.json"),
            "--policy",
            str(EXAMPLES / "weather.policy.json"),
            "--request",
            str(EXAMPLES / "weather.request.json"),
            "--response",
            str(EXAMPLES / "weather.good.response.json"),
            "--json",
        ],
    )
    assert result.exit_code == 2
    assert json.loads(result.output)["error"]["code"] == code


def test_bad_policy_exits_2_in_text(tmp_path: Path) -> None:
    """Without --json the refusal is printed as `CODE: sentence`."""
    policy = json.loads((EXAMPLES / "weather.policy.json").read_text())
    policy["clauses"] = []
    (tmp_path / "p.json").write_text(json.dumps(policy))
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(EXAMPLES / "weather.contract.json"),
            "--policy",
            str(tmp_path / "p.json"),
            "--request",
            str(EXAMPLES / "weather.request.json"),
            "--response",
            str(EXAMPLES / "weather.good.response.json"),
        ],
    )
    assert result.exit_code == 2
    assert "POLICY_CLAUSE_INVALID: " in result.output


def _log(tmp_path: Path, fails: int, passes: int) -> Path:
    lines = [
        {
            "type": "provider",
            "provider": "skycast",
            "declared_failure_rate": "0.02",
            "sample_gate": 20,
            "window_days": 30,
            "penalty_minor": 25000,
        }
    ]
    for i in range(passes + fails):
        lines.append(
            {
                "call_id": f"c{i}",
                "provider": "skycast",
                "at": f"2026-11-{1 + i % 28:02d}T10:00:00+00:00",
                "verdict": "FAIL" if i < fails else "PASS",
                "effect": {"enforced": True},
                "error": None,
            }
        )
    lines.append(
        {
            "call_id": "e1",
            "provider": "findly",
            "at": "2026-11-28T10:00:00+00:00",
            "verdict": None,
            "effect": {"enforced": False},
            "error": {"kind": "request_error", "code": "HTTP_503", "message": ""},
        }
    )
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_provider_report_proposes_a_penalty(tmp_path: Path) -> None:
    """A replayed log with a failure rate well above the declared one yields a proposal."""
    log = _log(tmp_path, fails=10, passes=40)
    result = runner.invoke(app, ["provider", "report", str(log), "--json"])
    assert result.exit_code == 0, result.output
    report = {p["provider"]: p for p in json.loads(result.output)["providers"]}
    sky = report["skycast"]
    assert (sky["window"]["pass"], sky["window"]["fail"]) == (40, 10)
    assert sky["window"]["failure_rate"] == "1/5"
    assert sky["proposal"]["status"] == "pending"
    assert sky["proposal"]["penalty_minor"] == 25000
    findly = report["findly"]
    assert findly["window"]["failure_rate"] is None
    assert findly["window"]["request_errors"] == 1
    assert findly["proposal"] is None


def test_provider_report_text(tmp_path: Path) -> None:
    """The text report prints each provider's window, rate and proposal."""
    log = _log(tmp_path, fails=0, passes=30)
    result = runner.invoke(app, ["provider", "report", str(log)])
    assert result.exit_code == 0, result.output
    assert "skycast" in result.output
    assert "0/1 (0.00%)" in result.output
    assert "no measured rate" in result.output
    assert "not above" in result.output


@pytest.mark.parametrize("at", [[], ["--at", "2026-12-01T00:00:00Z"]])
def test_provider_report_with_terms_but_no_calls(tmp_path: Path, at: list[str]) -> None:
    """A log with a provider's terms and no calls prints "no measured rate", never a crash."""
    path = tmp_path / "calls.jsonl"
    terms = {"type": "provider", "provider": "skycast", "declared_failure_rate": "0.02"}
    path.write_text(json.dumps({**terms, "sample_gate": 20, "window_days": 30}) + "\n")
    result = runner.invoke(app, ["provider", "report", str(path), *at])
    assert result.exit_code == 0, result.output
    assert "skycast" in result.output
    assert "no measured rate" in result.output
    shown = runner.invoke(app, ["provider", "report", str(path), *at, "--json"])
    assert shown.exit_code == 0, shown.output
    (provider,) = json.loads(shown.output)["providers"]
    assert provider["proposal"] is None
    assert provider["window"] is None or provider["window"]["failure_rate"] is None


def test_provider_report_for_a_provider_without_calls_among_others(tmp_path: Path) -> None:
    """Terms for one provider, calls by another: the first has no measured rate."""
    path = _log(tmp_path, fails=1, passes=1)
    extra = {"type": "provider", "provider": "quiet", "declared_failure_rate": "0.1"}
    with path.open("a") as out:
        out.write(json.dumps({**extra, "sample_gate": 5, "window_days": 7}) + "\n")
    result = runner.invoke(app, ["provider", "report", str(path), "--at", "2026-12-01T00:00:00Z"])
    assert result.exit_code == 0, result.output
    quiet = result.output.split("quiet", 1)[1].split("skycast", 1)[0]
    assert "no measured rate" in quiet


def test_provider_report_refuses_a_bad_line(tmp_path: Path) -> None:
    """A malformed log line is refused with its line number and exit 2."""
    path = tmp_path / "calls.jsonl"
    path.write_text('{"call_id": "c", "provider": "p"}\n')
    result = runner.invoke(app, ["provider", "report", str(path)])
    assert result.exit_code == 2
    assert "CALL_LOG_INVALID: Line 1" in result.output


def test_a_verify_record_replays_into_a_report(tmp_path: Path) -> None:
    """The JSON that `call verify` prints is a line `provider report` reads."""
    _, output = _verify("weather", "bad", "--json")
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(json.loads(output)) + "\n")
    result = runner.invoke(app, ["provider", "report", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (provider,) = json.loads(result.output)["providers"]
    assert provider["window"]["fail"] == 1


# ----------------------------------------------------------------------------- signed receipts


def _key(tmp_path: Path) -> tuple[Path, str]:
    """A fresh key pair from `adjudge keys new`: the private key file and its fingerprint."""
    result = runner.invoke(app, ["keys", "new", "--out", str(tmp_path / "keys")])
    assert result.exit_code == 0, result.output
    key_file = next((tmp_path / "keys").glob("*.key"))
    fingerprint = result.output.split("fingerprint: ")[1].split()[0]
    return key_file, fingerprint


def _signed(tmp_path: Path, tool: str, kind: str, *extra: str) -> tuple[int, str, Path, str]:
    key_file, fingerprint = _key(tmp_path)
    out = tmp_path / "receipt.json"
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(EXAMPLES / f"{tool}.contract.json"),
            "--policy",
            str(EXAMPLES / f"{tool}.policy.json"),
            "--request",
            str(EXAMPLES / f"{tool}.request.json"),
            "--response",
            str(EXAMPLES / f"{tool}.{kind}.response.json"),
            "--sign",
            str(key_file),
            "--receipt",
            str(out),
            *extra,
        ],
    )
    return result.exit_code, result.stdout, out, fingerprint


@pytest.mark.parametrize(
    ("tool", "kind", "code", "kernel", "call"),
    [
        ("weather", "good", 0, "PASS", "PASS"),
        ("weather", "bad", 1, "FAIL", "FAIL"),
        ("search", "good", 0, "NOT_RUN", "SKIPPED"),
        ("search", "bad", 1, "FAIL", "FAIL"),
    ],
)
def test_sign_writes_a_receipt_that_verifies(
    tmp_path: Path, tool: str, kind: str, code: int, kernel: str, call: str
) -> None:
    """--sign/--receipt write a receipt `receipt verify` accepts: the fold and the call verdict."""
    exit_code, output, out, fingerprint = _signed(tmp_path, tool, kind, "--json")
    assert exit_code == code, output
    assert json.loads(output)["verdict"] == call  # the record is printed as before
    checked = runner.invoke(app, ["receipt", "verify", str(out), "--key", fingerprint])
    assert checked.exit_code == 0, checked.output
    assert f"verdict:       {kernel}" in checked.output
    assert f"  verdict: {call}" in checked.output  # the policy decision, beside the fold
    assert "evidence-integrity" in checked.output
    predicate = json.loads(base64.b64decode(json.loads(out.read_text())["payload"]))["predicate"]
    assert predicate["verdict"] == kernel
    assert predicate["policyDecision"]["verdict"] == call
    assert predicate["criteriaDigest"].startswith("sha256:")
    rows = [c["name"] for c in predicate["checks"]]
    assert rows[0] == "evidence-integrity" and "schema" in rows


def test_an_unverified_call_is_never_signed_as_pass(tmp_path: Path) -> None:
    """No policy: the record says UNVERIFIED, and neither the CLI nor the receipt says PASS."""
    key_file, fingerprint = _key(tmp_path)
    out = tmp_path / "receipt.json"
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(EXAMPLES / "weather.contract.json"),
            "--request",
            str(EXAMPLES / "weather.request.json"),
            "--response",
            str(EXAMPLES / "weather.good.response.json"),
            "--sign",
            str(key_file),
            "--receipt",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "verdict   UNVERIFIED" in result.output
    assert "PASS" not in result.output
    predicate = json.loads(base64.b64decode(json.loads(out.read_text())["payload"]))["predicate"]
    assert predicate["verdict"] != "PASS"
    assert predicate["policyDecision"]["verdict"] == "UNVERIFIED"
    checked = runner.invoke(app, ["receipt", "verify", str(out), "--key", fingerprint])
    assert checked.exit_code == 0, checked.output
    assert "verdict:       PASS" not in checked.output
    assert "  verdict: UNVERIFIED" in checked.output


def test_a_tampered_call_receipt_fails(tmp_path: Path) -> None:
    """Edit the signed payload or the recorded decision: `receipt verify` exits 1."""
    exit_code, output, out, fingerprint = _signed(tmp_path, "weather", "good")
    assert exit_code == 0, output
    envelope = json.loads(out.read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["policyDecision"]["payment"] = "refund"
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    envelope["payload"] = base64.b64encode(payload).decode()
    out.write_text(json.dumps(envelope))
    checked = runner.invoke(app, ["receipt", "verify", str(out), "--key", fingerprint])
    assert checked.exit_code == 1, checked.output
    assert "RECEIPT_SIGNATURE_INVALID" in checked.output


def test_a_receipt_under_another_key_fails(tmp_path: Path) -> None:
    """Pinned to another fingerprint, the genuine receipt is refused."""
    _, _, out, _ = _signed(tmp_path, "weather", "bad")
    _, other = _key(tmp_path / "other")
    checked = runner.invoke(app, ["receipt", "verify", str(out), "--key", other])
    assert checked.exit_code == 1
    assert "RECEIPT_KEY_MISMATCH" in checked.output


def test_sign_without_receipt_is_bad_input(tmp_path: Path) -> None:
    """--sign alone is refused with a code before anything is verified or written."""
    exit_code, output = _verify("weather", "good", "--sign", str(tmp_path / "k.key"), "--json")
    assert exit_code == 2
    assert json.loads(output)["error"]["code"] == "SIGN_NEEDS_RECEIPT"


def test_a_pass_with_a_declared_digest_cannot_be_signed(tmp_path: Path) -> None:
    """A declared digest covers bytes the command does not hold: no proof, so exit 2 and a code."""
    key_file, _ = _key(tmp_path)
    envelope = json.loads((EXAMPLES / "weather.good.response.json").read_text())
    envelope["digest"] = "sha256:" + "1" * 64
    (tmp_path / "response.json").write_text(json.dumps(envelope))
    out = tmp_path / "receipt.json"
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(EXAMPLES / "weather.contract.json"),
            "--policy",
            str(EXAMPLES / "weather.policy.json"),
            "--request",
            str(EXAMPLES / "weather.request.json"),
            "--response",
            str(tmp_path / "response.json"),
            "--sign",
            str(key_file),
            "--receipt",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["error"]["code"] == "INTEGRITY_PROOF_REQUIRED"
    assert not out.exists()


def test_an_error_call_cannot_be_signed(tmp_path: Path) -> None:
    """A request error has no response to determine: exit 2 with CALL_NO_RESPONSE."""
    key_file, _ = _key(tmp_path)
    (tmp_path / "response.json").write_text(
        json.dumps({"status": "request_error", "error": {"code": "HTTP_503"}})
    )
    result = runner.invoke(
        app,
        [
            "call",
            "verify",
            "--contract",
            str(EXAMPLES / "weather.contract.json"),
            "--policy",
            str(EXAMPLES / "weather.policy.json"),
            "--request",
            str(EXAMPLES / "weather.request.json"),
            "--response",
            str(tmp_path / "response.json"),
            "--sign",
            str(key_file),
            "--receipt",
            str(tmp_path / "receipt.json"),
        ],
    )
    assert result.exit_code == 2
    assert "CALL_NO_RESPONSE: " in result.output
    assert not (tmp_path / "receipt.json").exists()
