"""The agent-review queue: a verifier leases the submissions waiting for it, and reports failures.

A verifier's worker (``adjudge worker``, a client of the service) claims work through these use
cases with the verifier's own API key, so it needs no database access: it gets each claimed
submission's brief, acceptance note and result, judges it, and posts a signed verdict through
:meth:`adjudge.app.tasks.Tasks.verdict` like any verifier. A lease keeps other workers off a
submission for its duration; after :data:`MAX_TRIES` failed judgments the submission is given up
(delivered, never judged: the poster's reclaim after the deadline escalates it). Each verifier of
a panel leases a submission for itself, until it has voted on it, with the key its seat names.

Each lease is named by a token the claim hands out with its job. A failure report names it and
is counted only while that lease is in force (the last a claim took on the submission for the
verifier, until a report ends it): a worker that stalled past its lease, the submission claimed
again by another worker since, is refused (``LEASE_NOT_HELD``) and changes nothing. A verdict
needs no lease (:meth:`adjudge.app.tasks.Tasks.verdict`): it is the verifier's own signed
decision, which it may post without any claim; one verdict per submission whatever races, and
the worker's Idempotency-Key per submission, keep a stale worker's from counting twice.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from adjudge.app.accounts import need_role
from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.errors import BadInput, NotAllowed, NotFound, StateError
from adjudge.store import Account, Transaction, leases, records

#: "After 5 failed attempts it stops."
MAX_TRIES = 5
#: How long a claim keeps other workers off a submission, by default and at most.
LEASE = timedelta(minutes=5)
MAX_LEASE = timedelta(hours=1)
#: The most submissions one claim takes.
MAX_BATCH = 50


class Reviews:
    """The review-queue use cases, for verifiers."""

    def __init__(self, unit: UnitOfWork) -> None:
        self.unit = unit

    def claim(
        self,
        verifier: Account,
        *,
        limit: int = 10,
        lease: timedelta = LEASE,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Lease up to ``limit`` submissions waiting for ``verifier``: ``jobs``, each with what
        judging it needs: the task, the attempt and its digest, the brief, the acceptance note,
        the result and the verifier key the task trusts, and the lease's token and end.

        The write takes the leases only; the jobs' texts are read after it commits. A job holds
        up to 100,000 characters of brief, 200,000 of result and the criteria, a claim up to
        :data:`MAX_BATCH` jobs, and a lease may end a second later, to be claimed again: read
        inside the write, a claim of 50 such jobs held the thread that commits every account's
        writes for 35-216 ms (now 6-14 ms). What is read after never changes: a submission,
        the brief, the criteria and the keys fixed at posting.

        A claim sent again with its Idempotency-Key (its answer was lost) is answered with the
        same leases and leases nothing more: the key stores the leases (task, attempt, token,
        end), never the texts, which are read again. Only the leases still in force are
        answered as jobs: one whose time ran out, that a report ended, or whose submission no
        longer awaits the verifier (its verdict is in) is named under ``lapsed``
        (its task and attempt, no token) and never answered as a job, which another worker
        may be judging now; once every lease lapsed the answer holds no job, and a claim
        under a new key takes what waits. A claim that
        leased nothing stores no answer (an idle worker polls every few seconds; each would be
        kept 30 days for nothing): sent again, it is decided anew.
        """
        need_role(verifier, "verifier")
        if not 1 <= limit <= MAX_BATCH:
            raise BadInput(f"A claim takes 1 to {MAX_BATCH} submissions.", code="INVALID_REQUEST")
        if not timedelta(seconds=1) <= lease <= MAX_LEASE:
            raise BadInput("A lease lasts 1 second to 1 hour.", code="INVALID_REQUEST")
        inputs = {"limit": limit, "lease_us": lease // timedelta(microseconds=1)}
        idem = Idempotency.of(key, "reviews.claim", inputs)

        def run(tx: Transaction) -> list[dict[str, Any]]:
            now = self.unit.now()
            until = (now + lease).isoformat()
            taken = leases.claim(tx, verifier.id, now=now, lease=lease, limit=limit)
            return [
                {
                    "task_id": stored.task.id,
                    "attempt": stored.task.attempts,
                    "lease_token": token,
                    "leased_until": until,
                }
                for stored, token in taken
            ]

        leased = self.unit.once(verifier.id, idem, run, kept=bool)
        if not leased.value:
            return Answer({"jobs": []}, leased.replayed)
        now = self.unit.now()

        def read(tx: Transaction) -> dict[str, Any]:
            held_now, lapsed = leased.value, []
            if leased.replayed:
                held_now = [h for h in leased.value if _in_force(tx, verifier.id, h, now)]
                lapsed = [
                    {"task_id": h["task_id"], "attempt": h["attempt"]}
                    for h in leased.value
                    if h not in held_now
                ]
            jobs = []
            for held in held_now:
                stored = records.task(tx, held["task_id"])
                sub = records.submission(tx, held["task_id"], held["attempt"])
                if stored is None or sub is None:
                    continue
                t = stored.task
                seat = next((s for s in t.panel if s.verifier == verifier.id), None)
                acceptance = t.criteria.get("acceptance", "")
                jobs.append(
                    {
                        "task_id": t.id,
                        "attempt": sub.attempt,
                        "result_digest": sub.digest,
                        "verifier_key": seat.key if seat is not None else t.verifier_key,
                        "brief": stored.brief,
                        "acceptance": acceptance if isinstance(acceptance, str) else "",
                        "result": sub.result,
                        "lease_token": held["lease_token"],
                        "leased_until": held["leased_until"],
                    }
                )
            return {"jobs": jobs, "lapsed": lapsed} if lapsed else {"jobs": jobs}

        return Answer(self.unit.read(read), leased.replayed)

    def failed(
        self,
        verifier: Account,
        task_id: str,
        attempt: int,
        error: str,
        *,
        lease_token: str | None,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Record a failed judgment of a leased submission by the worker holding the lease
        ``lease_token`` names; the lease ends so a later claim can try again, until
        :data:`MAX_TRIES` failures give it up. A report sent again with its Idempotency-Key
        (its answer was lost) is answered as it was and counts once.

        Refused, changing nothing: without a token (``LEASE_TOKEN_REQUIRED``: a client from
        before lease tokens); once the submission no longer awaits this verifier
        (``REVIEW_NOT_AWAITED``: its verdict or vote is in, whatever lease it holds, so a
        verifier cannot vote and then count a failure too, nor one after the task moved on);
        and with a token that is not the lease in force (``LEASE_NOT_HELD``: the lease ran out
        and another claim took the submission, or a report ended it)."""
        need_role(verifier, "verifier")
        if lease_token is None:
            raise BadInput(
                "A failure report names the lease it ends: send the lease_token of the claimed "
                "job (a client that sends none predates lease tokens; upgrade it).",
                code="LEASE_TOKEN_REQUIRED",
            )
        inputs = {"task": task_id, "attempt": attempt, "error": error, "lease": lease_token}
        idem = Idempotency.of(key, "reviews.failed", inputs)

        def run(tx: Transaction) -> dict[str, Any]:
            stored = records.task(tx, task_id)
            if stored is None:
                raise NotFound(f"No task {task_id}.", code="TASK_NOT_FOUND")
            if verifier.id not in stored.task.verifiers:
                raise NotAllowed(
                    "Only the task's named verifier (or a verifier of its panel) reports on "
                    "its review.",
                    code="NOT_TASK_VERIFIER",
                )
            gave_up = leases.failed(
                tx,
                task_id,
                attempt,
                verifier.id,
                token=lease_token,
                error=error,
                now=self.unit.now(),
                max_tries=MAX_TRIES,
            )
            row = leases.lease(tx, task_id, attempt, verifier.id)
            if row is None:
                raise StateError("That submission was never claimed.", code="NOT_CLAIMED")
            if gave_up is None and not leases.awaits(tx, task_id, attempt, verifier.id):
                raise StateError(
                    "That submission no longer awaits your judgment: your verdict (or your "
                    "panel vote) on it is in, or the task moved on (decided, ruled on, "
                    "submitted again) or your worker gave it up. Nothing was counted; a "
                    "judged job is not reported failed.",
                    code="REVIEW_NOT_AWAITED",
                )
            if gave_up is None:
                raise StateError(
                    "That lease is no longer in force: it ran out and another claim took the "
                    "submission, or a report ended it already. Nothing was counted; leave the "
                    "job to the worker holding it now.",
                    code="LEASE_NOT_HELD",
                )
            return {
                "task_id": task_id,
                "attempt": attempt,
                "gave_up": gave_up,
                "lease": _lease(row),
            }

        return self.unit.once(verifier.id, idem, run)


def _in_force(tx: Transaction, verifier: str, held: dict[str, Any], now: datetime) -> bool:
    """Whether a lease a claim's stored answer names is still the one in force on a job still
    to judge: its end still ahead, its token still the lease row's (no report ended it), and
    the submission still awaiting the verifier (no verdict or vote of its is in, the task has
    not moved on)."""
    if datetime.fromisoformat(held["leased_until"]) <= now:
        return False
    task_id, attempt = held["task_id"], held["attempt"]
    row = leases.lease(tx, task_id, attempt, verifier)
    if row is None or row["token"] != held["lease_token"]:
        return False
    return leases.awaits(tx, task_id, attempt, verifier)


def _lease(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "tries": int(row["tries"]),
        "gave_up": bool(row["gave_up"]),
        "last_error": row["last_error"],
    }
