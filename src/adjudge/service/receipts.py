"""Receipt routes: the log's head, one receipt, its envelope, a task's receipts, the export,
the replay bundles of a task's and a call's verdict, and the admin's ledger."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query

from adjudge.app.receipts import LEDGER_PAGE, LEDGER_PAGE_MAX, MAX_AFTER
from adjudge.service.deps import Caller, Switch, Use, WholeNumber, router

routes = router()


@routes.get("/receipts/head", tags=["receipts"])
def receipts_head(*, who: Caller, app: Use) -> dict[str, Any]:
    """The receipt log: ``count`` receipts; when one lane holds them all, the ``sequence`` and
    id (``digest``) of the last (the first receipt is sequence 0, as its signed statement
    says); each lane's head (``lanes``); and the signing ``key``."""
    return app.receipts.head()


@routes.post("/receipts/checkpoint", status_code=201, tags=["receipts"])
def receipts_checkpoint(*, who: Caller, app: Use) -> dict[str, Any]:
    """Issue a checkpoint of the log now (admins): a receipt naming every lane's head
    (``heads``), to export the log through and pin."""
    return app.receipts.checkpoint(who)


@routes.get("/receipts", tags=["receipts"])
def export(
    *,
    who: Caller,
    app: Use,
    after: Annotated[int | None, Query(ge=0, le=MAX_AFTER), WholeNumber] = None,
    limit: Annotated[int, Query(ge=1, le=1000), WholeNumber] = 100,
    through: Annotated[str | None, Query(max_length=160)] = None,
) -> dict[str, Any]:
    """The log in the order it was written (admins): the receipts whose ``position`` is above
    ``after`` (from the first, position 0, without it; on a log of one lane, the position is
    the sequence), cut at the checkpoint ``through`` when given (required once several lanes
    hold receipts); ``next_after`` continues, null at the end."""
    return app.receipts.export(who, after=after, limit=limit, through=through)


@routes.get("/receipts/{receipt_id}", tags=["receipts"])
def receipt(*, receipt_id: str, who: Caller, app: Use) -> dict[str, Any]:
    """One receipt (a private task's only for its parties, a call's for the call's), with its
    signed ``statement`` decoded and ``as_of``: each check and the verdict as they read now."""
    return app.receipts.get(who, receipt_id)


@routes.get("/receipts/{receipt_id}/envelope", tags=["receipts"])
def receipt_envelope(*, receipt_id: str, who: Caller, app: Use) -> dict[str, Any]:
    """The signed envelope alone, to save and check with ``adjudge receipt verify``."""
    return app.receipts.envelope(who, receipt_id)


@routes.get("/tasks/{task_id}/receipts", tags=["receipts"])
def task_receipts(*, task_id: str, who: Caller, app: Use) -> dict[str, Any]:
    """A task's receipts in chain order."""
    return app.receipts.of_task(who, task_id)


@routes.get("/tasks/{task_id}/bundle", tags=["receipts"])
def task_bundle(
    *,
    task_id: str,
    who: Caller,
    app: Use,
    attempt: Annotated[int | None, Query(ge=1, le=1000), WholeNumber] = None,
) -> dict[str, Any]:
    """The replay bundle of a task's auto-check verdict (the latest, or round ``attempt``'s):
    its signed receipt, the stored result, the criteria, the engine and the receipt key, for
    the task's parties and admins. ``adjudge receipt bundle --task ID`` zips it and ``adjudge
    replay`` re-runs it offline (docs/replay.md)."""
    return app.bundles.task(who, task_id, attempt=attempt)


@routes.get("/calls/{call_id}/bundle", tags=["receipts"])
def call_bundle(*, call_id: str, who: Caller, app: Use) -> dict[str, Any]:
    """The replay bundle of a paid call's verification: its signed receipt, request, response,
    contract, policy and judgments, for the call's parties and admins (docs/replay.md)."""
    return app.bundles.call(who, call_id)


@routes.get("/ledger/lines", tags=["service"])
def ledger_lines(
    *,
    who: Caller,
    app: Use,
    account: Annotated[str | None, Query(max_length=160)] = None,
    kind: Annotated[str | None, Query(max_length=32)] = None,
    since: Annotated[str | None, Query(max_length=40)] = None,
    until: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=500), WholeNumber] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
    totals: Switch = False,
) -> dict[str, Any]:
    """Ledger lines newest first, a page at a time: each movement (amount in minor units,
    signed: a debit is negative) with the account on its other side and the receipt that
    released it. An admin's every account, anyone else's own (``NOT_YOUR_ACCOUNT`` for
    another's). ``kind``: deposit, fund, payout, fee, refund, reserve, charge, void, release,
    report refund. ``since``/``until``: ISO dates or times, ``until`` exclusive (a bare date:
    through that day). ``totals``: the filter's count, credits, debits and net (of every
    line it keeps, not only the page's; kept by UTC day as money moves)."""
    return app.receipts.ledger_lines(
        who,
        account=account,
        kind=kind,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
        totals=totals,
    )


@routes.get("/ledger", tags=["service"])
def ledger(
    *,
    who: Caller,
    app: Use,
    recount: Switch = False,
    limit: Annotated[int, Query(ge=1, le=LEDGER_PAGE_MAX), WholeNumber] = LEDGER_PAGE,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> dict[str, Any]:
    """A page of balances by account name (an emptied escrow or call reservation has none;
    ``next_cursor`` fetches the next page) and all deposits (admin). ``recount=true`` adds the
    audit, which reads every balance row and every ledger line ever written:
    ``sum_of_balances`` and ``sum_of_entries`` (zero in a sound ledger) and ``unmatched``, the
    accounts whose balance is not the sum of their lines (none; the first 100 by name); else
    all three are null."""
    return app.receipts.ledger(who, recount=recount, limit=limit, cursor=cursor)
