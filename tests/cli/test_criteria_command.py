"""`adjudge criteria lint`: findings and the gaming margin offline, with its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adjudge.app.criteria import CriteriaAdvice
from adjudge.cli import app

runner = CliRunner()
GAMEABLE = {"min_length": 20, "contains_keywords": ["escrow", "refund", "deadline"]}


def _file(tmp_path: Path, value: object, name: str = "criteria.json") -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return str(path)


def test_findings_print_with_the_margin_and_exit_1(tmp_path: Path) -> None:
    """Each finding shows its code and field; the margin shows its result; exit 1."""
    done = runner.invoke(app, ["criteria", "lint", _file(tmp_path, GAMEABLE)])
    assert done.exit_code == 1, done.output
    assert "1 finding" in done.output
    assert "KEYWORDS_ECHO_PASSES contains_keywords" in done.output
    assert "Gaming margin" in done.output and "│ escrow refund deadline" in done.output
    assert "Advice only" in done.output


def test_no_findings_exit_0_and_the_margin_still_shows(tmp_path: Path) -> None:
    """A margin alone is not a finding: exit 0."""
    done = runner.invoke(
        app, ["criteria", "lint", _file(tmp_path, {"required_fields": ["summary"]})]
    )
    assert done.exit_code == 0, done.output
    assert "no findings" in done.output and "│ ## summary" in done.output


@pytest.mark.parametrize("where", ["after", "before"])
def test_json_is_the_use_cases_answer(tmp_path: Path, where: str) -> None:
    """`--json` (after the command or before the group) prints what the API answers."""
    path = _file(tmp_path, GAMEABLE)
    args = (
        ["criteria", "lint", path, "--json"]
        if where == "after"
        else ["--json", "criteria", "lint", path]
    )
    done = runner.invoke(app, args)
    assert done.exit_code == 1, done.output
    assert json.loads(done.stdout) == CriteriaAdvice().lint(GAMEABLE)


def test_standard_input_and_a_brief(tmp_path: Path) -> None:
    """`-` reads the criteria from standard input; `--brief` lets the lint see what an agent
    could copy."""
    crit = {
        "required_fields": ["summary"],
        "rubric": [{"criterion": "depth", "keywords": ["hash"]}],
    }
    brief = _file(tmp_path, "Explain how a hash chain works.", "brief.md")
    done = runner.invoke(
        app, ["criteria", "lint", "-", "--brief", brief, "--json"], input=json.dumps(crit)
    )
    codes = [f["code"] for f in json.loads(done.stdout)["findings"]]
    assert "RUBRIC_KEYWORDS_IN_BRIEF" in codes and done.exit_code == 1


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("{not json", "INVALID_JSON"),
        ('{"min_length": "10"}', "CRITERIA_INVALID"),
        ("[1, 2]", "CRITERIA_INVALID"),
        (json.dumps({"contains_keywords": ["x"] * 51}), "CRITERIA_OVER_LIMIT"),
    ],
)
def test_a_bad_file_exits_2_with_its_code(tmp_path: Path, content: str, code: str) -> None:
    """Unusable criteria are refused with a stable code, never linted."""
    done = runner.invoke(app, ["criteria", "lint", _file(tmp_path, content)])
    assert done.exit_code == 2
    assert f"error {code}:" in done.output


def test_missing_files_exit_2(tmp_path: Path) -> None:
    """A criteria file or brief that cannot be read exits 2."""
    done = runner.invoke(app, ["criteria", "lint", str(tmp_path / "none.json")])
    assert done.exit_code == 2 and "FILE_UNREADABLE" in done.output
    path = _file(tmp_path, GAMEABLE)
    done = runner.invoke(app, ["criteria", "lint", path, "--brief", str(tmp_path / "none.md")])
    assert done.exit_code == 2 and "FILE_UNREADABLE" in done.output
