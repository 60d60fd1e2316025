"""Account routes: accounts and their keys, deposits, agents' records, the verifier directory."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, StrictBool, StrictInt

from adjudge.app.keys import MAX_KEY_PAGE
from adjudge.service.deps import (
    Amount,
    Caller,
    IdemKey,
    Switch,
    Use,
    WholeNumber,
    amount,
    reply,
    router,
)

routes = router()
Fingerprint = Annotated[str, Path(pattern=r"^[0-9a-f]{64}$")]


class NewAccount(BaseModel):
    """An account to create; its API key is in the response, once."""

    id: str = Field(min_length=1, max_length=64)
    roles: list[str] = Field(min_length=1, max_length=5)
    verifier_opt_in: StrictBool = False
    verifier_public_key: str | None = Field(
        default=None,
        max_length=100,
        description="A verifier's Ed25519 public key (standard base64 of the raw 32 bytes); the "
        "verifier may also register it later. The service never makes or holds private keys.",
    )


class Deposit(BaseModel):
    """Money entering an account from outside, in integer minor units."""

    amount: Amount


class OptIn(BaseModel):
    """Whether a verifier takes verification jobs."""

    verifier_opt_in: StrictBool


class NewKey(BaseModel):
    """A verifier's new public key (rotation: it becomes the active key)."""

    public_key: str = Field(max_length=100)


class NewApiKey(BaseModel):
    """An extra API key for an agent or a script, with optional spending limits."""

    label: str = Field(min_length=1, max_length=100)
    max_per_call_minor: StrictInt | None = Field(
        default=None, ge=0, le=2**63 - 1, description="The most one paid call may cost."
    )
    max_per_day_minor: StrictInt | None = Field(
        default=None, ge=0, le=2**63 - 1, description="The most its paid calls reserve a UTC day."
    )


class KeyLimits(BaseModel):
    """An extra key's spending limits, in minor units (null: no limit)."""

    max_per_call_minor: StrictInt | None = Field(default=None, ge=0, le=2**63 - 1)
    max_per_day_minor: StrictInt | None = Field(default=None, ge=0, le=2**63 - 1)


KeyId = Annotated[str, Path(pattern=r"^key_[0-9a-f]{16}$")]


@routes.post("/accounts", status_code=201, tags=["accounts"])
def create_account(*, body: NewAccount, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """Create an account (admin). The API key is returned once; a retry with the same
    Idempotency-Key returns it again to the same caller, and nobody else can read it."""
    answer = app.accounts.create(
        who,
        body.id,
        body.roles,
        opt_in=body.verifier_opt_in,
        verifier_public_key=body.verifier_public_key,
        key=key,
    )
    return reply(answer, 201)


@routes.post("/accounts/{account_id}/api-key", tags=["accounts"])
def reissue_key(*, account_id: str, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """Give an account a new API key (admin); the old one stops working. The way back from a
    lost key."""
    return reply(app.accounts.reissue_key(who, account_id, key=key))


@routes.get("/accounts/me", tags=["accounts"])
def me(*, who: Caller, app: Use) -> dict[str, Any]:
    """The caller's account, its wallet balance and, for a verifier, its keys."""
    return app.accounts.me(who)


@routes.patch("/accounts/me", tags=["accounts"])
def opt_in(*, body: OptIn, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """A verifier turns "take verification jobs" on or off."""
    return reply(app.accounts.set_opt_in(who, body.verifier_opt_in, key=key))


@routes.post("/accounts/me/verifier-keys", status_code=201, tags=["accounts"])
def add_key(*, body: NewKey, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """A verifier registers a public key it made; it becomes its active key."""
    return reply(app.accounts.add_verifier_key(who, body.public_key, key=key), 201)


@routes.post("/accounts/me/verifier-keys/{fingerprint}/revoke", tags=["accounts"])
def revoke_key(
    *, fingerprint: Fingerprint, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """A verifier revokes one of its keys: nothing signed with it is accepted from now on;
    receipts naming it stay verifiable."""
    return reply(app.accounts.revoke_verifier_key(who, fingerprint, key=key))


@routes.post("/accounts/me/api-keys", status_code=201, tags=["accounts"])
def create_api_key(*, body: NewApiKey, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """Make an extra API key with optional spending limits (the account's own key only). The
    key is returned once; a retry with the same Idempotency-Key returns it again."""
    answer = app.keys.create(
        who,
        body.label,
        max_per_call=body.max_per_call_minor,
        max_per_day=body.max_per_day_minor,
        key=key,
    )
    return reply(answer, 201)


@routes.get("/accounts/me/api-keys", tags=["accounts"])
def list_api_keys(
    *,
    who: Caller,
    app: Use,
    revoked: Switch = False,
    limit: Annotated[int, Query(ge=1, le=MAX_KEY_PAGE), WholeNumber] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:
    """The account's live extra keys (at most 50, one answer), their limits and what each spent
    today; with ``revoked=true``, the keys it revoked, newest revoked first, a page at a time
    (``next_cursor`` fetches the next)."""
    return app.keys.list(who, revoked=revoked, cursor=cursor, limit=limit)


@routes.patch("/accounts/me/api-keys/{key_id}", tags=["accounts"])
def limit_api_key(
    *, key_id: KeyId, body: KeyLimits, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """Replace an extra key's spending limits; they hold from the next call."""
    answer = app.keys.set_limits(
        who,
        key_id,
        max_per_call=body.max_per_call_minor,
        max_per_day=body.max_per_day_minor,
        key=key,
    )
    return reply(answer)


@routes.post("/accounts/me/api-keys/{key_id}/revoke", tags=["accounts"])
def revoke_api_key(*, key_id: KeyId, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """End an extra key: it pays for nothing from now on."""
    return reply(app.keys.revoke(who, key_id, key=key))


@routes.post("/accounts/{account_id}/deposits", tags=["accounts"])
def deposit(
    *, account_id: str, body: Deposit, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """Credit money from outside to an account's wallet (admin). Send an Idempotency-Key: a
    retry with it never credits twice."""
    return reply(
        app.accounts.deposit(who, account_id, amount(body.amount, "INVALID_AMOUNT"), key=key)
    )


@routes.get("/agents/{account_id}", tags=["accounts"])
def agent_record(*, account_id: str, who: Caller, app: Use) -> dict[str, Any]:
    """An agent's record: reputation (0-100) and dispute count."""
    return app.accounts.record(account_id)


@routes.get("/verifiers", tags=["accounts"])
def verifiers(
    *,
    who: Caller,
    app: Use,
    limit: Annotated[int, Query(ge=1, le=200), WholeNumber] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> dict[str, Any]:
    """Verifier agents that take verification jobs (the only ones agent review accepts), by
    id, a page at a time (``next_cursor`` fetches the next page)."""
    return app.accounts.verifiers(limit=limit, cursor=cursor)
