"""The agent-review worker: a verifier's own process, a client of the service.

It needs no database: it holds the verifier's API key (to lease work and post verdicts) and the
verifier's private key (to sign them). Each poll:

1. leases up to ``batch`` submissions waiting for this verifier (``POST /reviews/claim``), each
   with the brief, the acceptance note, the result and the lease's token; the claim carries an
   Idempotency-Key, sent again with the claim when its answer is lost (by the client, and by
   the next poll when no answer came at all), so the jobs it leased are answered, not left
   leased and unseen; a resend answers only the leases still in force (one that ran out
   meanwhile may be another worker's now), and when none is the poll claims anew under a new
   key;
2. asks the judge about each;
3. on an answer, finds each excerpt the model quoted in the brief and the result as the job
   holds them, keeps only those found word for word (with their offsets and hashes: the quotes
   that ground the verdict), signs the verdict payload with the verifier's key (the key the task
   trusts; see :mod:`adjudge.market.signed_verdicts`) and posts it (``POST /tasks/{id}/verdict``)
   with an Idempotency-Key per submission, so every rule, the ledger and the receipt apply; a
   verdict that lost a race is refused (409) and skipped. A verdict left with no quote from the
   brief or none from the result still goes, and the service sends it to the poster to decide;
4. on a model failure (no answer, or answers that disagree), or a verdict the service refuses
   as sent, or anything else that goes wrong with one job, posts nothing and reports it
   (``POST /reviews/{id}/{attempt}/failed``, naming the job's lease): the lease ends for a
   later poll, and the other jobs of the batch are judged all the same; after 5 failures the
   service gives the submission up (the work counts as delivered but never judged, and the
   poster's reclaim escalates it). A report whose lease another worker's claim has taken since
   (this worker stalled past it) is refused and changes nothing; the job is skipped. A report
   no answer came for (the service unreachable past the client's retries) is kept with its
   Idempotency-Key and sent again at the start of each poll, before the claim, until an answer
   comes (counted once however often it is sent), 5 sends at most: then the lease is left to
   run out, and a later claim takes the job again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from adjudge.client import ApiError, Client, ServiceUnavailable
from adjudge.errors import Error
from adjudge.kernel.oracle import Record
from adjudge.kernel.semantic import Quote
from adjudge.market.signed_verdicts import sign_verdict, verdict_payload
from adjudge.receipts import Signer
from adjudge.workers.judges import Judge

#: The most times a failure report is sent when no answer comes (each send the client's, with
#: its own retries): once, then again at the start of each poll under the same key, until an
#: answer comes; then it is dropped and its lease left to run out, the job claimed again then.
REPORT_SENDS = 5
#: The most failure reports a worker keeps waiting for an answer (the oldest dropped past it).
MAX_UNANSWERED_REPORTS = 100


@dataclass
class PollReport:
    """What one poll did, by task id (``why`` holds the reason for each failure or skip;
    ``unreported``: a failure report no answer came for, sent again by the next poll)."""

    judged: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unreported: list[str] = field(default_factory=list)
    why: dict[str, str] = field(default_factory=dict)


@dataclass
class _Report:
    """A failure report, kept with its Idempotency-Key until an answer comes for it."""

    task_id: str
    attempt: int
    error: str
    lease_token: str
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    sends: int = 0


def grounded_quotes(
    excerpts: tuple[tuple[str, str], ...], brief: str, result: str
) -> list[dict[str, Any]]:
    """The model's excerpts found word for word in the brief or the result, as quotes with
    their code-point offsets and hashes; an excerpt that is not there is dropped."""
    texts = {"brief": brief, "result": result}
    quotes = []
    for artifact, excerpt in excerpts:
        at = texts[artifact].find(excerpt)
        if at >= 0:
            quotes.append(Quote.of(artifact, texts[artifact], at, at + len(excerpt)).to_dict())
    return quotes


class ReviewWorker:
    """Judges the submissions waiting for one verifier and signs each verdict as it."""

    def __init__(
        self,
        client: Client,
        judge: Judge,
        signer: Signer,
        *,
        lease_seconds: int = 300,
        batch: int = 10,
    ) -> None:
        self.client = client
        self.judge = judge
        self.signer = signer
        self.lease_seconds = lease_seconds
        self.batch = batch
        #: The Idempotency-Key of a claim no answer came for, which the next poll sends again.
        self.unanswered: str | None = None
        #: The failure reports no answer came for, by key, which each poll sends again first.
        self.unreported: dict[str, _Report] = {}

    def poll(self) -> PollReport:
        """Claim, judge and record one batch; see the module's steps."""
        report = PollReport()
        for waiting in list(self.unreported.values()):  # (4): their leases end before the claim
            if not self._report(waiting, report):
                break  # the service is unreachable: the others wait for the next poll as they are
        try:
            resent = self.unanswered
            jobs = self._claim(resent)
            if resent is not None and not jobs:
                # The leases of the claim no answer came for lapsed before this resend (their
                # jobs may be another worker's now): a claim of its own, under a new key.
                jobs = self._claim(None)
        except ServiceUnavailable as exc:  # it may have leased jobs: ask for them again
            self.unanswered = exc.idempotency_key
            raise
        self.unanswered = None
        for job in jobs:  # (1)
            task_id = str(job["task_id"])
            if job.get("verifier_key") != self.signer.keyid:
                report.skipped.append(task_id)
                trusted = job.get("verifier_key")
                report.why[task_id] = f"the task trusts key {trusted}, not {self.signer.keyid}"
                self._failed(job, report, "the worker does not hold the key this task trusts")
                continue
            try:  # (2)
                judgment = self.judge.judge(job["brief"], job["result"], job["acceptance"])
                quotes = grounded_quotes(judgment.quotes, job["brief"], job["result"])
                self._record(job, judgment.passed, list(judgment.reasons), quotes, report)  # (3)
            except Error as exc:  # (4): the model's failure, or the service's refusal as sent
                report.why[task_id] = exc.message
                self._failed(job, report, exc.message)
            except Exception as exc:  # a job this worker cannot judge never stops the others
                report.why[task_id] = f"{type(exc).__name__}: {exc}"[:500]
                self._failed(job, report, report.why[task_id])
        return report

    def _claim(self, key: str | None) -> list[dict[str, Any]]:
        return self.client.claim_reviews(
            limit=self.batch, lease_seconds=self.lease_seconds, idempotency_key=key
        )

    def _record(
        self,
        job: dict[str, Any],
        passed: bool,
        reasons: list[str],
        quotes: list[dict[str, Any]],
        report: PollReport,
    ) -> None:
        task_id = str(job["task_id"])
        payload = verdict_payload(
            task_id=task_id,
            attempt=int(job["attempt"]),
            result_digest=str(job["result_digest"]),
            brief_digest=Record(str(job["brief"]).encode("utf-8"), "brief").digest,
            passed=passed,
            reasons=reasons,
            quotes=quotes,
            verifier_key=self.signer.keyid,
        )
        signed = sign_verdict(self.signer, payload)
        try:
            self.client.verdict(
                task_id,
                passed=passed,
                reasons=reasons,
                quotes=quotes,
                signature=signed["signature"],
                public_key=signed["public_key"],
                idempotency_key=f"review:{task_id}:{job['attempt']}",
            )
            report.judged.append(task_id)
        except ApiError as exc:
            if exc.status != 409:  # refused as sent: a failure, counted toward giving up
                raise
            report.skipped.append(task_id)  # judged, escalated or ruled meanwhile
            report.why[task_id] = f"{exc.code}: {exc.message}"

    def _failed(self, job: dict[str, Any], report: PollReport, error: str) -> None:
        sent = _Report(str(job["task_id"]), int(job["attempt"]), error, str(job["lease_token"]))
        self._report(sent, report)

    def _report(self, sent: _Report, report: PollReport) -> bool:
        """Send a failure report under its key; kept to be sent again with the same key by the
        next poll while no answer comes, :data:`REPORT_SENDS` times at most (it counts once
        however often it is sent). False when no answer came."""
        task_id = sent.task_id
        sent.sends += 1
        try:
            answer = self.client.review_failed(
                task_id,
                sent.attempt,
                sent.error,
                lease_token=sent.lease_token,
                idempotency_key=sent.key,
            )
        except ApiError as exc:
            self.unreported.pop(sent.key, None)
            report.skipped.append(task_id)
            report.why[task_id] = f"{exc.code}: {exc.message}"
            return True
        except ServiceUnavailable as exc:
            if sent.sends >= REPORT_SENDS:
                self.unreported.pop(sent.key, None)
                report.skipped.append(task_id)
                report.why[task_id] = (
                    f"no answer to its failure report after {sent.sends} sends; its lease is "
                    f"left to run out ({exc.message})"
                )
                return False
            self.unreported[sent.key] = sent
            while len(self.unreported) > MAX_UNANSWERED_REPORTS:
                self.unreported.pop(next(iter(self.unreported)))
            report.unreported.append(task_id)
            report.why[task_id] = f"failure report unanswered, sent again next poll: {exc.message}"
            return False
        self.unreported.pop(sent.key, None)
        if answer.get("gave_up"):
            report.gave_up.append(task_id)
        elif task_id not in report.skipped:
            report.failed.append(task_id)
        return True
