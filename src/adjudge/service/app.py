"""The HTTP API under ``/api/v1``: thin routes over :class:`Marketplace`.

Every route but ``/health`` needs ``Authorization: Bearer <API key>``. State-changing routes
honour an ``Idempotency-Key`` header: a retry with the same key and body gets the stored answer
(marked ``Idempotent-Replayed: true``) and changes nothing; the same key with another body is
refused with ``IDEMPOTENCY_KEY_REUSED``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

import adjudge
from adjudge import web
from adjudge.errors import Error
from adjudge.service import errors
from adjudge.service.calls import router as calls_router
from adjudge.service.marketplace import Idempotency, Marketplace, Response
from adjudge.service.views import account_view, is_party, receipt_view, task_view
from adjudge.store import Account, Transaction

#: The largest amount the ledger's 64-bit columns hold.
MAX_AMOUNT = 2**63 - 1

_bearer = HTTPBearer(auto_error=False, description="The account's API key.")


class PostTask(BaseModel):
    """A task to post and fund. ``reward`` is in integer minor units ("2000000" is 2 USDC)."""

    title: str = Field(min_length=1, max_length=200)
    brief: str = Field(default="", max_length=100_000)
    reward: int | str
    deadline: datetime | None = Field(default=None, description="Aware ISO 8601; naive is UTC.")
    deadline_hours: float | None = Field(default=None, description="Instead of deadline.")
    mode: str = Field(default="manual", description="auto, agent or manual (the default).")
    criteria: dict[str, Any] = Field(default_factory=dict)
    verifier: str | None = None
    private: bool = False


class SubmitResult(BaseModel):
    """A delivered result."""

    result: str = Field(max_length=200_000)


class Judgment(BaseModel):
    """A pass or a fail with reasons (manual review: at most 20; a verifier: at most 10)."""

    passed: bool
    reasons: list[Annotated[str, Field(max_length=2000)]] = Field(default_factory=list)


class SignedJudgment(Judgment):
    """A verifier's verdict with the verifier's own Ed25519 signature over its payload."""

    signature: str | None = Field(
        default=None,
        max_length=200,
        description="Standard base64 of the Ed25519 signature of the verdict payload's RFC 8785 "
        "JSON: type adjudge.verifier-verdict/v1, task_id, attempt, result_digest, passed, "
        "reasons, verifier_key (see docs/service.md).",
    )
    public_key: str | None = Field(
        default=None,
        max_length=100,
        description="Standard base64 of the raw 32-byte public key the verifier account "
        "registered (its fingerprint is the task's verifier key).",
    )


class DisputeBody(BaseModel):
    """Why the task is disputed."""

    reason: str = Field(default="", max_length=4000)


class Ruling(BaseModel):
    """An admin's ruling: pay the agent, or refund the poster."""

    pay_agent: bool
    note: str = Field(default="", max_length=4000)


class NewAccount(BaseModel):
    """An account to create; its API key is in the response, once."""

    id: str = Field(min_length=1, max_length=64)
    roles: list[str] = Field(min_length=1)
    verifier_opt_in: bool = False
    verifier_public_key: str | None = Field(
        default=None,
        max_length=100,
        description="A verifier's Ed25519 public key (base64, raw 32 bytes); without it a new "
        "key pair is made and its private key returned once.",
    )


class Deposit(BaseModel):
    """Money entering an account from outside, in integer minor units."""

    amount: int | str


class OptIn(BaseModel):
    """Whether a verifier takes verification jobs."""

    verifier_opt_in: bool


def _amount(value: int | str, code: str) -> int:
    text = str(value)
    if isinstance(value, bool) or not text.isdigit() or not 0 < int(text) <= MAX_AMOUNT:
        raise Error("An amount is a positive whole number of minor units.", code=code)
    return int(text)


def _reply(response: Response) -> JSONResponse:
    headers = {"Idempotent-Replayed": "true"} if response.replayed else None
    return JSONResponse(response.body, status_code=response.status, headers=headers)


# The two dependencies are async so they run on the event loop instead of costing a thread
# handoff each; a key seen recently is answered from memory, an unknown one reads the store once.
async def _market(request: Request) -> Marketplace:
    market = request.app.state.market
    assert isinstance(market, Marketplace)
    return market


Market = Annotated[Marketplace, Depends(_market)]


async def _caller(
    market: Market, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Account:
    return market.authenticate(creds.credentials if creds else None)


Caller = Annotated[Account, Depends(_caller)]
IdemKey = Annotated[str | None, Header(alias="Idempotency-Key", max_length=255)]


def idem(key: str | None, request: Request, payload: BaseModel | None) -> Idempotency | None:
    """The request's idempotency key with its fingerprint (None without a key)."""
    body = payload.model_dump(mode="json") if payload is not None else None
    return Idempotency.of(key, request.method, request.url.path, body)


router = APIRouter(prefix="/api/v1")


def create_app(market: Marketplace, *, threads: int | None = None) -> FastAPI:
    """The FastAPI application over ``market``.

    ``threads`` caps the worker threads that run the (blocking) routes; fewer threads contend
    less for the interpreter and, on SQLite, for the one write lock.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if threads is not None:
            anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        yield

    app = FastAPI(
        lifespan=lifespan,
        title="adjudge",
        version=adjudge.__version__,
        description="Post paid tasks, judge results, move escrowed money, and prove every verdict.",
    )
    app.state.market = market
    errors.install(app)
    app.include_router(router)
    app.include_router(calls_router)
    app.mount("/ui", StaticFiles(directory=web.STATIC, html=True), name="ui")

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        """The web UI."""
        return RedirectResponse("/ui/")

    return app


# --- health and accounts ----------------------------------------------------------------


@router.get("/health", tags=["service"])
def health(*, market: Market) -> dict[str, Any]:
    """Liveness, the database kind, and the chain head."""
    seq, digest = market.read(lambda tx: tx.head())
    return {"ok": True, "database": market.store.dialect, "receipts": seq, "head": digest}


@router.post("/accounts", status_code=201, tags=["accounts"])
def create_account(*, body: NewAccount, who: Caller, market: Market) -> dict[str, Any]:
    """Create an account (admin). The API key is returned once and never stored."""
    if "admin" not in who.roles:
        raise Error("Only an admin creates accounts.", code="ROLE_REQUIRED")
    account, key, private = market.create_account_with_keys(
        body.id,
        body.roles,
        opt_in=body.verifier_opt_in,
        verifier_public_key=body.verifier_public_key,
    )
    made: dict[str, Any] = {"account": account_view(account), "api_key": key}
    if private is not None:
        made["verifier_private_key"] = private
    return made


@router.get("/accounts/me", tags=["accounts"])
def me(*, who: Caller, market: Market) -> dict[str, Any]:
    """The caller's account and wallet balance."""

    def run(tx: Transaction) -> dict[str, Any]:
        fresh = tx.account(who.id)
        assert fresh is not None
        return account_view(fresh, tx)

    return market.read(run)


@router.patch("/accounts/me", tags=["accounts"])
def opt_in(*, body: OptIn, who: Caller, market: Market) -> dict[str, Any]:
    """A verifier turns "take verification jobs" on or off."""
    return account_view(market.set_opt_in(who, body.verifier_opt_in))


@router.post("/accounts/{account_id}/deposits", tags=["accounts"])
def deposit(*, account_id: str, body: Deposit, who: Caller, market: Market) -> dict[str, Any]:
    """Credit money from outside to an account's wallet (admin)."""
    if "admin" not in who.roles:
        raise Error("Only an admin records deposits.", code="ROLE_REQUIRED")
    balance = market.deposit(account_id, _amount(body.amount, "INVALID_AMOUNT"))
    return {"account": account_id, "balance": str(balance)}


@router.get("/agents/{account_id}", tags=["accounts"])
def agent_record(*, account_id: str, who: Caller, market: Market) -> dict[str, Any]:
    """An agent's record: reputation (0-100) and dispute count."""

    def run(tx: Transaction) -> dict[str, Any]:
        account = tx.account(account_id)
        if account is None:
            raise Error(f"No account {account_id}.", code="ACCOUNT_NOT_FOUND")
        return account_view(account)

    return market.read(run)


@router.get("/verifiers", tags=["accounts"])
def verifiers(*, who: Caller, market: Market) -> dict[str, Any]:
    """Verifier agents that take verification jobs (the only ones agent review accepts)."""
    return {"verifiers": market.read(lambda tx: [account_view(a) for a in tx.verifiers()])}


# --- tasks ------------------------------------------------------------------------------


@router.post("/tasks", status_code=201, tags=["tasks"])
def post_task(
    *, body: PostTask, who: Caller, market: Market, request: Request, key: IdemKey = None
) -> JSONResponse:
    """Post a task and fund its escrow from the poster's wallet. Mode defaults to manual."""
    now = market.clock.now()
    if body.deadline is not None:
        deadline = body.deadline if body.deadline.tzinfo else body.deadline.replace(tzinfo=UTC)
    elif body.deadline_hours is not None and 0 < body.deadline_hours < 24 * 366:
        deadline = now + timedelta(hours=body.deadline_hours)
    else:
        raise Error("Send a deadline (or deadline_hours).", code="INVALID_DEADLINE")
    return _reply(
        market.post_task(
            who,
            title=body.title,
            brief=body.brief,
            reward=_amount(body.reward, "INVALID_REWARD"),
            deadline=deadline,
            mode=body.mode,
            criteria=body.criteria,
            verifier=body.verifier,
            private=body.private,
            idem=idem(key, request, body),
            render=task_view,
        )
    )


@router.get("/tasks", tags=["tasks"])
def list_tasks(
    *,
    who: Caller,
    market: Market,
    status: str | None = None,
    mode: str | None = None,
    mine: bool = False,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> dict[str, Any]:
    """Tasks, newest first; ``mine`` keeps the caller's own (posted, taken or verifying)."""

    def run(tx: Transaction) -> dict[str, Any]:
        found = tx.tasks(
            status=status,
            mode=mode,
            involving=who.id if mine else None,
            limit=limit,
            offset=offset,
        )
        return {"tasks": [task_view(tx, t, who) for t in found]}

    return market.read(run)


@router.get("/tasks/{task_id}", tags=["tasks"])
def get_task(*, task_id: str, who: Caller, market: Market) -> dict[str, Any]:
    """One task as the caller may see it."""
    return market.read(lambda tx: task_view(tx, market.task(tx, task_id), who))


@router.post("/tasks/{task_id}/accept", tags=["lifecycle"])
def accept(
    *, task_id: str, who: Caller, market: Market, request: Request, key: IdemKey = None
) -> JSONResponse:
    """An agent takes a funded task."""
    return _reply(market.accept(who, task_id, idem=idem(key, request, None), render=task_view))


@router.post("/tasks/{task_id}/submissions", tags=["lifecycle"])
def submit(
    *,
    task_id: str,
    body: SubmitResult,
    who: Caller,
    market: Market,
    request: Request,
    key: IdemKey = None,
) -> JSONResponse:
    """The agent delivers a result: one of its 3 submissions, before the deadline."""
    return _reply(
        market.submit(
            who, task_id, result=body.result, idem=idem(key, request, body), render=task_view
        )
    )


@router.post("/tasks/{task_id}/finalize", tags=["lifecycle"])
def finalize(
    *, task_id: str, who: Caller, market: Market, request: Request, key: IdemKey = None
) -> JSONResponse:
    """The agent asks for the auto check of its latest submission (auto mode)."""
    return _reply(market.finalize(who, task_id, idem=idem(key, request, None), render=task_view))


@router.post("/tasks/{task_id}/review", tags=["lifecycle"])
def review(
    *,
    task_id: str,
    body: Judgment,
    who: Caller,
    market: Market,
    request: Request,
    key: IdemKey = None,
) -> JSONResponse:
    """The poster approves or rejects a submitted result (manual mode, up to 20 reasons)."""
    return _reply(
        market.review(
            who,
            task_id,
            passed=body.passed,
            reasons=body.reasons,
            idem=idem(key, request, body),
            render=task_view,
        )
    )


@router.post("/tasks/{task_id}/verdict", tags=["lifecycle"])
def verdict(
    *,
    task_id: str,
    body: SignedJudgment,
    who: Caller,
    market: Market,
    request: Request,
    key: IdemKey = None,
) -> JSONResponse:
    """The named verifier judges (agent mode, up to 10 reasons), signed with its own key."""
    return _reply(
        market.verifier_verdict(
            who,
            task_id,
            passed=body.passed,
            reasons=body.reasons,
            signature=body.signature,
            public_key=body.public_key,
            idem=idem(key, request, body),
            render=task_view,
        )
    )


@router.post("/tasks/{task_id}/disputes", tags=["lifecycle"])
def dispute(
    *,
    task_id: str,
    body: DisputeBody,
    who: Caller,
    market: Market,
    request: Request,
    key: IdemKey = None,
) -> JSONResponse:
    """The poster or the agent disputes; an admin rules."""
    return _reply(
        market.dispute(
            who, task_id, reason=body.reason, idem=idem(key, request, body), render=task_view
        )
    )


@router.post("/tasks/{task_id}/reclaim", tags=["lifecycle"])
def reclaim(
    *, task_id: str, who: Caller, market: Market, request: Request, key: IdemKey = None
) -> JSONResponse:
    """After the deadline: a refund, or an escalation for delivered work never judged."""
    return _reply(market.reclaim(who, task_id, idem=idem(key, request, None), render=task_view))


@router.post("/tasks/{task_id}/collect", tags=["lifecycle"])
def collect(
    *, task_id: str, who: Caller, market: Market, request: Request, key: IdemKey = None
) -> JSONResponse:
    """The agent collects an escalated reward 14 days after escalation."""
    return _reply(market.collect(who, task_id, idem=idem(key, request, None), render=task_view))


@router.post("/tasks/{task_id}/cancel", tags=["lifecycle"])
def cancel(
    *, task_id: str, who: Caller, market: Market, request: Request, key: IdemKey = None
) -> JSONResponse:
    """The poster withdraws a task nobody has accepted; the full reward comes back."""
    return _reply(market.cancel(who, task_id, idem=idem(key, request, None), render=task_view))


@router.post("/tasks/{task_id}/ruling", tags=["lifecycle"])
def ruling(
    *,
    task_id: str,
    body: Ruling,
    who: Caller,
    market: Market,
    request: Request,
    key: IdemKey = None,
) -> JSONResponse:
    """An admin rules on a disputed or escalated task."""
    return _reply(
        market.rule(
            who,
            task_id,
            pay_agent=body.pay_agent,
            note=body.note,
            idem=idem(key, request, body),
            render=task_view,
        )
    )


@router.post("/tasks/{task_id}/dry-run", tags=["tasks"])
def dry_run(*, task_id: str, body: SubmitResult, who: Caller, market: Market) -> dict[str, Any]:
    """Check a draft against the task's criteria; uses no attempt and touches no reputation."""
    return market.dry_run(who, task_id, body.result)


# --- receipts ---------------------------------------------------------------------------


@router.get("/receipts/head", tags=["receipts"])
def receipts_head(*, who: Caller, market: Market) -> dict[str, Any]:
    """The receipt log's length and the digest of its last receipt."""
    seq, digest = market.read(lambda tx: tx.head())
    return {"seq": seq, "digest": digest, "key": getattr(market.issuer, "fingerprint", None)}


@router.get("/receipts/{receipt_id}", tags=["receipts"])
def receipt(*, receipt_id: str, who: Caller, market: Market) -> dict[str, Any]:
    """One receipt (a private task's receipts only to its parties)."""

    def run(tx: Transaction) -> dict[str, Any]:
        found = tx.receipt(receipt_id)
        if found is None:
            raise Error(f"No receipt {receipt_id}.", code="RECEIPT_NOT_FOUND")
        if found.task_id:
            _may_see(market, tx, found.task_id, who)
        return receipt_view(found)

    return market.read(run)


@router.get("/receipts/{receipt_id}/envelope", tags=["receipts"])
def receipt_envelope(*, receipt_id: str, who: Caller, market: Market) -> dict[str, Any]:
    """The signed envelope alone, to save and check with ``adjudge receipt verify``."""

    def run(tx: Transaction) -> dict[str, Any]:
        found = tx.receipt(receipt_id)
        if found is None:
            raise Error(f"No receipt {receipt_id}.", code="RECEIPT_NOT_FOUND")
        if found.task_id:
            _may_see(market, tx, found.task_id, who)
        envelope = found.body.get("envelope")
        if not isinstance(envelope, dict):
            raise Error("This receipt is not signed.", code="RECEIPT_NOT_FOUND")
        return envelope

    return market.read(run)


@router.get("/tasks/{task_id}/receipts", tags=["receipts"])
def task_receipts(*, task_id: str, who: Caller, market: Market) -> dict[str, Any]:
    """A task's receipts in chain order."""

    def run(tx: Transaction) -> dict[str, Any]:
        _may_see(market, tx, task_id, who)
        return {"receipts": [receipt_view(r) for r in tx.receipts(task_id)]}

    return market.read(run)


def _may_see(market: Marketplace, tx: Transaction, task_id: str, who: Account) -> None:
    stored = market.task(tx, task_id)
    if stored.task.private and not is_party(stored, who):
        raise Error("A private task's receipts are for its parties.", code="NOT_A_PARTY")


@router.get("/ledger", tags=["service"])
def ledger(*, who: Caller, market: Market) -> dict[str, Any]:
    """Every balance and the two sums that prove the ledger whole (admin)."""
    if "admin" not in who.roles:
        raise Error("Only an admin reads the whole ledger.", code="ROLE_REQUIRED")

    def run(tx: Transaction) -> dict[str, Any]:
        balances, entries = tx.ledger_total()
        return {
            "balances": {k: str(v) for k, v in sorted(tx.balances().items())},
            "sum_of_balances": str(balances),
            "sum_of_entries": str(entries),
        }

    return market.read(run)
