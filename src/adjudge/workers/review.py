"""The agent-review queue worker.

Each poll:

1. claims up to ``batch`` submissions awaiting a verifier (a lease, so no other worker takes
   them meanwhile);
2. asks the judge about each, with the task's brief, the stored result and the acceptance note;
3. on an answer, signs the verdict payload with the verifier's own private key (the key its
   account registered; see :mod:`adjudge.service.signed_verdicts`) and records the verdict as
   the task's named verifier through the market (so the signature check, every rule and the
   receipt apply, and a verdict that lost a race is simply refused);
4. on a model failure, posts nothing and releases the submission for a later poll; after
   :data:`MAX_TRIES` failures the worker gives up and the work counts as delivered but never
   judged (the poster's reclaim after the deadline escalates it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from adjudge.errors import Error
from adjudge.receipts import Signer
from adjudge.service.marketplace import Idempotency, Marketplace
from adjudge.service.signed_verdicts import sign_verdict, verdict_payload
from adjudge.store import ConcurrentUpdate, StoredTask, Transaction
from adjudge.workers.judges import Judge, JudgeError

#: "After 5 failed attempts it stops."
MAX_TRIES = 5


@dataclass
class PollReport:
    """What one poll did, by task id."""

    judged: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _status(_: Transaction, stored: StoredTask, __: Any) -> str:
    return stored.task.status.value


class ReviewWorker:
    """Judges results awaiting the verifiers it serves and signs each verdict as its verifier.

    ``keys`` are the verifiers' private keys; the worker only claims work for verifiers whose
    registered key it holds (of ``verifiers`` if given, else of all opted-in verifiers).
    """

    def __init__(
        self,
        market: Marketplace,
        judge: Judge,
        *,
        keys: Iterable[Signer] = (),
        verifiers: Sequence[str] | None = None,
        lease: timedelta = timedelta(minutes=5),
        batch: int = 10,
    ) -> None:
        self.market = market
        self.judge = judge
        self.keys = {key.keyid: key for key in keys}
        self.verifiers = list(verifiers) if verifiers is not None else None
        self.lease = lease
        self.batch = batch

    def poll(self) -> PollReport:
        """Claim, judge and record one batch; see the module's steps."""
        report = PollReport()
        for stored in self._claim():  # (1)
            task = stored.task
            with self.market.store.read() as tx:
                sub = tx.submission(task.id, task.attempts)
                verifier = tx.account(task.verifier or "")
            signer = self.keys.get(task.verifier_key or "")
            if sub is None or verifier is None or signer is None:
                report.skipped.append(task.id)
                continue
            acceptance = task.criteria.get("acceptance", "")
            try:  # (2)
                judgment = self.judge.judge(
                    stored.brief, sub.result, acceptance if isinstance(acceptance, str) else ""
                )
            except JudgeError as exc:  # (4)
                if self._failed(stored, exc.message):
                    report.gave_up.append(task.id)
                else:
                    report.failed.append(task.id)
                continue
            key = Idempotency.of(f"review:{task.id}:{task.attempts}", "POST", "worker", None)
            payload = verdict_payload(
                task_id=task.id,
                attempt=sub.attempt,
                result_digest=sub.digest,
                passed=judgment.passed,
                reasons=judgment.reasons,
                verifier_key=signer.keyid,
            )
            try:  # (3)
                self.market.verifier_verdict(
                    verifier,
                    task.id,
                    passed=judgment.passed,
                    reasons=judgment.reasons,
                    **sign_verdict(signer, payload),
                    idem=key,
                    render=_status,
                )
                report.judged.append(task.id)
            except Error:
                report.skipped.append(task.id)  # judged, escalated or ruled meanwhile
        return report

    def _served(self) -> list[str]:
        """The verifiers this worker judges for: those whose registered key it holds."""
        with self.market.store.read() as tx:
            if self.verifiers is None:
                accounts = tx.verifiers()
            else:
                accounts = [a for a in map(tx.account, self.verifiers) if a is not None]
        return [a.id for a in accounts if a.verifier_key in self.keys]

    def _claim(self) -> list[StoredTask]:
        served = self._served()
        if not served:
            return []
        for _ in range(8):
            try:
                with self.market.store.write() as tx:
                    return tx.claim_reviews(
                        served,
                        now=self.market.clock.now(),
                        lease=self.lease,
                        limit=self.batch,
                    )
            except ConcurrentUpdate:
                continue
        return []

    def _failed(self, stored: StoredTask, error: str) -> bool:
        with self.market.store.write() as tx:
            return tx.review_failed(
                stored.task.id,
                stored.task.attempts,
                error=error,
                now=self.market.clock.now(),
                max_tries=MAX_TRIES,
            )
