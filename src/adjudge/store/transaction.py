"""One unit of work on the store: typed reads and writes over the tables in ``schema``."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Connection,
    RowMapping,
    Select,
    and_,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement

from adjudge.errors import Error, StorageError
from adjudge.market import (
    WORLD,
    AgentRecord,
    Ending,
    Mode,
    ReceiptIssuer,
    Status,
    Task,
    Transfer,
    VerdictReached,
)
from adjudge.store import schema as s


class ConcurrentUpdate(StorageError):
    """Another transaction changed the same rows first; re-read and try again."""

    code = "CONCURRENT_UPDATE"


def key_hash(api_key: str) -> str:
    """How an API key is stored: ``sha256:`` and the hex digest (the key itself never is)."""
    return "sha256:" + hashlib.sha256(api_key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Account:
    """An account: its roles and, for agents, its reputation record."""

    id: str
    roles: frozenset[str]
    verifier_opt_in: bool
    record: AgentRecord
    created_at: datetime
    verifier_key: str | None = None


@dataclass(frozen=True)
class StoredTask:
    """A market task with what only the store keeps: its version, title and brief."""

    task: Task
    version: int
    title: str
    brief: str


@dataclass(frozen=True)
class Submission:
    """One delivered result."""

    task_id: str
    attempt: int
    result: str
    digest: str
    submitted_at: datetime


@dataclass(frozen=True)
class StoredVerdict:
    """A recorded determination on a task and the receipt that proves it."""

    task_id: str
    attempt: int
    kind: str
    passed: bool
    score: int | None
    reasons: tuple[str, ...]
    authority: str
    judge: str
    detail: Mapping[str, Any]
    receipt_id: str
    at: datetime


@dataclass(frozen=True)
class StoredReceipt:
    """A receipt at its place in the hash chain."""

    id: str
    seq: int
    task_id: str | None
    digest: str
    previous: str | None
    body: Mapping[str, Any]
    at: datetime


class Transaction:
    """Reads and writes inside one database transaction (see :meth:`Store.write`)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        # A stored submission never changes, so one read per transaction is enough.
        self._submissions: dict[tuple[str, int], Submission] = {}
        self._sqlite = conn.dialect.name == "sqlite"
        self._driver: Any = None

    # --- the hot path on the driver ---------------------------------------------------------

    def _run(self, stmt: ClauseElement, params: Mapping[str, Any]) -> Any:
        """Run a statement of the hot path on the driver's cursor; returns the cursor.

        SQLAlchemy's own work per statement (execution context, parameter and result
        processing: about 25 µs) is several times SQLite's, and a finalize runs 15 of them. These
        statements are compiled by SQLAlchemy once per dialect and parameter set, then run on the
        DBAPI connection of this same transaction, with the few column types they carry (times,
        JSON, booleans) converted as the column types would (:meth:`_bind`, :meth:`_rows`).
        Driver errors are raised as SQLAlchemy's, so callers and :class:`Store` see no
        difference.
        """
        sql, order, kinds, fixed = _compiled(stmt, self.conn.dialect, tuple(params))
        if fixed:
            params = {**fixed, **params}
        return self._execute(sql, self._args(params, order, kinds), many=False)

    def _run_many(self, stmt: ClauseElement, rows: Sequence[Mapping[str, Any]]) -> None:
        """:meth:`_run` once per row of ``rows`` (all with the same keys) in one call."""
        sql, order, kinds, fixed = _compiled(stmt, self.conn.dialect, tuple(rows[0]), many=True)
        if fixed:
            rows = [{**fixed, **r} for r in rows]
        self._execute(sql, [self._args(r, order, kinds) for r in rows], many=True)

    def _execute(self, sql: str, args: Any, *, many: bool) -> Any:
        if self._driver is None:
            self._driver = self.conn.connection.driver_connection
        error = self.conn.dialect.loaded_dbapi.Error
        try:
            if many:
                cursor = self._driver.cursor()
                cursor.executemany(sql, args)
                return cursor
            return self._driver.execute(sql, args)
        except error as exc:
            raise DBAPIError.instance(sql, args, exc, error, dialect=self.conn.dialect) from exc

    def _args(
        self, params: Mapping[str, Any], order: tuple[str, ...] | None, kinds: Mapping[str, str]
    ) -> Any:
        """The parameters as SQLAlchemy's column types would send them (see ``schema``)."""
        if kinds:
            params = dict(params)
            for key, kind in kinds.items():
                params[key] = self._bind(params[key], kind)
        return tuple([params[k] for k in order]) if order is not None else params

    def _bind(self, value: Any, kind: str) -> Any:
        if kind == "json":
            return json.dumps(value)
        if kind == "time" and value is not None:
            if value.tzinfo is None:
                raise ValueError("naive datetime; the store keeps aware UTC times only")
            naive = value.astimezone(UTC).replace(tzinfo=None)
            # SQLAlchemy's SQLite DATETIME text, which orders as the times do.
            return naive.isoformat(" ", "microseconds") if self._sqlite else naive
        return value

    def _rows(self, stmt: ClauseElement, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The rows of a select of the hot path, typed as SQLAlchemy would return them."""
        names, kinds = _columns(stmt)
        sqlite_ = self._sqlite
        out = []
        for row in self._run(stmt, params).fetchall():
            m = dict(zip(names, row, strict=True))
            for name, kind in kinds:
                value = m[name]
                if value is None:
                    continue
                if kind == "time":
                    when = datetime.fromisoformat(value) if sqlite_ else value
                    m[name] = when.replace(tzinfo=UTC)
                elif kind == "json":
                    if sqlite_:
                        m[name] = json.loads(value)
                else:
                    m[name] = bool(value)
            out.append(m)
        return out

    # --- accounts ---------------------------------------------------------------------------

    def create_account(
        self,
        account_id: str,
        roles: Iterable[str],
        api_key: str,
        *,
        opt_in: bool,
        at: datetime,
        verifier_key: str | None = None,
    ) -> Account:
        """Add an account; ``ACCOUNT_EXISTS`` if the id is taken."""
        record = AgentRecord()
        if self.account(account_id) is not None:
            raise Error(f"Account {account_id} already exists.", code="ACCOUNT_EXISTS")
        self.conn.execute(
            insert(s.accounts).values(
                id=account_id,
                roles=sorted(set(roles)),
                key_hash=key_hash(api_key),
                verifier_opt_in=opt_in,
                verifier_key=verifier_key,
                reputation=record.reputation,
                disputes=record.disputes,
                created_at=at,
            )
        )
        found = self.account(account_id)
        assert found is not None
        return found

    def account(self, account_id: str) -> Account | None:
        """The account with this id, or None."""
        row = self.conn.execute(select(s.accounts).where(s.accounts.c.id == account_id)).first()
        return _account(row._mapping) if row else None

    def account_count(self) -> int:
        """How many accounts exist."""
        return int(self.conn.execute(select(func.count()).select_from(s.accounts)).scalar() or 0)

    def account_by_key(self, api_key: str) -> Account | None:
        """The account an API key belongs to, or None."""
        q = select(s.accounts).where(s.accounts.c.key_hash == key_hash(api_key))
        row = self.conn.execute(q).first()
        return _account(row._mapping) if row else None

    def verifiers(self) -> list[Account]:
        """Accounts that take verification jobs (role verifier and opted in)."""
        rows = self.conn.execute(
            select(s.accounts)
            .where(s.accounts.c.verifier_opt_in.is_(True))
            .order_by(s.accounts.c.id)
        )
        return [a for a in (_account(r._mapping) for r in rows) if "verifier" in a.roles]

    def set_opt_in(self, account_id: str, opt_in: bool) -> None:
        """Turn "take verification jobs" on or off."""
        self.conn.execute(
            update(s.accounts).where(s.accounts.c.id == account_id).values(verifier_opt_in=opt_in)
        )

    def save_record(self, account_id: str, record: AgentRecord) -> None:
        """Store an agent's reputation and dispute count."""
        self.conn.execute(
            update(s.accounts)
            .where(s.accounts.c.id == account_id)
            .values(reputation=record.reputation, disputes=record.disputes)
        )

    # --- tasks ------------------------------------------------------------------------------

    def insert_task(self, task: Task, *, title: str, brief: str) -> StoredTask:
        """Store a newly posted task at version 1."""
        self.conn.execute(
            insert(s.tasks).values(version=1, title=title, brief=brief, **_task_row(task))
        )
        return StoredTask(task, 1, title, brief)

    def update_task(self, stored: StoredTask, task: Task) -> StoredTask:
        """Store ``task`` over ``stored`` if nobody changed it since it was read.

        Raises :class:`ConcurrentUpdate` when the version moved: the caller re-reads and
        re-decides, so two racing events never both apply.
        """
        row = _task_row(task)
        del row["id"]
        row.update(k_id=task.id, k_version=stored.version, version=stored.version + 1)
        if self._run(_UPDATE_TASK, row).rowcount != 1:
            raise ConcurrentUpdate(f"Task {task.id} changed while this request ran; try again.")
        return StoredTask(task, stored.version + 1, stored.title, stored.brief)

    def task(self, task_id: str) -> StoredTask | None:
        """The task with this id, or None."""
        rows = self._rows(_TASK, {"k_id": task_id})
        return _stored_task(rows[0]) if rows else None

    def tasks(
        self,
        *,
        status: str | None = None,
        mode: str | None = None,
        involving: str | None = None,
        verifier: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[StoredTask]:
        """Tasks, newest first, filtered by status, mode, a party, or the named verifier."""
        q = select(s.tasks)
        if status:
            q = q.where(s.tasks.c.status == status)
        if mode:
            q = q.where(s.tasks.c.mode == mode)
        if involving:
            q = q.where(
                or_(
                    s.tasks.c.poster == involving,
                    s.tasks.c.agent == involving,
                    s.tasks.c.verifier == involving,
                )
            )
        if verifier:
            q = q.where(s.tasks.c.verifier == verifier)
        q = q.order_by(s.tasks.c.posted_at.desc(), s.tasks.c.id).limit(limit).offset(offset)
        return [_stored_task(r._mapping) for r in self.conn.execute(q)]

    # --- submissions and verdicts -----------------------------------------------------------

    def add_submission(self, sub: Submission) -> None:
        """Store a delivered result."""
        self.conn.execute(
            insert(s.submissions).values(
                task_id=sub.task_id,
                attempt=sub.attempt,
                result=sub.result,
                digest=sub.digest,
                submitted_at=sub.submitted_at,
            )
        )

    def submissions(self, task_id: str) -> list[Submission]:
        """Every submission of a task, oldest first."""
        rows = self._rows(_SUBMISSIONS, {"k_task": task_id})
        return [_submission(r) for r in rows]

    def submission(self, task_id: str, attempt: int) -> Submission | None:
        """One submission, or None."""
        known = self._submissions.get((task_id, attempt))
        if known is not None:
            return known
        rows = self._rows(_SUBMISSION, {"k_task": task_id, "k_attempt": attempt})
        if not rows:
            return None
        sub = self._submissions[(task_id, attempt)] = _submission(rows[0])
        return sub

    def add_verdict(self, verdict: VerdictReached, receipt_id: str) -> StoredVerdict:
        """Record a determination; a second verdict on the same submission is refused."""
        kind = "ruling" if verdict.detail.get("ruling") else "verdict"
        detail = {k: v for k, v in verdict.detail.items() if k != "ruling"}
        try:
            self._run(
                _INSERT_VERDICT,
                {
                    "task_id": verdict.task_id,
                    "attempt": verdict.attempt,
                    "kind": kind,
                    "passed": verdict.passed,
                    "score": verdict.score,
                    "reasons": list(verdict.reasons),
                    "authority": verdict.authority,
                    "judge": verdict.judge,
                    "detail": detail,
                    "receipt_id": receipt_id,
                    "at": verdict.at,
                },
            )
        except IntegrityError as exc:
            raise ConcurrentUpdate("This submission already has a verdict.") from exc
        return StoredVerdict(
            verdict.task_id,
            verdict.attempt,
            kind,
            verdict.passed,
            verdict.score,
            tuple(verdict.reasons),
            verdict.authority,
            verdict.judge,
            detail,
            receipt_id,
            verdict.at,
        )

    def verdicts(self, task_id: str | None = None) -> list[StoredVerdict]:
        """Recorded determinations (of one task, or all), oldest first."""
        if task_id is not None:
            rows = self._rows(_VERDICTS, {"k_task": task_id})
        else:
            q = select(s.verdicts).order_by(s.verdicts.c.id)
            rows = [dict(r._mapping) for r in self.conn.execute(q)]
        return [
            StoredVerdict(
                r["task_id"],
                r["attempt"],
                r["kind"],
                r["passed"],
                r["score"],
                tuple(r["reasons"]),
                r["authority"],
                r["judge"],
                r["detail"],
                r["receipt_id"],
                r["at"],
            )
            for r in rows
        ]

    # --- the ledger -------------------------------------------------------------------------

    def transfer(self, transfers: Sequence[Transfer], *, task_id: str | None, at: datetime) -> None:
        """Apply transfers as double entries; ``INSUFFICIENT_FUNDS`` if a debit would overdraw.

        The debit is one conditional UPDATE, so two racing spends of one balance cannot both
        succeed; the credit is one upsert. Consecutive transfers out of one account (a payout
        and its fee) are debited together: the total either fits or the whole step is refused,
        as one at a time would be. Only the world account may go below zero.
        """
        if not transfers:
            return
        upsert = _UPSERT[self.conn.dialect.name]
        legs: list[dict[str, Any]] = []
        for run in _runs(transfers):
            debit, total = run[0].debit, sum(t.amount for t in run)
            if debit == WORLD:
                self._run(upsert, {"account": WORLD, "amount": 0})
                self._run(_DEBIT_WORLD, {"acct": debit, "amt": total})
            elif self._run(_DEBIT, {"acct": debit, "amt": total}).rowcount != 1:
                raise Error(f"{debit} holds too little to move {total}.", code="INSUFFICIENT_FUNDS")
            for t in run:
                self._run(upsert, {"account": t.credit, "amount": t.amount})
                txn = uuid.uuid4().hex
                common = {"txn": txn, "task_id": task_id, "memo": t.memo, "at": at}
                legs.append({**common, "account": t.debit, "amount": -t.amount})
                legs.append({**common, "account": t.credit, "amount": t.amount})
        self._run_many(_INSERT_ENTRIES, legs)

    def balance(self, account: str) -> int:
        """The balance of a ledger account (0 if never touched)."""
        q = select(s.balances.c.balance).where(s.balances.c.account == account)
        value = self.conn.execute(q).scalar_one_or_none()
        return int(value or 0)

    def balances(self) -> dict[str, int]:
        """Every ledger account's balance."""
        return {r.account: int(r.balance) for r in self.conn.execute(select(s.balances))}

    def ledger_total(self) -> tuple[int, int]:
        """The sum of all balances and the sum of all ledger entries: both 0 in a sound ledger."""
        bal = self.conn.execute(select(func.coalesce(func.sum(s.balances.c.balance), 0))).scalar()
        ent = self.conn.execute(
            select(func.coalesce(func.sum(s.ledger_entries.c.amount), 0))
        ).scalar()
        return int(bal or 0), int(ent or 0)

    def entries(self, task_id: str) -> list[dict[str, Any]]:
        """The ledger entries of one task, oldest first."""
        return [
            {
                "txn": r["txn"],
                "account": r["account"],
                "amount": int(r["amount"]),
                "memo": r["memo"],
                "at": r["at"].isoformat(),
            }
            for r in self._rows(_ENTRIES, {"k_task": task_id})
        ]

    # --- receipts ---------------------------------------------------------------------------

    def append_receipt(
        self,
        verdict: VerdictReached,
        issuer: ReceiptIssuer,
        *,
        result: str | None,
        task_id: str | None,
        at: datetime,
    ) -> StoredReceipt:
        """Issue the receipt of ``verdict`` after the chain's head and append it."""
        return self.append_to_chain(
            lambda previous: issuer.issue(verdict, result, previous), task_id=task_id, at=at
        )

    def append_to_chain(
        self,
        issue: Callable[[tuple[str, int] | None], Mapping[str, Any]],
        *,
        task_id: str | None,
        at: datetime,
    ) -> StoredReceipt:
        """Append the receipt ``issue(previous head)`` returns to the service's one hash chain.

        The head row is locked for the rest of the transaction, so concurrent appends (a task's
        verdict, a paid call) queue instead of forking the chain.
        """
        head = self._rows(_HEAD_FOR_UPDATE, {})[0]
        seq, head_digest = int(head["seq"]), head["digest"]
        previous = (head_digest, seq - 1) if head_digest is not None else None
        body = dict(issue(previous))
        digest = body.get("digest")
        if not isinstance(digest, str):
            raise StorageError("The receipt issuer returned a receipt without a digest.")
        receipt = StoredReceipt(
            id="rcpt_" + uuid.uuid4().hex,
            seq=seq + 1,
            task_id=task_id,
            digest=digest,
            previous=head_digest,
            body=body,
            at=at,
        )
        self._run(
            _INSERT_RECEIPT,
            {
                "id": receipt.id,
                "seq": receipt.seq,
                "task_id": task_id,
                "digest": digest,
                "previous": head_digest,
                "body": body,
                "at": at,
            },
        )
        self._run(_SET_HEAD, {"h_seq": receipt.seq, "h_digest": digest})
        return receipt

    def receipt(self, receipt_id: str) -> StoredReceipt | None:
        """One receipt, or None."""
        row = self.conn.execute(select(s.receipts).where(s.receipts.c.id == receipt_id)).first()
        return _receipt(row._mapping) if row else None

    def receipts(self, task_id: str) -> list[StoredReceipt]:
        """A task's receipts in chain order."""
        return [_receipt(r._mapping) for r in self.conn.execute(_RECEIPTS, {"k_task": task_id})]

    def receipt_ids(self, task_id: str) -> list[str]:
        """The ids of a task's receipts in chain order (without reading their bodies)."""
        return [r["id"] for r in self._rows(_RECEIPT_IDS, {"k_task": task_id})]

    def head(self) -> tuple[int, str | None]:
        """The chain's length and the digest of its last receipt (None when empty)."""
        row = self.conn.execute(select(s.chain_head).where(s.chain_head.c.id == 1)).one()
        return int(row.seq), row.digest

    def chain(self) -> list[StoredReceipt]:
        """Every receipt in chain order."""
        return [
            _receipt(r._mapping)
            for r in self.conn.execute(select(s.receipts).order_by(s.receipts.c.seq))
        ]

    # --- the review queue -------------------------------------------------------------------

    def claim_reviews(
        self, verifiers: Sequence[str] | None, *, now: datetime, lease: timedelta, limit: int
    ) -> list[StoredTask]:
        """Take up to ``limit`` submissions waiting for a verifier, leased until ``now + lease``.

        A submission is free when nobody holds an unexpired lease on it and its worker has not
        given up. On PostgreSQL the task rows are taken ``FOR UPDATE SKIP LOCKED``, so workers
        polling at once never take the same one; SQLite's write lock serializes claims.
        """
        rl = s.review_leases
        joined = s.tasks.outerjoin(
            rl, and_(rl.c.task_id == s.tasks.c.id, rl.c.attempt == s.tasks.c.attempts)
        )
        q = (
            select(s.tasks, rl.c.tries)
            .select_from(joined)
            .where(s.tasks.c.status == Status.AWAITING_VERIFICATION.value)
            .where(
                or_(rl.c.task_id.is_(None), and_(rl.c.gave_up.is_(False), rl.c.locked_until <= now))
            )
            .order_by(s.tasks.c.submitted_at)
            .limit(limit)
        )
        if verifiers is not None:
            q = q.where(s.tasks.c.verifier.in_(list(verifiers)))
        if self.conn.dialect.name == "postgresql":
            q = q.with_for_update(skip_locked=True, of=s.tasks)
        claimed = []
        for row in self.conn.execute(q).all():
            stored = _stored_task(row._mapping)
            if self._take_lease(stored.task.id, stored.task.attempts, now=now, until=now + lease):
                claimed.append(stored)
        return claimed

    def _take_lease(self, task_id: str, attempt: int, *, now: datetime, until: datetime) -> bool:
        """Lease one submission if it is still free; False if another worker just took it.

        One statement decides: insert the lease, or, if one exists, extend it only when it has
        expired and its worker has not given up. Under PostgreSQL's read-committed isolation the
        lease row a claim saw can be a moment old, so the check is made again where it is written.
        """
        rl = s.review_leases
        dialect = postgresql if self.conn.dialect.name == "postgresql" else sqlite
        stmt = dialect.insert(rl).values(
            task_id=task_id, attempt=attempt, tries=0, locked_until=until, gave_up=False
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[rl.c.task_id, rl.c.attempt],
            set_={"locked_until": until},
            where=and_(rl.c.gave_up.is_(False), rl.c.locked_until <= now),
        ).returning(rl.c.task_id)
        return self.conn.execute(stmt).first() is not None

    def review_failed(
        self, task_id: str, attempt: int, *, error: str, now: datetime, max_tries: int
    ) -> bool:
        """Count a failed model call; release the lease for a later poll. True once given up."""
        rl = s.review_leases
        where = and_(rl.c.task_id == task_id, rl.c.attempt == attempt)
        tries = int(self.conn.execute(select(rl.c.tries).where(where)).scalar_one()) + 1
        gave_up = tries >= max_tries
        self.conn.execute(
            update(rl)
            .where(where)
            .values(tries=tries, locked_until=now, gave_up=gave_up, last_error=error[:500])
        )
        return gave_up

    def review_lease(self, task_id: str, attempt: int) -> dict[str, Any] | None:
        """A submission's lease row, or None."""
        rl = s.review_leases
        row = self.conn.execute(
            select(rl).where(and_(rl.c.task_id == task_id, rl.c.attempt == attempt))
        ).first()
        return dict(row._mapping) if row else None

    # --- idempotency ------------------------------------------------------------------------

    def recalled(self, account_id: str, key: str) -> tuple[str, int, Any] | None:
        """The fingerprint, status and body stored under an idempotency key, or None."""
        row = self.conn.execute(
            select(s.idempotency).where(
                and_(s.idempotency.c.account_id == account_id, s.idempotency.c.key == key)
            )
        ).first()
        return (row.fingerprint, int(row.status_code), row.body) if row else None

    def remember(
        self,
        *,
        account_id: str,
        key: str,
        fingerprint: str,
        status_code: int,
        body: Any,
        at: datetime,
    ) -> None:
        """Store a response under an idempotency key in the same transaction as its effects.

        A concurrent request that stored the same key first makes this raise
        :class:`ConcurrentUpdate`; the retry then finds and replays the stored response.
        """
        try:
            self.conn.execute(
                insert(s.idempotency).values(
                    account_id=account_id,
                    key=key,
                    fingerprint=fingerprint,
                    status_code=status_code,
                    body=body,
                    at=at,
                )
            )
        except IntegrityError as exc:
            raise ConcurrentUpdate("The same Idempotency-Key is in flight; try again.") from exc


def _runs(transfers: Sequence[Transfer]) -> list[list[Transfer]]:
    """Consecutive transfers out of one account, none of them back into it."""
    runs: list[list[Transfer]] = []
    for t in transfers:
        last = runs[-1] if runs else None
        if last and last[0].debit == t.debit and t.credit != t.debit != last[0].credit:
            last.append(t)
        else:
            runs.append([t])
    return runs


def _account(m: RowMapping) -> Account:
    return Account(
        id=m["id"],
        roles=frozenset(m["roles"]),
        verifier_opt_in=bool(m["verifier_opt_in"]),
        record=AgentRecord(reputation=m["reputation"], disputes=m["disputes"]),
        created_at=m["created_at"],
        verifier_key=m["verifier_key"],
    )


_TASK_FIELDS = (
    "poster",
    "agent",
    "verifier",
    "verifier_key",
    "reward",
    "posted_at",
    "deadline",
    "private",
    "attempts",
    "result_digest",
    "submitted_at",
    "failed_at",
    "escalated_at",
    "disputed_by",
    "closed_at",
)


def _task_row(task: Task) -> dict[str, Any]:
    row = {name: getattr(task, name) for name in _TASK_FIELDS}
    row.update(
        id=task.id,
        mode=task.mode.value,
        status=task.status.value,
        criteria=dict(task.criteria),
        ending=task.ending.value if task.ending else None,
    )
    return row


def _submission(m: Mapping[str, Any]) -> Submission:
    return Submission(m["task_id"], m["attempt"], m["result"], m["digest"], m["submitted_at"])


def _stored_task(m: Mapping[Any, Any]) -> StoredTask:
    task = Task(
        id=m["id"],
        mode=Mode(m["mode"]),
        status=Status(m["status"]),
        criteria=m["criteria"],
        ending=Ending(m["ending"]) if m["ending"] else None,
        **{name: m[name] for name in _TASK_FIELDS},
    )
    return StoredTask(task, int(m["version"]), m["title"], m["brief"])


def _receipt(m: RowMapping) -> StoredReceipt:
    return StoredReceipt(
        id=m["id"],
        seq=int(m["seq"]),
        task_id=m["task_id"],
        digest=m["digest"],
        previous=m["previous"],
        body=m["body"],
        at=m["at"],
    )


_DEBIT = (
    update(s.balances)
    .where(s.balances.c.account == bindparam("acct"))
    .where(s.balances.c.balance >= bindparam("amt"))
    .values(balance=s.balances.c.balance - bindparam("amt"))
)
_DEBIT_WORLD = (
    update(s.balances)
    .where(s.balances.c.account == bindparam("acct"))
    .values(balance=s.balances.c.balance - bindparam("amt"))
)


def _upsert(dialect: str) -> Any:
    """Add ``amount`` to an account's balance, creating the row at that amount if missing."""
    module: Any = postgresql if dialect == "postgresql" else sqlite
    stmt = module.insert(s.balances).values(
        account=bindparam("account"), balance=bindparam("amount")
    )
    return stmt.on_conflict_do_update(
        index_elements=[s.balances.c.account],
        set_={"balance": s.balances.c.balance + stmt.excluded.balance},
    )


_Compiled = tuple[str, tuple[str, ...] | None, dict[str, str], dict[str, Any]]
#: Hot statements compiled per dialect and parameter names (see :func:`_compiled`).
_COMPILED: dict[tuple[Any, ...], _Compiled] = {}
#: The column names of hot selects, and those read back as times, JSON or booleans.
_COLUMNS: dict[int, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}


def _compiled(
    stmt: ClauseElement, dialect: Dialect, keys: tuple[str, ...], *, many: bool = False
) -> _Compiled:
    """SQL text, the parameters' order (positional paramstyles), which parameters are times or
    JSON (those that set a column of that type), and the values of the statement's own
    literals (``chain_head.id == 1``).

    Cached by the statement's ``id``: only for the statements built once in this module.
    """
    cache_key = (dialect.name, dialect.driver, id(stmt), keys, many)
    found = _COMPILED.get(cache_key)
    if found is None:
        compiled = stmt.compile(dialect=dialect, column_keys=list(keys), for_executemany=many)
        assert isinstance(compiled, SQLCompiler)
        order = tuple(compiled.positiontup or ()) if compiled.positional else None
        table = getattr(stmt, "table", None)
        kinds = {}
        for key in keys:
            column = table.c.get(key) if table is not None else None
            kind = _kind(column.type) if column is not None else None
            if kind in ("time", "json"):
                kinds[key] = kind
        fixed = {
            name: bind.effective_value
            for name, bind in compiled.binds.items()
            if name not in keys and not bind.required
        }
        found = _COMPILED[cache_key] = (compiled.string, order, kinds, fixed)
    return found


def _columns(stmt: ClauseElement) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    found = _COLUMNS.get(id(stmt))
    if found is None:
        assert isinstance(stmt, Select)
        columns = [(c.name, _kind(c.type)) for c in stmt.selected_columns]
        names = tuple(name for name, _ in columns)
        typed = tuple((name, kind) for name, kind in columns if kind is not None)
        found = _COLUMNS[id(stmt)] = (names, typed)
    return found


def _kind(column_type: Any) -> str | None:
    if isinstance(column_type, s.UTCDateTime):
        return "time"
    if isinstance(column_type, JSON):
        return "json"
    if isinstance(column_type, Boolean):
        return "bool"
    return None


# Statements of the hot path, built once: building a statement costs more than running it.
_TASK = select(s.tasks).where(s.tasks.c.id == bindparam("k_id"))
_UPDATE_TASK = (
    update(s.tasks)
    .where(s.tasks.c.id == bindparam("k_id"))
    .where(s.tasks.c.version == bindparam("k_version"))
)
_SUBMISSIONS = (
    select(s.submissions)
    .where(s.submissions.c.task_id == bindparam("k_task"))
    .order_by(s.submissions.c.attempt)
)
_SUBMISSION = select(s.submissions).where(
    and_(
        s.submissions.c.task_id == bindparam("k_task"),
        s.submissions.c.attempt == bindparam("k_attempt"),
    )
)
_VERDICTS = (
    select(s.verdicts).where(s.verdicts.c.task_id == bindparam("k_task")).order_by(s.verdicts.c.id)
)
_ENTRIES = (
    select(s.ledger_entries)
    .where(s.ledger_entries.c.task_id == bindparam("k_task"))
    .order_by(s.ledger_entries.c.id)
)
_RECEIPTS = (
    select(s.receipts).where(s.receipts.c.task_id == bindparam("k_task")).order_by(s.receipts.c.seq)
)
_RECEIPT_IDS = (
    select(s.receipts.c.id)
    .where(s.receipts.c.task_id == bindparam("k_task"))
    .order_by(s.receipts.c.seq)
)
_HEAD_FOR_UPDATE = select(s.chain_head).where(s.chain_head.c.id == 1).with_for_update()
_SET_HEAD = (
    update(s.chain_head)
    .where(s.chain_head.c.id == 1)
    .values(seq=bindparam("h_seq"), digest=bindparam("h_digest"))
)
_INSERT_RECEIPT = insert(s.receipts)
_INSERT_VERDICT = insert(s.verdicts)
_INSERT_ENTRIES = insert(s.ledger_entries)
_UPSERT = {dialect: _upsert(dialect) for dialect in ("sqlite", "postgresql")}
