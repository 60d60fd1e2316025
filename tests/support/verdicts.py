"""Judging events for the pure market, built as the service builds them: a verifier's verdict
signed with its key and grounded in the brief and the stored result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adjudge.kernel import semantic
from adjudge.kernel.oracle import Record
from adjudge.kernel.semantic import Quote
from adjudge.market import Task, VerifierVerdict
from adjudge.market.signed_verdicts import check_signature, sign_verdict, verdict_payload
from adjudge.receipts import SigningKey

#: The verifier's key in market tests (a task trusts it when posted with its fingerprint).
VERIFIER_KEY = SigningKey.from_seed(bytes(range(1, 33)))
BRIEF = "Write a result long enough to judge."


def verifier_verdict(
    task: Task,
    passed: bool,
    reasons: Sequence[str] = (),
    *,
    stored: str,
    actor: str = "V",
    key: SigningKey = VERIFIER_KEY,
    brief: str = BRIEF,
    quotes: list[dict[str, Any]] | None = None,
) -> VerifierVerdict:
    """``actor``'s verdict on the task's latest submission (whose stored copy is ``stored``),
    signed with ``key`` and grounded by a quote from the brief and one from the result (unless
    ``quotes`` says otherwise)."""
    brief_record = Record(brief.encode("utf-8"), "brief")
    result_record = Record(stored.encode("utf-8"))
    if quotes is None:
        quotes = [
            Quote.of("brief", brief, 0, min(len(brief), 12)).to_dict(),
            Quote.of("result", stored, 0, min(len(stored), 12)).to_dict(),
        ]
    payload = verdict_payload(
        task_id=task.id,
        attempt=task.attempts,
        result_digest=task.result_digest or "",
        brief_digest=brief_record.digest,
        passed=passed,
        reasons=reasons,
        quotes=quotes,
        verifier_key=key.keyid,
    )
    body = sign_verdict(key, payload)
    signed = check_signature(payload, body["signature"], body["public_key"])
    review = semantic.Review.from_dict(
        {
            "verifierKey": key.keyid,
            "passed": passed,
            "briefDigest": brief_record.digest,
            "resultDigest": task.result_digest,
            "quotes": quotes,
            "reasons": list(reasons),
        }
    )
    grounding = semantic.ground_review(review, brief=brief_record, result=result_record)
    return VerifierVerdict(
        actor, passed, tuple(reasons), grounding, signed=signed, stored_result=stored
    )
