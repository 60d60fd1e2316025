"""The gateway's paid calls: forwarded, verified, signed and settled, with the signing keys
providers verify the gateway's requests by.

A call, in order:

1. the tool and its policy are read, and the arguments checked against the tool's input schema
   (``TOOL_ARGUMENTS_INVALID``: refused before the provider is called, nothing reserved);
2. in one transaction the call is started: its Idempotency-Key claimed for the caller and the
   listed price reserved from the caller's wallet into the call's hold (``INSUFFICIENT_FUNDS``:
   refused, nothing forwarded);
3. the request is built, signed in the profile providers verify (RFC 9421, the gateway's own
   Ed25519 key, ``aud`` the provider) and forwarded within fixed bounds — outside any
   transaction;
4. the provider's answer is verified against the tool's contract and policy (pure);
5. in one transaction the call ends: its kernel determination is signed into a receipt, the
   hold is released as the receipt says (settle: to the provider; refund or void: back to the
   caller), the verification record is stored (``source: gateway``, so it feeds the provider's
   quality window, unless the provider called its own tool), and the answer is kept for
   replays.

A request or system error (a time-out, a 5xx, a refused signature) has no verdict: its receipt
is a NOT_RUN determination over the request, and the reservation goes back. A call interrupted
between 2 and 5 (the process died) stays ``pending``; :meth:`Gateway.recover` (run by the
service at start and whenever a retry meets such a call) ends it as a system error and returns
the reservation; a call whose own end comes after that answers the end it finds, as a replay. A
retry with the same Idempotency-Key replays the stored answer without calling the provider again;
while the first is still running it is ``IDEMPOTENCY_IN_PROGRESS``.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from adjudge.app import metrics, settlement
from adjudge.app.accounts import need_primary, need_role
from adjudge.app.at_once import AtOnce
from adjudge.app.calls import (
    call_view,
    emit_call_event,
    emit_call_settled,
    observe_quality,
)
from adjudge.app.gateway.corroboration import corroborate
from adjudge.app.gateway.keyring import DatabaseKeyRing, ensure_key
from adjudge.app.gateway.parsed import (
    judging_policy,
    judging_policy_read,
    judging_weight_of,
    kept_policy,
    kept_tool,
    parsed_policy,
    parsed_tool,
)
from adjudge.app.gateway.spending import count_spending, give_back, spending_rows, within
from adjudge.app.gateway.views import call_answer, gateway_call_view
from adjudge.app.isolation import Isolation, JudgingFailed
from adjudge.app.maturity import mature_due
from adjudge.app.meaning import JUDGE_TIMEOUT, CallJudge, MeaningAsk, ask_judges
from adjudge.app.retries import put_back
from adjudge.app.timing import stage
from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.app.wiring import call_subject, new_sample_seed
from adjudge.calls import CallRequest, Contract, Policy, Tool, determine_call, verify_call
from adjudge.calls.bounds import in_process
from adjudge.calls.contract import ShapeCheck, map_response
from adjudge.calls.judging import JudgingJob, built_request
from adjudge.calls.kernel_rows import call_decision
from adjudge.calls.meaning import is_key_judge
from adjudge.calls.policy import providers_own
from adjudge.calls.quality import counted_as, enters_window
from adjudge.calls.tools import BuiltRequest, build_request
from adjudge.calls.verify import (
    CallResult,
    Corroboration,
    Judgment,
    digest_of,
    judged_here,
    meaning_pending,
    to_wire,
    wants_corroboration,
    wants_judges,
)
from adjudge.errors import (
    BadInput,
    Conflict,
    Error,
    NotAllowed,
    NotFound,
    RateLimited,
    StateError,
    Unavailable,
)
from adjudge.gateway import (
    AddressGuard,
    Forwarder,
    ProviderCredential,
    SecretBox,
    jwks,
    provider_response,
    rotate,
    sign_request,
    signing_key,
)
from adjudge.gateway.forward import AsyncForwarder, FailureKind, ForwardFailure, Outcome
from adjudge.json_text import dumps_utf8
from adjudge.kernel import Determination, determine
from adjudge.market import wallet_account
from adjudge.receipts import Issuer
from adjudge.receipts.issuer import Place
from adjudge.store import (
    Account,
    Transaction,
    call_reports,
    hot_rows,
    ids,
    meaning_queue,
    receipt_log,
    records,
)
from adjudge.store import calls as calls_db
from adjudge.store import gateway as db
from adjudge.store import holds as holds_db
from adjudge.webhooks import events

log = logging.getLogger("adjudge.gateway")

#: How long a call may stay pending before a retry or a sweep ends it as interrupted: longer
#: than any forward can take (its total time-out) plus the time to verify and commit.
INTERRUPTED_AFTER = timedelta(minutes=2)
#: The most calls judged after their answers in one pass of the upkeep (each judge is bounded
#: by the gateway's judge time-out, so a pass is bounded too).
JUDGED_BATCH = 20
#: The most calls left pending one read of the upkeep's recovery takes (it reads batch after
#: batch while they are full, so the bound is on a read, not on a pass).
RECOVER_BATCH = 100
#: The threads a process's paid calls read the store on (their writes go to the group commit).
#: A read is a few hundred microseconds: two keep up with a process's calls, and more only
#: contend for the interpreter (two took 0.95x the CPU a call of eight on SQLite, and served
#: as many calls a second on PostgreSQL).
DB_THREADS = 2
#: The tool and policy documents one account's calls may wait on being parsed at once.
PARSES_AT_ONCE = 4
#: The largest provider answer whose settlement a local store's event loop commits itself: a
#: larger one (up to the forwarder's cap, 4 MiB, kept as evidence and in the record) would take
#: the loop tens of milliseconds to encode and store, every other request waiting; the commit
#: thread writes it instead (GroupCommit.run).
LOOP_ANSWER_BYTES = 64 * 1024
T = TypeVar("T")


class IdempotencyInProgress(RateLimited):
    """The first call with this key has not ended yet: wait and send the same again."""

    code = "IDEMPOTENCY_IN_PROGRESS"


class Gateway:
    """The paid-call use cases: a call, its recovery and its view; the gateway's keys."""

    def __init__(
        self,
        unit: UnitOfWork,
        issuer: Issuer,
        *,
        box: SecretBox,
        forwarder: Forwarder | None = None,
        keys: DatabaseKeyRing | None = None,
        private_providers: bool = False,
        judges: Mapping[str, CallJudge] | None = None,
        judge_timeout: float = JUDGE_TIMEOUT,
        isolation: Isolation | None = None,
    ) -> None:
        self.unit = unit
        #: Where an answer whose judging has no bound is judged (worker processes).
        self.isolation = isolation or Isolation()
        #: The meaning judges a policy may name, by key (see :mod:`adjudge.app.meaning`).
        self.judges: Mapping[str, CallJudge] = dict(judges or {})
        self.judge_timeout = judge_timeout
        self.issuer = issuer
        self.box = box
        self._forwarder = forwarder
        self._forwarder_lock = threading.Lock()
        self._loop_forwarders: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, AsyncForwarder
        ] = weakref.WeakKeyDictionary()
        self._db_threads = ThreadPoolExecutor(DB_THREADS, thread_name_prefix="adjudge-gateway-db")
        self.keys = keys or DatabaseKeyRing(unit, box)
        #: Whether providers may live on loopback or private networks (tests, a local demo).
        self.private_providers = private_providers
        self._calls_at_once: AtOnce | None = None  # made with the forwarder's limits
        #: Tool and policy documents not kept parsed, parsed one at a time off the event loop
        #: (:meth:`_parsed_apart`), each once however many calls wait for it.
        self._parser = ThreadPoolExecutor(1, thread_name_prefix="adjudge-gateway-parse")
        self._parsing: dict[Hashable, Future[Any]] = {}
        self._parsing_lock = threading.Lock()
        self._parses_at_once = AtOnce(PARSES_AT_ONCE)

    @property
    def forwarder(self) -> Forwarder:
        """The bounded forwarder, started on first use (it runs an event loop of its own)."""
        with self._forwarder_lock:
            if self._forwarder is None:
                self._forwarder = Forwarder(
                    guard=AddressGuard(allow_private=self.private_providers)
                )
            return self._forwarder

    def close(self) -> None:
        """Stop the forwarder, if it was started, the judging workers and the database
        threads."""
        with self._forwarder_lock:
            if self._forwarder is not None:
                self._forwarder.close()
                self._forwarder = None
        self.isolation.close()
        self._db_threads.shutdown(wait=False)
        self._parser.shutdown(wait=False)

    # --- keys -----------------------------------------------------------------------------

    def jwks(self) -> dict[str, Any]:
        """The JWKS providers verify the gateway's requests with (the signing key and those
        still in their overlap)."""
        now = self.unit.now()
        ensure_key(self.keys, now)
        return jwks(self.keys.all_keys(), now)

    def rotate_keys(self, admin: Account) -> dict[str, Any]:
        """Publish a new signing key; the current ones retire shortly after (overlap)."""
        need_role(admin, "admin")
        need_primary(admin, "rotates the gateway's signing keys")
        now = self.unit.now()
        rotate(self.keys, now)
        return self.jwks()

    # --- calls ----------------------------------------------------------------------------

    def call(
        self,
        caller: Account,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        key: str | None = None,
        max_price: int | None = None,
    ) -> Answer[dict[str, Any]]:
        """:meth:`call_async` from a thread that runs no event loop (the forwarder's loop runs
        it and this thread waits)."""
        return self.forwarder.run(
            self.call_async(caller, name, arguments, key=key, max_price=max_price)
        )

    async def call_async(
        self,
        caller: Account,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        key: str | None = None,
        max_price: int | None = None,
        corroborating: bool = False,
    ) -> Answer[dict[str, Any]]:
        """Forward, verify, sign and settle one call (the module's steps); a retry with the
        same Idempotency-Key replays the answer without calling the provider again.

        An empty answer whose policy declares a corroborator is corroborated before it is
        settled (:mod:`adjudge.app.gateway.corroboration`: a paid call of its own, paid by the
        provider); ``corroborating`` marks such a call, which is never corroborated in turn.

        The call is charged the tool's price in force when it starts (an increase waits out its
        notice) and judged by the policy version in force then. ``max_price`` is the most the
        caller accepts, in minor units: a price above it is refused
        (``PAYMENT_PRICE_ABOVE_MAXIMUM``) before anything is reserved or forwarded, as is one
        past the caller's key's spending limits (``PAYMENT_LIMIT_EXCEEDED``).

        The provider round trip and the checks run on the calling event loop; the store's
        transactions run on the gateway's database threads (:data:`DB_THREADS`) and the group
        commit's, so a slow provider holds no thread and a busy database never blocks the
        loop. A local store (SQLite) is read and written on the loop itself, never waiting
        for another writer (:class:`adjudge.app.unit.GroupCommit`).
        """
        args = dict(arguments or {})
        # The most the caller accepts is its word too: a retry naming another is another call.
        # Left out when none is given, so a key's fingerprint from before it was kept stays.
        asked = {"tool": name, "arguments": args}
        fingerprint = digest_of(asked if max_price is None else {**asked, "max_price": max_price})
        if key is not None and not corroborating:  # (a corroboration's key has a space)
            Idempotency.of(key, "gateway.call", None)  # the key's own form
        if corroborating:  # counted as its call's, which waits for it
            return await self._call(caller, name, args, key, max_price, fingerprint, True)
        with self._in_flight().held(caller.id, "paid calls", code="CALLS_AT_ONCE_EXCEEDED"):
            return await self._call(caller, name, args, key, max_price, fingerprint, False)

    def _in_flight(self) -> AtOnce:
        """Each caller's calls in flight in this process (``ForwardLimits.max_per_caller``)."""
        if self._calls_at_once is None:
            most = self.forwarder.limits.max_per_caller
            with self._forwarder_lock:  # two first calls at once make one
                if self._calls_at_once is None:
                    self._calls_at_once = AtOnce(most)
        return self._calls_at_once

    async def _call(
        self,
        caller: Account,
        name: str,
        args: dict[str, Any],
        key: str | None,
        max_price: int | None,
        fingerprint: str,
        corroborating: bool,
    ) -> Answer[dict[str, Any]]:
        now = self.unit.now()  # the call starts now: its price and policy are those in force
        ask = _Asked(caller, name, args, key, max_price, fingerprint, now)
        given: dict[Hashable, Any] = {}  # the tool and policy parsed apart for this call
        while True:
            try:
                prepared = await self._in_db(lambda: self._prepare(ask, given))
                break
            except _ParseApart as apart:
                assert apart.key not in given  # a tool, then its policy: twice at most
                given[apart.key] = await self._parsed_apart(caller.id, apart)
        if isinstance(prepared, Answer):
            return prepared
        built = prepared.built
        if built is None:  # arguments whose check has no bound: checked apart
            built = await self._built_apart(ask, prepared)
            prepared = replace(prepared, built=built)
        if not self.private_providers:
            await _refuse_private(self._forwarder_here(), built.url)
        begun = await self._start(ask, prepared)
        if isinstance(begun, Answer):
            return begun
        outcome = await self._forward(begun, args)  # (3)
        p, stored = begun.prepared, begun.prepared.stored
        request = CallRequest(  # its sampling seed drawn now, the provider's answer in
            begun.call_id,
            stored.provider,
            name,
            args,
            p.price,
            stored.currency,
            now,
            sample_seed=new_sample_seed(),
        )
        try:
            result, judgments, output = await self._judged(begun, request, outcome, corroborating)
        except JudgingFailed as exc:  # the answer's judging passed its bounds: ours, not theirs
            log.warning("call %s: %s", begun.call_id, exc.message)
            outcome = ForwardFailure(
                FailureKind.SYSTEM, f"the gateway could not judge the answer: {exc.message}", 0.0
            )
            result, judgments, output = await self._judged(begun, request, outcome, True)
        except Exception:  # a bug of ours: the call still ends, refunded, never left pending
            log.exception("call %s: its answer could not be judged", begun.call_id)
            outcome = ForwardFailure(
                FailureKind.SYSTEM, "the gateway failed judging the answer", 0.0
            )
            result, judgments, output = await self._judged(begun, request, outcome, True)
        body_bytes = outcome.body if not isinstance(outcome, ForwardFailure) else None
        contract_digest = digest_of(dict(p.tool.contract_document))
        finish = self._finishing(  # (5), committed with whatever else ends meanwhile
            caller,
            stored,
            begun.call_id,
            begun.hold,
            request,
            result,
            output=output,
            body=body_bytes,
            policy_digest=p.policy_digest,
            contract_digest=contract_digest,
            api_key_id=None if caller.key is None else caller.key.id,
            judgments=judgments,
            # Judged after the answer: the call settles now and its judgment is queued with it,
            # each named key asked for its own.
            # Not under a policy withdrawn by the call's start: its verdict is DEGRADED, settled
            # and unenforced whatever the judges say, so they would be asked for nothing.
            judge_later=p.policy is not None
            and meaning_pending(result)
            and not p.policy.withdrawn(request.at or now),
            key_judges=()
            if p.policy is None or not providers_own(p.policy_by, stored.provider)
            else tuple(j for j in p.policy.judges if is_key_judge(j)),
            tool=p.tool,
        )
        with stage("gateway.settle.wait"):
            light = body_bytes is None or len(body_bytes) <= LOOP_ANSWER_BYTES
            settle = _timed("gateway.settle", finish)
            hot = settling_rows(
                caller.id,
                None if caller.key is None else caller.key.id,
                stored.provider,
                request.price_minor,
                request.at or self.unit.now(),
                result.effect.payment.value,
                termed=p.termed and enters_window("gateway", caller.id, stored.provider),
            )
            try:
                answer = await self.unit.write_async(settle, on_loop=light, hot=hot)
            except Error:
                ended = await self._ended_meanwhile(begun.call_id)
                if ended is None:
                    raise
                return ended
        return Answer(answer)

    async def _ended_meanwhile(self, call_id: str) -> Answer[dict[str, Any]] | None:
        """The answer of a call another end finished while its answer was out or judged (a
        retry with its key, or the upkeep, ended it as interrupted past its time), as a replay:
        this end, which wrote nothing, lost to it (on the debit of the reservation it emptied,
        the record it stored or the call's conditional update). None when the call is still
        pending: what refused this end was its own."""
        found = await self.read_async(lambda tx: db.call(tx, call_id))
        if found is None or found.state == "pending" or found.answer is None:
            return None
        return Answer(dict(found.answer), replayed=True)

    async def _judged(
        self, begun: _Begun, request: CallRequest, outcome: Outcome, corroborating: bool
    ) -> tuple[CallResult, list[Judgment], Any]:
        """(4): the answer verified (corroborated and judged where its policy says), and the
        output the caller is shown.

        An answer whose judging has no bound on its work, or too large for the bound
        (:mod:`adjudge.calls.bounds`), is judged in a worker process killed at a time limit
        (:mod:`adjudge.app.isolation`), never on the event loop."""
        p = begun.prepared
        response = provider_response(outcome)
        verified_at = self.unit.now()
        apart = (
            response.status == "ok"
            and not isinstance(outcome, ForwardFailure)
            and not judged_here(
                p.weight, p.contract, response.body, len(outcome.body) + p.arguments_size
            )
        )

        async def verified(
            corroboration: Corroboration | None = None, judgments: Sequence[Judgment] = ()
        ) -> tuple[CallResult, ShapeCheck | None]:
            if apart:
                job = JudgingJob(
                    p.tool.contract_document,
                    p.policy_document,
                    request,
                    response,
                    verified_at,
                    corroboration=corroboration,
                    judgments=tuple(judgments),
                    registered_by=p.policy_by,
                )
                with stage("gateway.verify.apart"):
                    return await self.isolation.judge(request.provider, job, p.policy)
            with stage("gateway.verify"):
                result = verify_call(
                    p.contract,
                    p.policy,
                    request,
                    response,
                    verified_at,
                    corroboration=corroboration,
                    judgments=judgments,
                    registered_by=p.policy_by,
                )
            return result, None

        result, shape = await verified()  # (4)
        if not corroborating and p.policy is not None and wants_corroboration(result):
            found = await corroborate(
                self,
                call_id=begun.call_id,
                provider=request.provider,
                caller=begun.caller,
                policy=p.policy,
                declared_by=p.policy_by,
                arguments=request.arguments,
            )
            result, shape = await verified(found)
        judgments: list[Judgment] = []
        if p.policy is not None and wants_judges(result):  # sampled: judged before settling
            if shape is None:
                shape = map_response(p.contract, response.body)
            shown = MeaningAsk(
                begun.call_id,
                result.response_digest,
                request.tool,
                p.tool.description,
                request.arguments,
                shape.output,
            )
            judgments = await ask_judges(
                self.judges, p.policy.judges, shown, timeout=self.judge_timeout
            )
            result, shape = await verified(result.corroboration, judgments)
        output = None
        if response.status == "ok":
            if shape is None:
                with stage("gateway.verify"):
                    shape = map_response(p.contract, response.body)
            output = shape.output if shape.ok else None
        return result, judgments, output

    def _prepare(
        self, ask: _Asked, given: Mapping[Hashable, Any]
    ) -> _Prepared | Answer[dict[str, Any]]:
        """(1): in one read, an earlier call with the caller's key (replayed), or the tool, its
        policy and credential; the price and the key's limits checked, the request built.
        ``given``: the documents parsed apart for this call (``_ParseApart`` for one that is
        neither given nor kept parsed)."""

        def read(tx: Transaction) -> Any:  # the hot path's only read transaction
            first = [db.tool_read(ask.name)]  # on PostgreSQL: two round trips, not six
            if ask.key is not None:
                first.append(db.call_by_key_read(ask.caller.id, ask.key))
            with tx.ahead(first):
                seen = None if ask.key is None else db.call_by_key(tx, ask.caller.id, ask.key)
                if seen is not None:
                    return seen
                stored = db.tool(tx, ask.name)
            return self._callable(tx, stored, ask.name, ask.now, given)

        with stage("gateway.read"):
            got = self.unit.read(read)
        if isinstance(got, db.GatewayCall):
            return self._replayed(got, ask.fingerprint)
        stored, tool, policy, judging, credential, termed = got
        price = stored.listed.at(ask.now)
        within(price, stored.currency, ask.max_price, ask.caller)
        with stage("gateway.arguments"):
            size = len(dumps_utf8(ask.args))
            bounded = in_process(tool.arguments_weight, size)
            built = build_request(tool, ask.args) if bounded else None
        digest = None if judging is None else judging.digest
        return _Prepared(
            stored,
            tool,
            policy,
            judging,
            credential,
            built,
            price,
            termed,
            judging_weight_of(stored.digest, digest, tool.contract, policy),
            size,
        )

    async def _built_apart(self, ask: _Asked, prepared: _Prepared) -> BuiltRequest:
        """The provider's request, its arguments checked in a worker process (their check
        under the tool's input schema has no bound on its work, see ``calls.bounds``)."""
        job = (prepared.stored.document, ask.args)
        try:
            return await self.isolation.run(ask.caller.id, built_request, job)
        except JudgingFailed as exc:
            raise BadInput(
                f"The arguments could not be checked against tool {ask.name!r}'s input schema: "
                f"{exc.message}. Nothing was charged.",
                code="TOOL_ARGUMENTS_NOT_CHECKED",
            ) from None

    def _starting(
        self, ask: _Asked, prepared: _Prepared
    ) -> tuple[Callable[[Transaction], None], _Begun]:
        """(2) as a unit of work: the call row claims the caller's key (``_Raced`` if another
        call did first), the key's spending is counted and the price reserved."""
        caller, stored, price, now = ask.caller, prepared.stored, prepared.price, ask.now
        call_id = str(ids.uuid7())
        hold = f"hold:call:{call_id}"

        def start(tx: Transaction) -> None:
            started = db.start_call(
                tx,
                db.GatewayCall(
                    id=call_id,
                    caller=caller.id,
                    tool=ask.name,
                    tool_version=stored.version,
                    provider=stored.provider,
                    price_minor=price,
                    currency=stored.currency,
                    key_hash=None if ask.key is None else db.hashed(ask.key),
                    fingerprint=ask.fingerprint,
                    state="pending",
                    started_at=now,
                    finished_at=None,
                    status=None,
                    verdict=None,
                    receipt_id=None,
                    answer=None,
                    api_key_id=None if caller.key is None else caller.key.id,
                ),
            )
            if not started:  # another call with this key started first
                raise _Raced
            if caller.key is not None:
                count_spending(tx, caller.key.id, price, stored.currency, now)
            settlement.reserve(tx, caller.id, hold, price, at=now)

        return start, _Begun(prepared, call_id, hold, caller.id)

    async def _start(self, ask: _Asked, prepared: _Prepared) -> _Begun | Answer[dict[str, Any]]:
        """(2), committed with whatever else starts meanwhile; a lost race on the key replays
        the winner's answer."""
        start, begun = self._starting(ask, prepared)
        caller = ask.caller
        key_id = None if caller.key is None else caller.key.id
        hot = reserving_rows(caller.id, key_id, prepared.price, ask.now)
        try:
            with stage("gateway.reserve.wait"):
                await self.unit.write_async(_timed("gateway.reserve", start), hot=hot)
        except _Raced:
            assert ask.key is not None
            key = ask.key
            replay = await self._in_db(lambda: self._replay(ask.caller, key, ask.fingerprint))
            if replay is not None:
                return replay
            raise IdempotencyInProgress(
                "The first call with this Idempotency-Key is still running; send it again.",
                retry_after=1,
            ) from None
        return begun

    async def _parsed_apart(self, account: str, apart: _ParseApart) -> Any:
        """A document that is not kept parsed, parsed on the gateway's one parsing thread: a
        tool at the registration bound compiles its schemas for 0.3-0.5 s, and parsed in a
        call's read, on the event loop, it held every other request that long (a caller with no
        money, calling 200 such tools in turn, each refused, kept another account's requests at
        1 s). Calls waiting for one document wait for one parse, and join it at no cost; an
        account starts at most :data:`PARSES_AT_ONCE` parses that are running at once
        (``CHECKS_AT_ONCE_EXCEEDED`` past them), each counted until it ends (counted per call
        waiting, sixteen calls of one account at once on one document were twelve refusals)."""
        with self._parsing_lock:
            running = self._parsing.get(apart.key)
            fresh = running is None
            if running is None:
                self._parses_at_once.take(account, "parses of tool and policy documents")
                try:
                    running = self._parser.submit(apart.parse)
                except BaseException:
                    self._parses_at_once.give(account)
                    raise
                self._parsing[apart.key] = running
        if fresh:  # outside the lock: a parse already done calls back here, at once
            running.add_done_callback(partial(self._parsed, apart.key, account))
        return await asyncio.wrap_future(running)

    def _parsed(self, key: Hashable, account: str, done: Future[Any]) -> None:
        """A parse ended: the next call of its document reads it kept (or parses it again), and
        the account that started it has its place back."""
        with self._parsing_lock:
            if self._parsing.get(key) is done:
                del self._parsing[key]
        self._parses_at_once.give(account)

    async def _in_db(self, fn: Callable[[], T]) -> T:
        """``fn()`` on one of the gateway's database threads, awaited; on a local store
        (SQLite) on the loop itself: its reads never wait for a writer or a network, and the
        hand-off to a thread and back cost more than the read (see GroupCommit)."""
        if self.unit.store.local:
            return fn()
        return await asyncio.get_running_loop().run_in_executor(self._db_threads, fn)

    async def read_async(self, fn: Callable[[Transaction], T]) -> T:
        """``fn(tx)`` in a read transaction on one of the gateway's database threads."""
        return await self._in_db(lambda: self.unit.read(fn))

    def _forwarder_here(self) -> AsyncForwarder:
        """The forwarder of the running event loop: its own connection pool, made on first use
        with the configured forwarder's bounds and address guard."""
        loop = asyncio.get_running_loop()
        found = self._loop_forwarders.get(loop)  # only this loop's thread sets its entry
        if found is None:
            found = self._loop_forwarders[loop] = self.forwarder.spawn()
        return found

    async def aclose(self) -> None:
        """Close the running event loop's forwarder, if it made one (the service's shutdown)."""
        found = self._loop_forwarders.pop(asyncio.get_running_loop(), None)
        if found is not None:
            await found.aclose()

    def recover(
        self, *, older_than: timedelta = INTERRUPTED_AFTER, batch: int = RECOVER_BATCH
    ) -> int:
        """End every call still pending after ``older_than`` as interrupted: a system error
        whose receipt returns the reservation. Returns how many were ended.

        The oldest first, ``batch`` calls a read on the pending index, batch after batch while
        a batch is full and moves on; with them, a batch of the calls whose failed recovery is
        due to be tried again. A call whose end raises is logged and put back with a growing
        delay (:func:`adjudge.app.retries.retry_delay`): out of the pending index until its
        retry, so however many fail on every pass, the calls left pending after them are ended
        in the same pass, and a pass reads what it ends, never every call that once failed."""
        now = self.unit.now()
        cutoff = now - older_than
        ended = 0
        seen: set[str] = set()
        while True:
            retries, fresh = self.unit.read(
                partial(_recoverable, cutoff=cutoff, now=now, limit=batch)
            )
            todo = [(c, True) for c in retries] + [(c, False) for c in fresh]
            todo = [(c, retried) for c, retried in todo if c.id not in seen]
            if not todo:  # nothing, or only calls this pass already took: no progress
                return ended
            errors: dict[str, Exception] = {}
            for call, retried in todo:
                seen.add(call.id)
                try:
                    ended += self._interrupted(call, retried=retried)
                except Exception as exc:  # this call's alone: put back, the others go on
                    errors[call.id] = exc
            if errors:
                put_back(
                    self.unit,
                    errors,
                    now,
                    failures=db.recover_failures,
                    defer=db.defer_recovery,
                    log=log,
                    failed="the interrupted call %s could not be ended",
                )
            if len(retries) < batch and len(fresh) < batch:
                return ended

    def mature_holds(self, *, provider: str | None = None, batch: int | None = None) -> int:
        """Pay providers every held charge whose report deadline has passed (a batch a
        transaction, :data:`adjudge.app.settlement.MATURE_BATCH` unless given, each against the
        receipt that settled its call; a hold that fails is put back,
        :mod:`adjudge.app.maturity`); how many were paid."""
        return mature_due(self.unit, provider=provider, batch=batch)

    def judge_pending(self, *, batch: int = JUDGED_BATCH) -> int:
        """Judge up to ``batch`` calls whose meaning judges are asked after the answer, each in
        a superseding receipt (:mod:`adjudge.app.gateway.posthoc`); how many were judged."""
        from adjudge.app.gateway.posthoc import judge_pending  # noqa: PLC0415

        return judge_pending(self, batch=batch)

    def run_judgments(self, admin: Account) -> dict[str, Any]:
        """One pass of the judgments after the answer now, as the upkeep runs it (admins)."""
        need_role(admin, "admin")
        return {"judged": self.judge_pending()}

    def key_judgments_pending(self, viewer: Account) -> dict[str, Any]:
        """The calls waiting for a judgment signed by one of the viewer's verifier keys."""
        from adjudge.app.gateway.posthoc import key_pending  # noqa: PLC0415

        return key_pending(self, viewer)

    def submit_key_judgment(
        self, viewer: Account, call_id: str, body: dict[str, Any], *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """Keep a verifier key's signed meaning judgment of a queued call (checked first), once
        per Idempotency-Key ``key``."""
        from adjudge.app.gateway.posthoc import submit_key_judgment  # noqa: PLC0415

        return submit_key_judgment(self, viewer, call_id, body, key=key)

    def get_call(self, viewer: Account, call_id: str) -> dict[str, Any]:
        """A forwarded call (its caller, its provider, admins)."""

        def run(tx: Transaction) -> dict[str, Any]:
            found = db.call(tx, call_id)
            if found is None:
                raise NotFound(f"No call {call_id}.", code="CALL_NOT_FOUND")
            if viewer.id not in (found.caller, found.provider) and "admin" not in viewer.roles:
                raise NotAllowed("A call is for its caller and its provider.", code="NOT_A_PARTY")
            report = call_reports.by_call(tx, call_id)
            upheld = report is not None and report.status == call_reports.UPHELD
            view = gateway_call_view(found, holds_db.get(tx, call_id), upheld)
            record = calls_db.call(tx, call_id)
            verified = None if record is None else call_view(record, report)
            view["record"] = None if verified is None else verified["record"]
            view["report_deadline"] = None if verified is None else verified["report_deadline"]
            view["report"] = None if verified is None else verified["report"]
            queued = meaning_queue.get(tx, call_id)
            view["meaning"] = None if queued is None else queued.to_dict()
            return view

        return self.unit.read(run)

    def list_calls(
        self,
        viewer: Account,
        *,
        tool: str | None = None,
        provider: str | None = None,
        verdict: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Forwarded calls newest first: an admin's all, anyone else's own (called or
        provided); ``since`` and ``until`` (exclusive) keep those started in that range."""
        party = None if "admin" in viewer.roles else viewer.id

        def run(tx: Transaction) -> dict[str, Any]:
            page = db.list_calls(
                tx,
                party=party,
                tool=tool,
                provider=provider,
                verdict=verdict,
                since=since,
                until=until,
                limit=limit,
                cursor=cursor,
            )
            held = holds_db.for_calls(tx, [c.id for c in page.items])
            return {
                "calls": [gateway_call_view(c, held.get(c.id)) for c in page.items],
                "next_cursor": page.next_cursor,
            }

        return self.unit.read(run)

    # --- the machinery --------------------------------------------------------------------

    def _replay(self, caller: Account, key: str, fingerprint: str) -> Answer[dict[str, Any]] | None:
        found = self.unit.read(lambda tx: db.call_by_key(tx, caller.id, key))
        return None if found is None else self._replayed(found, fingerprint)

    def _replayed(self, found: db.GatewayCall, fingerprint: str) -> Answer[dict[str, Any]]:
        """The stored answer of an earlier call with the same key (``IDEMPOTENCY_KEY_REUSED``
        for other arguments; ``IDEMPOTENCY_IN_PROGRESS`` while it runs)."""
        if found.fingerprint != fingerprint:
            raise Conflict(
                "This Idempotency-Key was used for another call; send a new key.",
                code="IDEMPOTENCY_KEY_REUSED",
            )
        if found.state == "pending":
            if found.started_at > self.unit.now() - INTERRUPTED_AFTER:
                raise IdempotencyInProgress(
                    "The first call with this Idempotency-Key is still running; send it again.",
                    retry_after=1,
                )
            self._interrupted(found)
            call_id = found.id
            found = self.unit.read(lambda tx: db.call(tx, call_id)) or found
        assert found.answer is not None
        return Answer(dict(found.answer), replayed=True)

    def _callable(
        self,
        tx: Transaction,
        stored: db.StoredTool | None,
        name: str,
        now: datetime,
        given: Mapping[Hashable, Any],
    ) -> tuple[
        db.StoredTool,
        Tool,
        Policy | None,
        calls_db.StoredPolicy | None,
        tuple[str, str] | None,
        bool,
    ]:
        """The tool ``stored`` as called at ``now``: parsed, with its provider's account, the
        policy that judges it (parsed, and as stored: its digest, document and registrant), the
        provider's credential and whether it declared quality terms (its calls then move its
        quality window), all read in one round trip. A tool or policy neither
        ``given`` nor kept parsed is not parsed here, where the event loop or a database thread
        runs the read: ``_ParseApart``."""
        if stored is None:
            raise NotFound(f"No tool {name} can be called here.", code="TOOL_NOT_FOUND")
        key: Hashable = ("tool", stored.digest)
        tool = given.get(key) or kept_tool(stored)
        if tool is None:
            raise _ParseApart(key, partial(parsed_tool, stored))
        reads = [
            records.account_read(stored.provider),
            db.credential_read(stored.provider),
            calls_db.terms_read(stored.provider),
        ]
        policy_read = judging_policy_read(stored, tool, now)
        if policy_read is not None:
            reads.append(policy_read)
        with tx.ahead(reads):
            provider = records.account(tx, stored.provider)
            found = judging_policy(tx, stored, tool, now)
            credential = db.credential(tx, stored.provider)
            termed = calls_db.terms(tx, stored.provider) is not None
        if provider is None:
            raise NotFound(f"The tool's provider {stored.provider} is gone.", code="TOOL_NOT_FOUND")
        contract = tool.contract
        policy = None
        if tool.policy is not None:
            if found is None:
                raise StateError(
                    f"The tool's decision policy {tool.policy.id} is not registered for it; "
                    "its calls cannot be verified yet. Nothing was charged.",
                    code="TOOL_POLICY_MISSING",
                )
            key = ("policy", found.digest, stored.digest)
            policy = given.get(key) or kept_policy(found.digest, stored.digest)
            if policy is None:
                parse = partial(
                    parsed_policy, found.digest, stored.digest, found.document, contract
                )
                raise _ParseApart(key, parse)
        return stored, tool, policy, found if policy is not None else None, credential, termed

    async def _forward(self, begun: _Begun, args: Mapping[str, Any]) -> Outcome:
        """(3): sign the built request at the real time (providers check it) and send it."""
        p, now = begun.prepared, self.unit.now()
        tool = p.tool
        with stage("gateway.sign"):
            try:
                ensure_key(self.keys, now)
                key = signing_key(self.keys.all_keys(), now)
            except Error as exc:  # the call has started: it ends as a system error, refunded
                return ForwardFailure(FailureKind.SYSTEM, exc.message, 0.0)
            assert p.built is not None  # checked (here or apart) before the call started
            signed = sign_request(
                p.built,
                signer=key.signing_key,
                keyid=key.kid,
                provider=tool.provider,
                call_id=begun.call_id,
                authority=tool.endpoint.authority,
            )
            credential = None
            if p.credential is not None:
                header, sealed = p.credential
                credential = ProviderCredential.open(
                    self.box, sealed, provider=tool.provider, header=header
                )
        with stage("gateway.forward"):
            return await self._forwarder_here().forward(signed, credential=credential)

    def _finishing(
        self,
        caller: Account,
        stored: db.StoredTool,
        call_id: str,
        hold: str,
        request: CallRequest,
        result: CallResult,
        *,
        output: Any,
        body: bytes | None,
        policy_digest: str | None,
        contract_digest: str | None,
        api_key_id: str | None = None,
        judgments: Sequence[Judgment] = (),
        judge_later: bool = False,
        key_judges: Sequence[str] = (),
        tool: Tool | None = None,
    ) -> Callable[[Transaction], dict[str, Any]]:
        """(5) as a unit of work: the call's determination made now; in the transaction, its
        receipt signed onto the log, the reservation released as it says, the record, the event
        and the answer stored; with ``judge_later``, its meaning judgment queued
        (:mod:`adjudge.app.gateway.posthoc`). ``tool``: the tool as the call parsed it (else
        parsed here: an interrupted call's)."""
        now = self.unit.now()
        issuer = self.issuer
        # No document: an interrupted call whose tool version is gone (:meth:`_interrupted`),
        # ended with no output, its contract's version unknown.
        if tool is None and stored.document:
            tool = parsed_tool(stored)

        def issue(previous: Place) -> Mapping[str, Any]:
            with stage("gateway.receipt.sign"):
                return issuer.sign(determination, previous, about=call_subject(call_id))

        with stage("gateway.receipt"):
            if result.error is None:
                determination = determine_call(
                    result,
                    now=now,
                    response_bytes=body,
                    policy_digest=policy_digest,
                    contract_digest=contract_digest,
                    caller=caller.id,
                )
            else:
                determination = _error_determination(result, request, now, caller.id)
        payment = result.effect.payment.value
        status = {"settle": "settled", "refund": "refunded", "void": "voided"}[payment]

        visible = status == "settled" or (tool is not None and tool.refunded_output == "return")
        contract_version = (
            "" if tool is None else str(dict(tool.contract_document).get("version", "1"))
        )
        shown = output if visible else None
        # The bytes the provider answered, kept so the verdict replays offline (a replay bundle):
        # for the provider and admins always, for the caller only where it was shown the answer.
        evidence: dict[str, Any] | None = (
            None
            if body is None
            else {"response_bytes": base64.b64encode(body).decode("ascii"), "shown": visible}
        )
        if evidence is not None and result.corroboration is not None:
            # What the empty answer's verdict read, so the call replays to the same verdict.
            evidence["corroboration"] = result.corroboration.to_dict()
        if evidence is not None and judgments:
            evidence["judgments"] = [to_wire(j) for j in judgments]

        def run(tx: Transaction) -> dict[str, Any]:
            receipt = receipt_log.append(tx, issue, task_id=None, at=now)
            settlement.release_call(
                tx,
                hold,
                call_id=call_id,
                payer=caller.id,
                provider=stored.provider,
                payment=payment,
                amount=request.price_minor,
                receipt_id=receipt.id,
                report_deadline=result.report_deadline,
                at=now,
            )
            if payment != "settle":
                give_back(tx, api_key_id, request.price_minor, request.at or now)
            stored_call = calls_db.add_call(
                tx,
                record=result.to_dict(),
                contract_version=contract_version,
                submitted_by=caller.id,
                at=now,
                request={
                    "call_id": call_id,
                    "tool": stored.name,
                    "arguments": dict(request.arguments),
                    "sample_seed": request.sample_seed,
                },
                # The record keeps what the caller may see: a withheld output is not kept.
                response={"digest": result.response_digest, "output": shown},
                receipt_id=receipt.id,
                source="gateway",
                evidence=evidence,
            )
            emit_call_settled(tx, stored_call, now)
            # Only a settled call is queued: one its first receipt refunded or voided has no
            # charge left for a judgment to move, and a cited conflict only adds a fail vote to
            # a call its own checks already failed. Queued, its judges (models the operator
            # pays for, people holding keys) were asked about calls whose callers paid nothing.
            if judge_later and policy_digest is not None and payment == "settle":
                meaning_queue.add(
                    tx,
                    call_id=call_id,
                    provider=stored.provider,
                    policy_digest=policy_digest,
                    response_digest=result.response_digest,
                    receipt_id=receipt.id,
                    at=now,
                    key_judges=_not_parties(tx, key_judges, caller.id, stored.provider),
                )
            if result.needs_review and payment == "settle":
                _to_review(tx, stored_call.id, stored.name, stored.provider, caller.id, result, now)
            metrics.verdict(tx, "call", result.verdict.value if result.verdict else "ERROR")
            error_kind = None if result.error is None else result.error.kind
            if enters_window("gateway", caller.id, stored.provider):  # not its own calls
                counted = counted_as(result.verdict, result.effect.enforced, error_kind)
                observe_quality(tx, stored.provider, now, counted)
            # The receipt onto the chain last (its head row locked only from here to the
            # commit), then the answer that carries it.
            signed = receipt_log.signed(tx, receipt)
            answer = call_answer(
                stored,
                call_id,
                status,
                result,
                shown,
                receipt.id,
                signed.body,
                withheld=output is not None and shown is None,
            )
            db.finish_call(
                tx,
                call_id,
                provider=stored.provider,
                started_at=request.at or now,
                status=status,
                verdict=None if result.verdict is None else result.verdict.value,
                receipt_id=receipt.id,
                answer=answer,
                at=now,
            )
            return answer

        return run

    def _interrupted(self, call: db.GatewayCall, *, retried: bool = False) -> bool:
        """End a pending call as a system error (the process stopped mid-call), its reservation
        voided back to the caller against a receipt; False if it ended meanwhile. With
        ``retried`` (the upkeep's retry of a failed recovery), its retry is cleared in the same
        transaction, or alone if the call ended meanwhile."""
        if call.state != "pending":
            if retried:
                self.unit.write(partial(db.recovery_retried, key=call.id))
            return False
        # The call's own row says all its end needs of the tool (name, provider, currency): a
        # tool version whose row is gone ends the call all the same, the money back to the
        # caller, rather than leave its price reserved for good.
        stored = self.unit.read(lambda tx: db.tool(tx, call.tool, call.tool_version))
        if stored is None:
            log.warning(
                "the interrupted call %s names a tool version no longer stored (%s v%d);"
                " ending it on the call's own record",
                call.id,
                call.tool,
                call.tool_version,
            )
            stored = db.StoredTool(
                call.tool,
                call.tool_version,
                call.provider,
                {},  # no document: nothing of it is read for an interrupted call's end
                "",
                call.price_minor,
                call.currency,
                call.started_at,
            )
        from adjudge.calls.verdicts import Effect, Payment  # noqa: PLC0415
        from adjudge.calls.verify import CallError  # noqa: PLC0415

        request = CallRequest(
            call.id, call.provider, call.tool, {}, call.price_minor, call.currency, call.started_at
        )
        result = CallResult(
            call_id=call.id,
            provider=call.provider,
            tool=call.tool,
            at=self.unit.now(),
            policy=None,
            verdict=None,
            decided_by="system_error: the call was interrupted before it ended",
            effect=Effect(Payment.VOID, False, False, Payment.VOID, False),
            rows=(),
            response_digest="",
            price_minor=call.price_minor,
            currency=call.currency,
            error=CallError("system_error", "GATEWAY_INTERRUPTED", "the call was interrupted"),
        )
        caller = Account(call.caller, frozenset(), False, _record(), call.started_at)
        run = self._finishing(
            caller,
            stored,
            call.id,
            f"hold:call:{call.id}",
            request,
            result,
            output=None,
            body=None,
            policy_digest=None,
            contract_digest=None,
            api_key_id=call.api_key_id,
        )

        def end(tx: Transaction) -> None:
            run(tx)
            if retried:
                db.recovery_retried(tx, call.id)

        try:
            self.unit.write(end)
        except Error as exc:
            # Lost to another end (the upkeep's, a replay's): on the call's conditional update,
            # or on the debit of a reservation the other end emptied first. Only the call's row
            # says which: a clash from elsewhere left it pending, and it is put back to retry.
            if exc.code not in ("CONCURRENT_UPDATE", "INSUFFICIENT_FUNDS"):
                raise
            again = self.unit.read(lambda tx: db.call(tx, call.id))
            if again is None or again.state == "pending":
                raise
            if retried:
                self.unit.write(partial(db.recovery_retried, key=call.id))
            return False
        return True


def _recoverable(
    tx: Transaction, cutoff: datetime, now: datetime, limit: int
) -> tuple[list[db.GatewayCall], list[db.GatewayCall]]:
    """A batch of the recovery at ``now``: the calls whose failed recovery is due to be tried
    again, and the calls left pending since before ``cutoff``, the oldest first."""
    return (
        db.recover_retries_due(tx, now, limit=limit),
        db.pending_before(tx, cutoff, limit=limit),
    )


def _to_review(
    tx: Transaction,
    call_id: str,
    tool: str,
    provider: str,
    caller: str,
    result: CallResult,
    now: datetime,
) -> None:
    """A split of the meaning judges goes to a person: the call's charge is kept in its hold
    and a report is opened on the caller's behalf in the review queue, where an admin's ruling
    refunds (upheld) or releases (dismissed) it through the report's settlement path; the
    parties hear of it as of a report (``call.reported``, opened by the judges). A call
    already reported (a call has one report) is already before a person, or was ruled on: its
    report's ruling stands, and nothing is claimed or opened again."""
    row = next(r for r in result.rows if r.stage == "meaning")
    if call_reports.by_call(tx, call_id) is not None:
        return
    if holds_db.get(tx, call_id) is not None and not settlement.claim_hold(tx, call_id):
        return
    call_reports.add(
        tx,
        call_id=call_id,
        provider=provider,
        by=caller,
        reason=f"Sent to review by the meaning judges: {row.reason}"[:2000],
        at=now,
    )
    reported = events.call_reported(
        call_id,
        tool=tool,
        provider=provider,
        caller=caller,
        filed_at=now,
        opened_by="meaning_judges",
    )
    emit_call_event(tx, caller, provider, reported, now)


def _not_parties(tx: Transaction, keys: Sequence[str], caller: str, provider: str) -> list[str]:
    """The named keys neither party of the call owns: a key never judges its owner's own call
    (:func:`adjudge.app.gateway.posthoc.submit_key_judgment`), so its owner is not asked for
    one, and its own calls do not fill the page of those it is asked about."""
    kept = []
    for key in keys:
        found = records.verifier_key(tx, key.removeprefix("key:"))
        if found is None or found.account_id not in (caller, provider):
            kept.append(key)
    return kept


def _timed(name: str, fn: Callable[[Transaction], T]) -> Callable[[Transaction], T]:
    """``fn`` with its run timed as the stage ``name`` (on whichever thread runs it)."""

    def timed(tx: Transaction) -> T:
        with stage(name):
            return fn(tx)

    return timed


async def _refuse_private(forwarder: AsyncForwarder, url: str) -> None:
    """Refuse (``PROVIDER_ADDRESS_REFUSED``) a provider URL whose host is, or resolves to, a
    loopback, private, link-local or otherwise internal address, before anything is reserved: a
    provider registers its own endpoint, so without this it could make the gateway call anything
    on the gateway's network. The forwarder checks again as it connects, and connects only to the
    addresses it checked: a name that resolves differently by then ends the call as a refunded
    request error (``GATEWAY_ADDRESS_REFUSED``)."""
    refused = await forwarder.refusal(url)
    if refused is None:
        return
    # Said without where: the provider's address is for the provider and admins.
    if refused.kind is FailureKind.ADDRESS_REFUSED:
        raise NotAllowed(
            "The provider's endpoint is not a public address; the gateway calls only public "
            "endpoints. Nothing was charged.",
            code="PROVIDER_ADDRESS_REFUSED",
        )
    raise Unavailable(
        "The provider's host does not resolve; nothing was charged.", code="PROVIDER_UNREACHABLE"
    )


class _Raced(Exception):
    """Another request with the same key started the call first."""


@dataclass(frozen=True)
class _Asked:
    """A call as its caller asked for it, at the moment it starts."""

    caller: Account
    name: str
    args: dict[str, Any]
    key: str | None
    max_price: int | None
    fingerprint: str
    now: datetime


@dataclass(frozen=True)
class _Prepared:
    """What step (1) read and built: the tool, how it is judged, its price, the request."""

    stored: db.StoredTool
    tool: Tool
    policy: Policy | None
    #: The policy as stored: its digest, its document (sent with an answer judged apart) and
    #: the account that registered it (only the provider's own enforces, pays its declared
    #: corroborator and asks its key judges: ``calls.policy.providers_own``).
    judging: calls_db.StoredPolicy | None
    credential: tuple[str, str] | None
    #: None until checked apart (arguments whose check has no bound).
    built: BuiltRequest | None
    price: int
    #: Whether its provider had declared quality terms (its calls move its quality window).
    termed: bool
    #: The steps judging one value of an answer costs at most, or None (``calls.bounds``).
    weight: int | None
    #: The arguments' bytes (a rule's condition reads them beside the answer).
    arguments_size: int

    @property
    def contract(self) -> Contract:
        return self.tool.contract

    @property
    def policy_digest(self) -> str | None:
        return None if self.judging is None else self.judging.digest

    @property
    def policy_document(self) -> Mapping[str, Any] | None:
        return None if self.judging is None else self.judging.document

    @property
    def policy_by(self) -> str | None:
        return None if self.judging is None else self.judging.registered_by


class _ParseApart(Exception):
    """A call's tool or policy is not kept parsed: it is parsed apart (``parse``), and the call
    prepared again with it (under ``key``)."""

    def __init__(self, key: Hashable, parse: Callable[[], Any]) -> None:
        super().__init__(key)
        self.key = key
        self.parse = parse


@dataclass(frozen=True)
class _Begun:
    """A started call: its row is written and its price reserved (step 2)."""

    prepared: _Prepared
    call_id: str
    hold: str
    caller: str


def _record() -> Any:
    from adjudge.market import AgentRecord  # noqa: PLC0415

    return AgentRecord()


def reserving_rows(
    caller_id: str, key_id: str | None, price: int, at: datetime
) -> tuple[hot_rows.Row, ...]:
    """The rows a call's start changes that other transactions change too: its key's day
    (counting the price) and its caller's wallet (reserving it); see
    :mod:`adjudge.store.hot_rows`."""
    return (*spending_rows(key_id, price, at), hot_rows.balance(wallet_account(caller_id)))


def settling_rows(
    caller_id: str,
    key_id: str | None,
    provider: str,
    price: int,
    started: datetime,
    payment: str,
    *,
    termed: bool,
) -> tuple[hot_rows.Row, ...]:
    """The rows a call's end changes that other transactions change too: its provider's
    quality window (when it declared terms) and, when the call is not charged (``payment``
    other than ``settle``), its key's day and its caller's wallet, which get the price back."""
    window = (hot_rows.window(provider),) if termed else ()
    if payment == "settle":
        return window
    wallet = (hot_rows.credited(wallet_account(caller_id)),)  # the price back, at the commit
    return (*spending_rows(key_id, price, started), *window, *wallet)


def _error_determination(
    result: CallResult, request: CallRequest, now: datetime, caller: str
) -> Determination:
    """A call that ended in a request or system error: nothing to judge (NOT_RUN), over the
    request itself; its decision records the error and the reservation's return (to
    ``caller``)."""
    subject = digest_of(
        {"callId": request.call_id, "tool": request.tool, "arguments": dict(request.arguments)}
    )
    decision = dict(call_decision(result, caller=caller))
    assert result.error is not None
    decision["error"] = f"{result.error.kind}: {result.error.code}"
    return determine(subject, [], now=now, policy_decision=decision)


__all__ = ["INTERRUPTED_AFTER", "Gateway", "IdempotencyInProgress"]
