"""The service's use cases, independent of HTTP: each runs the market in one store transaction.

Every state change follows the same steps:

1. open a write transaction; replay the stored response if the Idempotency-Key was seen;
2. read the task and ask the pure market for the outcome of the event at the clock's time;
3. store the new task state (refused if another request changed it first), then apply the
   effects: ledger transfers, verdicts with their receipts, reputation;
4. store the response under the Idempotency-Key and commit.

A lost race (:class:`adjudge.store.ConcurrentUpdate`) re-runs the whole thing from step 1, so the
loser sees the winner's state: two finalizes of one submission give one verdict and one refusal.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import secrets
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from adjudge.errors import Error
from adjudge.market import (
    DEFAULT_FEE_BPS,
    MAX_FEE_BPS,
    WORLD,
    Accept,
    AgentPenalized,
    Cancel,
    Checker,
    Collect,
    Context,
    Dispute,
    Draft,
    Effect,
    Event,
    Finalize,
    Outcome,
    ReceiptIssuer,
    Reclaim,
    Review,
    Rule,
    Submit,
    Transfer,
    VerdictReached,
    VerifierVerdict,
    penalize,
    post,
    step,
    wallet_account,
)
from adjudge.receipts import SigningKey, VerifyingKey
from adjudge.service.clock import Clock, SystemClock
from adjudge.service.signed_verdicts import DETAIL_KEY, check_signature, verdict_payload
from adjudge.service.wiring import default_checker, default_issuer
from adjudge.store import Account, ConcurrentUpdate, Store, StoredTask, Submission, Transaction

#: Roles an account may hold.
ROLES = frozenset({"poster", "agent", "verifier", "admin", "provider"})
#: The most money the ledger holds in total (its columns are signed 64-bit integers).
MAX_MONEY = 2**63 - 1
#: How long a verified API key is remembered in this process.
AUTH_CACHE_SECONDS = 30.0
#: How often a request that lost a race is re-run before giving up with CONCURRENT_UPDATE.
RETRIES = 8
_ACCOUNT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """Deployment settings; ``fee_bps`` is read at each settlement."""

    fee_bps: int = DEFAULT_FEE_BPS

    def __post_init__(self) -> None:
        if not 0 <= self.fee_bps <= MAX_FEE_BPS:
            raise Error(f"fee_bps must be between 0 and {MAX_FEE_BPS}.", code="INVALID_FEE")


@dataclass(frozen=True)
class Idempotency:
    """An Idempotency-Key and the fingerprint of the request that carried it."""

    key: str
    fingerprint: str

    @staticmethod
    def of(key: str | None, method: str, path: str, body: Any) -> Idempotency | None:
        """The key with a fingerprint of method, path and canonical body; None without a key."""
        if not key:
            return None
        if len(key) > 255:
            raise Error("An Idempotency-Key is at most 255 characters.", code="INVALID_REQUEST")
        canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"))
        return Idempotency(key, "sha256:" + hashlib.sha256(canonical.encode()).hexdigest())


@dataclass(frozen=True)
class Response:
    """A state change's answer: status code, JSON body, and whether it was replayed."""

    status: int
    body: Any
    replayed: bool = False


Render = Callable[[Transaction, StoredTask, Account], Any]


class Marketplace:
    """Runs the market over a store with an injected clock, checker and receipt issuer."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock | None = None,
        checker: Checker | None = None,
        issuer: ReceiptIssuer | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.store = store
        self.clock = clock or SystemClock()
        self.checker = checker or default_checker()
        self.issuer = issuer or default_issuer()
        self.settings = settings or Settings()
        self._keys: dict[str, tuple[Account, float]] = {}

    def context(self) -> Context:
        """The market's context now."""
        return Context(now=self.clock.now(), checker=self.checker, fee_bps=self.settings.fee_bps)

    # --- accounts ---------------------------------------------------------------------------

    def authenticate(self, api_key: str | None) -> Account:
        """The account an API key belongs to; ``UNAUTHORIZED`` otherwise.

        Known keys are remembered for :data:`AUTH_CACHE_SECONDS` (an account's id and roles
        never change; its reputation is re-read wherever it is shown).
        """
        if api_key:
            cached = self._keys.get(api_key)
            if cached is not None and cached[1] > time.monotonic():
                return cached[0]
            with self.store.read() as tx:
                account = tx.account_by_key(api_key)
            if account is not None:
                if len(self._keys) > 10_000:
                    self._keys.clear()
                self._keys[api_key] = (account, time.monotonic() + AUTH_CACHE_SECONDS)
                return account
        raise Error("Send a valid API key as 'Authorization: Bearer <key>'.", code="UNAUTHORIZED")

    def create_account(
        self, account_id: str, roles: Iterable[str], *, opt_in: bool = False
    ) -> tuple[Account, str]:
        """Create an account and return it with its new API key (shown only this once)."""
        account, api_key, _ = self.create_account_with_keys(account_id, roles, opt_in=opt_in)
        return account, api_key

    def create_account_with_keys(
        self,
        account_id: str,
        roles: Iterable[str],
        *,
        opt_in: bool = False,
        verifier_public_key: str | None = None,
    ) -> tuple[Account, str, str | None]:
        """Create an account; returns it, its API key, and a new verifier's private key (PEM).

        A verifier is known in receipts by its Ed25519 key: send its public key (base64 of the
        raw 32 bytes), or get a new key pair whose private half is returned once, never stored.
        """
        roles = frozenset(roles)
        private_pem: str | None = None
        verifier_key: str | None = None
        if "verifier" in roles:
            if verifier_public_key:
                try:
                    verifier_key = VerifyingKey.from_base64(verifier_public_key).keyid
                except Error as exc:
                    raise Error(
                        "verifier_public_key must be base64 of a raw 32-byte Ed25519 key.",
                        code="INVALID_REQUEST",
                    ) from exc
            else:
                pair = SigningKey.generate()
                verifier_key = pair.keyid
                private_pem = pair.to_pem().decode("ascii")
        if not _ACCOUNT_ID.match(account_id):
            raise Error(
                "An account id is 1-64 lowercase letters, digits, '_' or '-'.",
                code="INVALID_REQUEST",
            )
        if not roles or not roles <= ROLES:
            raise Error(f"Roles must be some of {sorted(ROLES)}.", code="INVALID_REQUEST")
        if opt_in and "verifier" not in roles:
            raise Error("Only a verifier can take verification jobs.", code="INVALID_REQUEST")
        api_key = "adj_" + secrets.token_urlsafe(24)
        account = self._retry(
            lambda: self._write(
                lambda tx: tx.create_account(
                    account_id,
                    roles,
                    api_key,
                    opt_in=opt_in,
                    at=self.clock.now(),
                    verifier_key=verifier_key,
                )
            )
        )
        return account, api_key, private_pem

    def set_opt_in(self, account: Account, opt_in: bool) -> Account:
        """Turn "take verification jobs" on or off for a verifier."""
        _need_role(account, "verifier")

        def run(tx: Transaction) -> Account:
            tx.set_opt_in(account.id, opt_in)
            found = tx.account(account.id)
            assert found is not None
            return found

        return self._retry(lambda: self._write(run))

    def deposit(self, account_id: str, amount: int) -> int:
        """Credit money from outside into an account's wallet; returns the new balance."""
        if isinstance(amount, bool) or amount <= 0:
            raise Error("A deposit is a positive whole amount.", code="INVALID_AMOUNT")

        def run(tx: Transaction) -> int:
            if tx.account(account_id) is None:
                raise Error(f"No account {account_id}.", code="ACCOUNT_NOT_FOUND")
            wallet = wallet_account(account_id)
            # Only deposits bring money in, so capping their total keeps every balance within
            # the ledger's 64-bit columns (SQLite would silently turn an overflow into a float).
            if -tx.balance(WORLD) + amount > MAX_MONEY:
                raise Error(
                    "Deposits would exceed the most money the ledger holds.", code="INVALID_AMOUNT"
                )
            tx.transfer(
                [Transfer(WORLD, wallet, amount, "deposit")], task_id=None, at=self.clock.now()
            )
            return tx.balance(wallet)

        return self._retry(lambda: self._write(run))

    # --- tasks ------------------------------------------------------------------------------

    def post_task(
        self,
        account: Account,
        *,
        title: str,
        brief: str,
        reward: int,
        deadline: datetime,
        mode: str,
        criteria: dict[str, Any],
        verifier: str | None,
        private: bool,
        idem: Idempotency | None,
        render: Render,
    ) -> Response:
        """Post and fund a task from the poster's wallet (``INSUFFICIENT_FUNDS`` if short)."""
        _need_role(account, "poster")

        def run(tx: Transaction) -> Response:
            opted_in = False
            verifier_key = None
            if verifier:
                named = tx.account(verifier)
                opted_in = bool(named and "verifier" in named.roles and named.verifier_opt_in)
                verifier_key = named.verifier_key if named else None
            draft = Draft(
                poster=account.id,
                reward=reward,
                deadline=deadline,
                mode=mode,
                criteria=criteria,
                verifier=verifier,
                verifier_opted_in=opted_in,
                verifier_key=verifier_key,
                private=private,
            )
            ctx = self.context()
            out = post("task_" + uuid.uuid4().hex[:24], draft, ctx)
            stored = tx.insert_task(out.task, title=title, brief=brief)
            tx.transfer(_transfers(out), task_id=out.task.id, at=ctx.now)
            return Response(201, render(tx, stored, account))

        return self._idempotent(account, idem, run)

    def accept(
        self, account: Account, task_id: str, *, idem: Idempotency | None, render: Render
    ) -> Response:
        """An agent takes a funded task."""
        _need_role(account, "agent")
        return self._act(
            account, task_id, idem=idem, render=render, make_event=lambda tx, st: Accept(account.id)
        )

    def submit(
        self,
        account: Account,
        task_id: str,
        *,
        result: str,
        idem: Idempotency | None,
        render: Render,
    ) -> Response:
        """The agent delivers a result; it is stored with its digest for the integrity proof."""
        _need_role(account, "agent")

        def after(tx: Transaction, out: Outcome) -> None:
            assert out.task.submitted_at is not None and out.task.result_digest is not None
            tx.add_submission(
                Submission(
                    out.task.id,
                    out.task.attempts,
                    result,
                    out.task.result_digest,
                    out.task.submitted_at,
                )
            )

        return self._act(
            account,
            task_id,
            idem=idem,
            render=render,
            make_event=lambda tx, st: Submit(account.id, result),
            after=after,
        )

    def finalize(
        self, account: Account, task_id: str, *, idem: Idempotency | None, render: Render
    ) -> Response:
        """The agent asks for the auto check of its latest submission."""
        _need_role(account, "agent")

        def event(tx: Transaction, stored: StoredTask) -> Event:
            sub = tx.submission(task_id, stored.task.attempts)
            # The server's stored copy is what is judged; no submission judges an empty result
            # whose digest cannot match, so the market refuses it.
            return Finalize(account.id, sub.result if sub else "")

        return self._act(account, task_id, idem=idem, render=render, make_event=event)

    def review(
        self,
        account: Account,
        task_id: str,
        *,
        passed: bool,
        reasons: Sequence[str],
        idem: Idempotency | None,
        render: Render,
    ) -> Response:
        """The poster approves or rejects a submitted result (manual mode)."""
        _need_role(account, "poster")
        ev = Review(account.id, passed, tuple(reasons))
        return self._act(account, task_id, idem=idem, render=render, make_event=lambda tx, st: ev)

    def verifier_verdict(
        self,
        account: Account,
        task_id: str,
        *,
        passed: bool,
        reasons: Sequence[str],
        signature: str | None = None,
        public_key: str | None = None,
        idem: Idempotency | None,
        render: Render,
    ) -> Response:
        """The named verifier's judgment (agent mode), signed with the verifier's own key.

        The market's rules decide first (who, which state, how many reasons); then the signature
        is checked against the payload rebuilt from the judged submission and the key the task's
        trust policy names (:mod:`adjudge.service.signed_verdicts`), before any receipt is built
        or anything is written. The verified signature is kept with the verdict.
        """
        _need_role(account, "verifier")
        ev = VerifierVerdict(account.id, passed, tuple(reasons))

        def run(tx: Transaction) -> Response:
            stored = self._task(tx, task_id)
            ctx = self.context()
            out = _signed(
                step(stored.task, ev, ctx), stored.task.verifier_key, signature, public_key
            )
            updated = self._apply(tx, stored, out, ctx.now)
            return Response(200, render(tx, updated, account))

        return self._idempotent(account, idem, run)

    def dispute(
        self,
        account: Account,
        task_id: str,
        *,
        reason: str,
        idem: Idempotency | None,
        render: Render,
    ) -> Response:
        """The poster or the agent asks an admin to rule."""
        return self._act(
            account,
            task_id,
            idem=idem,
            render=render,
            make_event=lambda tx, st: Dispute(account.id, reason),
        )

    def reclaim(
        self, account: Account, task_id: str, *, idem: Idempotency | None, render: Render
    ) -> Response:
        """The poster reclaims after the deadline (a refund, or an escalation)."""
        _need_role(account, "poster")
        return self._act(
            account,
            task_id,
            idem=idem,
            render=render,
            make_event=lambda tx, st: Reclaim(account.id),
        )

    def collect(
        self, account: Account, task_id: str, *, idem: Idempotency | None, render: Render
    ) -> Response:
        """The agent collects an escalated reward after 14 days."""
        _need_role(account, "agent")
        return self._act(
            account,
            task_id,
            idem=idem,
            render=render,
            make_event=lambda tx, st: Collect(account.id),
        )

    def cancel(
        self, account: Account, task_id: str, *, idem: Idempotency | None, render: Render
    ) -> Response:
        """The poster withdraws a task nobody accepted."""
        _need_role(account, "poster")
        return self._act(
            account, task_id, idem=idem, render=render, make_event=lambda tx, st: Cancel(account.id)
        )

    def rule(
        self,
        account: Account,
        task_id: str,
        *,
        pay_agent: bool,
        note: str,
        idem: Idempotency | None,
        render: Render,
    ) -> Response:
        """An admin rules on a disputed or escalated task."""
        _need_role(account, "admin")
        ev = Rule(account.id, pay_agent, note)
        return self._act(account, task_id, idem=idem, render=render, make_event=lambda tx, st: ev)

    def dry_run(self, account: Account, task_id: str, result: str) -> dict[str, Any]:
        """Check a draft against a task's criteria: no attempt used, no reputation touched.

        Open to the task's poster and to the agent holding it (or, on a funded task, any agent),
        and only for tasks with criteria (``NO_CRITERIA`` otherwise).
        """
        with self.store.read() as tx:
            stored = self._task(tx, task_id)
        task = stored.task
        may = account.id in (task.poster, task.agent) or (
            task.agent is None and "agent" in account.roles and account.id != task.verifier
        )
        if not may:
            raise Error("Only the poster or the task's agent can dry-run it.", code="NOT_A_PARTY")
        if not task.criteria:
            raise Error("This task has no criteria to check against.", code="NO_CRITERIA")
        if len(result) > 200_000:
            raise Error("A result may be at most 200000 characters.", code="RESULT_TOO_LARGE")
        outcome = self.checker.check(result, task.criteria)
        return {
            "dry_run": True,
            "passed": outcome.passed,
            "score": outcome.score,
            "reasons": list(outcome.reasons),
            "detail": dict(outcome.detail),
        }

    # --- reads ------------------------------------------------------------------------------

    def read(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` in a read transaction."""
        with self.store.read() as tx:
            return fn(tx)

    @staticmethod
    def _task(tx: Transaction, task_id: str) -> StoredTask:
        stored = tx.task(task_id)
        if stored is None:
            raise Error(f"No task {task_id}.", code="TASK_NOT_FOUND")
        return stored

    def task(self, tx: Transaction, task_id: str) -> StoredTask:
        """A task, or ``TASK_NOT_FOUND``."""
        return self._task(tx, task_id)

    # --- the machinery ----------------------------------------------------------------------

    def _act(
        self,
        account: Account,
        task_id: str,
        *,
        idem: Idempotency | None,
        render: Render,
        make_event: Callable[[Transaction, StoredTask], Event],
        after: Callable[[Transaction, Outcome], None] | None = None,
    ) -> Response:
        def run(tx: Transaction) -> Response:
            stored = self._task(tx, task_id)  # (2)
            ctx = self.context()
            out = step(stored.task, make_event(tx, stored), ctx)
            updated = self._apply(tx, stored, out, ctx.now)  # (3)
            if after is not None:
                after(tx, out)
            return Response(200, render(tx, updated, account))

        return self._idempotent(account, idem, run)

    def _apply(
        self, tx: Transaction, stored: StoredTask, out: Outcome, now: datetime
    ) -> StoredTask:
        """Store the outcome: state first (so a lost race fails fast), then every effect."""
        updated = tx.update_task(stored, out.task)
        tx.transfer(_transfers(out), task_id=out.task.id, at=now)
        for effect in out.effects:
            if isinstance(effect, VerdictReached):
                sub = tx.submission(effect.task_id, effect.attempt)
                receipt = tx.append_receipt(
                    effect,
                    self.issuer,
                    result=sub.result if sub else None,
                    task_id=effect.task_id,
                    at=now,
                )
                tx.add_verdict(effect, receipt.id)
            elif isinstance(effect, AgentPenalized):
                agent = tx.account(effect.agent)
                if agent is not None:
                    tx.save_record(agent.id, penalize(agent.record))
        return updated

    def _idempotent(
        self, account: Account, idem: Idempotency | None, run: Callable[[Transaction], Response]
    ) -> Response:
        def once() -> Response:
            with self.store.write() as tx:  # (1)
                if idem is not None:
                    seen = tx.recalled(account.id, idem.key)
                    if seen is not None:
                        fingerprint, status, body = seen
                        if fingerprint != idem.fingerprint:
                            raise Error(
                                "This Idempotency-Key was used for a different request.",
                                code="IDEMPOTENCY_KEY_REUSED",
                            )
                        return Response(status, body, replayed=True)
                response = run(tx)
                if idem is not None:  # (4)
                    tx.remember(
                        account_id=account.id,
                        key=idem.key,
                        fingerprint=idem.fingerprint,
                        status_code=response.status,
                        body=response.body,
                        at=self.clock.now(),
                    )
                return response

        try:
            return self._retry(once)
        except Error:
            # Under READ COMMITTED a duplicate can miss the key (read before the first request
            # committed) yet see the task it changed, and be refused. If the key is stored now,
            # the request did happen: answer as a replay.
            if idem is not None:
                with self.store.read() as tx:
                    seen = tx.recalled(account.id, idem.key)
                if seen is not None and seen[0] == idem.fingerprint:
                    return Response(seen[1], seen[2], replayed=True)
            raise

    def _write(self, fn: Callable[[Transaction], T]) -> T:
        with self.store.write() as tx:
            return fn(tx)

    @staticmethod
    def _retry(fn: Callable[[], T]) -> T:
        for attempt in range(RETRIES):
            try:
                return fn()
            except ConcurrentUpdate:
                if attempt == RETRIES - 1:
                    raise
                time.sleep(random.uniform(0, 0.002 * 2**attempt))
        raise AssertionError("unreachable")


def _signed(
    out: Outcome, named_key: str | None, signature: str | None, public_key: str | None
) -> Outcome:
    """``out`` with its verifier verdict carrying the verified signature (refused otherwise)."""
    effects: list[Effect] = []
    for effect in out.effects:
        if isinstance(effect, VerdictReached) and effect.authority == "verifier":
            if not named_key or effect.result_digest is None:
                raise Error(
                    "The task names no verifier key or holds no result to sign.",
                    code="VERDICT_UNPROVABLE",
                )
            payload = verdict_payload(
                task_id=effect.task_id,
                attempt=effect.attempt,
                result_digest=effect.result_digest,
                passed=effect.passed,
                reasons=effect.reasons,
                verifier_key=named_key,
            )
            record = check_signature(payload, signature, public_key)
            effects.append(replace(effect, detail={**effect.detail, DETAIL_KEY: record}))
        else:
            effects.append(effect)
    return replace(out, effects=tuple(effects))


def _transfers(out: Outcome) -> list[Transfer]:
    return [e for e in out.effects if isinstance(e, Transfer)]


def _need_role(account: Account, role: str) -> None:
    if role not in account.roles:
        raise Error(f"This needs an account with the {role} role.", code="ROLE_REQUIRED")
