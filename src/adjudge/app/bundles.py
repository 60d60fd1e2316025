"""Replay bundles: a verdict's signed receipt and every input it was derived from, for a party.

A bundle holds what the service judged — a task's stored result and criteria, a call's request,
response, contract, policy and judgments — so it is for the parties and admins only: a task's
poster, agent and named verifier, a call's caller and provider. The answer is plain JSON; the
CLI zips it (:func:`adjudge.replay.from_answer`) and anyone replays the zip offline.

Refusals: ``TASK_NOT_FOUND`` / ``CALL_NOT_FOUND``; ``NOT_A_PARTY``; ``BUNDLE_WITHHELD`` for a
task whose criteria hold an ``expected_answer`` when the caller is neither its poster nor an
admin (agents never see it, and a bundle without it could not replay the verdict);
and to the caller of a forwarded call whose answer was withheld from it (refunded: not paid
for; its provider and admins may read the bundle); ``BUNDLE_NOT_AVAILABLE`` for a verdict there
is nothing to replay of: a task no auto check has judged, a call that ended in an error (no
determination), a forwarded call verified before the answers' bytes were kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adjudge.app.unit import UnitOfWork
from adjudge.app.views import is_party
from adjudge.app.wiring import call_subject
from adjudge.calls import parse_tool
from adjudge.errors import NotAllowed, NotFound, StateError
from adjudge.market.proof import round_of
from adjudge.market.seal import disclosed, judged_criteria
from adjudge.receipts import VerifyingKey
from adjudge.replay import engine
from adjudge.store import Account, StoredTask, Transaction, meaning_queue, receipt_log, records
from adjudge.store import calls as calls_db
from adjudge.store import gateway as gateway_db


def _votes(tx: Transaction, stored: StoredTask, attempt: int) -> dict[str, Any]:
    """A panel's decision's inputs: the brief its votes quote, and the panel with each vote
    as signed (``BUNDLE_NOT_AVAILABLE`` for a vote kept without its signature)."""
    t = stored.task
    cast = records.votes(tx, t.id, attempt)
    if any(vote.signed is None for vote in cast):
        raise StateError(
            "A vote of this decision was kept without its signature: it cannot be re-run.",
            code="BUNDLE_NOT_AVAILABLE",
        )
    return {
        "brief": stored.brief,
        "votes": {
            "task_id": t.id,
            "attempt": attempt,
            "quorum": t.quorum,
            "panel": [{"verifier": s.verifier, "key": s.key} for s in t.panel],
            "votes": [
                {
                    "verifier": vote.verifier,
                    "key": vote.key,
                    "passed": vote.passed,
                    "signed": dict(vote.signed or {}),
                }
                for vote in cast
            ],
        },
    }


class Bundles:
    """Read use cases: the parts of a task's or a call's replay bundle."""

    def __init__(self, unit: UnitOfWork, public_key: VerifyingKey | None) -> None:
        self.unit = unit
        #: The key receipts are signed with (None: an issuer that signs nothing).
        self.public_key = public_key

    def task(self, viewer: Account, task_id: str, *, attempt: int | None = None) -> dict[str, Any]:
        """The bundle of a task's auto-check verdict: the latest, or round ``attempt``'s."""
        key = self._key()

        def run(tx: Transaction) -> dict[str, Any]:
            stored = records.task(tx, task_id)
            if stored is None:
                raise NotFound(f"No task {task_id}.", code="TASK_NOT_FOUND")
            if not is_party(stored, viewer):
                raise NotAllowed(
                    "A task's bundle holds its result: it is for the task's parties and admins.",
                    code="NOT_A_PARTY",
                )
            t = stored.task
            criteria = dict(judged_criteria(t))
            sees_all = viewer.id == t.poster or "admin" in viewer.roles
            # A sealed task's answer is for everyone who may read the task once no further
            # submission can be judged against it; anyone else's answer stays hidden.
            opened = t.seal is not None and disclosed(t, self.unit.now())
            if "expected_answer" in criteria and not (sees_all or opened):
                raise NotAllowed(
                    "This task's criteria hold an expected_answer, which only its poster and "
                    "admins may read, and a bundle without it could not replay the verdict: ask "
                    "the poster for the bundle.",
                    code="BUNDLE_WITHHELD",
                )
            # An auto check's verdicts, and a panel's decisions (its votes are re-run).
            replayable = ("deterministic", "verifier") if t.panel else ("deterministic",)
            judged = [
                v
                for v in records.verdicts(tx, task_id)
                if v.authority in replayable
                and v.kind in ("verdict", "routed")
                and attempt in (None, v.attempt)
            ]
            if not judged:
                which = "" if attempt is None else f" in round {attempt}"
                raise StateError(
                    f"No auto check has judged task {task_id}{which}: only an auto check's "
                    "verdict can be replayed.",
                    code="BUNDLE_NOT_AVAILABLE",
                )
            verdict = judged[-1]
            sub = records.submission(tx, task_id, verdict.attempt)
            receipt = receipt_log.receipt(tx, verdict.receipt_id)
            if sub is None or receipt is None:
                raise StateError(
                    "The verdict's records are incomplete.", code="BUNDLE_NOT_AVAILABLE"
                )
            answer = {
                "kind": "task",
                "subject": round_of(task_id, verdict.attempt),
                "receipt": _receipt(receipt),
                "key": key,
                "engine": engine(),
                "result": sub.result,
                "criteria": criteria,
                "criteria_salt": t.criteria_salt,
                "reveal": None if t.reveal is None else dict(t.reveal),
                "verification_result": dict(verdict.detail) or None,
            }
            if verdict.authority == "verifier":
                answer.update(_votes(tx, stored, verdict.attempt), verification_result=None)
            return answer

        return self.unit.read(run)

    def call(self, viewer: Account, call_id: str) -> dict[str, Any]:
        """The bundle of a paid call's verification (a reported call, or a forwarded one)."""
        key = self._key()

        def run(tx: Transaction) -> dict[str, Any]:
            found = calls_db.call(tx, call_id)
            if found is None:
                raise NotFound(f"No call {call_id}.", code="CALL_NOT_FOUND")
            if viewer.id not in (found.submitted_by, found.provider) and (
                "admin" not in viewer.roles
            ):
                raise NotAllowed(
                    "A call's bundle holds its response: it is for the call's parties and admins.",
                    code="NOT_A_PARTY",
                )
            # A call judged after its answer is bundled as its superseding receipt says: that
            # receipt, the final record and the judgments it was derived from.
            later = meaning_queue.get(tx, call_id)
            final = None if later is None else later.verification
            receipt_id = found.receipt_id or ""
            if later is not None and final is not None and later.final_receipt_id is not None:
                receipt_id = later.final_receipt_id
            receipt = receipt_log.receipt(tx, receipt_id)
            if receipt is None:
                raise StateError(
                    f"The call {call_id} ended in an error: it has no determination to replay.",
                    code="BUNDLE_NOT_AVAILABLE",
                )
            evidence = dict(found.evidence or {})
            governing = found.record.get("policy")
            policy = None
            if isinstance(governing, dict):
                stored = calls_db.policy(tx, found.tool, governing["policy"], governing["version"])
                policy = None if stored is None else dict(stored.document)
            parts: dict[str, Any] = {
                "kind": "call",
                "subject": call_subject(call_id),
                "receipt": _receipt(receipt),
                "key": key,
                "engine": engine(),
                "source": found.source,
                "at": found.record["at"],
                "policy": policy,
                "judgment": evidence.get("judgment"),
                "judgments": evidence.get("judgments") if final is None else final["judgments"],
                "corroboration": evidence.get("corroboration"),
                "record": dict(found.record if final is None else final["record"]),
            }
            judged = parts["record"].get("policy")
            if isinstance(judged, dict) and judged.get("registered_by") is not None:
                # An enforcing policy not the provider's own acted as shadow: the replay reads
                # who registered it, as the verification did.
                parts["policy_registered_by"] = judged["registered_by"]
            if found.source == "gateway":
                parts["caller"] = found.submitted_by  # whose money the receipt moves
                if final is not None and final.get("payment") == "none":
                    parts["payment"] = "none"  # its judgment moved none: the charge was back
                parts.update(_forwarded(tx, viewer, found, evidence))
            else:
                contract = calls_db.contract(tx, found.tool, found.contract_version)
                if contract is None:
                    raise StateError("The call's contract is gone.", code="BUNDLE_NOT_AVAILABLE")
                parts["contract"] = dict(contract.document)
                parts["request"] = dict(found.request)
                parts["response"] = dict(found.response)
            return parts

        return self.unit.read(run)

    def _key(self) -> dict[str, str]:
        if self.public_key is None:
            raise StateError("This service signs no receipts.", code="BUNDLE_NOT_AVAILABLE")
        return {"keyid": self.public_key.keyid, "publicKey": self.public_key.to_base64()}


def _receipt(found: receipt_log.StoredReceipt) -> dict[str, Any]:
    envelope = found.body.get("envelope")
    if not isinstance(envelope, dict):
        raise StateError("This verdict's receipt is not signed.", code="BUNDLE_NOT_AVAILABLE")
    return {"id": found.id, "digest": found.digest, "envelope": envelope}


def _forwarded(
    tx: Transaction, viewer: Account, found: calls_db.StoredCall, evidence: dict[str, Any]
) -> dict[str, Any]:
    """A forwarded call's request as the gateway built it, its tool's contract, and the bytes
    its provider answered (``BUNDLE_WITHHELD`` to a caller who was not shown them)."""
    forwarded = gateway_db.call(tx, found.id)
    tool = None if forwarded is None else gateway_db.tool(tx, found.tool, forwarded.tool_version)
    if forwarded is None or tool is None:
        raise StateError("The forwarded call's records are gone.", code="BUNDLE_NOT_AVAILABLE")
    body = evidence.get("response_bytes")
    if not isinstance(body, str):
        raise StateError(
            f"The bytes the provider answered call {found.id} with are not kept (it was verified "
            "before answers were kept): it cannot be replayed.",
            code="BUNDLE_NOT_AVAILABLE",
        )
    if evidence.get("shown") is False and viewer.id == found.submitted_by:
        raise NotAllowed(
            "This call's answer was withheld from its caller (it was not paid for), and its "
            "bundle holds it: the bundle is for the provider and admins.",
            code="BUNDLE_WITHHELD",
        )
    return {
        "contract": dict(parse_tool(tool.document).contract_document),
        "request": {
            "call_id": found.id,
            "provider": forwarded.provider,
            "tool": found.tool,
            "arguments": dict(found.request.get("arguments") or {}),
            "price": {"amount_minor": forwarded.price_minor, "currency": forwarded.currency},
            "at": forwarded.started_at.isoformat(),
            **_seeded(found.request),
        },
        "response_bytes": body,
    }


def _seeded(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request's sampling seed, when its call was recorded with one (a replay draws the
    meaning check's sampling from it as the gateway did)."""
    seed = request.get("sample_seed")
    return {"sample_seed": seed} if isinstance(seed, str) else {}
