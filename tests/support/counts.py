"""The dashboards' counts, the ledger's totals, the webhook deliveries by status and the open
holds made again from the rows they count: what :mod:`adjudge.store.day_counts` keeps as it goes
must always equal this."""

from __future__ import annotations

from collections import Counter
from datetime import UTC

from sqlalchemy import select

from adjudge.calls.quality import counted_as, enters_window
from adjudge.store import Transaction, holds, outbox
from adjudge.store import calls as calls_db
from adjudge.store import day_counts as dc
from adjudge.store import gateway as gateway_db
from adjudge.store import schema as s
from adjudge.store.held_days import day_of
from adjudge.store.ledger import Movements

_FLOW_OF = {memo: flow for flow, memos in dc.FLOW_MEMOS.items() for memo in memos}


def recount(tx: Transaction) -> dict[dc.Key, int]:
    """Every count, from full scans of the calls, verdicts, ledger lines, records, tasks and holds
    (an observed call counted as its final verdict, when a later judgment gave one; a
    provider's own calls of its tools in no quality count)."""
    counts: Counter[dc.Key] = Counter()

    def add(family: str, subject: str, day: str, name: str, n: int = 1) -> None:
        counts[family, subject, day, dc.counted_name(name)] += n

    g = gateway_db.calls.c
    for provider, started_at, verdict in tx.conn.execute(
        select(g.provider, g.started_at, g.verdict).where(g.state == "done")
    ):
        for subject in (dc.EVERYONE, str(provider)):
            add(dc.CALLS, subject, day_of(started_at), verdict or dc.NO_VERDICT)
    v, t = s.verdicts.c, s.tasks.c
    for poster, at, passed, detail in tx.conn.execute(
        select(t.poster, v.at, v.passed, v.detail).join_from(s.verdicts, s.tasks)
    ):
        if passed is None:
            continue
        day, outcome = day_of(at), "passed" if passed else "failed"
        add(dc.VERDICTS, dc.EVERYONE, day, outcome)
        add(dc.VERDICTS, str(poster), day, outcome)
        if not passed:
            for rule in dc.failed_rules(detail or {}):
                add(dc.RULES, str(poster), day, rule)
    e = s.ledger_entries.c
    for account, memo, signed, at in tx.conn.execute(select(e.account, e.memo, e.amount, e.at)):
        day, amount = day_of(at), int(signed)
        flow = _FLOW_OF.get(str(memo))
        if flow is not None and amount > 0:
            add(dc.FLOWS, dc.EVERYONE, day, flow, amount)
        for when in (day, dc.ALL_TIME):
            add(dc.LEDGER, dc.EVERYONE, when, f"lines {memo}")
            if amount > 0:
                add(dc.LEDGER, dc.EVERYONE, when, f"in {memo}", amount)
            if not str(account).startswith(("escrow:", "hold:")):
                add(dc.LEDGER, str(account), when, f"lines {memo}")
                side = "in" if amount > 0 else "out"
                add(dc.LEDGER, str(account), when, f"{side} {memo}", amount)
    r = calls_db.call_records.c
    rows = select(
        r.provider,
        r.submitted_by,
        r.at,
        r.record,
        r.source,
        r.final_verdict,
        r.enforced,
        r.error_kind,
    )
    for provider, caller, at, record, source, final, enforced, error_kind in tx.conn.execute(rows):
        for name in dc.failed_checks(record or {}):
            add(dc.CHECKS, str(provider), day_of(at), name)
        if enters_window(str(source), str(caller), str(provider)):
            kind = counted_as(final or record.get("verdict"), bool(enforced), error_kind)
            add(dc.QUALITY, str(provider), day_of(at), kind)
    for poster, status in tx.conn.execute(select(t.poster, t.status)):
        add(dc.STATES, str(poster), dc.ALL_TIME, str(status))
    for (status,) in tx.conn.execute(select(outbox.webhook_deliveries.c.status)):
        add(dc.DELIVERIES, dc.EVERYONE, dc.ALL_TIME, str(status))
    h = holds.provider_holds.c
    open_holds = select(h.matures_at, h.amount).where(h.state.in_((holds.HELD, holds.REPORTED)))
    for matures_at, amount in tx.conn.execute(open_holds):
        add(dc.HOLDS, dc.EVERYONE, dc.hour_of(matures_at), dc.OPEN_HOLDS)
        add(dc.HOLDS, dc.EVERYONE, dc.ALL_TIME, dc.OPEN_HOLDS)
        add(dc.HOLDS, dc.EVERYONE, dc.ALL_TIME, dc.HELD_MONEY, int(amount))
    return {k: n for k, n in counts.items() if n}


def ledger_totals(tx: Transaction, which: Movements) -> dict[str, int]:
    """What :func:`adjudge.store.ledger.movement_totals` answers, from every ledger line."""
    e = s.ledger_entries.c
    lines = credits = debits = 0
    for account, memo, amount, at in tx.conn.execute(select(e.account, e.memo, e.amount, e.at)):
        if which.accounts is not None and account not in which.accounts:
            continue
        if which.kind is not None and memo != which.kind:
            continue
        moment = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
        if (which.since is not None and moment < which.since) or (
            which.until is not None and moment >= which.until
        ):
            continue
        lines += 1
        credits += max(int(amount), 0)
        debits += min(int(amount), 0)
    return {"lines": lines, "credits": credits, "debits": debits, "net": credits + debits}
