"""Task routes: post, list, read, and every step of the lifecycle."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any

import anyio.to_thread
from fastapi import Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, BeforeValidator, Field, StrictBool, StrictFloat, StrictInt

from adjudge.app import Account, App
from adjudge.app.tasks import SlowCheck, screens_slow
from adjudge.service.deps import (
    Amount,
    Caller,
    IdemKey,
    Switch,
    Use,
    WholeNumber,
    amount,
    checked,
    reply,
    router,
)

routes = router()
#: ISO 8601 text begins with its year and a hyphen; the schema reads anything else it can as a
#: time too: a number, or a string of digits, as Unix seconds (above 2e10 as milliseconds).
_ISO_DATE = re.compile(r"[0-9]{4}-")


def _iso_text(value: object) -> object:
    if value is not None and not (isinstance(value, str) and _ISO_DATE.match(value)):
        raise ValueError(
            "a deadline is ISO 8601 text with its offset, such as 2026-12-04T10:00:00Z "
            "(or send deadline_hours)"
        )
    return value


class PostTask(BaseModel):
    """A task to post and fund. ``reward`` is in integer minor units ("2000000" is 2 USDC)."""

    title: str = Field(min_length=1, max_length=200)
    brief: str = Field(default="", max_length=100_000)
    reward: Amount
    deadline: Annotated[datetime | None, BeforeValidator(_iso_text)] = Field(
        default=None, description="Aware ISO 8601; naive is UTC."
    )
    deadline_hours: StrictFloat | None = Field(
        default=None, description="Instead of deadline: hours from posting (1 to 2160)."
    )
    mode: str = Field(default="manual", description="auto, agent or manual (the default).")
    criteria: dict[str, Any] = Field(default_factory=dict)
    verifier: str | None = Field(default=None, max_length=64)
    verifiers: list[Annotated[str, Field(max_length=64)]] = Field(
        default_factory=list,
        max_length=64,
        description="Agent review by a panel instead of one verifier: 2 to 9 distinct opted-in "
        "verifiers, each voting with its own signed verdict (VERIFIERS_TOO_MANY, "
        "VERIFIER_REPEATED, VERIFIER_IS_POSTER, VERIFIER_NOT_OPTED_IN).",
    )
    quorum: StrictInt | None = Field(
        default=None,
        description="How many of the verifiers must agree (k of n, 1 to n; QUORUM_INVALID). "
        "Absent: a majority of them.",
    )
    private: StrictBool = False
    lenient_criteria: StrictBool = Field(
        default=False,
        description="Post criteria with fields the auto check does not know (it ignores them); "
        "without it such a field is refused with CRITERIA_UNKNOWN_FIELD.",
    )
    take_window_hours: StrictInt | None = Field(
        default=None,
        description="Whole hours (1 to 2160, shorter than the time to the deadline) an agent "
        "may hold the task without submitting: then its take lapses and the task is open "
        "again (no money moves). Absent: a take lasts until the deadline. Otherwise "
        "INVALID_TAKE_WINDOW.",
    )
    seal: str | None = Field(
        default=None,
        max_length=71,
        description="Auto tasks: a commitment to sealed criteria instead of a public-to-the-"
        "service expected_answer, sha256:<hex> of the RFC 8785 JSON of the reveal "
        '{"criteria": {"expected_answer": …}, "salt": …}. Public on the task; the poster '
        "reveals when a submission is to be judged (POST /tasks/{id}/reveal). Otherwise "
        "SEAL_INVALID.",
    )


class SubmitResult(BaseModel):
    """A delivered result."""

    result: str = Field(max_length=200_000)


class Judgment(BaseModel):
    """A pass or a fail with reasons (manual review: at most 20; a verifier: at most 10)."""

    passed: StrictBool
    reasons: list[Annotated[str, Field(max_length=2000)]] = Field(
        default_factory=list, max_length=100
    )


class PosterReview(Judgment):
    """A poster's review, bound to the submission it judged: the task's attempt and result
    digest as the poster saw them (either may be left out; the console sends both)."""

    attempt: StrictInt | None = Field(default=None, ge=1, le=1_000)
    result_digest: str | None = Field(default=None, max_length=80)


class Quote(BaseModel):
    """A span of the brief or the result the verdict relies on (code-point offsets)."""

    artifact: str = Field(max_length=16, description="brief or result")
    start: StrictInt = Field(ge=0, le=10_000_000)
    end: StrictInt = Field(ge=0, le=10_000_000)
    text: str = Field(max_length=20_000)
    quoteHash: str = Field(max_length=80, description="sha256:<hex> of the text's UTF-8 bytes")


class SignedJudgment(Judgment):
    """A verifier's verdict with the verifier's own Ed25519 signature over its payload, and the
    quotes from the brief and the result that ground it."""

    quotes: list[Quote] = Field(
        default_factory=list,
        max_length=64,
        description="At least one quote from the brief and one from the result; without them "
        "(or if one does not resolve) the submission goes to the poster instead of paying.",
    )

    signature: str | None = Field(
        default=None,
        max_length=200,
        description="Standard base64 of the Ed25519 signature of the verdict payload's RFC 8785 "
        "JSON: type adjudge.verifier-verdict/v2, task_id, attempt, result_digest, "
        "brief_digest, passed, reasons, quotes, verifier_key (see docs/service.md).",
    )
    public_key: str | None = Field(
        default=None,
        max_length=100,
        description="Optional: standard base64 of the raw 32-byte public key (the service uses "
        "the key the verifier registered).",
    )


class RevealBody(BaseModel):
    """A sealed task's reveal: the sealed criteria and the salt the commitment was made with."""

    criteria: dict[str, Any] = Field(description='The sealed criteria: {"expected_answer": …}.')
    salt: str = Field(max_length=256, description="The poster's salt, as committed.")


class DisputeBody(BaseModel):
    """Why the task is disputed."""

    reason: str = Field(default="", max_length=4000)


class Ruling(BaseModel):
    """An admin's ruling: pay the agent, or refund the poster."""

    pay_agent: StrictBool
    note: str = Field(default="", max_length=4000)


@routes.post("/tasks", status_code=201, tags=["tasks"])
async def post_task(*, body: PostTask, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """Post a task and fund its escrow from the poster's wallet. Mode defaults to manual."""
    deadline = body.deadline
    if deadline is not None and deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=UTC)
    job = partial(
        app.tasks.post,
        who,
        title=body.title,
        brief=body.brief,
        reward=amount(body.reward, "INVALID_REWARD"),
        deadline=deadline,
        deadline_hours=body.deadline_hours,
        mode=body.mode,
        criteria=body.criteria,
        verifier=body.verifier,
        private=body.private,
        lenient_criteria=body.lenient_criteria,
        take_window_hours=body.take_window_hours,
        seal=body.seal,
        verifiers=tuple(body.verifiers),
        quorum=body.quorum,
        key=key,
    )
    # Posting screens the criteria before its write; when the screens run matches in the regex
    # worker pool, the post waits in the poster's own slow lane, as a slow finalize does.
    slow = screens_slow(body.mode, body.criteria)
    wait = app.settings.slow_check_wait_seconds
    return reply(await checked(slow, job, who.id, wait=wait), 201)


@routes.get("/tasks", tags=["tasks"])
def list_tasks(
    *,
    who: Caller,
    app: Use,
    status: Annotated[str | None, Query(max_length=32)] = None,
    mode: Annotated[str | None, Query(max_length=16)] = None,
    mine: Switch = False,
    poster: Annotated[str | None, Query(max_length=64)] = None,
    agent: Annotated[str | None, Query(max_length=64)] = None,
    text: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=200), WholeNumber] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:
    """Tasks, newest first, a page at a time (``next_cursor`` fetches the next page); summaries
    only. ``mine`` keeps the caller's own (posted, taken or verifying); ``poster`` and
    ``agent`` keep one account's; ``text`` searches titles (any case; never a brief)."""
    return app.tasks.find(
        who,
        status=status,
        mode=mode,
        mine=mine,
        poster=poster,
        agent=agent,
        text=text,
        limit=limit,
        cursor=cursor,
    )


@routes.get("/tasks/{task_id}", tags=["tasks"])
def get_task(*, task_id: str, who: Caller, app: Use) -> dict[str, Any]:
    """One task as the caller may see it."""
    return app.tasks.get(who, task_id)


@routes.post("/tasks/{task_id}/accept", tags=["lifecycle"])
def accept(*, task_id: str, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """An agent takes a funded task: at most the service's take limit held undelivered at once
    (TAKE_LIMIT_REACHED); within the task's take window, if it has one, it must submit."""
    return reply(app.tasks.accept(who, task_id, key=key))


@routes.post("/tasks/{task_id}/release", tags=["lifecycle"])
def release(*, task_id: str, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """The poster takes back a task whose agent delivered nothing within 24 hours of taking it;
    it is open again (and may then be cancelled), and that agent cannot take it back."""
    return reply(app.tasks.release(who, task_id, key=key))


@routes.post("/tasks/{task_id}/submissions", tags=["lifecycle"])
def submit(
    *, task_id: str, body: SubmitResult, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """The agent delivers a result: one of its 3 submissions, before the deadline."""
    return reply(app.tasks.submit(who, task_id, body.result, key=key))


@routes.post("/tasks/{task_id}/finalize", tags=["lifecycle"])
async def finalize(*, task_id: str, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """The agent asks for the auto check of its latest submission (auto mode)."""
    return await finalized(app, who, task_id, key)


async def finalized(app: App, who: Account, task_id: str, key: str | None) -> JSONResponse:
    """The finalize route's answer, which its lane past the framework gives too
    (:mod:`adjudge.service.lanes`)."""
    # A quick check runs inside its write, awaited on the event loop (SQLite: written there).
    # Most other checks are fast: try on the request threads, and only a check that needs the
    # regex worker pool (it says so before doing anything) goes again to the slow lane.
    done = await app.tasks.finalize_here(who, task_id, key=key)
    if done is not None:
        return reply(done)
    wait = app.settings.slow_check_wait_seconds
    try:
        fast = partial(app.tasks.finalize, who, task_id, key=key, fast_only=True)
        return reply(await checked(False, fast, who.id, wait=wait))
    except SlowCheck:
        job = partial(app.tasks.finalize, who, task_id, key=key)
        return reply(await checked(True, job, who.id, wait=wait))


@routes.post("/tasks/{task_id}/reveal", tags=["lifecycle"])
async def reveal(
    *, task_id: str, body: RevealBody, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """The poster reveals a sealed task's criteria once a submission waits: matched against the
    commitment made at posting, and judged at once if the agent is waiting. A reveal that does
    not match escalates the task and is refused with SEAL_MISMATCH."""
    document = {"criteria": body.criteria, "salt": body.salt}
    # The reveal screens the revealed criteria and runs the check before its write; tried on
    # the request threads, and only a reveal whose screens or check need the regex worker pool
    # (it says so before doing anything) waits in the poster's own slow lane, as a finalize.
    wait = app.settings.slow_check_wait_seconds
    try:
        fast = partial(app.tasks.reveal, who, task_id, document, key=key, fast_only=True)
        return reply(await checked(False, fast, who.id, wait=wait))
    except SlowCheck:
        job = partial(app.tasks.reveal, who, task_id, document, key=key)
        return reply(await checked(True, job, who.id, wait=wait))


@routes.post("/tasks/{task_id}/review", tags=["lifecycle"])
def review(
    *, task_id: str, body: PosterReview, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """The poster approves or rejects a submitted result (manual mode, up to 20 reasons); with
    ``attempt`` or ``result_digest``, only the submission it names (``SUBMISSION_CHANGED``
    when the agent has submitted again since)."""
    return reply(
        app.tasks.review(
            who,
            task_id,
            passed=body.passed,
            reasons=body.reasons,
            attempt=body.attempt,
            result_digest=body.result_digest,
            key=key,
        )
    )


@routes.post("/tasks/{task_id}/verdict", tags=["lifecycle"])
def verdict(
    *, task_id: str, body: SignedJudgment, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """The named verifier judges (agent mode, up to 10 reasons), signed with its own key."""
    return reply(
        app.tasks.verdict(
            who,
            task_id,
            passed=body.passed,
            reasons=body.reasons,
            signature=body.signature,
            public_key=body.public_key,
            quotes=[q.model_dump() for q in body.quotes],
            key=key,
        )
    )


@routes.post("/tasks/{task_id}/disputes", tags=["lifecycle"])
def dispute(
    *, task_id: str, body: DisputeBody, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """The poster or the agent disputes, with a reason kept on the task; an admin rules."""
    return reply(app.tasks.dispute(who, task_id, reason=body.reason, key=key))


@routes.post("/tasks/{task_id}/reclaim", tags=["lifecycle"])
def reclaim(*, task_id: str, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """After the deadline: a refund, or an escalation for delivered work never judged."""
    return reply(app.tasks.reclaim(who, task_id, key=key))


@routes.post("/tasks/{task_id}/collect", tags=["lifecycle"])
def collect(*, task_id: str, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """The agent collects an escalated reward 14 days after escalation."""
    return reply(app.tasks.collect(who, task_id, key=key))


@routes.post("/tasks/{task_id}/cancel", tags=["lifecycle"])
def cancel(*, task_id: str, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """The poster withdraws a task nobody holds; the full reward comes back."""
    return reply(app.tasks.cancel(who, task_id, key=key))


@routes.post("/tasks/{task_id}/ruling", tags=["lifecycle"])
def ruling(
    *, task_id: str, body: Ruling, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """An admin rules on a disputed or escalated task."""
    return reply(app.tasks.rule(who, task_id, pay_agent=body.pay_agent, note=body.note, key=key))


@routes.post("/tasks/{task_id}/dry-run", tags=["tasks"])
async def dry_run(*, task_id: str, body: SubmitResult, who: Caller, app: Use) -> dict[str, Any]:
    """The holding agent checks a draft against the task's public rules (its hidden expected
    answer never runs); uses no attempt, touches no reputation; 20 an hour per task."""
    slow = await anyio.to_thread.run_sync(app.tasks.needs_slow_check, task_id)
    return await checked(
        slow,
        lambda: app.tasks.dry_run(who, task_id, body.result),
        who.id,
        wait=app.settings.slow_check_wait_seconds,
    )
