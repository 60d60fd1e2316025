"""The lifecycle: :func:`post` creates a funded task, :func:`step` applies one event.

Both are pure: the time, the fee and the checker come in a :class:`Context`; the result is the
new task and the effects to apply (ledger transfers, verdicts, reputation). A refused event raises
:class:`adjudge.Error` with the spec's code where it names one, and nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from adjudge.errors import (
    BadInput,
    Conflict,
    InternalError,
    NotAllowed,
    StateError,
    TransitionError,
    VerificationFailed,
)
from adjudge.kernel import Check, Determination, Verdict, rails
from adjudge.market import proof
from adjudge.market import seal as sealing
from adjudge.market.effects import (
    AgentPenalized,
    DisputeFiled,
    Effect,
    RevealRequested,
    Routed,
    SealBroken,
    Settlement,
    TakeEnded,
    TakeHeld,
    TakeLapsed,
    VerdictReached,
    VoteCast,
)
from adjudge.market.events import (
    Accept,
    Cancel,
    Collect,
    Dispute,
    Event,
    Finalize,
    Lapse,
    Reclaim,
    Release,
    Reveal,
    RevealOverdue,
    Review,
    Rule,
    Submit,
    VerifierVerdict,
)
from adjudge.market.money import (
    DEFAULT_FEE_BPS,
    Transfer,
    escrow_account,
    fee_of,
    platform_account,
    wallet_account,
)
from adjudge.market.ports import Checker
from adjudge.market.signed_verdicts import DETAIL_KEY
from adjudge.market.takes import (
    DEFAULT_TAKE_LIMIT,
    MAX_TAKE_WINDOW_HOURS,
    MIN_TAKE_WINDOW_HOURS,
    holder,
    take_due,
    take_ends_at,
)
from adjudge.market.tasks import (
    DELIVERED,
    MAX_VERIFIERS,
    Draft,
    Ending,
    Mode,
    Seat,
    Status,
    Task,
    Vote,
    digest_of,
)

#: "A deadline between 1 hour and 90 days" from posting.
MIN_DEADLINE = timedelta(hours=1)
MAX_DEADLINE = timedelta(days=90)
#: "Up to 3 submissions in total, all before the deadline."
MAX_ATTEMPTS = 3
#: The shortest salt a task's hidden answer is bound with (the service draws 43 characters).
MIN_CRITERIA_SALT = 16
#: "Only the agent can [dispute], within 3 days of the failed verdict" once the deadline passed.
APPEAL_WINDOW = timedelta(days=3)
#: "The agent can collect the reward 14 days later unless the admin rules."
ESCALATION_WAIT = timedelta(days=14)
#: "You can send up to 20 reasons" (manual review); a verifier returns "up to 10 reasons".
MAX_REVIEW_REASONS = 20
MAX_VERIFIER_REASONS = 10
#: The longest result the market accepts, in characters (the spec is silent; docs/service.md).
MAX_RESULT_CHARS = 200_000
#: How long an agent may hold a task without delivering before the poster may release it (the
#: reference escrow has no such way out; docs/service.md says why adjudge adds one).
RELEASE_GRACE = timedelta(hours=24)


@dataclass(frozen=True)
class Context:
    """Everything a decision may depend on besides the task and the event."""

    now: datetime
    checker: Checker
    fee_bps: int = DEFAULT_FEE_BPS
    #: Tasks one agent may hold taken and not yet submitted (the caller's counter enforces it).
    take_limit: int = DEFAULT_TAKE_LIMIT


@dataclass(frozen=True)
class Outcome:
    """The task after an event and what the caller must apply with it."""

    task: Task
    effects: tuple[Effect, ...] = ()

    @property
    def transfers(self) -> tuple[Transfer, ...]:
        """Every ledger transfer of the outcome: funding, then each settlement's."""
        out: list[Transfer] = []
        for effect in self.effects:
            if isinstance(effect, Transfer):
                out.append(effect)
            elif isinstance(effect, Settlement):
                out.extend(effect.transfers)
        return tuple(out)


def post(task_id: str, draft: Draft, ctx: Context) -> Outcome:
    """Post and fund a task: validate the draft, then move the reward into the task's escrow.

    Refusals, in the order they are checked: ``VERIFICATION_MODE_UNSUPPORTED`` (``oracle`` or any
    unknown mode), ``INVALID_REWARD``, ``INVALID_DEADLINE``, ``INVALID_TAKE_WINDOW`` (whole
    hours, 1 to 2160, and shorter than the time to the deadline), the verifier rules of agent mode
    (``VERIFIER_REQUIRED``, ``VERIFIER_IS_POSTER``, ``VERIFIER_NOT_OPTED_IN``), a seal that is
    not a commitment, on a task that is not auto or whose public criteria carry what it seals
    (``SEAL_INVALID``), then the checker's own post-time refusals (``AUTO_CRITERIA_REQUIRED``,
    ``REGEX_PATTERN_UNUSABLE``…; a sealed answer counts as the real check it will be).
    Whether the poster can pay is the ledger's to say when the transfer is applied.
    """
    if len(draft.panel) == 1 and draft.verifier is None:
        # One verifier named as a panel is the task of one named verifier, exactly.
        seat = draft.panel[0]
        draft = replace(
            draft,
            verifier=seat.verifier,
            verifier_opted_in=seat.opted_in,
            verifier_key=seat.key,
            panel=(),
        )
    try:
        mode = Mode(draft.mode)
    except ValueError:
        raise BadInput(
            f"Verification mode {draft.mode!r} is not supported; use auto, agent or manual.",
            code="VERIFICATION_MODE_UNSUPPORTED",
        ) from None
    reward = draft.reward
    if isinstance(reward, bool) or not isinstance(reward, int) or reward <= 0:
        raise BadInput(
            "The reward must be a positive whole number of minor units.", code="INVALID_REWARD"
        )
    span = draft.deadline - ctx.now
    if not MIN_DEADLINE <= span <= MAX_DEADLINE:
        raise BadInput(
            "The deadline must be between 1 hour and 90 days after posting.",
            code="INVALID_DEADLINE",
        )
    window = draft.take_window_hours
    if window is not None:
        if (
            isinstance(window, bool)
            or not isinstance(window, int)
            or not MIN_TAKE_WINDOW_HOURS <= window <= MAX_TAKE_WINDOW_HOURS
        ):
            raise BadInput(
                f"A take window is a whole number of hours from {MIN_TAKE_WINDOW_HOURS} to "
                f"{MAX_TAKE_WINDOW_HOURS}.",
                code="INVALID_TAKE_WINDOW",
            )
        if timedelta(hours=window) >= span:
            raise BadInput(
                f"A take window of {window} hours reaches the deadline, so a take could never "
                f"lapse: make it shorter than the {span.total_seconds() / 3600:g} hours to the "
                "deadline, or post without one.",
                code="INVALID_TAKE_WINDOW",
            )
    verifier = draft.verifier
    panel, quorum = _panel(draft, mode)
    if panel:
        pass  # the panel's rules were checked by _panel
    elif mode is Mode.AGENT:
        if not verifier:
            raise BadInput("Agent review needs a verifier agent.", code="VERIFIER_REQUIRED")
        if verifier == draft.poster:
            raise BadInput("You cannot name yourself as the verifier.", code="VERIFIER_IS_POSTER")
        if not draft.verifier_opted_in:
            raise StateError(
                f"Agent {verifier} does not take verification jobs; name an opted-in verifier.",
                code="VERIFIER_NOT_OPTED_IN",
            )
    elif verifier is not None:
        raise BadInput("Only agent review names a verifier.", code="VERIFIER_NOT_ALLOWED")
    commitment = None
    admitted = draft.criteria
    if draft.seal is not None:
        commitment = sealing.parse_commitment(draft.seal)
        if mode is not Mode.AUTO:
            raise BadInput(
                "Only auto tasks seal criteria: the sealed answer is the auto check's.",
                code="SEAL_INVALID",
            )
        public = [f for f in sealing.SEALABLE if f in draft.criteria]
        if public:
            raise BadInput(
                f"{public[0]} is sealed: send it in the reveal only, not in the public criteria.",
                code="SEAL_INVALID",
            )
        admitted = sealing.admissible_form(draft.criteria)
    refusals = list(ctx.checker.admissibility(admitted, mode.value))
    if refusals:
        raise refusals[0]
    task = Task(
        id=task_id,
        poster=draft.poster,
        mode=mode,
        reward=reward,
        posted_at=ctx.now,
        deadline=draft.deadline,
        criteria=dict(draft.criteria),
        verifier=verifier,
        verifier_key=draft.verifier_key if mode is Mode.AGENT else None,
        private=draft.private,
        take_window_hours=window,
        seal=commitment,
        panel=tuple(Seat(seat.verifier, seat.key) for seat in panel),
        quorum=quorum,
        criteria_salt=_criteria_salt(draft),
    )
    fund = Transfer(wallet_account(draft.poster), escrow_account(task_id), reward, "fund")
    return Outcome(task, (fund,))


def _criteria_salt(draft: Draft) -> str | None:
    """The secret a hidden answer's criteria digest is salted with (the caller draws it: the
    market draws nothing); none for criteria without an ``expected_answer``."""
    if "expected_answer" not in draft.criteria:
        return None
    salt = draft.criteria_salt
    if not salt or len(salt) < MIN_CRITERIA_SALT:
        raise InternalError(
            "Criteria that hold an expected_answer are posted with a secret salt of at least "
            f"{MIN_CRITERIA_SALT} characters, drawn by the caller; none was given.",
            code="CRITERIA_SALT_MISSING",
        )
    return salt


def _panel(draft: Draft, mode: Mode) -> tuple[tuple[Seat, ...], int]:
    """The draft's panel of verifiers and its quorum k, checked (agent mode, k of n).

    One verifier and k = 1 is the task of a single named verifier (no panel: today's task). A
    panel names 2 to :data:`MAX_VERIFIERS` distinct verifiers with distinct keys, none of them
    the poster, each opted in; k defaults to a majority of them. Refusals: ``VERIFIER_NOT_ALLOWED``,
    ``VERIFIERS_TOO_MANY``, ``VERIFIER_REPEATED``, ``VERIFIER_IS_POSTER``,
    ``VERIFIER_NOT_OPTED_IN``, ``QUORUM_INVALID``.
    """
    panel, quorum = draft.panel, draft.quorum
    if not panel:
        if quorum is not None and quorum != 1:
            raise BadInput(
                "A task with one verifier has a quorum of 1; name more verifiers for a larger "
                "quorum.",
                code="QUORUM_INVALID",
            )
        return (), 1
    if mode is not Mode.AGENT:
        raise BadInput("Only agent review names verifiers.", code="VERIFIER_NOT_ALLOWED")
    if draft.verifier is not None:
        raise BadInput(
            "Name the verifiers once: as a panel, or as the one verifier.",
            code="VERIFIER_REPEATED",
        )
    if len(panel) > MAX_VERIFIERS:
        raise BadInput(
            f"A task names at most {MAX_VERIFIERS} verifiers; this one names {len(panel)}.",
            code="VERIFIERS_TOO_MANY",
        )
    names = [seat.verifier for seat in panel]
    keys = [seat.key for seat in panel if seat.key]
    if len(set(names)) != len(names) or len(set(keys)) != len(keys):
        raise BadInput(
            "Each verifier is named once (and each signs with its own key).",
            code="VERIFIER_REPEATED",
        )
    if not all(names):
        raise BadInput("Agent review needs a verifier agent.", code="VERIFIER_REQUIRED")
    if draft.poster in names:
        raise BadInput("You cannot name yourself as a verifier.", code="VERIFIER_IS_POSTER")
    for seat in panel:
        if not seat.opted_in:
            raise StateError(
                f"Agent {seat.verifier} does not take verification jobs; name an opted-in "
                "verifier.",
                code="VERIFIER_NOT_OPTED_IN",
            )
    k = len(panel) // 2 + 1 if quorum is None else quorum
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(panel):
        raise BadInput(
            f"The quorum (how many verifiers must agree) is a whole number from 1 to "
            f"{len(panel)}, the number of verifiers named.",
            code="QUORUM_INVALID",
        )
    return panel, k


def step(task: Task, event: Event, ctx: Context) -> Outcome:
    """Apply one event to a task; raises :class:`adjudge.Error` when the event is refused.

    A terminal task (completed or cancelled) refuses every event with ``ILLEGAL_TRANSITION``.
    A take whose time is up is lapsed first (:class:`Lapse`), so every event is decided on the
    task as it stands at ``ctx.now``, however late the service gets to the lapse. The outcome
    says whose count of held takes changes (:class:`TakeHeld`, :class:`TakeEnded`).
    """
    if isinstance(event, VerifierVerdict) and task.panel:
        _need_undecided(task, event.actor)
    if task.terminal:
        raise TransitionError(f"Task {task.id} is {task.status}; nothing more can happen to it.")
    before: tuple[Effect, ...] = ()
    current = task
    if not isinstance(event, Lapse) and take_due(task, ctx.now):
        lapsed = _lapse(task, Lapse(), ctx)
        current, before = lapsed.task, lapsed.effects
    if not isinstance(event, RevealOverdue) and sealing.reveal_due(current, ctx.now):
        overdue = _reveal_overdue(current, RevealOverdue(), ctx)
        current, before = overdue.task, (*before, *overdue.effects)
    handler = _HANDLERS[type(event)]
    out = handler(current, event, ctx)
    after = out.task
    if after.reveal_due_at is not None and after.status is not Status.AWAITING_VERIFICATION:
        after = replace(after, reveal_due_at=None)  # a reveal is due only while the agent waits
    return _with_takes(task, Outcome(after, (*before, *out.effects)), ctx)


def _with_takes(task: Task, out: Outcome, ctx: Context) -> Outcome:
    """The outcome with the take it ends and the take it starts, if any (one place, so no
    handler can forget one): the counters the caller keeps follow :func:`holder` exactly."""
    after = out.task
    if after.status is not Status.ASSIGNED and after.take_ends_at is not None:
        after = replace(after, take_ends_at=None)  # only an assigned task holds a take
    was, now = holder(task), holder(after)
    if was == now:
        return Outcome(after, out.effects)
    moved: list[Effect] = []
    if was is not None:
        moved.append(TakeEnded(was, task.id))
    if now is not None:
        moved.append(TakeHeld(now, task.id, ctx.take_limit))
    return Outcome(after, (*out.effects, *moved))


# --- the handlers: one per event, each with the same signature ---------------------------------


def _accept(task: Task, event: Accept, ctx: Context) -> Outcome:
    _need_status(task, Status.FUNDED, "accepted")
    if event.actor == task.poster:
        raise NotAllowed("You cannot take your own task.", code="POSTER_CANNOT_ACCEPT")
    if event.actor in task.verifiers:
        raise NotAllowed("The task's verifier cannot also take it.", code="IS_VERIFIER")
    if event.actor in task.released:
        raise NotAllowed(
            "The poster released you from this task; another agent may take it.",
            code="RELEASED_FROM_TASK",
        )
    if event.actor in task.lapsed:
        raise NotAllowed(
            "Your take of this task lapsed without a submission; another agent may take it.",
            code="TAKE_LAPSED",
        )
    if ctx.now >= task.deadline:
        raise TransitionError("The task's deadline has passed.", code="DEADLINE_REACHED")
    ends = take_ends_at(ctx.now, task.take_window_hours, task.deadline)
    return Outcome(
        replace(
            task, status=Status.ASSIGNED, agent=event.actor, accepted_at=ctx.now, take_ends_at=ends
        )
    )


def _lapse(task: Task, event: Lapse, ctx: Context) -> Outcome:
    """A take whose time is up with nothing submitted.

    Its window ended before the deadline: the task is open again (any other agent may take it;
    this one may not), and the lapse is recorded. The deadline came first: the task stays
    assigned (the poster's reclaim refunds it as undelivered work, as without a window) and the
    take only stops counting toward the agent's limit. No money moves either way. Nothing is
    due (``LAPSE_NOT_DUE``) before the take's end, or without a take that counts.
    """
    ends = task.take_ends_at
    if not take_due(task, ctx.now) or ends is None or task.agent is None:
        raise TransitionError("No take of this task is due to lapse.", code="LAPSE_NOT_DUE")
    if ends >= task.deadline:
        return Outcome(replace(task, take_ends_at=None))
    record = TakeLapsed(task.id, task.agent, task.accepted_at or task.posted_at, ends)
    reopened = replace(
        task,
        status=Status.FUNDED,
        agent=None,
        accepted_at=None,
        take_ends_at=None,
        lapsed=(*task.lapsed, task.agent),
    )
    return Outcome(reopened, (record,))


def _release(task: Task, event: Release, ctx: Context) -> Outcome:
    """The poster's way out of an agent holding the escrow without delivering.

    Only while nothing was ever delivered, and only :data:`RELEASE_GRACE` after the agent took
    the task: the task is open again (the poster may then cancel it) and that agent may not take
    it back.
    """
    _need_poster(task, event.actor)
    _need_status(task, Status.ASSIGNED, "released (it holds a delivery)")
    assert task.agent is not None
    if task.attempts:
        raise TransitionError("A task with a submission cannot be released.")
    taken = task.accepted_at or task.posted_at
    if ctx.now < taken + RELEASE_GRACE:
        raise TransitionError(
            f"The agent may hold the task for {RELEASE_GRACE.total_seconds() / 3600:g} hours "
            f"before you release it: from {(taken + RELEASE_GRACE).isoformat()}.",
            code="RELEASE_TOO_EARLY",
        )
    return Outcome(
        replace(
            task,
            status=Status.FUNDED,
            agent=None,
            accepted_at=None,
            released=(*task.released, task.agent),
        )
    )


def _submit(task: Task, event: Submit, ctx: Context) -> Outcome:
    _need_agent(task, event.actor)
    _need_status(task, (Status.ASSIGNED, Status.FAILED), "given a new submission")
    if task.attempts >= MAX_ATTEMPTS:
        raise TransitionError(
            f"All {MAX_ATTEMPTS} submissions have been used.", code="MAX_ATTEMPTS_REACHED"
        )
    if ctx.now >= task.deadline:
        raise TransitionError(
            "The deadline has passed; no more submissions.", code="DEADLINE_REACHED"
        )
    if len(event.result) > MAX_RESULT_CHARS:
        raise BadInput(
            f"A result may be at most {MAX_RESULT_CHARS} characters.", code="RESULT_TOO_LARGE"
        )
    status = Status.AWAITING_VERIFICATION if task.mode is Mode.AGENT else Status.SUBMITTED
    return Outcome(
        replace(
            task,
            status=status,
            routed=False,
            attempts=task.attempts + 1,
            result_digest=digest_of(event.result),
            submitted_at=ctx.now,
            votes=(),
        )
    )


def _finalize(task: Task, event: Finalize, ctx: Context) -> Outcome:
    _need_agent(task, event.actor)
    if task.mode is not Mode.AUTO:
        raise TransitionError(
            f"Only auto tasks are finalized; this one is judged by {task.mode} review.",
            code="NOT_AUTO_MODE",
        )
    _need_status(task, Status.SUBMITTED, "finalized")
    # The integrity proof a pass needs: the judged bytes are the bytes that were submitted.
    if digest_of(event.result) != task.result_digest:
        raise VerificationFailed(
            "The result to judge differs from the one submitted.", code="RESULT_DIGEST_MISMATCH"
        )
    if task.seal is not None and task.reveal is None:
        # Sealed and not revealed yet: the check waits for the poster's reveal, for so long.
        due = ctx.now + sealing.REVEAL_WINDOW
        waiting = replace(task, status=Status.AWAITING_VERIFICATION, reveal_due_at=due)
        return Outcome(waiting, (RevealRequested(task.id, task.attempts, due),))
    return _auto_check(task, event.result, ctx)


def _auto_check(task: Task, result: str, ctx: Context) -> Outcome:
    """The auto check of the latest submission (its stored copy, ``result``) and its verdict,
    on the criteria judged (a sealed task's public ones with the revealed ones)."""
    assert task.result_digest is not None
    outcome = ctx.checker.check(result, sealing.judged_criteria(task))
    return _judge(
        task,
        ctx,
        proof.auto_check(outcome, task.result_digest),
        stored_result=result,
        score=outcome.score,
        reasons=tuple(outcome.reasons),
        authority="deterministic",
        judge="service",
        detail=dict(outcome.detail),
    )


def _reveal(task: Task, event: Reveal, ctx: Context) -> Outcome:
    """The poster opens a sealed task's seal (:mod:`adjudge.market.seal`).

    Only the poster, once, and only while a submission waits (``SUBMITTED``, or
    ``AWAITING_VERIFICATION`` after the agent asked for the check, which then runs at once).
    A reveal that is not even one (``SEAL_REVEAL_INVALID``) changes nothing. One that does not
    match the commitment, or that reveals criteria no auto check could use, breaks the seal:
    the task escalates (:class:`SealBroken`; the caller refuses the request with
    ``SEAL_MISMATCH``), and an admin rules. No money moves on a broken seal.
    """
    _need_poster(task, event.actor)
    if task.seal is None:
        raise TransitionError("This task has no sealed criteria to reveal.", code="NOT_SEALED")
    if task.reveal is not None:
        raise TransitionError(
            "The sealed criteria were revealed already; a seal opens once.",
            code="SEAL_ALREADY_REVEALED",
        )
    if task.status not in (Status.SUBMITTED, Status.AWAITING_VERIFICATION):
        if task.seal_broken is not None:
            raise TransitionError(
                f"The time to reveal is over: {task.seal_broken}, and the task escalated.",
                code="REVEAL_OVERDUE",
            )
        if task.status in (Status.FUNDED, Status.ASSIGNED):
            raise TransitionError(
                "Sealed criteria are revealed once a submission waits to be judged.",
                code="REVEAL_NOT_DUE",
            )
        raise TransitionError(f"{a_task(task.status)} cannot be revealed.")
    reveal = sealing.parse_reveal(event.document)
    why = sealing.refusal(task, reveal)
    opened = replace(task, reveal=reveal.document(), reveal_due_at=None)
    if why is None:
        refusals = ctx.checker.admissibility(sealing.judged_criteria(opened), Mode.AUTO.value)
        if refusals:
            first = refusals[0]
            why = f"the revealed criteria cannot be used ({first.code}: {first.message})"
    if why is not None:
        broken = SealBroken(task.id, task.attempts, str(task.seal), reveal.digest, why, ctx.now)
        escalated = replace(task, status=Status.ESCALATED, escalated_at=ctx.now, seal_broken=why)
        return Outcome(escalated, (broken,))
    if task.status is Status.SUBMITTED:
        return Outcome(opened)  # the agent's finalize runs the check
    if digest_of(event.result) != task.result_digest:
        raise VerificationFailed(
            "The result to judge differs from the one submitted.", code="RESULT_DIGEST_MISMATCH"
        )
    return _auto_check(opened, event.result, ctx)


def _reveal_overdue(task: Task, event: RevealOverdue, ctx: Context) -> Outcome:
    """The poster let the reveal window pass: the task escalates as delivered work never judged
    (spec 000: reclaiming it does not refund the poster), counted from when the reveal was due,
    so the agent collects 14 days after that unless an admin rules. Nothing is due
    (``REVEAL_NOT_DUE``) before then."""
    if not sealing.reveal_due(task, ctx.now) or task.reveal_due_at is None:
        raise TransitionError("No reveal of this task is overdue.", code="REVEAL_NOT_DUE")
    why = f"the poster did not reveal the sealed criteria by {task.reveal_due_at.isoformat()}"
    escalated = replace(
        task, status=Status.ESCALATED, escalated_at=task.reveal_due_at, seal_broken=why
    )
    return Outcome(escalated)


def _review(task: Task, event: Review, ctx: Context) -> Outcome:
    _need_poster(task, event.actor)
    if task.mode is not Mode.MANUAL and not (task.mode is Mode.AGENT and task.routed):
        raise TransitionError(
            f"Only manual tasks (and agent reviews routed to the poster) are reviewed by the "
            f"poster; this one is {task.mode}.",
            code="NOT_MANUAL_MODE",
        )
    _need_status(task, Status.SUBMITTED, "reviewed")
    _rail_no_self_verification(task, event.actor)
    _need_reasons(event.reasons, MAX_REVIEW_REASONS)
    assert task.result_digest is not None
    return _judge(
        task,
        ctx,
        proof.human(event.passed, event.reasons, event.actor, task.result_digest),
        stored_result=event.stored_result,
        score=None,
        reasons=event.reasons,
        authority="human",
        judge=event.actor,
    )


def _verifier_verdict(task: Task, event: VerifierVerdict, ctx: Context) -> Outcome:
    """The named verifier's verdict decides when the proof folds it to PASS or FAIL: grounded,
    signed, and (for a PASS) under the task's trust in its key. Anything else decides nothing:
    the submission goes to the poster, as in manual review."""
    _rail_no_self_verification(task, event.actor)
    if task.mode is not Mode.AGENT:
        raise TransitionError(
            "Only agent-review tasks take a verifier's verdict.", code="NOT_AGENT_MODE"
        )
    if event.actor not in task.verifiers:
        raise NotAllowed(
            "Only the verifier named at posting may judge this task.", code="NOT_TASK_VERIFIER"
        )
    if task.panel:
        return _vote(task, event, ctx)
    _need_status(task, Status.AWAITING_VERIFICATION, "judged by its verifier")
    _need_reasons(event.reasons, MAX_VERIFIER_REASONS)
    check = proof.verifier(
        task,
        passed=event.passed,
        reasons=event.reasons,
        judge=event.actor,
        grounding=event.grounding,
        signed=event.signed,
    )
    detail = {DETAIL_KEY: dict(event.signed)} if event.signed else {}
    return _judge(
        task,
        ctx,
        check,
        stored_result=event.stored_result,
        score=None,
        reasons=event.reasons,
        authority="verifier",
        judge=event.actor,
        detail=detail,
        undecided=_routing_reason(event.grounding),
    )


def _need_undecided(task: Task, actor: str) -> None:
    """A panel verifier's second vote on a submission, or any vote once the panel decided it,
    is refused: ``VOTE_ALREADY_CAST``, ``QUORUM_DECIDED``."""
    if actor not in task.verifiers:
        return  # refused as not the task's verifier by the handler
    if task.attempts and any(vote.verifier == actor for vote in task.votes):
        raise Conflict(
            "You voted on this submission already; a verifier votes once per submission.",
            code="VOTE_ALREADY_CAST",
        )
    decided = task.status is not Status.AWAITING_VERIFICATION and proof.tally(task) is not None
    if task.attempts and task.votes and decided:
        raise TransitionError(
            f"The verifiers decided this submission already ({a_task(task.status).lower()} "
            "now); a vote arriving after the decision changes nothing.",
            code="QUORUM_DECIDED",
        )


def _vote(task: Task, event: VerifierVerdict, ctx: Context) -> Outcome:
    """One panel verifier's vote (k of n). Each vote is checked as the one verifier's verdict
    is (signed over this submission under its own key, grounded; :func:`proof.verifier`), and
    kept. The task decides when the votes allow it (:func:`proof.tally`): k grounded PASS votes
    and no other vote pay out; k FAIL votes fail the round; once neither can happen any more
    (a split) the task goes to an admin, as a dispute, and no money moves until a ruling."""
    _need_status(task, Status.AWAITING_VERIFICATION, "judged by its verifier")
    _need_reasons(event.reasons, MAX_VERIFIER_REASONS)
    seat = next(s for s in task.panel if s.verifier == event.actor)
    assert seat.key is not None
    check = proof.verifier(
        task,
        passed=event.passed,
        reasons=event.reasons,
        judge=event.actor,
        grounding=event.grounding,
        signed=event.signed,
        verifier_key=seat.key,
    )
    vote = Vote(
        event.actor,
        seat.key,
        event.passed,
        check.verdict.value,
        check.to_dict(),
        ctx.now,
        None if event.signed is None else dict(event.signed),
    )
    voted = replace(task, votes=(*task.votes, vote))
    tally = proof.tally(voted)
    if tally is None:
        return Outcome(voted, (VoteCast(task.id, task.attempts, vote),))
    cast = VoteCast(task.id, task.attempts, vote)
    checks = proof.vote_checks(voted)
    if tally == proof.SPLIT:
        assert task.agent is not None
        why = proof.split_reason(voted)
        routed = Routed(
            task.id,
            task.attempts,
            event.actor,
            why,
            task.result_digest,
            ctx.now,
            None,
            determination=proof.routing(
                voted, event.stored_result, checks, at=ctx.now, reason=why, to="admin"
            ),
        )
        filed = DisputeFiled(task.id, task.attempts, "service", why, ctx.now)
        disputed = replace(voted, status=Status.DISPUTED, disputed_by="service")
        return Outcome(disputed, (cast, routed, filed))
    out = _judge(
        voted,
        ctx,
        checks,
        stored_result=event.stored_result,
        score=None,
        reasons=event.reasons,
        authority="verifier",
        judge=event.actor,
        detail={"quorum": proof.quorum_detail(voted)},
    )
    return Outcome(out.task, (cast, *out.effects))


def _routing_reason(grounding: Any) -> str:
    """Why an agent review that decided nothing goes to the poster."""
    if grounding is None:
        return "the review is not grounded in the brief and the result"
    if not grounding.grounded:
        return str(grounding.reason)
    return "the task's trust policy does not carry this verifier's verdict"


def _dispute(task: Task, event: Dispute, ctx: Context) -> Outcome:
    if event.actor not in (task.poster, task.agent):
        raise NotAllowed("Only the poster or the agent can dispute a task.", code="NOT_A_PARTY")
    _need_status(task, (*DELIVERED, Status.FAILED), "disputed")
    if ctx.now >= task.deadline:
        # "After the deadline, only the agent can, within 3 days of the failed verdict."
        if event.actor != task.agent or task.status is not Status.FAILED:
            raise TransitionError(
                "After the deadline only the agent can dispute, and only a failed verdict.",
                code="DEADLINE_REACHED",
            )
        assert task.failed_at is not None
        if ctx.now >= task.failed_at + APPEAL_WINDOW:
            raise TransitionError(
                "The 3-day appeal window after the failed verdict has closed.",
                code="APPEAL_WINDOW_CLOSED",
            )
    filed = DisputeFiled(task.id, task.attempts, event.actor, event.reason, ctx.now)
    return Outcome(replace(task, status=Status.DISPUTED, disputed_by=event.actor), (filed,))


def _reclaim(task: Task, event: Reclaim, ctx: Context) -> Outcome:
    _need_poster(task, event.actor)
    if ctx.now < task.deadline:
        raise TransitionError(
            "The reward can be reclaimed only after the deadline (cancel an unaccepted task).",
            code="DEADLINE_NOT_REACHED",
        )
    if task.status is Status.FUNDED:
        return _refund(task, ctx, Ending.REFUNDED_UNACCEPTED)
    if task.status is Status.ASSIGNED:
        return _refund(task, ctx, Ending.REFUNDED_UNDELIVERED)
    if task.status is Status.FAILED:
        assert task.failed_at is not None
        if ctx.now < task.failed_at + APPEAL_WINDOW:
            raise TransitionError(
                "The agent's 3-day appeal window after the failed verdict is still open.",
                code="APPEAL_WINDOW_OPEN",
            )
        return _refund(task, ctx, Ending.REFUNDED_AFTER_FAIL)
    if task.status in DELIVERED:
        # Delivered on time and never judged: reclaiming escalates instead of refunding.
        return Outcome(replace(task, status=Status.ESCALATED, escalated_at=ctx.now))
    raise TransitionError(f"{a_task(task.status)} cannot be reclaimed.")


def _collect(task: Task, event: Collect, ctx: Context) -> Outcome:
    _need_agent(task, event.actor)
    _need_status(task, Status.ESCALATED, "collected")
    assert task.escalated_at is not None
    if ctx.now < task.escalated_at + ESCALATION_WAIT:
        raise TransitionError(
            "An escalated reward can be collected 14 days after escalation.",
            code="COLLECT_TOO_EARLY",
        )
    return _pay(task, ctx, Ending.PAID_AFTER_ESCALATION)


def _cancel(task: Task, event: Cancel, ctx: Context) -> Outcome:
    _need_poster(task, event.actor)
    _need_status(task, Status.FUNDED, "cancelled (an agent holds it)")
    return _refund(task, ctx, Ending.REFUNDED_ON_CANCEL)


def _rule(task: Task, event: Rule, ctx: Context) -> Outcome:
    if event.actor in (task.poster, task.agent, *task.verifiers):
        raise NotAllowed(
            "An admin cannot rule on a task they are party to (its poster, agent or verifier).",
            code="CONFLICT_OF_INTEREST",
        )
    _need_status(task, (Status.DISPUTED, Status.ESCALATED), "ruled on")
    assert task.result_digest is not None  # both states hold delivered work
    reasons = (event.note,) if event.note else ()
    determination = _decided(
        task,
        ctx,
        proof.human(event.pay_agent, reasons, event.actor, task.result_digest, ruling=True),
        event.stored_result,
    )
    paid = determination.verdict is Verdict.PASS
    verdict = VerdictReached(
        task_id=task.id,
        attempt=task.attempts,
        passed=paid,
        score=None,
        reasons=reasons,
        authority="human",
        judge=event.actor,
        result_digest=task.result_digest,
        at=ctx.now,
        detail={"ruling": True},
    )
    if paid:
        settled = _pay(task, ctx, Ending.PAID_BY_RULING)
    else:
        settled = _refund(task, ctx, Ending.REFUNDED_BY_RULING)
    return _with_determination(settled, verdict, determination)


_HANDLERS: dict[type[Any], Callable[[Task, Any, Context], Outcome]] = {
    Accept: _accept,
    Lapse: _lapse,
    Release: _release,
    Submit: _submit,
    Finalize: _finalize,
    Reveal: _reveal,
    RevealOverdue: _reveal_overdue,
    Review: _review,
    VerifierVerdict: _verifier_verdict,
    Dispute: _dispute,
    Reclaim: _reclaim,
    Collect: _collect,
    Cancel: _cancel,
    Rule: _rule,
}


# --- shared steps ------------------------------------------------------------------------------


def _decided(
    task: Task, ctx: Context, judgment: Check | tuple[Check, ...], stored_result: str
) -> Determination:
    """The kernel's determination of ``judgment`` (:mod:`adjudge.market.proof`); a stored copy
    that is not the submission (the oracle's MISMATCH) decides nothing and moves nothing."""
    determination = proof.judged(task, stored_result, judgment, at=ctx.now)
    if determination.verdict is Verdict.MISMATCH:
        raise VerificationFailed(
            "The result to judge differs from the one submitted (or a sealed task's reveal "
            "from its commitment).",
            code="RESULT_DIGEST_MISMATCH",
        )
    return determination


def _with_determination(
    settled: Outcome, verdict: VerdictReached, determination: Determination
) -> Outcome:
    """The outcome of a verdict: its determination, with the money it releases (if any) as
    its policy decision, then the settlement's own effects."""
    money = next((e for e in settled.effects if isinstance(e, Settlement)), None)
    if money is not None:
        # A panel's quorum (its own policy decision) is kept beside the money it released.
        decision = {**(determination.policy_decision or {}), **money.decision()}
        determination = proof.settled(determination, decision)
    return Outcome(settled.task, (replace(verdict, determination=determination), *settled.effects))


def _judge(
    task: Task,
    ctx: Context,
    judgment: Check | tuple[Check, ...],
    *,
    stored_result: str,
    score: int | None,
    reasons: tuple[str, ...],
    authority: str,
    judge: str,
    detail: dict[str, Any] | None = None,
    undecided: str | None = None,
) -> Outcome:
    """A verdict on the latest submission, decided by the kernel's determination of
    ``judgment``: PASS pays out, FAIL costs the agent a round, MISMATCH is refused
    (``RESULT_DIGEST_MISMATCH``). Anything else decides nothing: the submission goes to the
    poster (``undecided`` says why; only an agent review can fold so)."""
    assert task.agent is not None
    determination = _decided(task, ctx, judgment, stored_result)
    if determination.verdict not in (Verdict.PASS, Verdict.FAIL):
        why = undecided or f"the judgment folds to {determination.verdict}"
        routed = Routed(
            task.id,
            task.attempts,
            judge,
            why,
            task.result_digest,
            ctx.now,
            task.verifier_key,
            determination=proof.routing(task, stored_result, judgment, at=ctx.now, reason=why),
        )
        return Outcome(replace(task, status=Status.SUBMITTED, routed=True), (routed,))
    passed = determination.verdict is Verdict.PASS
    verdict = VerdictReached(
        task_id=task.id,
        attempt=task.attempts,
        passed=passed,
        score=score,
        reasons=reasons,
        authority=authority,
        judge=judge,
        result_digest=task.result_digest,
        at=ctx.now,
        detail=detail or {},
        verifier_key=task.verifier_key if authority == "verifier" else None,
    )
    if passed:
        return _with_determination(_pay(task, ctx, Ending.PAID_ON_PASS), verdict, determination)
    failed = replace(task, status=Status.FAILED, failed_at=ctx.now)
    return Outcome(
        failed, (replace(verdict, determination=determination), AgentPenalized(task.agent))
    )


def _pay(task: Task, ctx: Context, ending: Ending) -> Outcome:
    """Pay the agent and the platform in one step; the fee is read now, at settlement."""
    assert task.agent is not None
    fee = fee_of(task.reward, ctx.fee_bps)
    escrow = escrow_account(task.id)
    transfers = [Transfer(escrow, wallet_account(task.agent), task.reward - fee, "payout")]
    if fee:
        transfers.append(Transfer(escrow, platform_account(), fee, "fee"))
    done = replace(task, status=Status.COMPLETED, ending=ending, closed_at=ctx.now)
    return Outcome(done, (_settlement(task, ctx, ending, transfers),))


def _refund(task: Task, ctx: Context, ending: Ending) -> Outcome:
    """Return the full reward to the poster; refunds carry no fee."""
    refund = Transfer(escrow_account(task.id), wallet_account(task.poster), task.reward, "refund")
    done = replace(task, status=Status.CANCELLED, ending=ending, closed_at=ctx.now)
    return Outcome(done, (_settlement(task, ctx, ending, [refund]),))


def _settlement(
    task: Task, ctx: Context, ending: Ending, transfers: Sequence[Transfer]
) -> Settlement:
    return Settlement(task.id, task.attempts, ending, tuple(transfers), task.result_digest, ctx.now)


def _rail_no_self_verification(task: Task, judge: str) -> None:
    """The kernel's first, second and contract rails: only a named actor who never claimed the
    task, committed none of its submissions, and is not its worker may conclude it.

    The task's current cycle is its latest submission; the agent claimed it in every cycle. A
    task nobody holds has nothing to judge: the state checks refuse it instead.
    """
    if task.agent is None:
        return
    cycle = task.attempts
    refusal = rails.no_self_verification(
        [rails.Claim(task.agent, cycle)], [rails.Verification(judge, cycle)], current_cycle=cycle
    )
    # The second rail: the work is anchored by its submissions, each committed by the agent
    # that delivered it (earlier rounds as superseded links: a resubmission erases no author).
    refusal = refusal or rails.verifier_not_author(
        judge,
        [rails.Link(task.agent, superseded=n < task.attempts) for n in range(1, task.attempts + 1)],
    )
    # And a worker never accepts the contract for its own attempt.
    refusal = refusal or rails.no_contract_self_acceptance(task.agent, judge)
    if refusal is not None:
        raise NotAllowed(
            f"An agent never judges its own work ({refusal.code}: {refusal.reason}).",
            code="SELF_VERIFICATION",
        )


#: A task in each state, as a sentence starts: the right article, and words, not snake_case.
_A_TASK = {
    Status.FUNDED: "A funded task",
    Status.ASSIGNED: "An assigned task",
    Status.SUBMITTED: "A submitted task",
    Status.AWAITING_VERIFICATION: "A task awaiting verification",
    Status.FAILED: "A failed task",
    Status.DISPUTED: "A disputed task",
    Status.ESCALATED: "An escalated task",
    Status.COMPLETED: "A completed task",
    Status.CANCELLED: "A cancelled task",
}


def a_task(status: Status) -> str:
    """A task in ``status``, as a sentence starts: "An assigned task", "A task awaiting
    verification"."""
    return _A_TASK[status]


def _need_status(task: Task, allowed: Status | Sequence[Status], doing: str) -> None:
    states = (allowed,) if isinstance(allowed, Status) else tuple(allowed)
    if task.status not in states:
        raise TransitionError(f"{a_task(task.status)} cannot be {doing}.")


def _need_agent(task: Task, actor: str) -> None:
    if actor != task.agent:
        if actor in task.lapsed:
            raise NotAllowed(
                "Your take of this task lapsed: its take window ended before you submitted, "
                "and the task is open to other agents.",
                code="TAKE_LAPSED",
            )
        raise NotAllowed("Only the agent holding the task can do this.", code="NOT_TASK_AGENT")


def _need_poster(task: Task, actor: str) -> None:
    if actor != task.poster:
        raise NotAllowed("Only the task's poster can do this.", code="NOT_TASK_POSTER")


def _need_reasons(reasons: Sequence[str], limit: int) -> None:
    if len(reasons) > limit:
        raise BadInput(f"Send at most {limit} reasons.", code="TOO_MANY_REASONS")
