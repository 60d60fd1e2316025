"""The web UI walked in Chromium as people use it: a task through its life in each mode, a
failed round and a resubmission, a dispute and a ruling, a refused post with its error on the
page, a receipt downloaded and verified with the CLI, the receipt log, and `/docs` offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adjudge.cli import app
from support.browser import Browser

pytestmark = pytest.mark.browser
runner = CliRunner()
GOOD = (
    "A hash chain links each record to the digest of the one before it, so editing any record "
    "breaks every link after it."
)


def _post(b: Browser, title: str, reward: str, mode: str, criteria: str = "", **more: str) -> None:
    b.open("post")
    page = b.page
    page.get_by_label("Title").fill(title)
    page.get_by_label("Brief").fill(f"{title}, in plain text.")
    page.get_by_label("Reward (USDC)").fill(reward)
    page.get_by_label("Mode").select_option(mode)
    if criteria:
        page.get_by_label("Criteria (JSON)").fill(criteria)
    if "verifier" in more:
        page.get_by_label("Verifier", exact=True).fill(more["verifier"])
    if "take_window" in more:
        page.get_by_label("Take window").fill(more["take_window"])
    page.get_by_role("button", name="Post and fund").click()


def _task_id(b: Browser) -> str:
    b.page.wait_for_url("**/#/tasks/task_*")
    return b.page.url.rsplit("/", 1)[-1]


def _status(b: Browser, words: str) -> None:
    b.page.locator("dl.facts .status", has_text=words).wait_for()


def _submitted_manual(b: Browser) -> str:
    """A manual task pat posted and ann took and delivered, each in the console; its id."""
    page = b.page
    b.sign_in("pat")
    _post(b, "Summarise the report", "2", "manual")
    tid = _task_id(b)
    b.sign_in("ann")
    b.open(f"tasks/{tid}")
    page.get_by_role("button", name="Take this task").click()
    page.get_by_label("Result").fill("The summary, with every section.")
    page.get_by_role("button", name="Submit a result").click()
    _status(b, "submitted")
    return tid


def test_an_auto_task_fails_a_round_then_pays(browser: Browser) -> None:
    """Posted in USDC with the balance refreshed; the agent dry-runs and submits from one
    draft, fails a round, resubmits, and the auto check pays it."""
    b, page = browser, browser.page
    b.sign_in("pat")
    assert page.locator("#balance").inner_text() == "100 USDC"
    _post(b, "Describe a hash chain", "1.5", "auto", '{"min_length": 60}')
    tid = _task_id(b)
    page.locator("dd", has_text="1.5 USDC").wait_for()
    assert page.locator("#balance").inner_text() == "98.5 USDC"
    _status(b, "funded")
    b.shot("task-posted")

    b.sign_in("ann")
    b.open(f"tasks/{tid}")
    page.get_by_role("button", name="Take this task").click()
    _status(b, "assigned")
    draft = page.get_by_label("Result")
    assert draft.count() == 1  # one textarea for the dry run and the submission
    draft.fill("Too short.")
    page.get_by_role("button", name="Dry run a draft").click()
    page.get_by_text("Dry run: would fail").wait_for()
    b.shot("task-dry-run")
    page.get_by_role("button", name="Submit a result").click()
    _status(b, "submitted")
    page.get_by_role("button", name="Finalize: run the auto check").click()
    _status(b, "failed")
    page.locator(".verdict.fail", has_text="Attempt 1: failed").wait_for()
    page.get_by_text("Output too short").wait_for()
    page.get_by_label("Result").fill(GOOD)
    page.get_by_role("button", name="Submit again").click()
    _status(b, "submitted")
    page.get_by_role("button", name="Finalize: run the auto check").click()
    _status(b, "completed")
    page.get_by_text("(paid on pass)").wait_for()
    assert page.locator("#balance").inner_text() == "101.35 USDC"  # 1.5 less the 10% fee
    b.shot("task-completed")
    assert b.h.ok("pat", "GET", f"/tasks/{tid}")["ending"] == "paid_on_pass"


def test_a_manual_task_is_disputed_and_ruled(browser: Browser) -> None:
    """The poster rejects with a reason, the agent disputes with one, an admin pays the agent."""
    b, page = browser, browser.page
    tid = _submitted_manual(b)

    b.sign_in("pat")
    b.open(f"tasks/{tid}")
    page.get_by_label("Verdict").select_option("fail")
    page.get_by_label("Reasons").fill("The table is missing.")
    page.get_by_role("button", name="Review: approve or reject").click()
    _status(b, "failed")
    page.get_by_text("The table is missing.").wait_for()

    b.sign_in("ann")
    b.open(f"tasks/{tid}")
    page.get_by_label("Why").fill("There is no table to make.")
    page.get_by_role("button", name="Dispute").click()
    _status(b, "disputed")
    page.locator(".dispute", has_text="disputed by ann").wait_for()

    b.sign_in("root")
    b.open(f"tasks/{tid}")
    page.locator(".dispute", has_text="There is no table to make.").wait_for()
    b.shot("task-disputed")
    page.get_by_label("Ruling").select_option("agent")
    page.get_by_label("Note").fill("The brief asked for no table.")
    page.get_by_role("button", name="Rule as admin").click()
    _status(b, "completed")
    page.get_by_text("(paid by ruling)").wait_for()
    page.locator(".verdict.pass", has_text="Ruling on attempt 1: passed").wait_for()


def test_an_agent_task_is_judged_by_its_verifier(browser: Browser, tmp_path: Path) -> None:
    """The verifier sees the command that signs its verdict (its key stays out of the
    browser); the verdict posted with it pays the agent, and the page shows it."""
    b, page = browser, browser.page
    b.sign_in("pat")
    _post(b, "Review the plan", "1", "agent", verifier="vera")
    tid = _task_id(b)
    page.get_by_text("agent, verifier vera").wait_for()
    b.sign_in("ann")
    b.open(f"tasks/{tid}")
    page.get_by_role("button", name="Take this task").click()
    page.get_by_label("Result").fill("Five risks, each with the line of the plan it comes from.")
    page.get_by_role("button", name="Submit a result").click()
    _status(b, "awaiting verification")

    b.sign_in("vera")
    b.open(f"tasks/{tid}")
    shown = page.get_by_label("Verdict command").inner_text()
    assert shown == (
        f"adjudge task verdict {tid} --verifier-key KEY.pem "
        "--quote-brief BRIEF_EXCERPT --quote-result RESULT_EXCERPT"
    )
    pem = tmp_path / "vera.pem"
    pem.write_bytes(b.h.signers["vera"].to_pem())
    pem.chmod(0o600)
    filled = {
        "KEY.pem": str(pem),
        "BRIEF_EXCERPT": "Review the plan",
        "RESULT_EXCERPT": "Five risks",
    }
    args = ["task", "--url", b.url, "--key", b.h.keys["vera"], *shown.split()[2:]]
    done = runner.invoke(app, [filled.get(a, a) for a in args])
    assert done.exit_code == 0, done.output
    page.reload()
    _status(b, "completed")
    page.locator(".verdict.pass", has_text="verifier (vera)").wait_for()


def test_a_refused_post_shows_its_error(browser: Browser) -> None:
    """A misspelled criteria field is refused with its code on the page; an amount with more
    decimals than USDC has is refused before sending; nothing is funded."""
    b, page = browser, browser.page
    b.sign_in("pat")
    _post(b, "Typo", "1", "auto", '{"min_lenght": 10}')
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert alert.inner_text().startswith("CRITERIA_UNKNOWN_FIELD:")
    assert "Did you mean `min_length`?" in alert.inner_text()
    b.shot("post-refused")
    page.get_by_label("Reward (USDC)").fill("1.0000001")
    page.get_by_role("button", name="Post and fund").click()
    page.get_by_role("alert").filter(has_text="USDC has 6 decimals").wait_for()
    page.get_by_label("Criteria (JSON)").fill("{not json")
    page.get_by_label("Reward (USDC)").fill("1")
    page.get_by_role("button", name="Post and fund").click()
    page.get_by_role("alert").filter(has_text="Criteria are not JSON").wait_for()
    assert page.locator("#balance").inner_text() == "100 USDC"
    assert b.h.ok("pat", "GET", "/tasks")["tasks"] == []


def test_an_extra_key_is_offered_nothing_it_would_be_refused(browser: Browser) -> None:
    """Signed in with one of pat's extra keys (a budget for calls), the console says it does
    not post or fund tasks, and offers no review of a manual task's result, which sends the
    escrow on pat's word; pat's own key is offered both."""
    b, page = browser, browser.page
    tid = _submitted_manual(b)
    extra = b.h.ok("pat", "POST", "/accounts/me/api-keys", {"label": "bot"})
    page.fill("#key", extra["api_key"])
    page.click("text=Use key")
    page.locator("#who strong", has_text="pat").wait_for()
    b.open(f"tasks/{tid}")
    _status(b, "submitted")
    page.get_by_role("button", name="Dispute").wait_for()
    assert page.get_by_role("button", name="Review: approve or reject").count() == 0
    b.open("post")
    page.get_by_text("Only the account's own key posts and funds tasks").wait_for()
    assert page.get_by_role("button", name="Post and fund").count() == 0
    b.sign_in("pat")
    b.open(f"tasks/{tid}")
    page.get_by_role("button", name="Review: approve or reject").wait_for()


def test_a_review_from_a_page_read_before_a_resubmission_judges_nothing(
    browser: Browser,
) -> None:
    """The poster's page shows attempt 1; meanwhile (another tab) attempt 1 is rejected and the
    agent submits again. The old page's approval names the submission it showed, so it is
    refused, said on the page, and nothing is paid: before, it completed the task on attempt 2,
    which nobody had read."""
    b, h = browser, browser.h
    page = b.page
    tid = h.post("manual", deadline_hours=72)
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    b.sign_in("pat")
    b.open(f"tasks/{tid}")
    page.locator("pre.text", has_text=GOOD).wait_for()
    h.ok("pat", "POST", f"/tasks/{tid}/review", {"passed": False, "reasons": ["too short"]})
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Never shown to the poster."})
    before = h.balance("wallet:ann")
    page.get_by_label("Verdict").select_option("pass")
    page.get_by_role("button", name="Review: approve or reject").click()
    page.get_by_role("alert").filter(has_text="SUBMISSION_CHANGED").wait_for()
    assert h.ok("pat", "GET", f"/tasks/{tid}")["status"] == "submitted"
    assert h.balance("wallet:ann") == before
    b.open(f"tasks/{tid}")  # read afresh: the review is of attempt 2
    page.get_by_label("Verdict").select_option("fail")
    page.get_by_label("Reasons").fill("Still too short.")
    page.get_by_role("button", name="Review: approve or reject").click()
    _status(b, "failed")


def test_the_post_form_checks_criteria_before_funding(browser: Browser) -> None:
    """*Check these criteria* shows the lint's findings and the gaming margin under the form;
    nothing is posted or funded, and the form still posts afterwards."""
    b, page = browser, browser.page
    b.sign_in("pat")
    b.open("post")
    page.get_by_label("Title").fill("Explain escrow")
    page.get_by_label("Brief").fill("Explain how escrow works.")
    page.get_by_label("Reward (USDC)").fill("1")
    page.get_by_label("Mode").select_option("auto")
    criteria = '{"min_length": 20, "contains_keywords": ["escrow", "refund", "deadline"]}'
    page.get_by_label("Criteria (JSON)").fill(criteria)
    page.get_by_role("button", name="Check these criteria").click()
    advice = page.get_by_label("Criteria advice")
    advice.locator("code.finding-code", has_text="KEYWORDS_ECHO_PASSES").wait_for()
    assert advice.locator("h3").inner_text() == "1 finding"
    assert page.get_by_label("Cheapest passing result").inner_text() == "escrow refund deadline"
    assert "22-character result" in advice.locator(".margin-summary").inner_text()
    assert "null" not in advice.inner_text()
    b.shot("post-criteria-checked")
    assert page.locator("#balance").inner_text() == "100 USDC"
    assert b.h.ok("pat", "GET", "/tasks")["tasks"] == []
    page.get_by_label("Criteria (JSON)").fill("{not json")
    page.get_by_role("button", name="Check these criteria").click()
    advice.get_by_role("alert").filter(has_text="Criteria are not JSON").wait_for()
    page.get_by_label("Criteria (JSON)").fill(criteria)
    page.get_by_role("button", name="Post and fund").click()
    _task_id(b)
    assert page.locator("#balance").inner_text() == "99 USDC"


def test_a_post_with_a_take_window_shows_when_the_take_lapses(browser: Browser) -> None:
    """The post form takes a take window (a fraction is refused on the page, before sending);
    the task page shows it, when the agent's take lapses, and, once it has, the lapse, with
    the task open again for another agent."""
    b, page = browser, browser.page
    b.sign_in("pat")
    _post(b, "Translate the page", "1", "manual", take_window="1.5")
    page.get_by_role("alert").filter(has_text="whole hours from 1 to 2160").wait_for()
    page.get_by_label("Take window").fill("6")
    page.get_by_role("button", name="Post and fund").click()
    tid = _task_id(b)
    page.locator("dd", has_text="6 hours to submit after taking").wait_for()

    b.sign_in("ann")
    b.open(f"tasks/{tid}")
    page.get_by_role("button", name="Take this task").click()
    _status(b, "assigned")
    lapses = b.h.ok("ann", "GET", f"/tasks/{tid}")["take_lapses_at"]
    when = lapses[:16].replace("T", " ") + " UTC"
    page.locator("dd", has_text=f"the current take lapses at {when}").wait_for()
    b.shot("task-take-window")

    b.h.advance(hours=6)
    b.sign_in("bob")
    b.open(f"tasks/{tid}")
    _status(b, "funded")
    page.locator(".lapses li", has_text=f"the take lapsed at {when}").wait_for()
    page.get_by_role("button", name="Take this task").click()
    _status(b, "assigned")
    assert b.h.ok("pat", "GET", f"/tasks/{tid}")["agent"] == "bob"


def test_a_receipt_is_readable_downloadable_and_verifies(browser: Browser, tmp_path: Path) -> None:
    """The receipt page reads the verdict, who decided under which trust, each check, the
    subject digest and the chain position; its envelope downloads with the key (no 401) and
    the command shown beside it verifies it; the log page pages and exports for verify-chain."""
    b, page = browser, browser.page
    h = b.h
    tid = h.post("auto", criteria={"min_length": 10})
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": GOOD})
    h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    task = h.ok("pat", "GET", f"/tasks/{tid}")
    rid = task["verdicts"][0]["receipt_id"]
    b.sign_in("pat")
    b.open(f"tasks/{tid}")
    page.locator(".verdict a.receipt-link").click()
    page.locator(".banner .big", has_text="PASS").wait_for()
    facts = page.locator("dl.facts").first.inner_text()
    assert "auto-check (deterministic)" in facts
    assert "deterministic, human" in facts
    assert task["result_digest"] in facts
    assert "sequence 0" in facts and "first on the log" in facts
    rows = page.locator("table.checks tbody tr")
    assert rows.count() == 2
    assert "evidence-integrity" in rows.nth(0).inner_text()
    assert page.locator(".as-of").inner_text().startswith("As of ")
    b.shot("receipt")
    fingerprint = b.signing_key.keyid
    assert page.locator("code.fingerprint").inner_text() == fingerprint
    shown = page.get_by_label("Verify command").inner_text()
    assert shown == f"adjudge receipt verify {rid}.json --key {fingerprint}"
    with page.expect_download() as got:
        page.get_by_role("button", name=f"Download the envelope ({rid}.json)").click()
    saved = tmp_path / f"{rid}.json"
    got.value.save_as(saved)
    assert json.loads(saved.read_text())["signatures"][0]["keyid"] == fingerprint
    checked = runner.invoke(app, ["receipt", "verify", str(saved), "--key", fingerprint])
    assert (
        checked.exit_code == 0
        and f"VALID receipt {h.ok('pat', 'GET', f'/receipts/{rid}')['digest']}" in checked.stdout
    )
    # The replay commands the page shows fetch the bundle and re-run it: the same verdict.
    fetch = page.get_by_label("Bundle command").inner_text().split()
    assert fetch[:3] == ["adjudge", "receipt", "bundle"] and f"--task {tid}" in " ".join(fetch)
    out = ["--out", str(tmp_path / "verdict.zip")]
    made = fetch[3 : fetch.index("--out")] + out + ["--url", b.url, "--key", h.keys["pat"]]
    assert runner.invoke(app, ["receipt", "bundle", *made]).exit_code == 0
    again = page.get_by_label("Replay command").inner_text().split()
    assert again == ["adjudge", "replay", "verdict.zip", "--key", fingerprint]
    replayed = runner.invoke(app, ["replay", str(tmp_path / "verdict.zip"), *again[3:]])
    assert replayed.exit_code == 0 and "SAME" in replayed.stdout

    b.open("receipts")
    page.get_by_text("The log's pages are for admins").wait_for()
    b.sign_in("root")
    b.open("receipts")
    page.locator("table.log tbody tr").first.wait_for()
    assert page.locator("table.log tbody tr").first.inner_text().startswith("0")
    b.shot("receipt-log")
    with page.expect_download() as got:
        page.get_by_role("button", name="Download the whole log (receipts.jsonl)").click()
    log = tmp_path / "receipts.jsonl"
    got.value.save_as(log)
    command = page.get_by_label("Verify chain command").inner_text().split()
    assert command[:4] == ["adjudge", "receipt", "verify-chain", "receipts.jsonl"]
    checked = runner.invoke(app, ["receipt", "verify-chain", str(log), *command[4:]])
    assert checked.exit_code == 0, checked.output
    assert "VALID log: 1 receipt," in checked.stdout


def test_docs_render_offline(browser: Browser) -> None:
    """`/docs` renders every operation from local assets, under its policy, with no request
    leaving the machine (the fixture fails the test on either)."""
    b, page = browser, browser.page
    page.goto(f"{b.url}/docs")
    page.locator(".opblock").first.wait_for()
    assert page.locator(".opblock").count() > 20
    page.get_by_text("/api/v1/tasks/{task_id}/finalize").first.wait_for()
    b.shot("docs")
    assert not b.violations
    # The watcher itself works: an inline script the policy does not name is refused, and said.
    page.evaluate(
        "() => { const s = document.createElement('script');"
        " s.textContent = 'window.ran = 1'; document.body.append(s); }"
    )
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.ran") is None
    assert any("Content Security Policy" in v for v in b.violations)
    b.violations.clear()


def test_a_sealed_answer_is_committed_in_the_page_and_revealed(
    browser: Browser, tmp_path: Path
) -> None:
    """The post form seals the answer in the page (only the commitment is sent; the reveal
    downloads), every reader sees the commitment, and the poster reveals the kept file once the
    agent finalized: the check runs and pays; a doctored reveal escalates the next task."""
    from adjudge.market import seal  # noqa: PLC0415

    b, page = browser, browser.page
    h = b.h
    b.sign_in("pat")
    b.open("post")
    page.get_by_label("Title").fill("Name the capital of Australia")
    page.get_by_label("Reward (USDC)").fill("1")
    page.get_by_label("Mode").select_option("auto")
    page.get_by_label("Criteria (JSON)").fill('{"max_length": 200}')
    page.get_by_label("Sealed answer").fill("Canberra")
    with page.expect_download() as got:
        page.get_by_role("button", name="Post and fund").click()
    tid = _task_id(b)
    saved = tmp_path / "reveal.json"
    got.value.save_as(saved)
    reveal = json.loads(saved.read_text())
    assert reveal["criteria"] == {"expected_answer": "Canberra"} and len(reveal["salt"]) >= 40
    stored = h.ok("pat", "GET", f"/tasks/{tid}")
    assert stored["seal"]["commitment"] == seal.parse_reveal(reveal).digest
    assert "Canberra" not in json.dumps(stored["criteria"])

    b.sign_in("ann")
    b.open(f"tasks/{tid}")
    assert page.get_by_label("Commitment").inner_text() == stored["seal"]["commitment"]
    page.get_by_role("button", name="Take this task").click()
    _status(b, "assigned")
    page.get_by_label("Result").fill("The capital of Australia is Canberra.")
    page.get_by_role("button", name="Submit a result").click()
    _status(b, "submitted")
    page.get_by_role("button", name="Finalize: run the auto check").click()
    _status(b, "awaiting verification")
    page.locator("dd", has_text="the poster must reveal by").wait_for()

    b.sign_in("pat")
    b.open(f"tasks/{tid}")
    page.get_by_label("Reveal file").set_input_files(str(saved))
    page.get_by_role("button", name="Reveal the sealed answer").click()
    _status(b, "completed")
    page.get_by_text("(paid on pass)").wait_for()
    b.shot("task-sealed-revealed")

    # A doctored reveal: refused with its code on the page, and the task escalates.
    other = h.post(
        "auto",
        criteria={"max_length": 200},
        seal=seal.commit({"expected_answer": "Canberra"}, "s" * 32),
    )
    h.ok("ann", "POST", f"/tasks/{other}/accept")
    h.ok("ann", "POST", f"/tasks/{other}/submissions", {"result": "Canberra is the capital."})
    h.ok("ann", "POST", f"/tasks/{other}/finalize")
    b.open(f"tasks/{other}")
    _status(b, "awaiting verification")
    page.get_by_label("Reveal to send").fill(
        json.dumps({"criteria": {"expected_answer": "Sydney"}, "salt": "s" * 32})
    )
    page.get_by_role("button", name="Reveal the sealed answer").click()
    page.get_by_role("alert").filter(has_text="SEAL_MISMATCH").wait_for()
    assert h.ok("pat", "GET", f"/tasks/{other}")["status"] == "escalated"
