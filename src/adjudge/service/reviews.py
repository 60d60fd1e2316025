"""Review-queue routes: a verifier's worker leases the submissions waiting for it."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import Path
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, StrictInt

from adjudge.service.deps import Caller, IdemKey, Use, WholeNumber, reply, router

routes = router()


class Claim(BaseModel):
    """How many submissions to lease, and for how long."""

    limit: StrictInt = Field(default=10, ge=1, le=50)
    lease_seconds: StrictInt = Field(default=300, ge=1, le=3600)


class Failure(BaseModel):
    """Why judging a leased submission failed (a model error, a timeout, an unusable answer),
    and the lease it ends."""

    error: str = Field(max_length=2000)
    lease_token: str | None = Field(
        default=None,
        max_length=64,
        description=(
            "The lease_token of the claimed job. Required: a report without one is refused "
            "(400 LEASE_TOKEN_REQUIRED), and one naming a lease no longer in force is refused "
            "(409 LEASE_NOT_HELD); neither changes anything."
        ),
    )


@routes.post("/reviews/claim", tags=["reviews"])
def claim(*, body: Claim, who: Caller, app: Use, key: IdemKey = None) -> JSONResponse:
    """Lease the submissions waiting for the calling verifier, with what judging each needs and
    each lease's token and end. A claim sent again with its Idempotency-Key is answered with
    the same leases still in force (the texts read again) and leases nothing more; a lease that
    ran out or a report ended since is not a job of it but named under ``lapsed`` (task and
    attempt): claim anew with a new key for what waits."""
    lease = timedelta(seconds=body.lease_seconds)
    return reply(app.reviews.claim(who, limit=body.limit, lease=lease, key=key))


#: A submission's attempt number (a task takes a few; the bound keeps it a database integer).
Attempt = Annotated[int, Path(ge=1, le=1000), WholeNumber]


@routes.post("/reviews/{task_id}/{attempt}/failed", tags=["reviews"])
def failed(
    *, task_id: str, attempt: Attempt, body: Failure, who: Caller, app: Use, key: IdemKey = None
) -> JSONResponse:
    """Report a failed judgment under the lease its token names: the lease ends; after 5
    failures the submission is given up. A report sent again with its Idempotency-Key is
    answered as it was and counts once."""
    answer = app.reviews.failed(
        who, task_id, attempt, body.error, lease_token=body.lease_token, key=key
    )
    return reply(answer)
