"""The verification gateway's use cases: callable tools, and paid calls forwarded, verified,
signed and settled.

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
   quality window), and the answer is kept for replays.

A request or system error (a time-out, a 5xx, a refused signature) has no verdict: its receipt
is a NOT_RUN determination over the request, and the reservation goes back. A call interrupted
between 2 and 5 (the process died) stays ``pending``; :meth:`Gateway.recover` (run by the
service at start and whenever a retry meets such a call) ends it as a system error and returns
the reservation. A retry with the same Idempotency-Key replays the stored answer without calling
the provider again; while the first is still running it is ``IDEMPOTENCY_IN_PROGRESS``.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from adjudge.app import metrics, settlement
from adjudge.app.accounts import need_role
from adjudge.app.calls import call_view, contract_view, emit_call_settled, observe_quality
from adjudge.app.corroboration import corroborate
from adjudge.app.timing import stage
from adjudge.app.unit import Answer, Idempotency, UnitOfWork, retry
from adjudge.app.wiring import call_subject
from adjudge.calls import (
    CallRequest,
    Contract,
    Policy,
    Tool,
    determine_call,
    parse_tool,
    register_contract,
    register_policy,
    verify_call,
)
from adjudge.calls.contract import map_response
from adjudge.calls.kernel_rows import call_decision
from adjudge.calls.openapi import mcp_tool_document, openapi_tool_document
from adjudge.calls.pricing import DEFAULT_PRICE_NOTICE, announce
from adjudge.calls.quality import counted_as
from adjudge.calls.tools import DECIMALS, BuiltRequest, build_request
from adjudge.calls.verify import CallResult, digest_of, wants_corroboration
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
    GatewayKey,
    ProviderCredential,
    SecretBox,
    jwks,
    provider_response,
    rotate,
    sign_request,
    signing_key,
)
from adjudge.gateway.forward import AsyncForwarder, FailureKind, ForwardFailure, Outcome
from adjudge.kernel import Determination, determine
from adjudge.market import Place
from adjudge.market.money import LEDGER_CURRENCY
from adjudge.receipts import SigningKey
from adjudge.store import Account, Transaction, api_keys, call_reports, receipt_log, records
from adjudge.store import calls as calls_db
from adjudge.store import gateway as db
from adjudge.store import holds as holds_db

#: How long a call may stay pending before a retry or a sweep ends it as interrupted: longer
#: than any forward can take (its total time-out) plus the time to verify and commit.
INTERRUPTED_AFTER = timedelta(minutes=2)
#: How far back the gateway's first signing key is dated (see ``Gateway._ensure_key``).
FIRST_KEY_BACKDATE = timedelta(minutes=1)
_CONTEXT_KEY = "adjudge gateway signing key"
#: The threads a process's paid calls run their store transactions on (SQLite takes one writer
#: at a time anyway; reads and PostgreSQL's round trips overlap).
DB_THREADS = 8
T = TypeVar("T")
#: The MCP endpoint's own tools: no provider tool may take these names.
META_TOOLS = frozenset({"search_tools", "get_tool", "call_tool"})


class CallIssuer(Protocol):
    """What signs a call's determination (:class:`adjudge.app.wiring.SignedReceipts`)."""

    def issue_call(
        self,
        determination: Determination,
        previous: Place,
        *,
        about: str | None = None,
    ) -> Mapping[str, Any]:
        """The receipt of ``determination`` chained after ``previous``, about ``about``."""
        ...


class IdempotencyInProgress(RateLimited):
    """The first call with this key has not ended yet: wait and send the same again."""

    code = "IDEMPOTENCY_IN_PROGRESS"


class DatabaseKeyRing:
    """The gateway's signing keys in the database, private halves sealed under the server
    secret, so every ``serve`` process on one database signs with the same keys and publishes
    the same JWKS. Read keys are kept a few seconds per process."""

    def __init__(self, unit: UnitOfWork, box: SecretBox, *, cache_seconds: float = 5.0) -> None:
        self.unit = unit
        self.box = box
        self.cache_seconds = cache_seconds
        self._cached: tuple[float, list[GatewayKey]] | None = None
        self._lock = threading.Lock()

    def all_keys(self) -> Sequence[GatewayKey]:
        """Every key, newest last."""
        with self._lock:
            if self._cached is not None and self._cached[0] > time.monotonic():
                return self._cached[1]
        rows = self.unit.read(db.keys)
        found = [
            GatewayKey(
                kid,
                SigningKey.from_pem(self.box.open(sealed, context=_CONTEXT_KEY)),
                created,
                retired,
            )
            for kid, sealed, created, retired in rows
        ]
        with self._lock:
            self._cached = (time.monotonic() + self.cache_seconds, found)
        return found

    def add(self, key: GatewayKey) -> None:
        """Store a new key."""
        sealed = self.box.seal(key.signing_key.to_pem(), context=_CONTEXT_KEY)
        self.unit.write(lambda tx: db.add_key(tx, key.kid, sealed, key.created_at))
        self._forget()

    def retire(self, kid: str, at: datetime) -> None:
        """Retire a key from ``at``."""
        self.unit.write(lambda tx: db.retire_key(tx, kid, at))
        self._forget()

    def _forget(self) -> None:
        with self._lock:
            self._cached = None


def money(amount: int, currency: str) -> dict[str, Any]:
    """An amount as the client reads it: decimal minor units, the asset, its decimals."""
    return {"amount": str(amount), "asset": currency, "decimals": DECIMALS.get(currency, 0)}


def tool_view(
    stored: db.StoredTool, now: datetime, judged_by: calls_db.StoredPolicy | None = None
) -> dict[str, Any]:
    """A callable tool as listed: its MCP definition, provider, the price a call starting now
    is charged (and an announced increase with its date), and which policy version would judge
    a call starting now — what a caller reads before paying."""
    tool = _parsed_tool(stored)
    listed = stored.listed
    pending = listed.pending(now)
    return {
        "name": stored.name,
        "version": stored.version,
        "provider": stored.provider,
        "description": tool.description,
        "price": money(listed.at(now), stored.currency),
        "pending_price": None
        if pending is None
        else money(pending[0], stored.currency) | {"from": pending[1].isoformat()},
        "policy": None if tool.policy is None else tool.policy.to_dict(),
        "judged_by": None if judged_by is None else judge_view(judged_by),
        "refunded_output": tool.refunded_output,
        "registered_at": stored.registered_at.isoformat(),
        "definition": tool.mcp_definition(),
        "digest": stored.digest,
    }


def judge_view(p: calls_db.StoredPolicy) -> dict[str, Any]:
    """The policy version that judges a tool's calls: its id, version, digest, mode, report
    window and withdrawal (a caller sees what it agrees to before it pays)."""
    document = p.document
    return {
        "id": p.policy_id,
        "version": p.version,
        "digest": p.digest,
        "mode": str(document.get("mode", "enforce")),
        "report_window_hours": int(document.get("report_window_hours", 72)),
        "withdrawn_at": document.get("withdrawn_at"),
        "registered_at": p.registered_at.isoformat(),
        "corroboration": corroboration_view(document),
    }


def corroboration_view(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """A policy's declared corroborator as a caller reads it before paying: which tool, who
    pays (the provider), the most one corroboration costs its payer, and what the caller pays
    for it (nothing beyond the listed price)."""
    rule = document.get("empty_result")
    declared = rule.get("corroboration") if isinstance(rule, Mapping) else None
    if not isinstance(declared, Mapping):
        return None
    return {
        "tool": declared.get("tool"),
        "paid_by": declared.get("paid_by"),
        "max_price": money(int(declared.get("max_price_minor", 0)), LEDGER_CURRENCY),
        "caller_pays": money(0, LEDGER_CURRENCY),
        "on": "empty answers",
    }


def gateway_call_view(
    call: db.GatewayCall, hold: holds_db.Hold | None = None, refunded_by_report: bool = False
) -> dict[str, Any]:
    """A forwarded call: its lifecycle row, its money as it stands now, and — once ended — its
    answer."""
    return {
        "id": call.id,
        "caller": call.caller,
        "tool": call.tool,
        "provider": call.provider,
        "state": call.state,
        "status": call.status,
        "verdict": call.verdict,
        "price": money(call.price_minor, call.currency),
        "money": money_view(call, hold, refunded_by_report),
        "started_at": call.started_at.isoformat(),
        "finished_at": None if call.finished_at is None else call.finished_at.isoformat(),
        "receipt_id": call.receipt_id,
        "answer": None if call.answer is None else dict(call.answer),
    }


def money_view(
    call: db.GatewayCall, hold: holds_db.Hold | None, refunded_by_report: bool = False
) -> dict[str, Any]:
    """What a call's caller paid and its provider got, as it stands now.

    ``state``: ``reserved`` (the call is running), ``refunded`` or ``voided`` (nothing charged),
    ``held`` (charged; the provider is paid when the report deadline passes), ``reported`` (held
    while a report is ruled on), ``paid`` (the provider has it), ``refunded_after_report`` (an
    upheld report gave it back). ``charged`` is what the caller pays in the end as far as is
    known now, so a list's charges add up to what callers paid.
    """
    price = call.price_minor
    none = money(0, call.currency)
    view: dict[str, Any] = {
        "state": "reserved",
        "charged": none,
        "refunded": none,
        "held_until": None,
        "paid_at": None,
    }
    if call.state == "pending":
        return view | {"charged": money(price, call.currency)}
    if call.status != "settled":
        return view | {"state": call.status or "refunded"}
    if hold is None:  # settled before holds, or unreportable: paid at once
        if refunded_by_report:
            return view | {
                "state": "refunded_after_report",
                "refunded": money(price, call.currency),
            }
        return view | {
            "state": "paid",
            "charged": money(price, call.currency),
            "paid_at": (None if call.finished_at is None else call.finished_at.isoformat()),
        }
    amount = money(hold.amount, call.currency)
    if hold.state == holds_db.REFUNDED:
        return view | {"state": "refunded_after_report", "refunded": amount}
    if hold.state == holds_db.RELEASED:
        ended = None if hold.ended_at is None else hold.ended_at.isoformat()
        return view | {"state": "paid", "charged": amount, "paid_at": ended}
    return view | {
        "state": hold.state,  # held | reported
        "charged": amount,
        "held_until": hold.matures_at.isoformat(),
    }


_TOOLS: dict[str, Tool] = {}


def _parsed_tool(stored: db.StoredTool) -> Tool:
    """A stored tool document, parsed once per process (its digest names its bytes)."""
    found = _TOOLS.get(stored.digest)
    if found is None:
        if len(_TOOLS) > 1024:
            _TOOLS.clear()
        found = _TOOLS[stored.digest] = parse_tool(stored.document)
    return found


_POLICIES: dict[tuple[str, str], Policy] = {}


def _parsed_policy(
    digest: str, tool_digest: str, document: Mapping[str, Any], contract: Contract
) -> Policy:
    """A registered policy, parsed against its tool's contract once per process (the two
    digests name both documents' bytes)."""
    found = _POLICIES.get((digest, tool_digest))
    if found is None:
        if len(_POLICIES) > 1024:
            _POLICIES.clear()
        found = _POLICIES[(digest, tool_digest)] = register_policy(document, contract)
    return found


class Gateway:
    """The gateway's use cases."""

    def __init__(
        self,
        unit: UnitOfWork,
        issuer: object,
        *,
        box: SecretBox,
        forwarder: Forwarder | None = None,
        keys: DatabaseKeyRing | None = None,
        private_providers: bool = False,
        price_notice: timedelta = DEFAULT_PRICE_NOTICE,
    ) -> None:
        self.unit = unit
        #: How long a price increase waits before calls are charged it (see calls.pricing).
        self.price_notice = price_notice
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
        """Stop the forwarder, if it was started, and the database threads."""
        with self._forwarder_lock:
            if self._forwarder is not None:
                self._forwarder.close()
                self._forwarder = None
        self._db_threads.shutdown(wait=False)

    # --- tools ------------------------------------------------------------------------------

    def register_tool(
        self, provider: Account, document: Mapping[str, Any], *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """A provider registers a callable tool (``TOOL_INVALID`` and kin for a bad document;
        ``NOT_TOOL_PROVIDER`` when the document names another provider or the name is taken).

        Its contract is registered with it, so decision policies are registered against it as
        for any tool.
        """
        need_role(provider, "provider")
        tool = parse_tool(document)
        if tool.name in META_TOOLS:
            raise BadInput(
                f"{tool.name} is the name of one of the MCP endpoint's own tools; give the tool "
                "another name.",
                code="TOOL_NAME_RESERVED",
            )
        if tool.provider != provider.id:
            raise NotAllowed(
                f"The tool names provider {tool.provider!r}; register it as that provider.",
                code="NOT_TOOL_PROVIDER",
            )
        if tool.price.currency != LEDGER_CURRENCY:
            raise BadInput(
                f"Calls here are paid from {LEDGER_CURRENCY} balances; price the tool in "
                f"{LEDGER_CURRENCY} minor units (250000 is 0.25 {LEDGER_CURRENCY}), not in "
                f"{tool.price.currency}.",
                code="PRICE_CURRENCY_UNSUPPORTED",
            )
        normalized = tool.to_dict()
        idem = Idempotency.of(key, "gateway.register_tool", {"tool": normalized})

        def run(tx: Transaction) -> dict[str, Any]:
            now = self.unit.now()
            contract = dict(tool.contract_document)
            version = str(contract.get("version", "1"))
            found = calls_db.contract(tx, tool.name, version)
            if found is None:
                stored_contract = calls_db.add_contract(
                    tx,
                    tool=tool.name,
                    version=version,
                    provider=provider.id,
                    document=contract,
                    digest=digest_of(contract),
                    at=now,
                )
            elif found.digest != digest_of(contract):
                raise Conflict(
                    f"{tool.name} contract version {version} is registered with other terms; "
                    "give the changed contract a new version.",
                    code="CONTRACT_EXISTS",
                )
            else:
                stored_contract = found
            previous = db.tool(tx, tool.name)
            stored = db.add_tool(
                tx,
                name=tool.name,
                provider=provider.id,
                document=normalized,
                digest=digest_of(normalized),
                price=announce(
                    None if previous is None else previous.listed,
                    tool.price.amount_minor,
                    now,
                    self.price_notice,
                ),
                currency=tool.price.currency,
                at=now,
            )
            view = tool_view(stored, now, _judge(tx, stored, tool, now))
            view["contract"] = contract_view(stored_contract)
            return view

        return self.unit.once(provider.id, idem, run)

    def import_openapi(
        self,
        provider: Account,
        document: Mapping[str, Any],
        *,
        operation: str | None = None,
        method: str | None = None,
        path: str | None = None,
        price: Mapping[str, Any],
        base_url: str | None = None,
        name: str | None = None,
        policy: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Register a tool made from one operation of an OpenAPI 3.0/3.1 document."""
        need_role(provider, "provider")
        made = openapi_tool_document(
            document,
            operation=operation,
            method=method,
            path=path,
            provider=provider.id,
            price=price,
            base_url=base_url,
            name=name,
            policy=policy,
        )
        return self.register_tool(provider, made, key=key)

    def import_mcp(
        self,
        provider: Account,
        definition: Mapping[str, Any],
        *,
        base_url: str,
        price: Mapping[str, Any],
        method: str = "POST",
        path: str = "",
        policy: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Register a tool made from an MCP tool definition and the endpoint that serves it."""
        need_role(provider, "provider")
        made = mcp_tool_document(
            definition,
            provider=provider.id,
            base_url=base_url,
            price=price,
            method=method,
            path=path,
            policy=policy,
        )
        return self.register_tool(provider, made, key=key)

    def tools(
        self, *, query: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> dict[str, Any]:
        """Callable tools by name, a page at a time (``next_cursor``)."""

        def run(tx: Transaction) -> dict[str, Any]:
            now = self.unit.now()
            page = db.list_tools(tx, query=query, limit=limit, cursor=cursor)
            parsed = [(t, _parsed_tool(t)) for t in page.items]
            refs = [
                (t.name, tool.policy.id, tool.policy.version)
                for t, tool in parsed
                if tool.policy is not None
            ]
            judges = calls_db.policies_in_force(tx, refs, now)
            views = [
                tool_view(
                    t,
                    now,
                    None
                    if tool.policy is None
                    else judges.get((t.name, tool.policy.id, tool.policy.version)),
                )
                for t, tool in parsed
            ]
            return {"tools": views, "next_cursor": page.next_cursor}

        return self.unit.read(run)

    def tool(self, name: str, viewer: Account | None = None) -> dict[str, Any]:
        """One callable tool (``TOOL_NOT_FOUND``): the listed view, and how it is called and
        judged — its endpoint, input schema and contract (mapping and output schema), which a
        caller reads before paying for a call and a listing leaves out.

        Where the provider lives (``base_url``, ``authority``) is for the tool's provider and
        admins only: a caller learns how its arguments are sent, not an address it could call
        around the gateway or probe."""

        def run(tx: Transaction) -> dict[str, Any]:
            stored = db.tool(tx, name)
            if stored is None:
                raise NotFound(f"No tool {name} can be called here.", code="TOOL_NOT_FOUND")
            parsed = _parsed_tool(stored)
            document = parsed.to_dict()
            now = self.unit.now()
            view = tool_view(stored, now, _judge(tx, stored, parsed, now))
            for part in ("endpoint", "input_schema", "contract"):
                view[part] = document[part]
            party = viewer is not None and (viewer.id == stored.provider or "admin" in viewer.roles)
            if not party:
                view["endpoint"] = {
                    k: v for k, v in view["endpoint"].items() if k not in ("base_url", "authority")
                }
            return view

        return self.unit.read(run)

    # --- credentials and keys -----------------------------------------------------------

    def set_credential(
        self, provider: Account, header: str, secret: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """A provider not behind the signature middleware gives the gateway the credential to
        call it with; it is stored sealed and no API ever returns it."""
        need_role(provider, "provider")
        credential = ProviderCredential(header, secret)
        sealed = credential.seal(self.box, provider=provider.id)
        idem = Idempotency.of(
            key, "gateway.set_credential", {"header": header, "secret": digest_of(secret)}
        )

        def run(tx: Transaction) -> dict[str, Any]:
            db.set_credential(tx, provider.id, credential.header, sealed, self.unit.now())
            return {"provider": provider.id, "header": credential.header, "secret": "set"}

        return self.unit.once(provider.id, idem, run)

    def jwks(self) -> dict[str, Any]:
        """The JWKS providers verify the gateway's requests with (the signing key and those
        still in their overlap)."""
        now = self.unit.now()
        self._ensure_key(now)
        return jwks(self.keys.all_keys(), now)

    def rotate_keys(self, admin: Account) -> dict[str, Any]:
        """Publish a new signing key; the current ones retire shortly after (overlap)."""
        need_role(admin, "admin")
        now = self.unit.now()
        rotate(self.keys, now)
        return self.jwks()

    def _ensure_key(self, now: datetime) -> None:
        if not self.keys.all_keys():
            try:
                # Dated back: a call that started a moment before (or a process whose clock
                # is a little behind this one's) must find it already signing, not too new.
                rotate(self.keys, now - FIRST_KEY_BACKDATE)
            except Error:
                self.keys._forget()  # another process made the first key at the same time

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
        settled (:mod:`adjudge.app.corroboration`: a paid call of its own, paid by the
        provider); ``corroborating`` marks such a call, which is never corroborated in turn.

        The call is charged the tool's price in force when it starts (an increase waits out its
        notice) and judged by the policy version in force then. ``max_price`` is the most the
        caller accepts, in minor units: a price above it is refused
        (``PAYMENT_PRICE_ABOVE_MAXIMUM``) before anything is reserved or forwarded, as is one
        past the caller's key's spending limits (``PAYMENT_LIMIT_EXCEEDED``).

        The provider round trip and the checks run on the calling event loop; the store's
        transactions run on the gateway's database threads (:data:`DB_THREADS`), so a slow
        provider holds no thread and a busy database never blocks the loop.
        """
        args = dict(arguments or {})
        fingerprint = digest_of({"tool": name, "arguments": args})
        if key is not None:
            Idempotency.of(key, "gateway.call", None)  # the key's own form
        now = self.unit.now()  # the call starts now: its price and policy are those in force
        ask = _Asked(caller, name, args, key, max_price, fingerprint, now)
        prepared = await self._in_db(lambda: self._prepare(ask))
        if isinstance(prepared, Answer):
            return prepared
        if not self.private_providers:
            await _refuse_private(self._forwarder_here(), prepared.built.url)
        begun = await self._start(ask, prepared)
        if isinstance(begun, Answer):
            return begun
        outcome = await self._forward(begun, args)  # (3)
        with stage("gateway.verify"):
            p = begun.prepared
            stored = p.stored
            response = provider_response(outcome)
            request = CallRequest(
                begun.call_id, stored.provider, name, args, p.price, stored.currency, now
            )
            verified_at = self.unit.now()
            result = verify_call(p.contract, p.policy, request, response, verified_at)  # (4)
        if not corroborating and p.policy is not None and wants_corroboration(result):
            found = await corroborate(
                self,
                call_id=begun.call_id,
                provider=stored.provider,
                policy=p.policy,
                arguments=args,
            )
            result = verify_call(
                p.contract, p.policy, request, response, verified_at, corroboration=found
            )
        with stage("gateway.verify"):
            output = None
            if response.status == "ok":
                shape = map_response(p.contract, response.body)
                output = shape.output if shape.ok else None
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
        )
        with stage("gateway.settle.wait"):
            answer = await self.unit.write_async(_timed("gateway.settle", finish))
        return Answer(answer)

    def _prepare(self, ask: _Asked) -> _Prepared | Answer[dict[str, Any]]:
        """(1): in one read, an earlier call with the caller's key (replayed), or the tool, its
        policy and credential; the price and the key's limits checked, the request built."""

        def read(tx: Transaction) -> Any:  # the hot path's only read transaction
            seen = None if ask.key is None else db.call_by_key(tx, ask.caller.id, ask.key)
            if seen is not None:
                return seen
            found = self._callable(tx, ask.name, ask.now)
            return found, db.credential(tx, found[0].provider)

        with stage("gateway.read"):
            got = self.unit.read(read)
        if isinstance(got, db.GatewayCall):
            return self._replayed(got, ask.fingerprint)
        (stored, tool, contract, policy, policy_digest), credential = got
        price = stored.listed.at(ask.now)
        _within(price, stored.currency, ask.max_price, ask.caller)
        with stage("gateway.arguments"):
            built = build_request(tool, ask.args)
        return _Prepared(stored, tool, contract, policy, policy_digest, credential, built, price)

    def _starting(
        self, ask: _Asked, prepared: _Prepared
    ) -> tuple[Callable[[Transaction], None], _Begun]:
        """(2) as a unit of work: the call row claims the caller's key (``_Raced`` if another
        call did first), the key's spending is counted and the price reserved."""
        caller, stored, price, now = ask.caller, prepared.stored, prepared.price, ask.now
        call_id = str(uuid.uuid4())
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
                _count_spending(tx, caller.key.id, price, stored.currency, now)
            settlement.reserve(tx, caller.id, hold, price, at=now)

        return start, _Begun(prepared, call_id, hold)

    async def _start(self, ask: _Asked, prepared: _Prepared) -> _Begun | Answer[dict[str, Any]]:
        """(2), committed with whatever else starts meanwhile; a lost race on the key replays
        the winner's answer."""
        self._need_call_issuer()  # a call it could not end must not reserve or forward
        start, begun = self._starting(ask, prepared)
        try:
            with stage("gateway.reserve.wait"):
                await self.unit.write_async(_timed("gateway.reserve", start))
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

    async def _in_db(self, fn: Callable[[], T]) -> T:
        """``fn()`` on one of the gateway's database threads, awaited."""
        return await asyncio.get_running_loop().run_in_executor(self._db_threads, fn)

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

    def recover(self, *, older_than: timedelta = INTERRUPTED_AFTER) -> int:
        """End every call still pending after ``older_than`` as interrupted: a system error
        whose receipt returns the reservation. Returns how many were ended."""
        cutoff = self.unit.now() - older_than
        pending = self.unit.read(lambda tx: db.pending_before(tx, cutoff))
        ended = 0
        for call in pending:
            if self._interrupted(call):
                ended += 1
        return ended

    def mature_holds(self, *, provider: str | None = None, batch: int = 500) -> int:
        """Pay providers every held charge whose report deadline has passed (a batch a
        transaction, each against the receipt that settled its call); how many were paid."""
        now = self.unit.now()
        total = 0
        while True:
            due = self.unit.read(lambda tx: len(holds_db.due(tx, now, provider=provider, limit=1)))
            if not due:
                return total
            total += self.unit.write(
                lambda tx: settlement.mature(tx, now, provider=provider, limit=batch)
            )

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
            return view

        return self.unit.read(run)

    def list_calls(
        self,
        viewer: Account,
        *,
        tool: str | None = None,
        provider: str | None = None,
        verdict: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Forwarded calls newest first: an admin's all, anyone else's own (called or provided)."""
        party = None if "admin" in viewer.roles else viewer.id

        def run(tx: Transaction) -> dict[str, Any]:
            page = db.list_calls(
                tx,
                party=party,
                tool=tool,
                provider=provider,
                verdict=verdict,
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
        self, tx: Transaction, name: str, now: datetime
    ) -> tuple[db.StoredTool, Tool, Contract, Policy | None, str | None]:
        stored = db.tool(tx, name)
        if stored is None:
            raise NotFound(f"No tool {name} can be called here.", code="TOOL_NOT_FOUND")
        tool = _parsed_tool(stored)
        if records.account(tx, stored.provider) is None:
            raise NotFound(f"The tool's provider {stored.provider} is gone.", code="TOOL_NOT_FOUND")
        contract = tool.contract
        policy = None
        policy_digest = None
        if tool.policy is not None:
            found = _judge(tx, stored, tool, now)
            if found is None:
                raise StateError(
                    f"The tool's decision policy {tool.policy.id} is not registered for it; "
                    "its calls cannot be verified yet. Nothing was charged.",
                    code="TOOL_POLICY_MISSING",
                )
            policy = _parsed_policy(found.digest, stored.digest, found.document, contract)
            policy_digest = found.digest
        return stored, tool, contract, policy, policy_digest

    async def _forward(self, begun: _Begun, args: Mapping[str, Any]) -> Outcome:
        """(3): sign the built request at the real time (providers check it) and send it."""
        p, now = begun.prepared, self.unit.now()
        tool = p.tool
        with stage("gateway.sign"):
            try:
                self._ensure_key(now)
                key = signing_key(self.keys.all_keys(), now)
            except Error as exc:  # the call has started: it ends as a system error, refunded
                return ForwardFailure(FailureKind.SYSTEM, exc.message, 0.0)
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

    def _finish(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """(5) in a transaction of its own (an interrupted call's end)."""
        return self.unit.write(self._finishing(*args, **kwargs))

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
    ) -> Callable[[Transaction], dict[str, Any]]:
        """(5) as a unit of work: the call's determination made now; in the transaction, its
        receipt signed onto the log, the reservation released as it says, the record, the event
        and the answer stored."""
        now = self.unit.now()
        issuer = self.issuer
        tool = _parsed_tool(stored)
        self._need_call_issuer()

        def issue(previous: Place) -> Mapping[str, Any]:
            with stage("gateway.receipt.sign"):
                return issuer.issue_call(  # type: ignore[no-any-return,attr-defined]
                    determination, previous, about=call_subject(call_id)
                )

        with stage("gateway.receipt"):
            if result.error is None:
                determination = determine_call(
                    result,
                    now=now,
                    response_bytes=body,
                    policy_digest=policy_digest,
                    contract_digest=contract_digest,
                )
            else:
                determination = _error_determination(result, request, now)
        payment = result.effect.payment.value
        status = {"settle": "settled", "refund": "refunded", "void": "voided"}[payment]

        visible = status == "settled" or tool.refunded_output == "return"
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
                _give_back(tx, api_key_id, request.price_minor, request.at or now)
            stored_call = calls_db.add_call(
                tx,
                record=result.to_dict(),
                contract_version=str(dict(tool.contract_document).get("version", "1")),
                submitted_by=caller.id,
                at=now,
                request={
                    "call_id": call_id,
                    "tool": stored.name,
                    "arguments": dict(request.arguments),
                },
                # The record keeps what the caller may see: a withheld output is not kept.
                response={"digest": result.response_digest, "output": shown},
                receipt_id=receipt.id,
                source="gateway",
                evidence=evidence,
            )
            emit_call_settled(tx, stored_call, now)
            metrics.verdict(tx, "call", result.verdict.value if result.verdict else "ERROR")
            error_kind = None if result.error is None else result.error.kind
            counted = counted_as(result.verdict, result.effect.enforced, error_kind)
            observe_quality(tx, stored.provider, now, counted)
            # The receipt onto the chain last (its head row locked only from here to the
            # commit), then the answer that carries it.
            signed = receipt_log.signed(tx, receipt)
            answer = _answer(
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
                status=status,
                verdict=None if result.verdict is None else result.verdict.value,
                receipt_id=receipt.id,
                answer=answer,
                at=now,
            )
            return answer

        return run

    def _need_call_issuer(self) -> None:
        if not callable(getattr(self.issuer, "issue_call", None)):
            raise Unavailable(
                "This service has no signer for call receipts; nothing was charged.",
                code="CALL_RECEIPTS_UNAVAILABLE",
            )

    def _interrupted(self, call: db.GatewayCall) -> bool:
        """End a pending call as a system error (the process stopped mid-call); False if it
        ended meanwhile."""
        stored = self.unit.read(lambda tx: db.tool(tx, call.tool, call.tool_version))
        if stored is None:
            return False
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
        try:
            self._finish(
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
        except Error as exc:
            if exc.code == "CONCURRENT_UPDATE":
                return False
            raise
        return True


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
    host = urlsplit(url).hostname or ""
    if refused.kind is FailureKind.ADDRESS_REFUSED:
        raise NotAllowed(
            f"The provider's endpoint is refused: {refused.message}; the gateway calls only "
            "public endpoints. Nothing was charged.",
            code="PROVIDER_ADDRESS_REFUSED",
        )
    raise Unavailable(
        f"The provider's host {host!r} does not resolve; nothing was charged.",
        code="PROVIDER_UNREACHABLE",
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
    contract: Contract
    policy: Policy | None
    policy_digest: str | None
    credential: tuple[str, str] | None
    built: BuiltRequest
    price: int


@dataclass(frozen=True)
class _Begun:
    """A started call: its row is written and its price reserved (step 2)."""

    prepared: _Prepared
    call_id: str
    hold: str


def _record() -> Any:
    from adjudge.market import AgentRecord  # noqa: PLC0415

    return AgentRecord()


def _error_determination(result: CallResult, request: CallRequest, now: datetime) -> Determination:
    """A call that ended in a request or system error: nothing to judge (NOT_RUN), over the
    request itself; its decision records the error and the reservation's return."""
    subject = digest_of(
        {"callId": request.call_id, "tool": request.tool, "arguments": dict(request.arguments)}
    )
    decision = dict(call_decision(result))
    assert result.error is not None
    decision["error"] = f"{result.error.kind}: {result.error.code}"
    return determine(subject, [], now=now, policy_decision=decision)


def _answer(
    stored: db.StoredTool,
    call_id: str,
    status: str,
    result: CallResult,
    output: Any,
    receipt_id: str,
    receipt: Mapping[str, Any],
    *,
    withheld: bool = False,
) -> dict[str, Any]:
    """What a call answers (and a retry replays): the client's receipt fields, the verdict,
    the payment decision, every check row, the output, and the signed receipt.

    A call that is not settled was not paid for, so by default it gives no output
    (``outputWithheld``: the provider answered, but the caller learns only the check rows and
    the failing pointers); a tool may opt in to returning it (``refunded_output: return``)."""
    charged = result.charge_minor
    return {
        "intentId": call_id,
        "tool": stored.name,
        "provider": stored.provider,
        "status": status,
        "listedPrice": money(result.price_minor, stored.currency),
        "chargedPrice": money(charged, stored.currency),
        "withheld": money(0, stored.currency),
        "verdict": None if result.verdict is None else result.verdict.value,
        "payment": result.effect.payment.value,
        "strike": result.effect.strike,
        "decidedBy": result.decided_by,
        "checks": [row.to_dict() for row in result.rows],
        "failing": sorted({row.path for row in result.rows if row.outcome == "fail" and row.path}),
        "error": None if result.error is None else result.error.to_dict(),
        "corroboration": None if result.corroboration is None else result.corroboration.to_dict(),
        "output": output,
        "outputWithheld": withheld,
        "receiptId": receipt_id,
        "receipt": receipt.get("envelope"),
    }


def _judge(
    tx: Transaction, stored: db.StoredTool, tool: Tool, now: datetime
) -> calls_db.StoredPolicy | None:
    """The registered policy version that judges a call of ``tool`` starting at ``now``: the one
    it pins, or its highest registered by then (a later one judges only later calls)."""
    if tool.policy is None:
        return None
    return calls_db.policy(tx, stored.name, tool.policy.id, tool.policy.version, at=now)


def _within(price: int, currency: str, max_price: int | None, caller: Account) -> None:
    """Refuse a call whose price is above what its caller accepts, or above its key's limit
    per call, before anything moves (the limits are checked again where the price is
    reserved, from the key's stored row)."""
    if max_price is not None and (isinstance(max_price, bool) or not 0 <= max_price < 2**63):
        raise BadInput(
            "The most a call accepts is a whole number of minor units, 0 or more.",
            code="INVALID_AMOUNT",
        )
    grant = caller.key
    if grant is not None and grant.max_per_call is not None and price > grant.max_per_call:
        raise _over_limit(price, currency, grant.max_per_call, "call")
    if max_price is not None and price > max_price:
        raise StateError(
            f"This call costs {_amount(price, currency)}, more than the most you accept "
            f"({_amount(max_price, currency)}). Nothing was charged and the provider was not "
            "called.",
            code="PAYMENT_PRICE_ABOVE_MAXIMUM",
        )


def _count_spending(tx: Transaction, key_id: str, price: int, currency: str, now: datetime) -> None:
    """Count a call's price against its key's limits, from the key's stored row (a limit
    lowered a moment ago holds; a revoked key pays for nothing)."""
    grant = api_keys.get(tx, key_id)
    if grant is None or grant.revoked_at is not None:
        raise NotAllowed("This API key was revoked; nothing was charged.", code="UNAUTHORIZED")
    if grant.max_per_call is not None and price > grant.max_per_call:
        raise _over_limit(price, currency, grant.max_per_call, "call")
    if price > 0 and not api_keys.spend(tx, key_id, _day(now), price, grant.max_per_day):
        assert grant.max_per_day is not None
        raise _over_limit(price, currency, grant.max_per_day, "day")


def _give_back(tx: Transaction, key_id: str | None, price: int, started: datetime) -> None:
    """A call not charged after all gives its price back to its key's day."""
    if key_id is not None and price > 0:
        api_keys.give_back(tx, key_id, _day(started), price)


def _day(at: datetime) -> str:
    """The UTC day a key's spending is counted on."""
    return at.astimezone(UTC).date().isoformat()


def _over_limit(price: int, currency: str, limit: int, per: str) -> Error:
    return StateError(
        f"This call costs {_amount(price, currency)}, past this API key's limit of "
        f"{_amount(limit, currency)} a {per}. Nothing was charged and the provider was not "
        "called; the account's owner can raise the limit or use another key.",
        code="PAYMENT_LIMIT_EXCEEDED",
    )


def _amount(minor: int, currency: str) -> str:
    """Minor units as a person reads them: ``0.25 USDC``."""
    decimals = DECIMALS.get(currency, 0)
    if decimals == 0:
        return f"{minor} {currency}"
    whole, part = divmod(minor, 10**decimals)
    return f"{whole}.{part:0{decimals}d}".rstrip("0").rstrip(".") + f" {currency}"


def parsed_contract(document: Mapping[str, Any]) -> Contract:
    """A contract document as the calls package reads it."""
    return register_contract(document)


__all__ = [
    "META_TOOLS",
    "DatabaseKeyRing",
    "Gateway",
    "IdempotencyInProgress",
    "gateway_call_view",
    "retry",
]
