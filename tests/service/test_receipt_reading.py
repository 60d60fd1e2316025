"""A receipt read now: each check resolved at the time of reading and folded under the
receipt's own trust policy, by the kernel's rules; nothing re-signed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from adjudge.app.receipts import reading

DEADLINE = "2026-01-02T00:00:00Z"


def _statement(*checks: dict[str, Any], keys: list[str] | None = None) -> dict[str, Any]:
    return {
        "predicate": {
            "verdict": "PENDING",
            "trustPolicy": {"authorities": ["deterministic"], "verifierKeys": keys or []},
            "checks": list(checks),
        }
    }


INTEGRITY = {"name": "evidence-integrity", "authority": "deterministic", "verdict": "PASS"}
PENDING = {
    "name": "agent-review",
    "authority": "semantic",
    "verdict": "PENDING",
    "pending": {"deadline": DEADLINE, "expiresTo": "FAIL"},
}


def test_a_pending_check_reads_as_its_expiry_once_its_deadline_passed() -> None:
    """Before the deadline the receipt reads PENDING; from it on, as the expiry verdict."""
    before = reading(_statement(INTEGRITY, PENDING), datetime(2026, 1, 1, tzinfo=UTC))
    after = reading(_statement(INTEGRITY, PENDING), datetime(2026, 1, 2, tzinfo=UTC))
    assert before is not None and after is not None
    assert before["verdict"] == "PENDING" and after["verdict"] == "FAIL"
    assert after["checks"][1] == {
        "name": "agent-review",
        "recorded": "PENDING",
        "now": "FAIL",
        "counts_as": "FAIL",
    }
    assert after["at"] == "2026-01-02T00:00:00Z"


def test_an_untrusted_pass_counts_as_unknown() -> None:
    """A PASS from an authority the policy does not list counts as UNKNOWN; the named
    verifier key's PASS counts."""
    semantic = {"name": "agent-review", "authority": "semantic", "verdict": "PASS"}
    now = datetime(2026, 1, 1, tzinfo=UTC)
    untrusted = reading(_statement(INTEGRITY, semantic), now)
    assert untrusted is not None and untrusted["verdict"] == "UNKNOWN"
    assert untrusted["checks"][1]["counts_as"] == "UNKNOWN"
    key = "ab" * 32
    named = reading(_statement(INTEGRITY, {**semantic, "verifierKey": key}, keys=[key]), now)
    assert named is not None and named["verdict"] == "PASS"


def test_a_statement_it_cannot_read_gives_no_reading() -> None:
    """Unknown verdicts, missing fields and bad times are no reading, never an error."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert reading({}, now) is None
    assert reading(_statement({**INTEGRITY, "verdict": "MAYBE"}), now) is None
    bad_time = {**PENDING, "pending": {"deadline": "soon", "expiresTo": "FAIL"}}
    assert reading(_statement(INTEGRITY, bad_time), now) is None
