"""What must hold of a store after anything at all: the books, the receipts, the task states.

Read straight from the database, so no use case can hide a fault from it:

- the ledger balances (both sums zero), each account's balance is the sum of its lines, an
  emptied escrow or reservation has no row, and it holds exactly the money deposited;
- no account but ``world`` is negative; an escrow holds its task's reward until the task ends,
  and nothing after;
- every leg that took money out of an escrow, a call's reservation or a provider's hold names
  a receipt whose policy decision (signed; for the tests' unsigned issuer, its statement)
  decided exactly that amount, to exactly the account it went to;
- and the other way round, every receipt states exactly the money written with it: the ledger
  lines naming it (a matured charge's aside, which names the receipt that settled its call)
  are the transfers its decision states, each amount from and to the accounts it names, and
  no other (a task's payout, fee or refund; a call's charge, refund or void of its
  reservation; a judgment's refund from the hold, or none; an upheld ruling's refund);
- every verdict has its receipt; each lane of the receipt log is one unbroken chain, its head
  row naming its last receipt, and the positions order each lane; no receipt is superseded
  twice;
- every task is in a state the lifecycle can reach;
- a provider's hold account holds exactly its calls' charges still held or under report, and
  each names the receipt that settled it;
- each agent's counter of held takes equals a recount over the tasks, and the dashboards' daily
  counts a recount of the calls, verdicts, ledger lines, records and tasks they count;
- the keys asked for a meaning judgment are those a recount of the pending calls names;
- each verifier's review queue is the submissions awaiting its judgment: the tasks awaiting
  verification, for their named verifier and each panel seat that has not voted, where no
  worker gave up.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import delete, insert, select

from adjudge.market import Status, escrow_account
from adjudge.market.lifecycle import MAX_ATTEMPTS
from adjudge.store import (
    Store,
    calls,
    day_counts,
    gateway,
    holds,
    leases,
    ledger,
    meaning_queue,
    receipt_log,
    records,
    takes,
)
from adjudge.store import schema as s
from support.counts import recount

_NEEDS_AGENT = {
    Status.ASSIGNED,
    Status.SUBMITTED,
    Status.AWAITING_VERIFICATION,
    Status.FAILED,
    Status.ESCALATED,
}


def audit(store: Store, deposited: int | None = None) -> dict[str, int]:
    """Assert every invariant above; return counts of what was checked."""
    with store.read() as tx:
        held = ledger.balances(tx)
        counted = ledger.recount(tx)
        books = (sum(held.values()), counted.sum_of_entries, counted.unmatched)
        assert books == (0, 0, []), books
        emptied = [a for a, n in held.items() if n == 0 and a.startswith(ledger.ITEM_PREFIXES)]
        assert not emptied, f"emptied escrows or reservations kept their rows: {emptied}"
        for account, amount in held.items():
            assert account == "world" or amount >= 0, (account, amount)
        if deposited is not None:
            assert ledger.deposits(tx) == deposited, (ledger.deposits(tx), deposited)
        chain = receipt_log.chain(tx)
        by_id = {r.id: r for r in chain}
        lanes: dict[int, tuple[int, str | None]] = {}
        for receipt in chain:
            count, previous = lanes.get(receipt.lane, (0, None))
            assert receipt.seq == count + 1 and receipt.previous == previous, receipt.id
            lanes[receipt.lane] = (count + 1, receipt.digest)
        heads = {lane.lane: (lane.count, lane.digest) for lane in receipt_log.lanes(tx)}
        assert {n: h for n, h in heads.items() if h[0]} == lanes, (heads, lanes)
        credits = _credits(tx)
        for leg in ledger.releases(tx):
            receipt = by_id.get(leg["receipt_id"])
            assert receipt is not None, f"a release without its receipt: {leg}"
            assert receipt.task_id == leg["task_id"], leg
            credit = credits[(leg["txn"], -int(leg["amount"]))]
            _signed_for(tx, leg, credit, _decision(receipt.body))
        _money_stated(tx, chain)
        replaced = [_predicate(r.body).get("supersedesReceiptId") for r in chain]
        twice = {d for d in replaced if d is not None and replaced.count(d) > 1}
        assert not twice, f"receipts superseded twice: {twice}"
        waiting: dict[str, int] = {}
        for hold in holds.open_holds(tx):
            assert hold.receipt_id in by_id, f"a hold without its receipt: {hold}"
            assert hold.amount > 0, hold
            waiting[hold.provider] = waiting.get(hold.provider, 0) + hold.amount
        for account, amount in held.items():
            if account.startswith("held:"):
                assert waiting.pop(account[len("held:") :], 0) == amount, (account, amount)
        assert not waiting, f"holds without their money: {waiting}"
        verdicts = records.verdicts(tx)
        for verdict in verdicts:
            assert verdict.receipt_id in by_id, verdict
        tasks = records.tasks(tx, limit=100_000).items
        for stored in tasks:
            t = stored.task
            escrow = held.get(escrow_account(t.id), 0)
            assert escrow == (0 if t.terminal else t.reward), (t.id, t.status, escrow)
            assert 0 <= t.attempts <= MAX_ATTEMPTS
            assert (t.ending is not None) == t.terminal, (t.id, t.status, t.ending)
            if t.status in _NEEDS_AGENT:
                assert t.agent is not None, (t.id, t.status)
            if t.status is Status.FUNDED:
                assert t.agent is None, t.id
            if t.status in (Status.SUBMITTED, Status.AWAITING_VERIFICATION, Status.ESCALATED):
                assert t.attempts >= 1 and t.result_digest is not None, t.id
            if t.status is Status.FAILED:
                assert t.failed_at is not None, t.id
            if t.status is not Status.ASSIGNED:
                assert t.take_ends_at is None, (t.id, t.status)
        assert takes.counted(tx) == takes.recount(tx), (takes.counted(tx), takes.recount(tx))
        assert leases.queued(tx) == leases.recount(tx), (leases.queued(tx), leases.recount(tx))
        kept, counted = day_counts.stored(tx), recount(tx)
        assert kept == counted, {k: (kept.get(k), counted.get(k)) for k in {*kept, *counted}}
        _asks_recounted(tx)
        return {"receipts": len(chain), "verdicts": len(verdicts), "tasks": len(tasks)}


def _asks_recounted(tx: Any) -> None:
    """The keys asked for a meaning judgment are, per pending call, its policy's ``key:``
    judges that have not signed (a call whose policy is gone: none signed), and no call
    judged asks anyone."""
    q, a, k = meaning_queue.queue.c, meaning_queue.asks.c, meaning_queue.key_judgments_table.c
    asked: dict[str, set[str]] = {}
    for row in tx.conn.execute(select(a.call_id, a.judge)):
        asked.setdefault(row.call_id, set()).add(row.judge)
    signed = {(r.call_id, r.judge) for r in tx.conn.execute(select(k.call_id, k.judge))}
    documents = {r.digest: r.document for r in tx.conn.execute(select(calls.call_policies))}
    for row in tx.conn.execute(select(q.call_id, q.state, q.policy_digest)):
        mine = asked.pop(row.call_id, set())
        assert all((row.call_id, judge) not in signed for judge in mine), (row.call_id, mine)
        if row.state != meaning_queue.PENDING:
            assert not mine, (row.call_id, row.state, mine)
        elif row.policy_digest in documents:
            judges = (documents[row.policy_digest].get("meaning") or {}).get("judges") or []
            expected = {j for j in judges if j.startswith("key:")}
            assert mine == {j for j in expected if (row.call_id, j) not in signed}, row.call_id
    assert not asked, f"asks for calls never queued: {asked}"


def _credits(tx: Any) -> dict[tuple[str, int], str]:
    """The account each transfer credited, by its ``txn`` and amount (a transfer's two legs
    share its ``txn``)."""
    e = s.ledger_entries.c
    rows = tx.conn.execute(select(e.txn, e.account, e.amount).where(e.amount > 0))
    return {(r.txn, int(r.amount)): str(r.account) for r in rows}


def _decision(body: Any) -> dict[str, Any]:
    """What a receipt's statement decided about money (signed: its decoded statement; the
    tests' unsigned issuer: its statement as kept)."""
    import base64  # noqa: PLC0415
    import json  # noqa: PLC0415

    envelope = body.get("envelope") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        decision = json.loads(base64.b64decode(envelope["payload"]))["predicate"]["policyDecision"]
    else:
        decision = body["statement"]["policyDecision"]
    assert isinstance(decision, dict), body
    return decision


def _signed_for(tx: Any, leg: dict[str, Any], credit: str, decision: dict[str, Any]) -> None:
    """The money a release moved is what its receipt decided: the amount and the party it went
    to, exactly (a task's payout, fee or refund as its settlement names them; a call's charge,
    refund or void as its verdict or ruling says, to its provider or its caller)."""
    amount, memo, debit = -int(leg["amount"]), str(leg["memo"]), str(leg["account"])
    seen = (leg, credit, decision)
    if debit.startswith("escrow:"):  # a task's settlement: each transfer named with its party
        assert decision.get(memo) == str(amount), seen
        assert decision.get(f"{memo}To") == credit, seen
        return
    call_id = str(decision["callId"])
    if debit.startswith("hold:call:"):  # a call's reservation, as its verdict decided
        assert debit == f"hold:call:{call_id}", seen
        if memo == "charge":
            assert (decision["payment"], decision["chargeMinor"]) == ("settle", amount), seen
            provider = decision["provider"]
            assert credit in (f"held:{provider}", f"wallet:{provider}"), seen
        else:
            assert (decision["payment"], decision["priceMinor"]) == (memo, amount), seen
            assert decision["caller"] == _caller(tx, call_id), seen
            assert credit == f"wallet:{decision['caller']}", seen
        return
    hold = holds.get(tx, call_id)  # a provider's hold: the call's held charge
    assert hold is not None and debit == f"held:{hold.provider}", seen
    assert hold.amount == amount, (hold, seen)
    if memo == "release":  # matured, against the receipt that settled the call
        assert hold.receipt_id == leg["receipt_id"], (hold, seen)
        assert (decision["payment"], decision["chargeMinor"]) == ("settle", amount), seen
        assert credit == f"wallet:{hold.provider}", seen
        return
    if memo == "report refund":  # an upheld report's ruling
        assert (decision["ruling"], decision["refundMinor"]) == ("upheld", amount), seen
    else:  # a meaning judgment that failed the call, superseding its receipt
        assert (memo, decision["payment"], decision["priceMinor"]) == ("refund", "refund", amount)
    assert hold.end_receipt_id == leg["receipt_id"], (hold, seen)
    assert decision["caller"] == hold.caller, (hold, seen)
    assert credit == f"wallet:{decision['caller']}", seen


#: A ledger line as a receipt states it: its memo, the account debited, the one credited, the
#: amount.
Line = tuple[str, str, str, int]


def _money_stated(tx: Any, chain: list[Any]) -> None:
    """Every receipt's decision states exactly the lines written with it (see the module's
    docstring): a statement of money that never moved, or a line its receipt does not state,
    is a defect of the proof."""
    e = s.ledger_entries.c
    credits = _credits(tx)
    written: dict[str, Counter[Line]] = {}
    rows = tx.conn.execute(
        select(e.txn, e.account, e.amount, e.memo, e.receipt_id).where(
            e.amount < 0, e.receipt_id.is_not(None)
        )
    )
    for r in rows:
        if r.memo == "release" and str(r.account).startswith("held:"):
            continue  # a matured charge: written later, against the receipt that settled it
        line = (str(r.memo), str(r.account), credits[(r.txn, -int(r.amount))], -int(r.amount))
        written.setdefault(str(r.receipt_id), Counter())[line] += 1
    at = {r.id: n for n, r in enumerate(chain)}
    for receipt in chain:
        predicate = _predicate(receipt.body)
        decision = predicate.get("policyDecision")
        stated = _stated(tx, receipt, decision, at) if isinstance(decision, dict) else []
        found = written.pop(receipt.id, Counter())
        assert Counter(stated) == found, (receipt.id, decision, stated, dict(found))
    assert not written, f"lines naming receipts not on the log: {written}"


def _stated(tx: Any, receipt: Any, decision: dict[str, Any], at: dict[str, int]) -> list[Line]:
    """The lines a receipt's decision states, checked against the call's state where it states
    none (a judgment's charge that stands, or that had gone back before it)."""
    if "callId" not in decision:  # a task's settlement (each transfer and its party), or none
        escrow = escrow_account(str(decision.get("task", receipt.task_id)))
        return [
            (memo, escrow, str(decision[f"{memo}To"]), int(amount))
            for memo, amount in decision.items()
            if f"{memo}To" in decision and int(amount) > 0
        ]
    call_id = str(decision["callId"])
    forwarded = gateway.call(tx, call_id)
    if forwarded is None:  # a reported call: adjudge held no money for it, and moves none
        return []
    provider, hold = forwarded.provider, holds.get(tx, call_id)
    caller = str(decision.get("caller") or forwarded.caller)
    back = f"wallet:{caller}"
    if "ruling" in decision:  # an upheld report's ruling: its refund from the hold (or wallet)
        refund = int(decision["refundMinor"])
        assert decision["payment"] == ("refund" if refund > 0 else "none"), decision
        source = f"wallet:{provider}" if hold is None else f"held:{provider}"
        return [("report refund", source, back, refund)] if refund > 0 else []
    payment, price = decision["payment"], int(decision["priceMinor"])
    queued = meaning_queue.get(tx, call_id)
    if queued is not None and queued.final_receipt_id == receipt.id:  # a later judgment's
        ended = None if hold is None or hold.end_receipt_id is None else hold.end_receipt_id
        before = ended is not None and at[ended] < at[receipt.id]
        if payment == "settle":  # the charge stands where the first receipt put it
            assert not before and int(decision["chargeMinor"]) == price, (decision, hold)
            return []
        if payment == "none":  # it had gone back: by a ruling before, or never charged
            assert before or forwarded.status != "settled" or hold is None, (decision, hold)
            assert int(decision["chargeMinor"]) == 0, decision
            return []
        assert hold is not None and hold.amount == price, (decision, hold)
        return [("refund", f"held:{provider}", back, price)]
    if payment == "settle":  # a call's first receipt: the charge, into the hold or paid
        charge = int(decision["chargeMinor"])
        settled = hold is not None and hold.receipt_id == receipt.id
        to = f"held:{provider}" if settled else f"wallet:{provider}"
        return [("charge", f"hold:call:{call_id}", to, charge)] if charge > 0 else []
    assert payment in ("refund", "void"), decision
    return [(payment, f"hold:call:{call_id}", back, price)] if price > 0 else []


def _predicate(body: Any) -> dict[str, Any]:
    """A receipt's signed predicate (the tests' unsigned issuer: its statement as kept)."""
    import base64  # noqa: PLC0415
    import json  # noqa: PLC0415

    envelope = body.get("envelope") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        return dict(json.loads(base64.b64decode(envelope["payload"]))["predicate"])
    return dict(body["statement"])


def _caller(tx: Any, call_id: str) -> str:
    """Who made a call: the gateway's caller, or a reported call's submitter."""
    forwarded = gateway.call(tx, call_id)
    if forwarded is not None:
        return forwarded.caller
    recorded = calls.call(tx, call_id)
    assert recorded is not None, call_id
    return recorded.submitted_by


def reset(store: Store) -> None:
    """Empty every table (keeping the schema) and put every lane's head back at 0."""
    with store.write() as tx:
        for table in reversed(s.metadata.sorted_tables):
            tx.conn.execute(delete(table))
        lanes = [{"id": n, "seq": 0, "digest": None} for n in range(store.lanes)]
        tx.conn.execute(insert(s.chain_lanes), lanes)
