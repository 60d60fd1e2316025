"""Reading the receipt log and the ledger: who may see which receipt, and the admin's books.

A task's receipts are public on a public task and for its parties on a private one; a paid
call's receipt is for the call's parties (its submitter and its provider) and admins; the
chain's head and the ledger's sums prove the whole without showing any one record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from adjudge.app.accounts import need_role
from adjudge.app.unit import UnitOfWork
from adjudge.app.views import is_party, receipt_view
from adjudge.digests import from_hex
from adjudge.errors import BadInput, CriteriaError, NotAllowed, NotFound, ReceiptError
from adjudge.kernel import Determination, Verdict, determine, fold
from adjudge.kernel.authority import Authority, TrustPolicy
from adjudge.kernel.determination import effective
from adjudge.kernel.verdicts import format_time, parse_time
from adjudge.market.money import provider_hold_account, wallet_account
from adjudge.receipts import Issuer, checkpoints
from adjudge.receipts.checkpoints import NamedHead, named_heads
from adjudge.receipts.envelope import Envelope
from adjudge.store import (
    Account,
    StoredReceipt,
    Transaction,
    call_reports,
    calls,
    ledger,
    meaning_queue,
    receipt_log,
    records,
)
from adjudge.store import gateway as gateway_db

#: The kinds of ledger line (each transfer's memo): money deposited, a task's reward funded,
#: paid out with its fee or refunded; a paid call's price reserved, charged (into the
#: provider's hold), voided or refunded; a held charge released to the provider; a charge
#: given back after an upheld report.
LEDGER_KINDS = (
    "deposit",
    "fund",
    "payout",
    "fee",
    "refund",
    "reserve",
    "charge",
    "void",
    "release",
    "report refund",
)

#: How many balances a page of the admin's ledger holds unless asked (``limit``: up to
#: :data:`LEDGER_PAGE_MAX`): every wallet, provider hold and open escrow has one, so the whole
#: list grows with the accounts; a page does not.
LEDGER_PAGE, LEDGER_PAGE_MAX = 500, 1000

#: The largest ``after`` the export takes: the store numbers rows from 1, so it reads
#: ``seq > after + 1``, and PostgreSQL's integer ends at 2**31 - 1.
MAX_AFTER = 2**31 - 2


def _successor(tx: Transaction, found: StoredReceipt) -> str | None:
    """The receipt that supersedes this one, or None. A paid call's receipts after its first,
    an upheld report's ruling and a judgment after the answer, each supersede the one in force
    when they were signed: the call's receipts in the order the log was written, each is
    superseded by the next. A few indexed reads, whatever the log's length."""
    call = calls.call_by_receipt(tx, found.id)
    about = None if call is not None else _about(found)
    if call is None and (about is None or not about.startswith("call:")):
        return None
    call_id = call.id if call is not None else str(about).removeprefix("call:")
    record = call or calls.call(tx, call_id)
    queued = meaning_queue.get(tx, call_id)
    report = call_reports.by_call(tx, call_id)
    named = {
        None if record is None else record.receipt_id,
        None if queued is None else queued.final_receipt_id,
        None if report is None else report.receipt_id,
    }
    kept = [receipt_log.receipt(tx, r) for r in sorted(r for r in named if r is not None)]
    ordered = [r.id for r in sorted((r for r in kept if r is not None), key=lambda r: r.position)]
    at = ordered.index(found.id) + 1 if found.id in ordered else len(ordered)
    return ordered[at] if at < len(ordered) else None


class Receipts:
    """Use cases over the receipt log (reading it, and its checkpoints) and the ledger."""

    def __init__(self, unit: UnitOfWork, fingerprint: str | None, issuer: Issuer) -> None:
        self.unit = unit
        #: The fingerprint of the key receipts are signed with (None for an unsigned issuer).
        self.fingerprint = fingerprint
        self.issuer = issuer
        #: The log's length after the last checkpoint this process issued (:meth:`tick`).
        self._checkpointed: int | None = None

    def head(self) -> dict[str, Any]:
        """The log's length (``count``); when one lane holds every receipt, the ``sequence``
        and id (``digest``) of its last (the first receipt is sequence 0; None when empty or
        when several lanes hold receipts); each lane's head (``lanes``); the signing key."""
        found = self.unit.read(receipt_log.lanes)
        used = [lane for lane in found if lane.count]
        one = used[0] if len(used) == 1 and used[0].lane == 0 else None
        return {
            "count": sum(lane.count for lane in found),
            "sequence": one.count - 1 if one else None,
            "digest": one.digest if one else None,
            "lanes": [
                {
                    "lane": lane.lane,
                    "count": lane.count,
                    "sequence": lane.count - 1 if lane.count else None,
                    "digest": lane.digest,
                }
                for lane in found
            ],
            "key": self.fingerprint,
        }

    def checkpoint(self, viewer: Account) -> dict[str, Any]:
        """Issue a checkpoint now (admins): a receipt naming every lane's head, which a log
        exported through it must end at (``adjudge receipt export`` asks for one)."""
        need_role(viewer, "admin")
        return self._checkpoint()

    def tick(self) -> bool:
        """The upkeep's step: a checkpoint when the log has grown since this process's last
        one and it has more than one lane (a log of one lane is pinned by its head)."""
        found = self.unit.read(receipt_log.lanes)
        count = sum(lane.count for lane in found)
        if len(found) < 2 or count in (0, self._checkpointed):
            return False
        self._checkpoint()
        return True

    def _checkpoint(self) -> dict[str, Any]:
        issuer = self.issuer
        at = self.unit.now()

        def run(tx: Transaction) -> tuple[StoredReceipt, int]:
            made = receipt_log.checkpoint(
                tx,
                lambda place, heads: issuer.sign(checkpoint_of(heads, at), place, about=ABOUT),
                at=at,
            )
            return made, sum(lane.count for lane in receipt_log.lanes(tx))

        made, count = self.unit.write(run)
        self._checkpointed = count
        view = receipt_view(made)
        heads = _checkpoint_heads(made)
        view["heads"] = [{"lane": n, "digest": d, "sequence": k} for n, d, k in heads or ()]
        return view

    def get(self, viewer: Account, receipt_id: str) -> dict[str, Any]:
        """One receipt with its place in the chain, its signed statement decoded, and what it
        reads as now (``as_of``: a PENDING check past its deadline reads as its expiry verdict)
        (``RECEIPT_NOT_FOUND``, ``NOT_A_PARTY``)."""

        def read(tx: Transaction) -> tuple[StoredReceipt, str | None]:
            found = _visible(tx, viewer, receipt_id)
            return found, _successor(tx, found)

        found, successor = self.unit.read(read)
        view = receipt_view(found)
        statement = _statement(found)
        replaced = (statement or {}).get("predicate", {}).get("supersedesReceiptId")
        # Both ends of a supersession by the ids this API names receipts by.
        view["supersedes"] = (
            None
            if not isinstance(replaced, str)
            else self.unit.read(lambda tx: receipt_log.id_of_digest(tx, replaced))
        )
        view["superseded_by"] = successor
        view["statement"] = statement
        view["as_of"] = reading(statement, self.unit.now()) if statement else None
        return view

    def envelope(self, viewer: Account, receipt_id: str) -> dict[str, Any]:
        """The signed envelope alone, to save and check with ``adjudge receipt verify``."""
        found = self.unit.read(lambda tx: _visible(tx, viewer, receipt_id))
        envelope = found.body.get("envelope")
        if not isinstance(envelope, dict):
            raise NotFound("This receipt is not signed.", code="RECEIPT_NOT_FOUND")
        return envelope

    def of_task(self, viewer: Account, task_id: str) -> dict[str, Any]:
        """A task's receipts in chain order."""

        def run(tx: Transaction) -> dict[str, Any]:
            _may_see_task(tx, viewer, task_id)
            return {"receipts": [receipt_view(r) for r in receipt_log.receipts(tx, task_id)]}

        return self.unit.read(run)

    def export(
        self,
        viewer: Account,
        *,
        after: int | None = None,
        limit: int = 100,
        through: str | None = None,
    ) -> dict[str, Any]:
        """The log in the order it was written, a page at a time (admins): the receipts whose
        ``position`` is above ``after`` (from the first, position 0, when None; on a log of one
        lane a receipt's position is its sequence). ``next_after`` is the last position of the
        page when more follow. What ``adjudge receipt export`` writes and ``adjudge receipt
        verify-chain`` checks.

        ``through`` (a checkpoint's id or digest) cuts the log there: each lane up to the head
        the checkpoint names, and the checkpoint's own lane up to it. A log of several lanes is
        exported only so (``CHECKPOINT_REQUIRED``): its lanes commit side by side, so a page
        cut at a position could pass over a receipt still committing, while a checkpoint names
        only receipts already committed."""
        need_role(viewer, "admin")
        if after is not None and not 0 <= after <= MAX_AFTER:
            raise BadInput(f"after is a position from 0 to {MAX_AFTER}.", code="INVALID_REQUEST")
        # The store numbers positions from 1: position n is row n + 1.
        rows_after = 0 if after is None else after + 1

        def run(tx: Transaction) -> dict[str, Any]:
            bounds = None
            if through is not None:
                bounds = _bounds(tx, through)
            elif len(receipt_log.lanes(tx)) > 1:
                raise BadInput(
                    "This log has several lanes: export it through a checkpoint (through=; "
                    "POST /receipts/checkpoint issues one).",
                    code="CHECKPOINT_REQUIRED",
                )
            page = receipt_log.chain(tx, after=rows_after, limit=limit + 1, through=bounds)
            more = len(page) > limit
            page = page[:limit]
            return {
                "receipts": [receipt_view(r) for r in page],
                "next_after": page[-1].position - 1 if more and page else None,
            }

        return self.unit.read(run)

    def ledger(
        self,
        viewer: Account,
        *,
        recount: bool = False,
        limit: int = LEDGER_PAGE,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """A page of balances by account name (an emptied escrow or call reservation has
        none; ``next_cursor`` names the next page) and all deposits (admins); with ``recount``,
        the sum of every balance, and every line summed too, in all and by account against its
        balance — the audit, which reads the whole history (every balance row, every line)."""
        need_role(viewer, "admin")

        def run(tx: Transaction) -> dict[str, Any]:
            page = ledger.balance_page(tx, after=cursor, limit=limit + 1)
            following = page[limit - 1][0] if len(page) > limit else None
            view: dict[str, Any] = {
                "balances": {k: str(v) for k, v in page[:limit]},
                "next_cursor": following,
                # A sum over every balance row: the audit's, as the lines' sum is (a page
                # read it too, and an account that ever held money keeps a row).
                "sum_of_balances": None,
                "deposits": str(ledger.deposits(tx)),
                "sum_of_entries": None,
                "unmatched": None,
            }
            if recount:
                view["sum_of_balances"] = str(ledger.sum_of_balances(tx))
                counted = ledger.recount(tx)
                view["sum_of_entries"] = str(counted.sum_of_entries)
                view["unmatched"] = counted.unmatched
            return view

        return self.unit.read(run, one_moment=True)  # the sums agree with the balances

    def ledger_lines(
        self,
        viewer: Account,
        *,
        account: str | None = None,
        kind: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        totals: bool = False,
    ) -> dict[str, Any]:
        """Ledger lines, newest first, a page at a time: each movement of money with the
        account on its other side and the receipt that released it (legs out of a holding
        account name one). An admin reads every account; anyone else only its own (its wallet
        and, for a provider, its hold), and naming another account is ``NOT_YOUR_ACCOUNT``.

        ``kind`` is a transfer's memo (:data:`LEDGER_KINDS`); ``since`` and ``until`` are ISO
        dates or times (UTC when no offset is given), ``until`` exclusive — a bare date means
        through the end of that day. ``totals`` adds the filter's count, credits, debits and
        net (:func:`adjudge.store.ledger.movement_totals`: counts kept as money moves).
        """
        own = (wallet_account(viewer.id), provider_hold_account(viewer.id))
        admin = "admin" in viewer.roles
        if account is not None and not admin and account not in own:
            raise NotAllowed(
                "Only an admin reads another account's ledger lines; yours are "
                f"{own[0]} and {own[1]}.",
                code="NOT_YOUR_ACCOUNT",
            )
        if kind is not None and kind not in LEDGER_KINDS:
            raise BadInput(
                f"No ledger kind {kind!r}; use one of {', '.join(LEDGER_KINDS)}.",
                code="INVALID_REQUEST",
            )
        accounts = (account,) if account is not None else (None if admin else own)
        which = ledger.Movements(
            accounts=accounts,
            kind=kind,
            since=moment(since, "since", end_of_day=False),
            until=moment(until, "until", end_of_day=True),
        )

        def run(tx: Transaction) -> dict[str, Any]:
            lines, following = ledger.movements(tx, which, limit=limit, cursor=cursor)
            page: dict[str, Any] = {
                "lines": [{**line, "amount": str(line["amount"])} for line in lines],
                "next_cursor": following,
                "accounts": None if admin else list(own),
            }
            if totals:
                page["totals"] = {k: str(v) for k, v in ledger.movement_totals(tx, which).items()}
            return page

        return self.unit.read(run)


#: The ``about`` of a checkpoint receipt.
ABOUT = checkpoints.CHECKPOINT_ABOUT


def checkpoint_of(heads: Sequence[NamedHead], at: datetime) -> Determination:
    """A checkpoint's determination: no checks (NOT_RUN: nothing is judged), its subject the
    digest of the heads it names, the heads its policy decision
    (:mod:`adjudge.receipts.checkpoints`)."""
    return determine(
        checkpoints.heads_subject(heads), [], now=at, policy_decision=checkpoints.decision(heads)
    )


def _checkpoint_heads(found: StoredReceipt) -> tuple[NamedHead, ...] | None:
    """The heads a stored checkpoint names; None when it is not a checkpoint."""
    statement = _statement(found)
    if statement is None:
        body = found.body.get("statement")  # an unsigned test issuer's
        heads = body.get("checkpoint") if isinstance(body, dict) else None
        return tuple((h[0], h[1], h[2]) for h in heads) if isinstance(heads, list) else None
    try:
        predicate = statement["predicate"]
        subject = from_hex(statement["subject"][0]["digest"]["sha256"])
        return named_heads(predicate, subject)
    except (KeyError, IndexError, TypeError, ReceiptError):
        return None


def _bounds(tx: Transaction, through: str) -> receipt_log.Cut:
    """The log cut at checkpoint ``through``: the last row (seq, from 1) of each lane."""
    found = receipt_log.receipt(tx, through)
    if found is None and through.startswith("sha256:"):
        named = receipt_log.id_of_digest(tx, through)
        found = receipt_log.receipt(tx, named) if named else None
    heads = _checkpoint_heads(found) if found is not None else None
    if found is None or heads is None:
        raise BadInput(f"{through} is not a checkpoint on this log.", code="CHECKPOINT_REQUIRED")
    bounds = {lane: (sequence + 1 if sequence is not None else 0) for lane, _, sequence in heads}
    bounds[found.lane] = found.seq
    return receipt_log.Cut(bounds, found.position)


def _may_see_task(tx: Transaction, viewer: Account, task_id: str) -> None:
    stored = records.task(tx, task_id)
    if stored is None:
        raise NotFound(f"No task {task_id}.", code="TASK_NOT_FOUND")
    if stored.task.private and not is_party(stored, viewer):
        raise NotAllowed("A private task's receipts are for its parties.", code="NOT_A_PARTY")


def _visible(tx: Transaction, viewer: Account, receipt_id: str) -> StoredReceipt:
    found = receipt_log.receipt(tx, receipt_id)
    if found is None:
        raise NotFound(f"No receipt {receipt_id}.", code="RECEIPT_NOT_FOUND")
    if found.task_id:
        _may_see_task(tx, viewer, found.task_id)
        return found
    parties = _call_parties(tx, found)
    if parties is not None and "admin" not in viewer.roles and viewer.id not in parties:
        raise NotAllowed("A call's receipt is for the call's parties.", code="NOT_A_PARTY")
    return found


def _call_parties(tx: Transaction, found: StoredReceipt) -> tuple[str, ...] | None:
    """The parties of the call a receipt is about (None: it is about no call). The first
    receipt of a call is found by its record; the others (a ruling on its report, the judgment
    that superseded it) name the call in the signed statement's ``about`` (``call:<id>``)."""
    call = calls.call_by_receipt(tx, found.id)
    if call is not None:
        return (call.submitted_by, call.provider)
    about = _about(found)
    if about is None or not about.startswith("call:"):
        return None
    call_id = about.removeprefix("call:")
    record = calls.call(tx, call_id)
    if record is not None:
        return (record.submitted_by, record.provider)
    forwarded = gateway_db.call(tx, call_id)
    return () if forwarded is None else (forwarded.caller, forwarded.provider)


def _about(found: StoredReceipt) -> str | None:
    """What a receipt's signed statement says it is about (None when it holds none, or for an
    issuer that signs nothing)."""
    predicate = (_statement(found) or {}).get("predicate")
    about = predicate.get("about") if isinstance(predicate, dict) else None
    return about if isinstance(about, str) else None


def moment(text: str | None, name: str, *, end_of_day: bool) -> datetime | None:
    """An ISO date or time as a UTC moment (None for none); a bare date is its first moment,
    or with ``end_of_day`` the first moment of the next day (None, no bound, for the
    calendar's last day). ``INVALID_REQUEST`` otherwise."""
    if text is None or not text.strip():
        return None
    source = text.strip()
    try:
        if len(source) == 10:
            day = date.fromisoformat(source)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            if end_of_day and day == date.max:
                return None  # through the calendar's last day: nothing is later
            return start + timedelta(days=1) if end_of_day else start
        at = datetime.fromisoformat(source)
        return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    except ValueError as exc:
        raise BadInput(
            f"{name} {source!r} is not an ISO date or time (2026-12-04, 2026-12-04T10:00Z).",
            code="INVALID_REQUEST",
        ) from exc
    except OverflowError as exc:  # an offset that moves it past the calendar's first or last day
        raise BadInput(
            f"{name} {source!r} is outside the calendar once moved to UTC.",
            code="INVALID_REQUEST",
        ) from exc


def _statement(found: StoredReceipt) -> dict[str, Any] | None:
    """The signed statement of a stored receipt, decoded (None for an unsigned one)."""
    raw = found.body.get("envelope")
    if not isinstance(raw, dict):
        return None
    try:
        value = json.loads(Envelope.from_dict(raw).payload)
    except (ReceiptError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def reading(statement: dict[str, Any], now: datetime) -> dict[str, Any] | None:
    """What a receipt's statement reads as at ``now``, by the kernel's own rules: each check
    resolved (a PENDING past its deadline reads as its expiry verdict), what it contributes
    under the receipt's trust policy (an untrusted PASS counts as UNKNOWN), and their fold.

    Nothing is re-signed: the receipt's recorded verdict stays what it says; this is the reading
    a person needs beside it. None when the statement is not one this version can read.
    """
    try:
        predicate = statement["predicate"]
        policy = TrustPolicy.from_dict(predicate["trustPolicy"])
        checks = []
        for c in predicate["checks"]:
            recorded = Verdict(c["verdict"])
            current = recorded
            pending = c.get("pending")
            if recorded is Verdict.PENDING and isinstance(pending, dict):
                deadline = parse_time(pending["deadline"], "deadline")
                if now >= deadline:
                    current = Verdict(pending["expiresTo"])
            counts = effective(current, Authority(c["authority"]), c.get("verifierKey"), policy)
            checks.append(
                {
                    "name": c["name"],
                    "recorded": recorded.value,
                    "now": current.value,
                    "counts_as": counts.value,
                }
            )
    except (KeyError, TypeError, ValueError, CriteriaError):
        return None
    return {
        "at": format_time(now),
        "verdict": fold(Verdict(c["counts_as"]) for c in checks).value,
        "checks": checks,
    }
