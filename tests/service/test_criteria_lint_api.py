"""`POST /api/v1/criteria/lint`: any account's advice on criteria, before anything is posted."""

from __future__ import annotations

import pytest

from adjudge.app.criteria import CriteriaAdvice
from adjudge.client import BadRequest, Client
from adjudge.errors import Error
from support.harness import Harness
from support.live import serving

GAMEABLE = {"min_length": 20, "contains_keywords": ["escrow", "refund", "deadline"]}


@pytest.mark.parametrize("who", ["pat", "bob", "vic", "root"])
def test_any_account_gets_findings_and_the_margin(h: Harness, who: str) -> None:
    """Posters, agents, verifiers and admins alike: the same answer as the use case."""
    answer = h.ok(who, "POST", "/criteria/lint", {"criteria": GAMEABLE})
    assert answer == CriteriaAdvice().lint(GAMEABLE)
    assert [f["code"] for f in answer["findings"]] == ["KEYWORDS_ECHO_PASSES"]
    assert answer["margin"] == {
        "result": "escrow refund deadline",
        "score": 100,
        "length": 22,
        "how": "the keywords alone",
    }
    assert answer["advice_only"] is True


def test_the_brief_is_read_for_what_an_agent_could_copy(h: Harness) -> None:
    """A rubric item whose keywords are in the brief is a finding only when the brief is sent."""
    crit = {
        "required_fields": ["summary"],
        "rubric": [{"criterion": "depth", "keywords": ["hash"]}],
    }
    brief = "Explain how a hash chain makes a log tamper-evident."
    without = h.ok("pat", "POST", "/criteria/lint", {"criteria": crit})
    with_brief = h.ok("pat", "POST", "/criteria/lint", {"criteria": crit, "brief": brief})
    assert "RUBRIC_KEYWORDS_IN_BRIEF" not in [f["code"] for f in without["findings"]]
    assert "RUBRIC_KEYWORDS_IN_BRIEF" in [f["code"] for f in with_brief["findings"]]


def test_no_margin_is_null_with_its_sentence(h: Harness) -> None:
    """When no cheap result passes, the margin is null and the summary says so."""
    answer = h.ok("pat", "POST", "/criteria/lint", {"criteria": {"regex_pattern": "^INV-\\d{4}$"}})
    assert answer["margin"] is None and answer["findings"] == []
    assert answer["summary"].startswith("No cheap result passes")


def test_lint_changes_nothing(h: Harness) -> None:
    """Advice only: no task is posted, no money moves, no receipt is written."""
    before = h.ledger(), h.ok("root", "GET", "/receipts/head")
    h.ok("pat", "POST", "/criteria/lint", {"criteria": GAMEABLE})
    assert (h.ledger(), h.ok("root", "GET", "/receipts/head")) == before
    assert h.ok("pat", "GET", "/tasks")["tasks"] == []


def test_refusals_have_stable_codes(h: Harness) -> None:
    """No key is 401; criteria that do not parse are 400 with the parser's code; a body of the
    wrong shape is 422; a brief over the post route's bound is 422 too."""
    assert h.refused(None, "POST", "/criteria/lint", {"criteria": GAMEABLE}) == (
        401,
        "UNAUTHORIZED",
    )
    body = {"criteria": {"min_length": "10"}}
    assert h.refused("pat", "POST", "/criteria/lint", body) == (400, "CRITERIA_INVALID")
    body = {"criteria": {"contains_keywords": ["x"] * 51}}
    assert h.refused("pat", "POST", "/criteria/lint", body) == (400, "CRITERIA_OVER_LIMIT")
    assert h.refused("pat", "POST", "/criteria/lint", {"criteria": [1]}) == (422, "INVALID_REQUEST")
    assert h.refused("pat", "POST", "/criteria/lint", {}) == (422, "INVALID_REQUEST")
    long_brief = {"criteria": GAMEABLE, "brief": "x" * 100_001}
    assert h.refused("pat", "POST", "/criteria/lint", long_brief) == (422, "INVALID_REQUEST")


def test_the_body_is_capped_before_it_is_read(h: Harness) -> None:
    """The edge's 4 MiB cap applies, as on every route."""
    r = h.client.post(
        "/api/v1/criteria/lint",
        content=b'{"criteria": {}, "brief": "' + b"x" * (4 * 1024 * 1024) + b'"}',
        headers={"Authorization": f"Bearer {h.keys['pat']}", "Content-Type": "application/json"},
    )
    assert r.status_code == 413 and r.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_the_use_case_refuses_what_the_wire_cannot_send() -> None:
    """Called directly (the CLI does), it refuses non-objects, oversized criteria and briefs."""
    advice = CriteriaAdvice()
    for bad, code in [
        ([1, 2], "CRITERIA_INVALID"),
        ({"acceptance": "x" * 4001}, "CRITERIA_OVER_LIMIT"),
        ({"note": "x" * 300_000}, "CRITERIA_OVER_LIMIT"),
    ]:
        with pytest.raises(Error) as refused:
            advice.lint(bad)
        assert refused.value.code == code
    with pytest.raises(Error) as long_brief:
        advice.lint({}, brief="x" * 100_001)
    assert long_brief.value.code == "INVALID_BRIEF"


def test_the_python_client_asks_the_same(h: Harness) -> None:
    """`Client.lint_criteria` gets the route's answer; a refusal is its ApiError with the code."""
    with serving(h.app) as url, Client(url, key=h.keys["pat"]) as api:
        assert api.lint_criteria(GAMEABLE) == CriteriaAdvice().lint(GAMEABLE, brief="")
        with pytest.raises(BadRequest) as refused:
            api.lint_criteria({"min_length": "10"})
        assert refused.value.code == "CRITERIA_INVALID"


def test_an_accounts_lints_are_bounded_an_hour(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lint can cost a second of CPU: past the hourly quota an account is told when to come
    back (429, Retry-After), another account is not slowed, and the next hour starts afresh."""
    monkeypatch.setattr("adjudge.app.criteria.LINT_QUOTA", 3)
    for _ in range(3):
        h.ok("pat", "POST", "/criteria/lint", {"criteria": GAMEABLE})
    r = h.call("pat", "POST", "/criteria/lint", {"criteria": GAMEABLE})
    assert r.status_code == 429 and r.json()["error"]["code"] == "LINT_QUOTA_EXCEEDED"
    assert 1 <= int(r.headers["retry-after"]) <= 3601
    h.ok("bob", "POST", "/criteria/lint", {"criteria": GAMEABLE})
    h.advance(hours=1)
    h.ok("pat", "POST", "/criteria/lint", {"criteria": GAMEABLE})
