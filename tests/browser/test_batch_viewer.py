"""The batch viewer in Chromium: the page `check-batch --html` writes, opened from disk, and the
UI's #/batch page with two runs' files, each showing the figures Python computes from the same
JSONL, with a record of markup shown as text and never run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adjudge.cli import app
from support.browser import Browser

pytestmark = pytest.mark.browser
runner = CliRunner()
EVIL = "</script><script>alert(1)</script> the escrow and the refund <img src=x onerror=alert(2)>"
TEXTS = {
    "good": "The escrow holds the reward until the verdict; a fail leads to a refund.",
    "half": "The escrow holds the reward until the verdict is known.",
    "hedge": "Maybe the escrow holds it, and maybe a refund follows the verdict.",
    "evil": EVIL,
    "short": "Too short.",
}
LOOSE = {"min_length": 20, "contains_keywords": ["escrow", "refund"]}
STRICT = {**LOOSE, "forbidden_phrases": ["maybe", "alert("]}


def _run(
    tmp_path: Path, name: str, criteria: dict[str, Any], html: bool = False
) -> tuple[Path, Path]:
    """Write a cases file checked against `criteria`, run check-batch on it: (cases, verdicts)."""
    cases, out = tmp_path / f"{name}-cases.jsonl", tmp_path / f"{name}-verdicts.jsonl"
    lines = [{"id": k, "result": v, "criteria": criteria} for k, v in TEXTS.items()]
    cases.write_text("".join(json.dumps(x) + "\n" for x in lines))
    extra = ["--html", str(tmp_path / f"{name}.html")] if html else []
    res = runner.invoke(
        app, ["check-batch", str(cases), "--out", str(out), "--workers", "1", *extra]
    )
    assert res.exit_code == 0, res.output
    return cases, out


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({math.floor(1000 * part / whole + 0.5) / 10:.1f}%)"


def _rates(out: Path) -> tuple[str, dict[str, str]]:
    """The overall pass share and each rule's share of records scored 100%, from the JSONL."""
    verdicts = [json.loads(x) for x in out.read_text().splitlines()]
    rules: dict[str, list[int]] = {}
    for v in verdicts:
        for item in v["breakdown"]:
            seen = rules.setdefault(item["name"], [0, 0])
            seen[0] += item["score"] >= 1
            seen[1] += 1
    overall = _share(sum(v["passed"] for v in verdicts), len(verdicts))
    return overall, {name: _share(p, n) for name, (p, n) in rules.items()}


def _check_rates(b: Browser, section: Any, out: Path) -> None:
    overall, rules = _rates(out)
    assert section.locator(".batch-overall").inner_text().startswith(f"Passed {overall}")
    shown = {
        row.get_attribute("data-rule"): row.locator("td.rate").inner_text()
        for row in section.locator("tr[data-rule]").all()
    }
    assert shown == rules


def _no_markup_ran(b: Browser, dialogs: list[str]) -> None:
    """The evil record is on the page as its text, and nothing in it ran or became an element."""
    card = b.page.locator('.batch-record[data-key="id evil"]').first
    assert EVIL in card.locator("pre").inner_text()
    assert b.page.locator("main img").count() == 0
    assert dialogs == []


def test_the_html_page_shows_a_run_offline(browser: Browser, tmp_path: Path) -> None:
    """The --html page opened from disk shows the pass rates Python computes and the failing
    records with their keywords marked; a record of markup is shown as text."""
    b, page = browser, browser.page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    _, out = _run(tmp_path, "strict", STRICT, html=True)
    page.goto((tmp_path / "strict.html").as_uri())
    section = page.locator(".batch-rates")
    section.wait_for()
    _check_rates(b, section, out)
    assert page.locator("script").count() == 2
    failed = {
        json.loads(x)["id"] for x in out.read_text().splitlines() if not json.loads(x)["passed"]
    }
    keys = {
        k.removeprefix("id ")
        for k in page.locator(".batch-record").evaluate_all("els => els.map(e => e.dataset.key)")
    }
    assert keys == failed and "evil" in failed
    marks = page.locator('.batch-record[data-key="id hedge"] mark.forbidden').all_inner_texts()
    assert [m.lower() for m in marks] == ["maybe", "maybe"]
    _no_markup_ran(b, dialogs)
    assert not b.axe(), "the --html page has a serious or critical accessibility violation"
    b.shot("batch-viewer-file")


def test_the_ui_page_compares_two_runs(browser: Browser, tmp_path: Path) -> None:
    """#/batch reads two runs' files in the browser: each run's pass rates, and the records
    that changed verdict between them, as Python computes them from the JSONL; an axe-core scan
    finds nothing serious or critical."""
    b, page = browser, browser.page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    cases_a, out_a = _run(tmp_path, "loose", LOOSE)
    cases_b, out_b = _run(tmp_path, "strict", STRICT)
    b.open("batch")
    page.set_input_files("#batch-run-a", [str(out_a), str(cases_a)])
    page.locator(".batch-rates").first.wait_for()
    page.set_input_files("#batch-run-b", [str(out_b), str(cases_b)])
    page.locator(".batch-diff").wait_for()
    sections = page.locator(".batch-rates")
    assert sections.count() == 2
    _check_rates(b, sections.nth(0), out_a)
    _check_rates(b, sections.nth(1), out_b)
    before = {json.loads(x)["id"]: json.loads(x) for x in out_a.read_text().splitlines()}
    after = {json.loads(x)["id"]: json.loads(x) for x in out_b.read_text().splitlines()}
    changed = {k for k in before if before[k]["passed"] != after[k]["passed"]}
    assert changed == {"hedge", "evil"}
    rows = page.locator("table.batch-changes tbody tr")
    assert {r.get_attribute("data-key") for r in rows.all()} == {f"id {k}" for k in changed}
    hedge = page.locator('table.batch-changes tr[data-key="id hedge"] td')
    assert hedge.nth(1).locator(".batch-verdict").inner_text() == f"PASS {before['hedge']['score']}"
    assert hedge.nth(2).locator(".batch-verdict").inner_text() == f"FAIL {after['hedge']['score']}"
    assert hedge.nth(2).locator("li").all_inner_texts() == after["hedge"]["reasons"]
    summary = page.locator(".batch-diff-summary").inner_text()
    assert summary.startswith(
        f"{len(changed)} of {len(before)} records in both runs changed verdict "
        "(0 now pass, 2 now fail)"
    )
    page.get_by_label("Search records").last.fill("alert(1)")
    page.locator(".batch-count").last.filter(has_text="1 of 5 records").wait_for()
    _no_markup_ran(b, dialogs)
    found = b.axe()
    assert not found, f"#/batch: {found}"
    b.shot("batch-viewer-diff")


#: A text where a browser's case-insensitive search and the check's folding part ways: "ΟΔΟΣ"
#: lowercases to "οδος" (a final sigma), so the check does not find the keyword "οδοσ" a search
#: would; "ﬁnal" is "final" to the check (NFKC), not to a search; "café" folds to "cafe".
FOLDED = "On the ΟΔΟΣ the escrow is held; the ﬁnal word at the café is a refund of the reward."
FOLDING = {
    "min_length": 20,
    "contains_keywords": ["escrow", "οδοσ"],
    "forbidden_phrases": ["final", "cafe"],
}


def test_the_viewer_marks_the_checks_own_matches(browser: Browser, tmp_path: Path) -> None:
    """check-batch writes the spans of the check's matches and the viewer marks exactly those:
    "ﬁnal" and "café" as the forbidden "final" and "cafe", "escrow" as a keyword, and not
    "ΟΔΟΣ", which a case-insensitive search would take for "οδοσ" but the check does not (it is
    listed as not found). A line without spans is shown with no marks, saying why."""
    b, page = browser, browser.page
    cases, out = tmp_path / "fold-cases.jsonl", tmp_path / "fold-verdicts.jsonl"
    cases.write_text(json.dumps({"id": "fold", "result": FOLDED, "criteria": FOLDING}) + "\n")
    command = ["check-batch", str(cases), "--out", str(out), "--workers", "1"]
    res = runner.invoke(app, [*command, "--html", str(tmp_path / "fold.html")])
    assert res.exit_code == 0, res.output
    verdict = json.loads(out.read_text())
    units = FOLDED.encode("utf-16-le")
    found = [
        (units[2 * s["start"] : 2 * s["end"]].decode("utf-16-le"), s["kind"])
        for s in verdict["spans"]
    ]
    assert found == [("escrow", "keyword"), ("ﬁnal", "forbidden"), ("café", "forbidden")]

    page.goto((tmp_path / "fold.html").as_uri())
    card = page.locator('.batch-record[data-key="id fold"]')
    card.wait_for()
    assert card.locator("mark.forbidden").all_inner_texts() == ["ﬁnal", "café"]
    assert card.locator("mark.keyword").all_inner_texts() == ["escrow"]
    assert card.locator(".batch-missing").inner_text() == "Keywords not found: οδοσ"
    assert not b.axe(), "the --html page has a serious or critical accessibility violation"
    b.shot("batch-viewer-spans")

    old = tmp_path / "old-verdicts.jsonl"
    old.write_text(json.dumps({k: v for k, v in verdict.items() if k != "spans"}) + "\n")
    b.open("batch")
    page.set_input_files("#batch-run-a", [str(old), str(cases)])
    card = page.locator('.batch-record[data-key="id fold"]')
    card.wait_for()
    assert card.locator("mark").count() == 0
    assert "Nothing is marked" in card.locator(".batch-unmarked").inner_text()
    assert FOLDED in card.locator("pre").inner_text()
