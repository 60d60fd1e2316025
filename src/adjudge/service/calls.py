"""Paid-call verification over HTTP (spec 003, issue 5): routes under ``/api/v1``.

- ``POST /tools`` (provider): register its tool's contract, and optionally declare its quality
  terms; the tool belongs to the provider that registered it first.
- ``POST /tools/{tool}/policies`` (poster or admin): register a versioned decision policy,
  checked against the tool's current contract.
- ``POST /calls`` (poster or admin): verify one call at the injected clock's time; the call
  record and its signed receipt (appended to the service's receipt chain) are stored in one
  transaction. A call id is verified once.
- ``GET /calls/{id}`` (the submitter, the provider, admins): the stored record, every check row.
- ``GET /providers/{id}/quality`` (anyone authenticated): window, failure rate, any proposal.

Every decision is the pure ``adjudge.calls`` package's; this module only reads and writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from adjudge.calls import (
    ProposalStatus,
    assess_penalty,
    determine_call,
    parse_corroboration,
    parse_judgment,
    parse_request,
    parse_response,
    quality_window,
    register_contract,
    register_policy,
    verify_call,
)
from adjudge.calls.quality import PenaltyProposal, QualityTerms, parse_terms
from adjudge.calls.verify import digest_of, digested_bytes
from adjudge.errors import CriteriaError, Error
from adjudge.kernel import Determination
from adjudge.service.marketplace import Idempotency, Marketplace, Response
from adjudge.store import Account, Transaction
from adjudge.store import calls as db

__all__ = ["DEFAULT_WINDOW_DAYS", "router"]

#: The highest policy version the store holds (a 32-bit integer column).
MAX_VERSION = 2**31 - 1
#: The quality window of a provider that declared no terms.
DEFAULT_WINDOW_DAYS = 30

_bearer = HTTPBearer(auto_error=False, description="The account's API key.")


class CallReceiptIssuer(Protocol):
    """What signs a call's determination: :class:`adjudge.service.wiring.SignedReceipts`."""

    def issue_call(
        self, determination: Determination, previous: tuple[str, int] | None
    ) -> Mapping[str, Any]:
        """The receipt of ``determination`` chained after ``previous``."""
        ...


class NewTool(BaseModel):
    """A tool's contract, and optionally its provider's declared quality terms."""

    contract: dict[str, Any]
    quality: dict[str, Any] | None = Field(
        default=None,
        description="declared_failure_rate (a ratio or decimal string), sample_gate, "
        "window_days, and optionally confidence (default 0.95) and penalty_minor.",
    )


class NewPolicy(BaseModel):
    """A decision policy document for the tool in the path."""

    policy: dict[str, Any]


class PolicyRef(BaseModel):
    """Which registered policy governs a call; without a version, its highest."""

    id: str = Field(min_length=1, max_length=200)
    version: int | None = Field(default=None, ge=1, le=MAX_VERSION)


class VerifyCall(BaseModel):
    """One call to verify. Its time is the service's clock, never the body's ``at``."""

    request: dict[str, Any]
    response: dict[str, Any]
    policy: PolicyRef | None = Field(
        default=None, description="Default: the policy most recently registered for the tool."
    )
    judgment: dict[str, Any] | None = None
    corroboration: dict[str, Any] | None = None


async def _market(request: Request) -> Marketplace:
    market = request.app.state.market
    assert isinstance(market, Marketplace)
    return market


Market = Annotated[Marketplace, Depends(_market)]


async def _caller(
    market: Market, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Account:
    return market.authenticate(creds.credentials if creds else None)


Caller = Annotated[Account, Depends(_caller)]
IdemKey = Annotated[str | None, Header(alias="Idempotency-Key", max_length=255)]


def _idem(key: str | None, request: Request, payload: BaseModel) -> Idempotency | None:
    return Idempotency.of(key, request.method, request.url.path, payload.model_dump(mode="json"))


def _reply(response: Response) -> JSONResponse:
    headers = {"Idempotent-Replayed": "true"} if response.replayed else None
    return JSONResponse(response.body, status_code=response.status, headers=headers)


def _need_any(who: Account, roles: set[str], what: str) -> None:
    if not roles & who.roles:
        wanted = " or ".join(sorted(roles))
        raise Error(f"Only a {wanted} account {what}.", code="ROLE_REQUIRED")


def _storable(value: str, what: str, limit: int, code: str) -> str:
    """Refuse a name the store's columns cannot hold on every database (length, NUL)."""
    if len(value) > limit or "\x00" in value:
        raise CriteriaError(f"{what} is at most {limit} characters, without NUL.", code=code)
    return value


def _findable(value: str) -> bool:
    """A path parameter the store can look up (PostgreSQL refuses NUL in text)."""
    return "\x00" not in value


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


router = APIRouter(prefix="/api/v1", tags=["calls"])


# --- tools and policies -------------------------------------------------------------------


def _terms(declared: Mapping[str, Any]) -> QualityTerms:
    try:
        return parse_terms({"type": "provider", **declared})
    except CriteriaError as exc:
        raise CriteriaError(exc.message, code="QUALITY_TERMS_INVALID") from None


def _contract_view(c: db.StoredContract) -> dict[str, Any]:
    return {
        "tool": c.tool,
        "version": c.version,
        "provider": c.provider,
        "digest": c.digest,
        "registered_at": _iso(c.registered_at),
        "contract": dict(c.document),
    }


def _policy_view(p: db.StoredPolicy) -> dict[str, Any]:
    return {
        "policy": p.policy_id,
        "version": p.version,
        "tool": p.tool,
        "contract_version": p.contract_version,
        "digest": p.digest,
        "registered_by": p.registered_by,
        "registered_at": _iso(p.registered_at),
    }


@router.post("/tools", status_code=201)
def register_tool(
    *, body: NewTool, who: Caller, market: Market, request: Request, key: IdemKey = None
) -> JSONResponse:
    """A provider registers its tool's contract (refusals carry the calls package's codes)."""
    _need_any(who, {"provider"}, "registers a tool's contract")
    contract = register_contract(body.contract)
    _storable(contract.tool, "A tool name", 200, "CONTRACT_INVALID")
    _storable(contract.version, "A contract version", 64, "CONTRACT_INVALID")
    if body.quality is not None:
        _terms(body.quality)

    def run(tx: Transaction) -> Response:
        now = market.clock.now()
        stored = db.add_contract(
            tx,
            tool=contract.tool,
            version=contract.version,
            provider=who.id,
            document=body.contract,
            digest=digest_of(body.contract),
            at=now,
        )
        view = _contract_view(stored)
        if body.quality is not None:
            db.set_terms(tx, who.id, body.quality, now)
            view["quality"] = body.quality
        return Response(201, view)

    return _reply(market._idempotent(who, _idem(key, request, body), run))


@router.post("/tools/{tool}/policies", status_code=201)
def register_tool_policy(
    *,
    tool: str,
    body: NewPolicy,
    who: Caller,
    market: Market,
    request: Request,
    key: IdemKey = None,
) -> JSONResponse:
    """A poster (marketplace) or an admin registers a versioned decision policy for a tool."""
    _need_any(who, {"poster", "admin"}, "registers a decision policy")

    def run(tx: Transaction) -> Response:
        current = db.latest_contract(tx, tool) if _findable(tool) else None
        if current is None:
            raise Error(f"No tool {tool} is registered.", code="TOOL_NOT_FOUND")
        policy = register_policy(body.policy, register_contract(current.document))
        _storable(policy.policy_id, "A policy id", 200, "POLICY_INVALID")
        if policy.version > MAX_VERSION:
            raise CriteriaError(
                f"A policy version is at most {MAX_VERSION}.", code="POLICY_INVALID"
            )
        stored = db.add_policy(
            tx,
            policy_id=policy.policy_id,
            version=policy.version,
            tool=tool,
            contract_version=current.version,
            document=body.policy,
            digest=digest_of(body.policy),
            by=who.id,
            at=market.clock.now(),
        )
        return Response(201, _policy_view(stored))

    return _reply(market._idempotent(who, _idem(key, request, body), run))


# --- calls --------------------------------------------------------------------------------


def _call_view(c: db.StoredCall) -> dict[str, Any]:
    return {
        "id": c.id,
        "submitted_by": c.submitted_by,
        "verified_at": _iso(c.at),
        "receipt_id": c.receipt_id,
        "record": dict(c.record),
        "request": dict(c.request),
        "response": dict(c.response),
    }


def _governing(tx: Transaction, tool: str, ref: PolicyRef | None) -> db.StoredPolicy | None:
    if ref is None:
        return db.latest_policy(tx, tool)
    found = db.policy(tx, ref.id, ref.version) if _findable(ref.id) else None
    if found is None:
        named = ref.id if ref.version is None else f"{ref.id} version {ref.version}"
        raise Error(f"No policy {named} is registered.", code="POLICY_NOT_FOUND")
    if found.tool != tool:
        raise Error(f"The policy {ref.id} is for {found.tool}, not {tool}.", code="POLICY_INVALID")
    return found


def _issuer(market: Marketplace) -> CallReceiptIssuer:
    issuer = market.issuer
    if not callable(getattr(issuer, "issue_call", None)):
        raise Error(
            "This service has no signer for call receipts.", code="CALL_RECEIPTS_UNAVAILABLE"
        )
    return issuer  # type: ignore[return-value]


@router.post("/calls", status_code=201)
def verify(
    *, body: VerifyCall, who: Caller, market: Market, request: Request, key: IdemKey = None
) -> JSONResponse:
    """Verify one call; its record and signed receipt are stored together, once per call id."""
    _need_any(who, {"poster", "admin"}, "submits calls for verification")
    call = parse_request(body.request)
    _storable(call.call_id, "A call id", 200, "CALL_INPUT_INVALID")
    _storable(call.tool, "A tool name", 200, "CALL_INPUT_INVALID")
    _storable(call.provider, "A provider", 200, "CALL_INPUT_INVALID")
    answer = parse_response(body.response)
    judgment = None if body.judgment is None else parse_judgment(body.judgment)
    corroboration = None if body.corroboration is None else parse_corroboration(body.corroboration)
    issuer = _issuer(market)

    def run(tx: Transaction) -> Response:
        if db.call(tx, call.call_id) is not None:
            raise Error(f"The call {call.call_id} was already verified.", code="CALL_EXISTS")
        current = db.latest_contract(tx, call.tool)
        if current is None:
            raise Error(f"No tool {call.tool} is registered.", code="TOOL_NOT_FOUND")
        if call.provider != current.provider:
            raise Error(
                f"{call.tool} is provided by {current.provider}, not {call.provider}.",
                code="CALL_PROVIDER_MISMATCH",
            )
        governing = _governing(tx, call.tool, body.policy)
        used = current
        if governing is not None:
            found = db.contract(tx, call.tool, governing.contract_version)
            assert found is not None  # a policy is registered against a stored contract
            used = found
        contract = register_contract(used.document)
        policy = None if governing is None else register_policy(governing.document, contract)
        now = market.clock.now()
        result = verify_call(
            contract, policy, call, answer, now, judgment=judgment, corroboration=corroboration
        )
        receipt_id = None
        if result.error is None:
            determination = determine_call(
                result,
                now=now,
                response_bytes=None if answer.digest else digested_bytes(answer.body),
                policy_digest=None if governing is None else governing.digest,
                contract_digest=used.digest,
            )
            receipt = db.append_signed_receipt(
                tx, lambda previous: issuer.issue_call(determination, previous), at=now
            )
            receipt_id = receipt.id
        stored = db.add_call(
            tx,
            record=result.to_dict(),
            contract_version=used.version,
            submitted_by=who.id,
            at=now,
            request=body.request,
            response=body.response,
            receipt_id=receipt_id,
        )
        _propose_if_due(tx, call.provider, now)
        return Response(201, _call_view(stored))

    return _reply(market._idempotent(who, _idem(key, request, body), run))


@router.get("/calls/{call_id}")
def get_call(*, call_id: str, who: Caller, market: Market) -> dict[str, Any]:
    """A verified call's record with every check row (its submitter, its provider, admins)."""

    def run(tx: Transaction) -> dict[str, Any]:
        found = db.call(tx, call_id) if _findable(call_id) else None
        if found is None:
            raise Error(f"No call {call_id}.", code="CALL_NOT_FOUND")
        if who.id not in (found.submitted_by, found.provider) and "admin" not in who.roles:
            raise Error("A call record is for its submitter and provider.", code="NOT_A_PARTY")
        return _call_view(found)

    return market.read(run)


# --- provider quality ---------------------------------------------------------------------


def _proposal_of(stored: Mapping[str, Any]) -> PenaltyProposal:
    return PenaltyProposal(
        provider=str(stored["provider"]),
        proposed_at=datetime.fromisoformat(stored["proposed_at"]),
        enforceable_at=datetime.fromisoformat(stored["enforceable_at"]),
        lapses_at=datetime.fromisoformat(stored["lapses_at"]),
        observations=int(stored["observations"]),
        failures=int(stored["failures"]),
        declared_failure_rate=Fraction(stored["declared_failure_rate"]),
        p_value=float(stored["p_value_at_most"]),
        confidence=Fraction(stored["confidence"]),
        penalty_minor=int(stored["penalty_minor"]),
    )


def _open(stored: Mapping[str, Any] | None, now: datetime) -> bool:
    if stored is None:
        return False
    status = _proposal_of(stored).status(now)
    return status in (ProposalStatus.PENDING, ProposalStatus.ENFORCEABLE)


def _propose_if_due(tx: Transaction, provider: str, now: datetime) -> None:
    """After each call: record a penalty proposal when the window supports one and none is open."""
    declared = db.terms(tx, provider)
    if declared is None or _open(db.latest_proposal(tx, provider), now):
        return
    terms = _terms(declared)
    window = quality_window(
        db.observations(tx, provider, now - terms.window, now), provider, now, terms.window
    )
    assessment = assess_penalty(window, terms, now)
    if assessment.proposal is not None:
        db.add_proposal(tx, provider, assessment.proposal.to_dict(), now)


@router.get("/providers/{provider}/quality")
def provider_quality(
    *,
    provider: str,
    who: Caller,
    market: Market,
    window_days: Annotated[int | None, Query(ge=1, le=3650)] = None,
) -> dict[str, Any]:
    """A provider's quality window now: counts, failure rate (null with no observations), the
    penalty assessment under its declared terms, and its latest proposal with its status now."""

    def run(tx: Transaction) -> dict[str, Any]:
        account = tx.account(provider) if _findable(provider) else None
        if account is None or "provider" not in account.roles:
            raise Error(f"No provider {provider}.", code="ACCOUNT_NOT_FOUND")
        now = market.clock.now()
        declared = db.terms(tx, provider)
        terms = None if declared is None else _terms(declared)
        if window_days is not None:
            span = timedelta(days=window_days)
        elif terms is not None:
            span = terms.window
        else:
            span = timedelta(days=DEFAULT_WINDOW_DAYS)
        window = quality_window(db.observations(tx, provider, now - span, now), provider, now, span)
        assessment = None
        if terms is not None:
            assessment = assess_penalty(window, terms, now).reason
        stored = db.latest_proposal(tx, provider)
        proposal = None
        if stored is not None:
            proposal = dict(stored) | {"status": _proposal_of(stored).status(now).value}
        return {
            "provider": provider,
            "at": now.isoformat(),
            "terms": declared,
            "window": window.to_dict(),
            "failure_rate": window.to_dict()["failure_rate"],
            "assessment": assessment,
            "proposal": proposal,
        }

    return market.read(run)
