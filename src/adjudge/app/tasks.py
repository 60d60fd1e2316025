"""The task use cases: post, take, deliver, judge, dispute, rule, reclaim, collect, cancel.

Each state change runs in one unit of work (:mod:`adjudge.app.unit`): read the task, ask the pure
market for the outcome of the event at the clock's time, and store it through
:mod:`adjudge.app.settlement` — the new state, the verdict's signed receipt and the money it
releases, together. The answer is the task as the caller may see it (:mod:`adjudge.app.views`).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from adjudge.app import outcomes, settlement
from adjudge.app.accounts import need_primary, need_role
from adjudge.app.at_once import AtOnce
from adjudge.app.retries import put_back
from adjudge.app.timing import stage
from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.app.views import rendered, shown, task_summary, task_view
from adjudge.autocheck import criteria as autocriteria
from adjudge.autocheck import jsregex
from adjudge.errors import (
    BadInput,
    CriteriaError,
    Error,
    NotAllowed,
    NotFound,
    RateLimited,
    StateError,
    TransitionError,
    Unavailable,
    VerificationFailed,
)
from adjudge.kernel import semantic
from adjudge.kernel.oracle import Record
from adjudge.market import (
    Accept,
    Cancel,
    Checker,
    CheckOutcome,
    Collect,
    Context,
    Dispute,
    Draft,
    Event,
    Finalize,
    Lapse,
    Mode,
    Outcome,
    Reclaim,
    Release,
    Reveal,
    RevealOverdue,
    Review,
    Rule,
    Seat,
    Status,
    Submit,
    Task,
    VerifierVerdict,
    lapses_at,
    post,
    step,
    take_due,
    wallet_account,
)
from adjudge.market.lifecycle import MAX_RESULT_CHARS
from adjudge.market.seal import (
    admissible_form,
    judged_criteria,
    parse_reveal,
    reveal_due,
)
from adjudge.market.seal import refusal as seal_refusal
from adjudge.market.signed_verdicts import check_signature, verdict_payload
from adjudge.receipts import Issuer
from adjudge.settings import Settings
from adjudge.store import (
    Account,
    StoredTask,
    Submission,
    Transaction,
    hot_rows,
    ids,
    quotas,
    records,
)

log = logging.getLogger("adjudge.takes")

#: Criteria a task is posted with, at most (their canonical JSON, in bytes): well above what
#: spec 000's own limits allow (about 130 KB of text), far below what would burden a reader.
MAX_CRITERIA_BYTES = 256 * 1024
#: Criteria fields an agent never sees, and so a dry run never runs (spec 000: "It's hidden
#: from agents").
HIDDEN_FIELDS = ("expected_answer",)
#: Dry runs an agent may make per task per hour (docs/service.md).
DRY_RUN_QUOTA = 20
DRY_RUN_WINDOW = timedelta(hours=1)
#: Tasks one account may post in :data:`POST_WINDOW` (admins: no bound). Cancelling an open
#: task returns its escrow, so a post and its cancel cost nothing, yet each keeps its brief
#: (up to 100,000 characters), the cancel's signed receipt on the log everyone shares and its
#: ledger lines: without a bound, one account grew the database at will.
POST_QUOTA = 1_000
POST_WINDOW = timedelta(hours=1)
#: The furthest deadline ``deadline_hours`` can name (the market refuses beyond 90 days).
MAX_DEADLINE_HOURS = 24 * 366
#: Due takes one batch of the lapse sweep applies, at most (the next batch takes the rest).
SWEEP_BATCH = 100
#: The longest result a finalize checks inside its write transaction (well under a millisecond
#: of checking): a longer one, or criteria that need the regex worker pool, is checked before
#: the write, holding no lock (:meth:`Tasks.finalize`).
QUICK_CHECK_CHARS = 8192
#: How often a reveal or a finalize is prepared again when its task changed between the read
#: its screens and check ran on and its write (the agent finalized or submitted again, the
#: poster revealed), before ``CONCURRENT_UPDATE``.
REVEAL_TRIES = 3


def _count_post(tx: Transaction, who: Account, now: datetime) -> None:
    """Count a task posted in its poster's window, in the transaction that stores it (a
    refused or failed post counts nothing); ``POSTS_QUOTA_EXCEEDED`` past :data:`POST_QUOTA`."""
    if "admin" in who.roles:
        return
    start, wait = quotas.window(now, POST_WINDOW)
    if quotas.use(tx, f"post:{who.id}", start) > POST_QUOTA:
        raise RateLimited(
            f"An account may post {POST_QUOTA} tasks an hour; try again in {wait} s.",
            retry_after=wait,
            code="POSTS_QUOTA_EXCEEDED",
        )


@dataclass(frozen=True)
class _Checked:
    """An auto check run before the write transaction, on the stored submission."""

    result: str
    criteria: Mapping[str, Any]
    outcome: CheckOutcome


class _CheckedHere:
    """The market's checker in a quick finalize's write (:meth:`Tasks.finalize_here`: criteria
    that need no regex worker, a short result): the check runs there, as the agent's regex
    work."""

    def __init__(self, inner: Checker, owner: str) -> None:
        self._inner = inner
        self._owner = owner

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        return self._inner.admissibility(criteria, mode)

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        with stage("task.check.write"), jsregex.owned_by(self._owner):
            return self._inner.check(result, criteria, withhold=withhold)


class _Screened:
    """The market's checker, answering posting's screens of the draft's criteria from their run
    before the write (:meth:`Tasks.post`): the unit of work repeats none of it."""

    def __init__(
        self, inner: Checker, criteria: Mapping[str, Any], mode: str, refusals: Sequence[Error]
    ) -> None:
        self._inner = inner
        self._criteria, self._mode, self._refusals = criteria, mode, refusals

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        if mode == self._mode and criteria == self._criteria:
            return self._refusals
        return self._inner.admissibility(criteria, mode)

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        return self._inner.check(result, criteria, withhold=withhold)


@dataclass(frozen=True)
class _Opening:
    """What a reveal's write asks the checker, asked before the write (:meth:`Tasks._opening`):
    the screens of the criteria judged once the seal opens, and the check of the waiting
    submission against them (None when the agent has not asked for it, or they were refused)."""

    criteria: Mapping[str, Any]
    refusals: tuple[Error, ...]
    checked: _Checked | None


class _Stale(Exception):
    """Not a refusal: a reveal's or a finalize's write asked the checker what was not asked
    before it (the task changed meanwhile); nothing was written, and it is prepared again."""


class _Prepared:
    """The market's checker in a write prepared before it (a reveal's, a finalize's): it
    answers only from the screens (``screened``) and the check (``checked``) run before the
    write, and runs none on the thread that commits every account's writes (a check may run
    100 ms); any other question raises :class:`_Stale`."""

    def __init__(self, screened: _Opening | None, checked: _Checked | None) -> None:
        self._screened = screened
        self._checked = checked

    def admissibility(self, criteria: Mapping[str, Any], mode: str) -> Sequence[Error]:
        screened = self._screened
        if screened is None or mode != Mode.AUTO.value or criteria != screened.criteria:
            raise _Stale
        return screened.refusals

    def check(
        self, result: str, criteria: Mapping[str, Any], *, withhold: frozenset[str] = frozenset()
    ) -> CheckOutcome:
        done = self._checked
        if done is None or withhold or result != done.result or criteria != done.criteria:
            raise _Stale
        return done.outcome


def criteria_refusals(criteria: Mapping[str, Any]) -> list[Error]:
    """Posting refuses what the auto check would silently drop: an unknown field, named with
    the closest known one (``CRITERIA_UNKNOWN_FIELD``) — inside rubric items and
    ``expected_schema`` too. The auto check itself keeps the reference's behaviour."""
    return [
        CriteriaError(
            f"{sentence} (Post with lenient criteria to keep it anyway.)",
            code="CRITERIA_UNKNOWN_FIELD",
        )
        for _path, sentence in autocriteria.unknown_fields(criteria)
    ]


def screens_slow(mode: str, criteria: Mapping[str, Any]) -> bool:
    """Whether posting's screens of ``criteria`` run matches in the time-limited worker pool:
    the falsifiability check of an auto task's slow ``regex_pattern`` (:func:`runs_slow`)."""
    return mode == Mode.AUTO.value and runs_slow(criteria)


def runs_slow(criteria: Mapping[str, Any]) -> bool:
    """Whether checking against ``criteria`` may take a while: a ``regex_pattern`` that is not
    provably linear runs in the time-limited worker pool."""
    pattern = criteria.get("regex_pattern")
    if not isinstance(pattern, str) or not jsregex.is_safe(pattern):
        return False
    try:
        return not jsregex.compile(pattern).bounded
    except jsregex.JsRegexError:
        return False


class _CheckApart(Exception):
    """Not a refusal: this finalize's check may take a while, so it runs before the write
    (:meth:`Tasks.finalize`); nothing was checked or written."""


class SlowCheck(Exception):
    """Not a refusal: this check needs the regex worker pool, and the caller asked for fast
    work only (:meth:`Tasks.finalize`, :meth:`Tasks.reveal`); nothing was checked or
    written."""


class Tasks:
    """The task use cases over one store, with an injected clock, checker and receipt issuer."""

    def __init__(
        self,
        unit: UnitOfWork,
        checker: Checker,
        issuer: Issuer,
        settings: Settings,
        at_once: AtOnce | None = None,
    ) -> None:
        self.unit = unit
        self.checker = checker
        self.issuer = issuer
        self.settings = settings
        #: The dry runs and lints each account has running at once (shared with the lints).
        self.at_once = at_once or AtOnce()

    def context(self, checker: Checker | None = None) -> Context:
        """The market's context now."""
        return Context(
            now=self.unit.now(),
            checker=checker or self.checker,
            fee_bps=self.settings.fee_bps,
            take_limit=self.settings.take_limit,
        )

    # --- posting --------------------------------------------------------------------------

    def post(
        self,
        account: Account,
        *,
        title: str,
        brief: str,
        reward: int,
        mode: str,
        criteria: Mapping[str, Any],
        deadline: datetime | None = None,
        deadline_hours: float | None = None,
        verifier: str | None = None,
        private: bool = False,
        lenient_criteria: bool = False,
        take_window_hours: int | None = None,
        seal: str | None = None,
        verifiers: Sequence[str] = (),
        quorum: int | None = None,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Post a task and fund its escrow from the poster's wallet (``INSUFFICIENT_FUNDS``).

        ``verifiers`` names a panel of verifiers for an agent-review task (2 to 9, each opted
        in and with a registered key) of which ``quorum`` must agree (k of n; a majority by
        default); one verifier in it is the same as ``verifier``.

        ``seal``, on an auto task, is a commitment to sealed criteria
        (:mod:`adjudge.market.seal`): the poster reveals them when a submission is to be judged.

        The deadline is an aware time, or ``deadline_hours`` from the moment of posting (the
        same moment the market measures the 1-hour minimum from). ``take_window_hours``, if
        given, is how long an agent may hold the task without submitting before its take
        lapses and the task is open again (``INVALID_TAKE_WINDOW``).
        """
        need_role(account, "poster")
        need_primary(account, "posts and funds tasks")  # an extra key's budget is for calls
        if (deadline is None) == (deadline_hours is None):
            raise BadInput(
                "Send a deadline or deadline_hours (one of them).", code="INVALID_DEADLINE"
            )
        if mode == Mode.AGENT.value and not brief.strip():
            raise BadInput(
                "Agent review judges the result against the brief, and its verdict must quote "
                "it: send a brief.",
                code="BRIEF_REQUIRED",
            )
        if deadline_hours is not None and not 0 < deadline_hours <= MAX_DEADLINE_HOURS:
            raise BadInput(
                "The deadline must be between 1 hour and 90 days after posting.",
                code="INVALID_DEADLINE",
            )
        size = len(json.dumps(criteria, ensure_ascii=False, separators=(",", ":")).encode())
        if size > MAX_CRITERIA_BYTES:
            raise CriteriaError(
                f"Criteria are at most {MAX_CRITERIA_BYTES} bytes of JSON; these are {size}.",
                code="CRITERIA_OVER_LIMIT",
            )
        if not lenient_criteria:
            refusals = criteria_refusals(criteria)
            if refusals:
                raise refusals[0]
        inputs: dict[str, Any] = {
            "title": title,
            "brief": brief,
            "reward": str(reward),
            "mode": mode,
            "criteria": criteria,
            "deadline": deadline.isoformat() if deadline else None,
            "deadline_hours": deadline_hours,
            "verifier": verifier,
            "private": private,
            "lenient_criteria": lenient_criteria,
            "take_window_hours": take_window_hours,
            "seal": seal,
        }
        if verifiers or quorum is not None:  # a task of one verifier keeps its former inputs
            inputs.update(verifiers=list(verifiers), quorum=quorum)
        idem = Idempotency.of(key, "tasks.post", inputs)
        checker = self._screened(account, mode, criteria, seal)

        def run(tx: Transaction) -> dict[str, Any]:
            _count_post(tx, account, self.unit.now())
            opted_in = False
            verifier_key = None
            if verifier:
                named = records.account(tx, verifier)
                opted_in = bool(named and "verifier" in named.roles and named.verifier_opt_in)
                verifier_key = named.verifier_key if named else None
                if opted_in and verifier_key is None and mode == Mode.AGENT.value:
                    raise StateError(
                        f"Verifier {verifier} has registered no key to sign its verdicts with.",
                        code="VERIFIER_KEY_REQUIRED",
                    )
            panel = tuple(_seat(tx, named, mode) for named in verifiers)
            ctx = self.context(checker)
            when = deadline or ctx.now + timedelta(hours=deadline_hours or 0)
            draft = Draft(
                poster=account.id,
                reward=reward,
                deadline=when,
                mode=mode,
                criteria=criteria,
                verifier=verifier,
                verifier_opted_in=opted_in,
                verifier_key=verifier_key,
                private=private,
                take_window_hours=take_window_hours,
                seal=seal,
                panel=panel,
                quorum=quorum,
                # A hidden answer's receipts bind it salted (market.proof.criteria_digest).
                criteria_salt=secrets.token_urlsafe(32) if "expected_answer" in criteria else None,
            )
            out = post("task_" + ids.ordered_hex(24), draft, ctx)
            stored = settlement.post(tx, out, title=title, brief=brief, at=ctx.now)
            return task_view(tx, stored, account, ctx.now)

        # The poster's wallet is debited as the unit runs (hot_rows: locked first when a batch's
        # other units take their rows in another order).
        debited = (hot_rows.balance(wallet_account(account.id)),)
        return self.unit.once(account.id, idem, run, hot=debited)

    def _screened(
        self, account: Account, mode: str, criteria: Mapping[str, Any], seal: str | None
    ) -> Checker:
        """The checker posting's unit of work asks, its screens of ``criteria`` run now.

        The screens may take a while (the falsifiability check runs matches, and a slow
        pattern runs each to the 100 ms limit, as the poster's regex work), so they run before
        the write, on the caller's thread, holding no lock; the market raises their refusal
        inside the unit, in its own order of refusals, from the answer kept here. A mode the
        market does not know is refused there before any screen, so none runs now.
        """
        if mode not in {m.value for m in Mode}:
            return self.checker
        admitted = admissible_form(criteria) if seal is not None else criteria
        with stage("task.screen"), jsregex.owned_by(account.id):
            refusals = tuple(self.checker.admissibility(admitted, mode))
        return _Screened(self.checker, admitted, mode, refusals)

    # --- the lifecycle ----------------------------------------------------------------------

    def accept(self, account: Account, task_id: str, *, key: str | None = None) -> Answer[Any]:
        """An agent takes a funded task: one of the few it may hold undelivered at once
        (``TAKE_LIMIT_REACHED`` beyond :attr:`Settings.take_limit`)."""
        need_role(account, "agent")
        return self._act(account, task_id, "accept", {}, key, lambda tx, st: Accept(account.id))

    def release(self, account: Account, task_id: str, *, key: str | None = None) -> Answer[Any]:
        """The poster takes back a task its agent holds without delivering, after the grace."""
        need_role(account, "poster")
        return self._act(account, task_id, "release", {}, key, lambda tx, st: Release(account.id))

    def submit(
        self, account: Account, task_id: str, result: str, *, key: str | None = None
    ) -> Answer[Any]:
        """The agent delivers a result; it is stored with its digest for the integrity proof."""
        need_role(account, "agent")

        def after(tx: Transaction, out: Outcome) -> None:
            t = out.task
            assert t.submitted_at is not None and t.result_digest is not None
            records.add_submission(
                tx, Submission(t.id, t.attempts, result, t.result_digest, t.submitted_at)
            )

        return self._act(
            account,
            task_id,
            "submit",
            {"result": result},
            key,
            lambda tx, st: Submit(account.id, result),
            after=after,
        )

    def finalize(
        self, account: Account, task_id: str, *, key: str | None = None, fast_only: bool = False
    ) -> Answer[Any]:
        """The agent asks for the auto check of its latest submission.

        The check is pure and can take a while (a regular expression may run 100 ms), so it
        runs before the write transaction, on the stored submission, holding no lock; the
        write re-reads the task and applies the outcome only to that same submission (a task
        changed meanwhile is checked again before another write, up to :data:`REVEAL_TRIES`
        times, then ``CONCURRENT_UPDATE``: no check runs in the write). Its
        regex work is the agent's, in the worker pool's fair shares. With ``fast_only``, a
        check that would need the worker pool raises :class:`SlowCheck` before anything is
        checked or written, so the caller can run it again where slow work belongs (the
        service asks this way, after :meth:`finalize_here` found the check not known to be
        quick, sparing most finalizes a read of their own to decide).
        """
        need_role(account, "agent")

        def event(tx: Transaction, stored: StoredTask) -> Event:
            return Finalize(account.id, _stored_result(tx, stored))

        for _ in range(REVEAL_TRIES):
            with jsregex.owned_by(account.id):
                done = self._precheck(account, task_id, fast_only=fast_only)
            try:
                return self._act(
                    account,
                    task_id,
                    "finalize",
                    {},
                    key,
                    event,
                    checker=_Prepared(None, done),
                    hot=_paid(account),
                )
            except _Stale:  # the task changed since the check: checked again, never in the write
                continue
        raise Unavailable(
            "The task changed while its result was checked; finalize again.",
            code="CONCURRENT_UPDATE",
        )

    async def finalize_here(
        self, account: Account, task_id: str, *, key: str | None = None
    ) -> Answer[Any] | None:
        """A finalize whose check runs inside its write, on the submission the write reads (one
        transaction instead of a read and a write), awaited on the running event loop: no
        request thread, and on a local store no commit thread either (the loop commits the
        unit itself). Only for a check known to be quick (criteria that need no regex worker
        and a result of at most :data:`QUICK_CHECK_CHARS`); for any other it answers None, the
        write rolled back before the market steps with nothing in it, and :meth:`finalize`
        checks it apart."""
        need_role(account, "agent")
        idem = Idempotency.of(key, "tasks.finalize", {"task": task_id})
        checker = _CheckedHere(self.checker, account.id)
        run = self._acting(
            account, task_id, _quick_finalize(account, task_id), None, checker, judged=True
        )
        try:
            return await self.unit.once_async(account.id, idem, run, hot=_paid(account))
        except _CheckApart:
            return None

    def reveal(
        self,
        account: Account,
        task_id: str,
        document: Any,
        *,
        key: str | None = None,
        fast_only: bool = False,
    ) -> Answer[Any]:
        """The poster reveals a sealed task's criteria (``{"criteria": {…}, "salt": "…"}``).

        Matched against the commitment made at posting, it is kept with the task; if the agent
        is waiting for the check, the check runs at once on the stored submission, and its
        receipt carries the oracle's check of the reveal against the commitment. A reveal that
        does not match (or reveals criteria no auto check could use) escalates the task in its
        own transaction, and is then refused with ``SEAL_MISMATCH`` — a retry with the same
        Idempotency-Key is refused the same way.

        The screens of the revealed criteria and the check may take a while (a slow pattern
        runs its matches to the 100 ms limit), so they run before the write, on the caller's
        thread, as the poster's regex work (:meth:`_opening`); the write answers the market
        from them. If the task changed meanwhile so that the write asks anything else (the
        agent finalized), nothing is written and the reveal is prepared again, up to
        :data:`REVEAL_TRIES` times (then ``CONCURRENT_UPDATE``). With ``fast_only``, a reveal
        whose screens or check would need the worker pool raises :class:`SlowCheck` before
        anything is screened or written.

        The account's own key only: a reveal that does not match escalates the task, and the
        agent may then collect without a ruling (an extra key's budget is for calls).
        """
        need_role(account, "poster")
        need_primary(account, "reveals sealed criteria")

        def event(tx: Transaction, stored: StoredTask) -> Event:
            sub = records.submission(tx, task_id, stored.task.attempts)
            return Reveal(account.id, document, sub.result if sub else "")

        for _ in range(REVEAL_TRIES):
            opening = self._opening(account, task_id, document, fast_only=fast_only)
            try:
                answer = self._act(
                    account,
                    task_id,
                    "reveal",
                    {"document": document},
                    key,
                    event,
                    checker=_Prepared(opening, None if opening is None else opening.checked),
                    hot=self._parties(task_id),
                )
            except _Stale:
                continue
            break
        else:
            raise Unavailable(
                "The task changed while the reveal was checked; send the reveal again.",
                code="CONCURRENT_UPDATE",
            )
        sealed = answer.value.get("seal") or {}
        if answer.value.get("status") == Status.ESCALATED.value and sealed.get("broken"):
            raise VerificationFailed(
                f"The reveal does not open this task's seal: {sealed['broken']}. The task is "
                "escalated: an admin rules on it (without a ruling, the agent collects 14 days "
                "from now).",
                code="SEAL_MISMATCH",
            )
        return answer

    def _opening(
        self, account: Account, task_id: str, document: Any, *, fast_only: bool
    ) -> _Opening | None:
        """What the reveal's write will ask the checker, asked now, holding no lock: the
        screens of the criteria judged once the seal opens and, if the agent is waiting, the
        check of its stored submission, as the poster's regex work. None when the write will
        ask nothing (a refusal, or a seal the reveal does not open, comes first)."""
        with stage("task.read"):
            found = self.unit.read(partial(_revealing, task_id=task_id))
        if found is None:
            return None
        stored, result = found
        criteria = _opened_criteria(stored.task, account, document, self.unit.now())
        if criteria is None:
            return None
        if fast_only and runs_slow(criteria):
            raise SlowCheck(task_id)
        with jsregex.owned_by(account.id):
            with stage("task.screen"):
                refusals = tuple(self.checker.admissibility(criteria, Mode.AUTO.value))
            if refusals or stored.task.status is not Status.AWAITING_VERIFICATION:
                return _Opening(criteria, refusals, None)  # escalated, or the finalize checks
            with stage("task.check"):
                outcome = self.checker.check(result, criteria)
        return _Opening(criteria, refusals, _Checked(result, criteria, outcome))

    def review(
        self,
        account: Account,
        task_id: str,
        *,
        passed: bool,
        reasons: Sequence[str],
        attempt: int | None = None,
        result_digest: str | None = None,
        key: str | None = None,
    ) -> Answer[Any]:
        """The poster approves or rejects a submitted result (manual mode): the account's own
        key only, as the escrow goes where the review says (an extra key's budget is for
        calls). With ``attempt`` or ``result_digest`` (the submission the poster read), a
        review of another submission is refused (``SUBMISSION_CHANGED``): a page read before
        the agent submitted again would otherwise pay, or fail, work nobody read."""
        need_role(account, "poster")
        need_primary(account, "reviews a result")
        inputs = {
            "passed": passed,
            "reasons": list(reasons),
            "attempt": attempt,
            "result_digest": result_digest,
        }

        def event(tx: Transaction, stored: StoredTask) -> Event:
            t = stored.task
            if (attempt is not None and attempt != t.attempts) or (
                result_digest is not None and result_digest != t.result_digest
            ):
                raise StateError(
                    f"The agent has submitted again: the task's latest submission is attempt "
                    f"{t.attempts} ({t.result_digest}), not the one this review names. Read "
                    "it, then review that.",
                    code="SUBMISSION_CHANGED",
                )
            judged = _stored_result(tx, stored)
            return Review(account.id, passed, tuple(reasons), stored_result=judged)

        return self._act(account, task_id, "review", inputs, key, event, hot=self._parties(task_id))

    def verdict(
        self,
        account: Account,
        task_id: str,
        *,
        passed: bool,
        reasons: Sequence[str],
        signature: str | None,
        public_key: str | None = None,
        quotes: Sequence[Mapping[str, Any]] = (),
        key: str | None = None,
    ) -> Answer[Any]:
        """The named verifier's judgment (agent mode), signed with its own key and grounded.

        In order: the market's rules decide who and when (the named verifier, while the work
        awaits it); the signature is checked against the payload rebuilt from the service's own
        records — the task, the submission judged, its digest, the brief's digest — with the
        body's ``passed``, ``reasons`` and ``quotes``, under the key the task trusts (a revoked
        key signs nothing); then the review is grounded in the stored brief and result
        (:func:`adjudge.kernel.semantic.ground_review`). A grounded review decides — a PASS pays
        on the poster's trust in that one key — and an ungrounded one decides nothing: the
        submission goes to the poster for a manual decision. The verified signature is kept
        with the record.
        """
        need_role(account, "verifier")
        inputs = {
            "passed": passed,
            "reasons": list(reasons),
            "signature": signature,
            "public_key": public_key,
            "quotes": [dict(q) for q in quotes],
        }

        def event(tx: Transaction, stored: StoredTask) -> Event:
            t = stored.task
            seat = next((s for s in t.panel if s.verifier == account.id), None)
            trusted = seat.key if seat is not None else t.verifier_key
            voted = any(v.verifier == account.id for v in t.votes)
            if (
                account.id not in t.verifiers
                or t.status is not Status.AWAITING_VERIFICATION
                or voted
            ):
                # The market refuses it with the right code; nothing to sign or ground.
                return VerifierVerdict(account.id, passed, tuple(reasons))
            if not trusted:
                raise StateError(
                    "The task names no verifier key to check a signed verdict against.",
                    code="VERIFIER_KEY_REQUIRED",
                )
            sub = records.submission(tx, task_id, t.attempts)
            if sub is None or t.result_digest is None:
                raise TransitionError("The task holds no submission to judge.")
            brief = Record(stored.brief.encode("utf-8"), "brief")
            result = Record(sub.result.encode("utf-8"))
            payload = verdict_payload(
                task_id=task_id,
                attempt=t.attempts,
                result_digest=t.result_digest,
                brief_digest=brief.digest,
                passed=passed,
                reasons=reasons,
                quotes=quotes,
                verifier_key=trusted,
            )
            signed = _check(tx, trusted, payload, signature, public_key)
            review = semantic.Review.from_dict(
                {
                    "verifierKey": trusted,
                    "passed": passed,
                    "briefDigest": brief.digest,
                    "resultDigest": t.result_digest,
                    "quotes": list(quotes),
                    "reasons": list(reasons),
                }
            )
            grounding = semantic.ground_review(review, brief=brief, result=result)
            return VerifierVerdict(
                account.id,
                passed,
                tuple(reasons),
                grounding,
                signed=signed,
                stored_result=sub.result,
            )

        return self._act(
            account, task_id, "verdict", inputs, key, event, hot=self._parties(task_id)
        )

    def dispute(
        self, account: Account, task_id: str, *, reason: str, key: str | None = None
    ) -> Answer[Any]:
        """The poster or the agent asks an admin to rule; the reason is kept with the task."""
        return self._act(
            account,
            task_id,
            "dispute",
            {"reason": reason},
            key,
            lambda tx, st: Dispute(account.id, reason),
        )

    def reclaim(self, account: Account, task_id: str, *, key: str | None = None) -> Answer[Any]:
        """The poster reclaims after the deadline (a refund, or an escalation, after which the
        agent may collect without a ruling): the account's own key only, as for a review."""
        need_role(account, "poster")
        need_primary(account, "reclaims a task")
        return self._ending(account, task_id, "reclaim", Reclaim, key)

    def collect(self, account: Account, task_id: str, *, key: str | None = None) -> Answer[Any]:
        """The agent collects an escalated reward after 14 days."""
        need_role(account, "agent")
        return self._ending(account, task_id, "collect", Collect, key)

    def cancel(self, account: Account, task_id: str, *, key: str | None = None) -> Answer[Any]:
        """The poster withdraws a task nobody holds."""
        need_role(account, "poster")
        return self._ending(account, task_id, "cancel", Cancel, key)

    def rule(
        self,
        account: Account,
        task_id: str,
        *,
        pay_agent: bool,
        note: str,
        key: str | None = None,
    ) -> Answer[Any]:
        """An admin rules on a disputed or escalated task (with the account's own key: the
        escrow goes where the ruling says)."""
        need_role(account, "admin")
        need_primary(account, "rules on a task")
        inputs = {"pay_agent": pay_agent, "note": note}

        def event(tx: Transaction, stored: StoredTask) -> Event:
            return Rule(account.id, pay_agent, note, stored_result=_stored_result(tx, stored))

        return self._act(account, task_id, "rule", inputs, key, event, hot=self._parties(task_id))

    # --- the dry run --------------------------------------------------------------------------

    def dry_run(self, account: Account, task_id: str, result: str) -> dict[str, Any]:
        """Check a draft against a task's public rules: no attempt used, no reputation touched.

        Only for the agent holding the task while it is open, at most :data:`DRY_RUN_QUOTA`
        times per task per hour (``DRY_RUN_QUOTA_EXCEEDED``, with the seconds to wait). The
        hidden rules (``expected_answer``) never run: a dry run must not be an oracle for what
        the agent may not see. The answer lists the rules it did not run.

        The task is read, and whether this agent may dry-run it decided, before the write,
        which counts the quota alone: read inside it, the task's criteria (up to 256 KiB) and
        brief were read on the thread that commits every account's writes by every dry run,
        a refused one too (3.6-15 ms a run where the count takes 0.4-0.6 ms).
        """
        if len(result) > MAX_RESULT_CHARS:
            raise BadInput(
                f"A result may be at most {MAX_RESULT_CHARS} characters.", code="RESULT_TOO_LARGE"
            )
        now = self.unit.now()

        def holding(tx: Transaction) -> StoredTask:
            stored = _task(tx, task_id)
            t = stored.task
            window_over = (when := lapses_at(t)) is not None and now >= when
            if account.id != t.agent or t.terminal or window_over:
                raise NotAllowed(
                    "Only the agent holding the task can dry-run it, while it is open.",
                    code="NOT_TASK_AGENT",
                )
            if not t.criteria:
                raise StateError("This task has no criteria to check against.", code="NO_CRITERIA")
            return stored

        def count(tx: Transaction) -> None:
            start, wait = quotas.window(now, DRY_RUN_WINDOW)
            used = quotas.use(tx, f"dry-run:{task_id}:{account.id}", start)
            if used > DRY_RUN_QUOTA:
                raise RateLimited(
                    f"A task allows {DRY_RUN_QUOTA} dry runs an hour; try again in {wait} s.",
                    retry_after=wait,
                    code="DRY_RUN_QUOTA_EXCEEDED",
                )

        stored = self.unit.read(holding)
        self.unit.write(count)
        criteria = stored.task.criteria
        if stored.task.seal is not None:
            # A sealed answer is hidden like a posted one: it counts where it changes the hard
            # failures (the content floor), as a stand-in, and is never scored here.
            criteria = admissible_form(criteria)
        withheld = [k for k in HIDDEN_FIELDS if k in criteria]
        with (
            self.at_once.held(account.id, "dry runs and lints"),
            jsregex.owned_by(account.id),  # the agent's share of the regex worker pool
        ):
            outcome = self.checker.check(result, criteria, withhold=frozenset(withheld))
        return {
            "dry_run": True,
            "passed": outcome.passed,
            "score": outcome.score,
            "reasons": list(outcome.reasons),
            "detail": dict(outcome.detail),
            "rules_not_run": withheld,
            "note": (
                "Only the task's public rules ran; the finalized check also runs "
                + ", ".join(withheld)
                + "."
                if withheld
                else "Every rule of the task ran."
            ),
        }

    # --- reads ----------------------------------------------------------------------------

    def needs_slow_check(self, task_id: str) -> bool:
        """Whether checking a result of this task may take a while: its ``regex_pattern`` runs
        in the time-limited worker pool (one not provably linear). The service runs such
        checks apart, so waiting for the pool never holds the threads everyone else needs."""

        def read(tx: Transaction) -> bool:
            stored = records.task(tx, task_id)
            return runs_slow(judged_criteria(stored.task) if stored else {})

        return self.unit.read(read)

    def get(self, viewer: Account, task_id: str) -> dict[str, Any]:
        """One task as ``viewer`` may see it (``TASK_NOT_FOUND``; ``RECORD_UNREADABLE`` for a
        stored row the wire cannot carry).

        A take whose time is up is lapsed first (in a write of its own), so a reader never
        sees a take past its end, however late the sweep runs.
        """
        now = self.unit.now()

        def read(tx: Transaction) -> dict[str, Any] | None:
            stored = _task(tx, task_id)
            due = take_due(stored.task, now) or reveal_due(stored.task, now)
            return None if due else task_view(tx, stored, viewer, now)

        view = self.unit.read(read)
        if view is None:
            view = self.unit.write(
                lambda tx: task_view(tx, self._lapse(tx, task_id)[0], viewer, now)
            )
        # The service's time of this reading: a page offers a timed action (reclaim after the
        # deadline) by this clock, not by the reader's.
        return shown({**view, "as_of": now.isoformat()})

    # --- lapses -----------------------------------------------------------------------------

    def lapse_due(self, *, limit: int = SWEEP_BATCH, drain: bool = False) -> int:
        """Apply the takes whose time is up (at most ``limit``; with ``drain``, batch after
        batch until none is left due); returns how many were applied.

        The sweep the service's upkeep runs (:mod:`adjudge.app.maintenance`): each take a
        unit of work of its own, all queued at once to share the group commit's transactions,
        found by the index on its end time, so a pass costs the work due and never a scan of
        the history. A task acted on or read first is lapsed by that action or read instead
        (the market applies a due lapse before any event), so several processes sweeping at
        once only skip each other's work. A task whose lapse fails leaves the due order until
        its retry (:meth:`_sweep`).
        """
        return self._sweep(records.takes_due, "the take of task %s could not lapse", limit, drain)

    def _sweep(
        self,
        read_due: Callable[[Transaction, datetime, int], list[str]],
        failed: str,
        limit: int,
        drain: bool,
    ) -> int:
        """Apply each due task's lapse or overdue reveal (:meth:`_lapse`), and each task's whose
        retry is due; how many were applied. A task whose unit raises is logged and put back
        with a growing delay (:func:`adjudge.app.retries.retry_delay`): out of the due order
        until then, so however many fail on every pass, the tasks due after them are applied in
        their turn."""
        applied = 0
        while True:
            now = self.unit.now()
            retried, fresh = self.unit.read(partial(_due, read_due=read_due, now=now, limit=limit))
            units = [partial(self._lapse, task_id=task_id) for task_id in fresh]
            units += [partial(self._retried, task_id=task_id) for task_id in retried]
            errors: dict[str, Exception] = {}
            moved = 0
            for task_id, outcome in zip(
                [*fresh, *retried], self.unit.write_each(units), strict=True
            ):
                if isinstance(outcome, Exception):
                    errors[task_id] = outcome
                else:
                    applied += outcome[1]
                    moved += 1 if outcome[1] or task_id in retried else 0
            if errors:
                put_back(
                    self.unit,
                    errors,
                    now,
                    failures=records.sweep_failures,
                    defer=records.defer_sweep,
                    log=log,
                    failed=failed,
                )
                moved += len(errors)
            if not drain or moved == 0 or (len(fresh) < limit and len(retried) < limit):
                return applied

    def _retried(self, tx: Transaction, task_id: str) -> tuple[StoredTask, bool]:
        """:meth:`_lapse`, for a task whose sweep failed before: done, it is back in the due
        order."""
        done = self._lapse(tx, task_id)
        records.sweep_done(tx, task_id)
        return done

    def _lapse(self, tx: Transaction, task_id: str) -> tuple[StoredTask, bool]:
        """Apply the task's due lapse or overdue reveal, if it still has one; the task as
        stored, and whether one was applied."""
        stored = _task(tx, task_id)
        ctx = self.context()
        if take_due(stored.task, ctx.now):
            event: Event = Lapse()
        elif reveal_due(stored.task, ctx.now):
            event = RevealOverdue()
        else:
            return stored, False
        out = step(stored.task, event, ctx)
        return outcomes.record(tx, stored, out, self.issuer, at=ctx.now), True

    def escalate_overdue(self, *, limit: int = SWEEP_BATCH, drain: bool = False) -> int:
        """Escalate the sealed tasks whose reveal is overdue (at most ``limit``; with ``drain``,
        until none is left); how many.

        The upkeep's sweep, as :meth:`lapse_due` is for takes: each a unit of work of its
        own, found by the index on the reveal's due time. An action on or a read of the task
        escalates it first anyway (the market applies an overdue reveal before any event).
        """
        failed = "the overdue reveal of task %s could not escalate"
        return self._sweep(records.reveals_due, failed, limit, drain)

    def find(
        self,
        viewer: Account,
        *,
        status: str | None = None,
        mode: str | None = None,
        mine: bool = False,
        poster: str | None = None,
        agent: str | None = None,
        text: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Tasks newest first, a page at a time: summaries only (no brief, no criteria);
        ``poster``, ``agent`` and ``text`` (in the title) narrow them."""
        if status is not None and status not in {s.value for s in Status}:
            raise BadInput(
                f"No status {status!r}; use one of {', '.join(s.value for s in Status)}.",
                code="INVALID_REQUEST",
            )
        if mode is not None and mode not in {m.value for m in Mode}:
            raise BadInput(
                f"No mode {mode!r}; use one of {', '.join(m.value for m in Mode)}.",
                code="INVALID_REQUEST",
            )

        def run(tx: Transaction) -> dict[str, Any]:
            page = records.tasks(
                tx,
                status=status,
                mode=mode,
                involving=viewer.id if mine else None,
                poster=poster,
                agent=agent,
                text=text,
                limit=limit,
                cursor=cursor,
            )
            return {
                "tasks": rendered(page.items, task_summary, "task"),
                "next_cursor": page.next_cursor,
            }

        return self.unit.read(run)

    # --- the machinery --------------------------------------------------------------------

    def _precheck(
        self, account: Account, task_id: str, *, fast_only: bool = False
    ) -> _Checked | None:
        def read(tx: Transaction) -> tuple[StoredTask, Submission] | None:
            stored = records.task(tx, task_id)
            if stored is None:
                return None
            t = stored.task
            if t.mode is not Mode.AUTO or t.status is not Status.SUBMITTED or t.agent != account.id:
                return None  # the market refuses it; nothing to check
            sub = records.submission(tx, task_id, t.attempts)
            return None if sub is None else (stored, sub)

        with stage("task.read"):
            found = self.unit.read(read)
        if found is None:
            return None
        stored, sub = found
        if stored.task.seal is not None and stored.task.reveal is None:
            return None  # sealed, not revealed: no check runs until the poster reveals
        criteria = judged_criteria(stored.task)
        if fast_only and runs_slow(criteria):
            raise SlowCheck(task_id)
        with stage("task.check"):
            outcome = self.checker.check(sub.result, criteria)
        return _Checked(sub.result, criteria, outcome)

    def _ending(
        self,
        account: Account,
        task_id: str,
        operation: str,
        event: Callable[[str], Event],
        key: str | None,
    ) -> Answer[Any]:
        """A step of ``account``'s own that may end the task and move its escrow (a reclaim, a
        collect, a cancel): its event, naming the wallets it may credit."""
        return self._act(
            account,
            task_id,
            operation,
            {},
            key,
            lambda tx, st: event(account.id),
            hot=self._parties(task_id),
        )

    def _parties(self, task_id: str) -> tuple[hot_rows.Row, ...]:
        """The wallets a step that may end the task credits as it commits: its poster's (a
        refund) and its agent's (a payout; the fees are never named). Read before its unit is
        queued, which names them then: a read more, for a step taken once or twice a task. A
        party read stale (an agent whose take lapsed meanwhile) makes a batch lock a row more
        or one fewer first; what the unit moves it decides itself. On SQLite, whose one writer
        locks nothing ahead (:func:`adjudge.store.hot_rows.take`), none: nothing is read."""
        if self.unit.store.dialect == "sqlite":
            return ()

        def read(tx: Transaction) -> tuple[hot_rows.Row, ...]:
            stored = records.task(tx, task_id)
            if stored is None:
                return ()
            parties = dict.fromkeys((stored.task.poster, stored.task.agent))
            return tuple(hot_rows.credited(wallet_account(p)) for p in parties if p is not None)

        return self.unit.read(read)

    def _act(
        self,
        account: Account,
        task_id: str,
        operation: str,
        inputs: Mapping[str, Any],
        key: str | None,
        make_event: Callable[[Transaction, StoredTask], Event],
        *,
        after: Callable[[Transaction, Outcome], None] | None = None,
        checker: Checker | None = None,
        hot: tuple[hot_rows.Row, ...] = (),
    ) -> Answer[Any]:
        idem = Idempotency.of(key, f"tasks.{operation}", {"task": task_id, **inputs})
        run = self._acting(account, task_id, make_event, after, checker)
        # A step that checks nothing is refused, if it is, on a read first: a step refused in
        # the write read and decoded the whole task there (its criteria up to 256 KiB) on the
        # thread that commits every account's writes, and anyone may send a step to any task
        # (a stranger's dispute or collect: 2.9 ms of that thread each at 240 KB of criteria).
        # A finalize or a reveal (``checker``) is prepared apart already.
        refused = None if checker is not None else self._refused(task_id, make_event)
        with stage("task.write"):
            return self.unit.once(account.id, idem, run, hot=hot, refused=refused)

    def _refused(
        self, task_id: str, make_event: Callable[[Transaction, StoredTask], Event]
    ) -> Callable[[Transaction], None]:
        """The step's refusal read ahead of its write (:meth:`UnitOfWork.once`'s ``refused``):
        the market's step run on the task as read, its outcome dropped."""

        def check(tx: Transaction) -> None:
            stored = _task(tx, task_id)
            step(stored.task, make_event(tx, stored), self.context())

        return check

    def _acting(
        self,
        account: Account,
        task_id: str,
        make_event: Callable[[Transaction, StoredTask], Event],
        after: Callable[[Transaction, Outcome], None] | None,
        checker: Checker | None,
        *,
        judged: bool = False,
    ) -> Callable[[Transaction], dict[str, Any]]:
        """The unit of work of one lifecycle step: the task read, the market's step, its
        outcome recorded, the caller's view of the task answered. A step that ``judged`` the
        task's latest submission reads it together with the task (on PostgreSQL one round
        trip, not two)."""
        reads = [records.task_read(task_id)]
        if judged:
            reads.append(records.latest_submission_read(task_id))

        def run(tx: Transaction) -> dict[str, Any]:
            with stage("task.step"):
                with tx.ahead(reads):
                    stored = _task(tx, task_id)
                    event = make_event(tx, stored)
                ctx = self.context(checker)
                out = step(stored.task, event, ctx)
            with stage("task.apply"):
                updated = outcomes.record(tx, stored, out, self.issuer, at=ctx.now)
                if after is not None:
                    after(tx, out)
            with stage("task.view"):
                return task_view(tx, updated, account, ctx.now)

        return run


def _paid(agent: Account) -> tuple[hot_rows.Row, ...]:
    """The row a finalize shares with other transactions: the agent's wallet, credited as it
    commits when the check passes (the escrow it is paid from is the task's alone; the fee's
    account is credited last of all, :func:`adjudge.store.hot_rows.credit_order`, and needs no
    naming)."""
    return (hot_rows.credited(wallet_account(agent.id)),)


def _quick_finalize(account: Account, task_id: str) -> Callable[[Transaction, StoredTask], Event]:
    """The event of a finalize checked inside its write: ``_CheckApart`` (nothing written yet)
    unless its check is known to be quick."""

    def event(tx: Transaction, stored: StoredTask) -> Event:
        result = _stored_result(tx, stored)
        if len(result) > QUICK_CHECK_CHARS or runs_slow(judged_criteria(stored.task)):
            raise _CheckApart(task_id)
        return Finalize(account.id, result)

    return event


def _stored_result(tx: Transaction, stored: StoredTask) -> str:
    """The server's own stored copy of the task's latest submission, which the market's proof
    checks against the digest recorded at submission. With no submission it is empty, whose
    digest matches none, so the market refuses to judge it."""
    t = stored.task
    if not t.attempts:
        return ""
    sub = records.latest_submission(tx, t.id)  # the one a finalize reads ahead with its task
    if sub is None or sub.attempt != t.attempts:
        sub = records.submission(tx, t.id, t.attempts)
    return sub.result if sub else ""


def _revealing(tx: Transaction, task_id: str) -> tuple[StoredTask, str] | None:
    """The task a reveal opens and the stored copy of its latest submission (empty with none),
    as its write reads them; None with no such task."""
    stored = records.task(tx, task_id)
    if stored is None:
        return None
    sub = records.submission(tx, task_id, stored.task.attempts)
    return stored, sub.result if sub else ""


def _opened_criteria(
    task: Task, account: Account, document: Any, now: datetime
) -> Mapping[str, Any] | None:
    """The criteria the market screens when ``document`` opens ``task``'s seal at ``now``:
    its public ones with the revealed ones. None when the market asks the checker nothing: the
    reveal is refused first (another's task, no seal, revealed already, not due or overdue, not
    a reveal at all) or it does not open the seal, which escalates unscreened."""
    if (
        task.poster != account.id
        or task.seal is None
        or task.reveal is not None
        or task.status not in (Status.SUBMITTED, Status.AWAITING_VERIFICATION)
        or reveal_due(task, now)
    ):
        return None
    try:
        reveal = parse_reveal(document)
    except Error:
        return None
    if seal_refusal(task, reveal) is not None:
        return None
    return judged_criteria(replace(task, reveal=reveal.document()))


def _seat(tx: Transaction, named: str, mode: str) -> Seat:
    """A panel verifier as the directory knows it: opted in, and the key it signs with."""
    account = records.account(tx, named)
    opted_in = bool(account and "verifier" in account.roles and account.verifier_opt_in)
    key = account.verifier_key if account else None
    if opted_in and key is None and mode == Mode.AGENT.value:
        raise StateError(
            f"Verifier {named} has registered no key to sign its verdicts with.",
            code="VERIFIER_KEY_REQUIRED",
        )
    return Seat(named, key, opted_in)


def _task(tx: Transaction, task_id: str) -> StoredTask:
    stored = records.task(tx, task_id)
    if stored is None:
        raise NotFound(f"No task {task_id}.", code="TASK_NOT_FOUND")
    return stored


def _check(
    tx: Transaction,
    named: str,
    payload: Mapping[str, Any],
    signature: str | None,
    public_key: str | None,
) -> dict[str, Any]:
    """The verified signature of a verifier's payload under the key the task trusts."""
    held = records.verifier_key(tx, named)
    if held is not None and held.revoked_at is not None:
        raise VerificationFailed(
            f"The verifier key {named} this task trusts was revoked; it signs nothing now.",
            code="VERDICT_SIGNATURE_INVALID",
        )
    stored_key = held.public_key if held is not None else None
    if stored_key is not None and public_key is not None and public_key != stored_key:
        raise VerificationFailed(
            f"The verdict names a public key other than the registered key {named}.",
            code="VERDICT_SIGNATURE_INVALID",
        )
    return check_signature(payload, signature, stored_key or public_key)


def _due(
    tx: Transaction,
    read_due: Callable[[Transaction, datetime, int], list[str]],
    now: datetime,
    limit: int,
) -> tuple[list[str], list[str]]:
    """A sweep's batch at ``now``: the tasks whose retry is due (read by either sweep, the first
    to run), and those due in its own order."""
    return records.sweep_retries_due(tx, now, limit), read_due(tx, now, limit)
