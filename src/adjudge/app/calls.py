"""Paid-call use cases (spec 003): register a tool and its policies, verify a call, read quality.

- A provider registers its tool's contract, and optionally declares its quality terms; the tool
  belongs to the provider that registered it first.
- A tool's decision policies — the rules that judge its provider — are registered, replaced (a
  new version) and withdrawn (a version with ``withdrawn_at``) only by the tool's provider or an
  admin, checked against the tool's current contract. Policy ids are scoped to their tool, so
  nobody can take the id a tool pins before its provider registers it.
- A poster or an admin *reports* a call: the request and the response it says the provider
  gave. It is verified at the clock's time and stored with its signed receipt in one
  transaction, marked ``reported``: a caller's word about a provider, so it never counts toward
  the provider's quality window or a penalty (only calls adjudge forwarded itself do).
- A call's caller may *report* a bad result despite the checks, until the filing deadline its
  policy sets (``report_window_hours``; 72 h by default). A report opens a review for an admin
  and does nothing else: no strike, no refund, no change to the provider's measured rate. An
  admin who is neither the caller nor the provider rules on it once: *dismissed* changes
  nothing; *upheld* is a human FAIL about the call, signed into a receipt that supersedes the
  call's own, and gives a forwarded call's charge back to the caller in the same transaction —
  from the provider's hold, where a report filed in time keeps the charge until it is ruled on,
  so an upheld report never fails for lack of provider funds. An upheld report still never
  strikes: only verification verdicts count toward a provider's quality (spec 003); the
  quality view counts upheld reports apart.
- Anyone may read a provider's quality window, failure rate and penalty proposal.

Every decision is the pure ``adjudge.calls`` package's. Parsed contracts and policies are kept
per process by their digest (a stored document never changes), so a call does not parse them
again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from adjudge.app import settlement
from adjudge.app.accounts import need_primary
from adjudge.app.at_once import AtOnce
from adjudge.app.isolation import Isolation, JudgingFailed
from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.app.wiring import call_subject, new_sample_seed
from adjudge.calls import (
    POLICY_ID,
    Contract,
    Mode,
    Policy,
    ProposalStatus,
    assess_penalty,
    determine_call,
    parse_corroboration,
    parse_judgment,
    parse_request,
    parse_response,
    register_contract,
    register_policy,
    registrable,
)
from adjudge.calls.bounds import plain_selection
from adjudge.calls.judging import JudgingJob
from adjudge.calls.kept import Kept
from adjudge.calls.kernel_rows import determine_upheld_report
from adjudge.calls.policy import providers_own
from adjudge.calls.quality import PenaltyProposal, QualityTerms, QualityWindow, parse_terms
from adjudge.calls.verify import (
    CallRequest,
    CallResult,
    Corroboration,
    Judgment,
    ProviderResponse,
    digest_of,
    digested_bytes,
    judged_here,
    judging_weight,
)
from adjudge.errors import (
    BadInput,
    Conflict,
    CriteriaError,
    Error,
    NotAllowed,
    NotFound,
    RateLimited,
    StateError,
    Unavailable,
)
from adjudge.json_text import dumps_utf8
from adjudge.receipts import Envelope, Issuer
from adjudge.store import (
    Account,
    Transaction,
    call_reports,
    holds,
    outbox,
    quality_windows,
    quotas,
    receipt_log,
    records,
)
from adjudge.store import calls as db
from adjudge.store import gateway as gateway_db
from adjudge.webhooks import events

#: The highest policy version the store holds (a 32-bit integer column).
MAX_VERSION = 2**31 - 1
#: The quality window of a provider that declared no terms.
DEFAULT_WINDOW_DAYS = 30
#: The longest reason a report may give, and the most reasons a ruling may give.
MAX_REPORT_REASON = 2000
MAX_RULING_REASONS = 20
#: Calls one account may submit for verification in :data:`VERIFY_WINDOW` (admins: no bound).
#: Each is free, and signs a receipt on the log everyone shares and notifies the provider's
#: endpoints: without a bound, one account grew the log (and every verification of it) and
#: another's deliveries at will.
VERIFY_QUOTA = 1_000
VERIFY_WINDOW = timedelta(hours=1)
#: How many reports a page of the review queue holds at most.
MAX_REPORT_PAGE = 100
#: The most tool names a provider registers: each keeps its contracts, policies and catalog
#: versions for good, so without a bound one provider grew them all at will.
MAX_PROVIDER_TOOLS = 1_000
#: The most contract versions a tool registers, and policy versions (every policy id of the
#: tool counted): each is kept for good (a call replays under the versions that judged it), so
#: without a bound one tool's provider grew them at will.
MAX_CONTRACT_VERSIONS = 1_000
MAX_POLICY_VERSIONS = 1_000
#: The finest declared failure rate and confidence a provider's terms give: the denominator of
#: each, in lowest terms, at most this (six decimal places). The exact penalty test works in
#: powers of it, one per observation, in the commit of every call the provider answers: a rate
#: of 4,000 decimal places took 1 s a call at 300 observations and 7.6 s at 1,000, on the one
#: thread that commits every account's writes.
TERMS_DENOMINATOR = 1_000_000


def _judged_under(envelope: object) -> str | None:
    """The criteria digest (the decision policy's) a call's own receipt binds, read from the
    envelope this service signed and stored; None when it binds none or there is none."""
    if not isinstance(envelope, Mapping):
        return None
    statement = json.loads(Envelope.from_dict(envelope).payload)
    found = statement.get("predicate", {}).get("criteriaDigest")
    return found if isinstance(found, str) else None


def _need_any(who: Account, roles: set[str], what: str) -> None:
    if not roles & who.roles:
        wanted = " or ".join(sorted(roles))
        article = "an" if wanted[0] in "aeiou" else "a"
        raise NotAllowed(f"Only {article} {wanted} account {what}.", code="ROLE_REQUIRED")


def _storable(value: str, what: str, limit: int, code: str) -> str:
    """Refuse a name the store's columns cannot hold on every database (length, NUL)."""
    if len(value) > limit or "\x00" in value:
        raise CriteriaError(f"{what} is at most {limit} characters, without NUL.", code=code)
    return value


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _terms(declared: Mapping[str, Any]) -> QualityTerms:
    try:
        return parse_terms({"type": "provider", **declared})
    except CriteriaError as exc:
        raise CriteriaError(exc.message, code="QUALITY_TERMS_INVALID") from None


def _declarable(terms: QualityTerms) -> None:
    """Refuse terms finer than :data:`TERMS_DENOMINATOR` (``QUALITY_TERMS_INVALID``)."""
    for name, value in (
        ("declared failure rate", terms.declared_failure_rate),
        ("confidence", terms.confidence),
    ):
        if value.denominator > TERMS_DENOMINATOR:
            raise CriteriaError(
                f"The {name} is given to at most six decimal places (a ratio's denominator at "
                f"most {TERMS_DENOMINATOR:,}).",
                code="QUALITY_TERMS_INVALID",
            )


#: Contracts and policies parsed in this process, by digest (a digest names one document).
_PARSED: Kept[Any] = Kept()


def contract_view(c: db.StoredContract) -> dict[str, Any]:
    """A registered contract."""
    return {
        "tool": c.tool,
        "version": c.version,
        "provider": c.provider,
        "digest": c.digest,
        "registered_at": _iso(c.registered_at),
        "contract": dict(c.document),
    }


def policy_view(p: db.StoredPolicy) -> dict[str, Any]:
    """A registered decision policy."""
    return {
        "policy": p.policy_id,
        "version": p.version,
        "tool": p.tool,
        "contract_version": p.contract_version,
        "digest": p.digest,
        "registered_by": p.registered_by,
        "registered_at": _iso(p.registered_at),
    }


def call_view(c: db.StoredCall, report: call_reports.StoredReport | None = None) -> dict[str, Any]:
    """A verified call: its record (every check row), inputs, source, receipt, the deadline
    for reporting a bad result (null: not reportable) and its report, if one was filed."""
    return {
        "id": c.id,
        "submitted_by": c.submitted_by,
        "source": c.source,
        "verified_at": _iso(c.at),
        "receipt_id": c.receipt_id,
        "report_deadline": c.record.get("report_deadline") if _settled(c) else None,
        "report": None if report is None else report_view(report),
        "record": dict(c.record),
        "request": dict(c.request),
        "response": dict(c.response),
    }


def _count_verification(tx: Transaction, who: Account, now: datetime) -> None:
    """Count a call submitted for verification in its account's window, in the transaction
    that stores it (a refused or failed one counts nothing); ``VERIFICATIONS_QUOTA_EXCEEDED``
    past :data:`VERIFY_QUOTA`."""
    if "admin" in who.roles:
        return
    start, wait = quotas.window(now, VERIFY_WINDOW)
    if quotas.use(tx, f"verify:{who.id}", start) > VERIFY_QUOTA:
        raise RateLimited(
            f"An account may submit {VERIFY_QUOTA} calls for verification an hour; try again "
            f"in {wait} s.",
            retry_after=wait,
            code="VERIFICATIONS_QUOTA_EXCEEDED",
        )


def room_for_contract(
    tx: Transaction, provider: str, tool: str, version: str
) -> db.StoredContract | None:
    """Refuse a contract that would give ``provider`` a new tool name past
    :data:`MAX_PROVIDER_TOOLS` (``TOOL_LIMIT_REACHED``), or its tool a new version past
    :data:`MAX_CONTRACT_VERSIONS` (``CONTRACT_LIMIT_REACHED``), each counted on its own range
    of an index with the provider's row locked (two processes at once: one passes the bound).
    Another's name, or a version stored already, is left to the registration; the version
    stored already, of the provider's own tool, is returned (read here, not again)."""
    records.lock_account(tx, provider)
    owner = db.tool_owner(tx, tool)
    if owner is None and db.tool_count(tx, provider) >= MAX_PROVIDER_TOOLS:
        raise StateError(
            f"A provider registers at most {MAX_PROVIDER_TOOLS} tools; register a new version "
            "of one of yours instead.",
            code="TOOL_LIMIT_REACHED",
        )
    found = db.contract(tx, tool, version) if owner == provider else None
    if owner == provider and found is None and db.contract_count(tx, tool) >= MAX_CONTRACT_VERSIONS:
        raise StateError(
            f"A tool registers at most {MAX_CONTRACT_VERSIONS} contract versions; {tool} has "
            "them all: register the contract under a new tool name.",
            code="CONTRACT_LIMIT_REACHED",
        )
    return found


def report_view(r: call_reports.StoredReport) -> dict[str, Any]:
    """A report of a bad result and, once ruled, its ruling."""
    return {
        "call_id": r.call_id,
        "provider": r.provider,
        "filed_by": r.filed_by,
        "filed_at": _iso(r.filed_at),
        "reason": r.reason,
        "status": r.status,
        "ruled_by": r.ruled_by,
        "ruled_at": _iso(r.ruled_at),
        "ruling": None if r.ruling is None else list(r.ruling),
        "refunded_minor": r.refunded_minor,
        "receipt_id": r.receipt_id,
    }


def _ruled(r: call_reports.StoredReport) -> tuple[str, dict[str, Any]]:
    return events.report_ruled(
        r.call_id,
        provider=r.provider,
        caller=r.filed_by,
        upheld=r.status == call_reports.UPHELD,
        refund_minor=r.refunded_minor,
        receipt_id=r.receipt_id,
    )


def _settled(c: db.StoredCall) -> bool:
    """Whether the call's verdict settled it: only then is there a charge to dispute (a FAIL
    was refunded, a misapplied check voided, an error refunded)."""
    effect = c.record.get("effect")
    return isinstance(effect, Mapping) and effect.get("payment") == "settle"


def _reason(text: str, what: str) -> str:
    text = text.strip()
    if not text or len(text) > MAX_REPORT_REASON or "\x00" in text:
        raise BadInput(
            f"{what} is 1 to {MAX_REPORT_REASON} characters (not blank, no NUL).",
            code="INVALID_REASON",
        )
    return text


def emit_call_settled(tx: Transaction, stored: db.StoredCall, now: datetime) -> None:
    """``call.settled`` to the call's caller and provider, in the call's own transaction."""
    kind, data = events.call_settled(
        stored.record,
        submitted_by=stored.submitted_by,
        source=stored.source,
        receipt_id=stored.receipt_id,
    )
    emit_call_event(tx, stored.submitted_by, stored.provider, (kind, data), now)


def emit_call_event(
    tx: Transaction, caller: str, provider: str, event: tuple[str, dict[str, Any]], at: datetime
) -> None:
    """An event about a call, to its caller (submitter) and its provider, in ``tx``."""
    parties = events.call_parties(caller, provider)
    outbox.emit(tx, parties, event[0], events.payload(*event, at), at=at)


def _emit(
    tx: Transaction, call: db.StoredCall, event: tuple[str, dict[str, Any]], at: datetime
) -> None:
    emit_call_event(tx, call.submitted_by, call.provider, event, at)


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


def observe_quality(tx: Transaction, provider: str, now: datetime, counted: str) -> None:
    """After an observed call (recorded in ``tx``, adding to ``counted``): move the provider's
    running window when it declared terms, and record a penalty proposal when the window
    supports one and none is open. Without terms there is nothing to keep per call."""
    terms = parsed_terms(db.terms(tx, provider))
    if terms is None:  # none, or stored terms that no longer parse: the call still ends
        return
    _propose_if_due(tx, quality_windows.observe(tx, provider, terms.window, now, counted), terms)


def requalify(tx: Transaction, call_id: str, verdict: str | None, now: datetime) -> None:
    """After a judgment superseded an observed call's verdict (a meaning check judged after
    the answer): count the call as that verdict in its provider's window, and record a penalty
    proposal when the window now supports one and none is open (as after a call). A judgment
    that reached no verdict supersedes nothing the window counts."""
    if verdict is None:
        return
    provider = quality_windows.superseded(tx, call_id, verdict)
    if provider is None:
        return
    terms = parsed_terms(db.terms(tx, provider))
    if terms is None:
        return
    _propose_if_due(tx, quality_windows.window(tx, provider, terms.window, now), terms)


def _propose_if_due(tx: Transaction, window: QualityWindow, terms: QualityTerms) -> None:
    provider, now = window.provider, window.end
    if _open(db.latest_proposal(tx, provider), now):
        return
    assessment = assess_penalty(window, terms, now)
    if assessment.proposal is not None:
        db.add_proposal(tx, provider, assessment.proposal.to_dict(), now)


class Calls:
    """The paid-call use cases."""

    def __init__(
        self,
        unit: UnitOfWork,
        issuer: Issuer,
        *,
        isolation: Isolation | None = None,
        registering: AtOnce | None = None,
    ) -> None:
        self.unit = unit
        self.issuer = issuer
        #: Where a reported answer whose judging has no bound is judged (worker processes).
        self.isolation = isolation or Isolation()
        #: Each account's registrations being checked (their schemas compiled) at once.
        self.registering = registering or AtOnce()

    def register_tool(
        self,
        who: Account,
        contract: Mapping[str, Any],
        quality: Mapping[str, Any] | None = None,
        *,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """A provider registers its tool's contract (refusals carry the calls package's codes)."""
        _need_any(who, {"provider"}, "registers a tool's contract")
        need_primary(who, "registers a tool's contract")  # the rules that judge its calls
        registrable(contract, "A contract", "CONTRACT_INVALID")
        with self.registering.held(who.id, "registrations", code="REGISTRATIONS_AT_ONCE_EXCEEDED"):
            parsed = register_contract(contract)
        _storable(parsed.tool, "A tool name", 200, "CONTRACT_INVALID")
        _storable(parsed.version, "A contract version", 64, "CONTRACT_INVALID")
        if quality is not None:
            _declarable(_terms(quality))
        idem = Idempotency.of(
            key, "calls.register_tool", {"contract": contract, "quality": quality}
        )

        def run(tx: Transaction) -> dict[str, Any]:
            now = self.unit.now()
            room_for_contract(tx, who.id, parsed.tool, parsed.version)
            stored = db.add_contract(
                tx,
                tool=parsed.tool,
                version=parsed.version,
                provider=who.id,
                document=contract,
                digest=digest_of(contract),
                at=now,
            )
            view = contract_view(stored)
            if quality is not None:
                db.set_terms(tx, who.id, quality, now)
                view["quality"] = dict(quality)
            return view

        return self.unit.once(who.id, idem, run)

    def register_policy(
        self, who: Account, tool: str, policy: Mapping[str, Any], *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """The tool's provider or an admin registers a versioned decision policy for it
        (``NOT_TOOL_PROVIDER`` for anyone else: the rules that judge a provider are its own and
        the operator's, never a stranger's). A policy that declares a corroborator, paid from
        the provider's wallet on each empty answer, is the provider's own alone
        (``CORROBORATION_PROVIDER_ONLY`` for an admin: money moves on the word of the party it
        binds). So is one naming a verifier key as a meaning judge, whose signed word refunds
        the provider's charges and strikes it (``KEY_JUDGES_PROVIDER_ONLY``); a key the
        provider holds judges none of its calls (``CONFLICT_OF_INTEREST``)."""
        _need_any(who, {"provider", "admin"}, "registers a decision policy")
        need_primary(who, "registers a decision policy")  # it settles or refunds every call
        registrable(policy, "A policy", "POLICY_INVALID")
        idem = Idempotency.of(key, "calls.register_policy", {"tool": tool, "policy": policy})

        def run(tx: Transaction) -> dict[str, Any]:
            current = db.latest_contract(tx, tool)
            owner = db.tool_owner(tx, tool)  # the name's, not the latest contract's
            if current is None or owner is None:
                raise NotFound(f"No tool {tool} is registered.", code="TOOL_NOT_FOUND")
            if "admin" not in who.roles and who.id != owner:
                raise NotAllowed(
                    f"{tool} is {owner}'s tool: only its provider or an admin "
                    "registers the policies that judge its calls.",
                    code="NOT_TOOL_PROVIDER",
                )
            parsed = register_policy(policy, _contract(current))
            if not POLICY_ID.fullmatch(parsed.policy_id):
                raise CriteriaError(
                    "A policy id is 1 to 128 letters, digits, dots, underscores, colons and "
                    f"hyphens (like weather-standard), not {parsed.policy_id[:40]!a}.",
                    code="POLICY_INVALID",
                )
            _on_the_providers_word(parsed, who, owner, self.unit.now())
            _check_corroborator(tx, parsed, owner)
            _check_key_judges(tx, parsed.judges, self.unit.now(), owner)
            if parsed.version > MAX_VERSION:
                raise CriteriaError(
                    f"A policy version is at most {MAX_VERSION}.", code="POLICY_INVALID"
                )
            records.lock_account(tx, owner)  # two processes at once: one passes the bound
            if (
                db.policy(tx, tool, parsed.policy_id, parsed.version) is None
                and db.policy_count(tx, tool) >= MAX_POLICY_VERSIONS
            ):
                raise StateError(
                    f"A tool registers at most {MAX_POLICY_VERSIONS} policy versions, every "
                    f"policy of it counted; {tool} has them all.",
                    code="POLICY_LIMIT_REACHED",
                )
            stored = db.add_policy(
                tx,
                policy_id=parsed.policy_id,
                version=parsed.version,
                tool=tool,
                contract_version=current.version,
                document=policy,
                digest=digest_of(policy),
                by=who.id,
                at=self.unit.now(),
            )
            return policy_view(stored)

        with self.registering.held(who.id, "registrations", code="REGISTRATIONS_AT_ONCE_EXCEEDED"):
            return self.unit.once(who.id, idem, run)

    def report(
        self,
        who: Account,
        *,
        request: Mapping[str, Any],
        response: Mapping[str, Any],
        policy_id: str | None = None,
        policy_version: int | None = None,
        judgment: Mapping[str, Any] | None = None,
        corroboration: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Verify a call the caller reports; its record and receipt are stored together, once
        per call id. The record says it was reported: it never feeds provider quality."""
        _need_any(who, {"poster", "admin"}, "submits calls for verification")
        call = parse_request(request)
        if call.sample_seed is not None:
            raise CriteriaError(
                "A request's `sample_seed` is drawn by the service, never given: leave it out.",
                code="CALL_INPUT_INVALID",
            )
        # The meaning check's sampling is drawn here, not from what the submitter chose.
        call = replace(call, sample_seed=new_sample_seed())
        recorded = {**request, "sample_seed": call.sample_seed}
        _storable(call.call_id, "A call id", 200, "CALL_INPUT_INVALID")
        if call.call_id != call.call_id.strip() or not call.call_id.isprintable():
            raise CriteriaError(
                "A call id has no control characters and no blanks around it.",
                code="CALL_INPUT_INVALID",
            )
        _storable(call.tool, "A tool name", 200, "CALL_INPUT_INVALID")
        _storable(call.provider, "A provider", 200, "CALL_INPUT_INVALID")
        answer = parse_response(response)
        parsed_judgment = None if judgment is None else parse_judgment(judgment)
        parsed_corroboration = None if corroboration is None else parse_corroboration(corroboration)
        if policy_version is not None and not 1 <= policy_version <= MAX_VERSION:
            raise BadInput(f"A policy version is 1 to {MAX_VERSION}.", code="INVALID_REQUEST")
        issuer = self.issuer
        inputs = {
            "request": request,
            "response": response,
            "policy": [policy_id, policy_version],
            "judgment": judgment,
            "corroboration": corroboration,
        }
        idem = Idempotency.of(key, "calls.report", inputs)

        # Judged before the write, never while it holds the store: an answer whose judging has
        # no bound on its work is judged in a worker process (adjudge.app.isolation).
        evidence = (parsed_judgment, parsed_corroboration)
        early: tuple[Any, datetime, CallResult] | None = None
        try:
            rules = self.unit.read(lambda tx: _judging_rules(tx, call, policy_id, policy_version))
        except Error:  # said again by the write (or its answer replayed, for a key seen)
            pass
        else:
            now = self.unit.now()
            judged = self._judged(who, rules, call, answer, now, *evidence)
            early = (rules, now, judged)

        def run(tx: Transaction) -> dict[str, Any]:
            _count_verification(tx, who, self.unit.now())
            rules = _judging_rules(tx, call, policy_id, policy_version)
            used, governing = rules
            if early is not None and early[0] == rules:
                now, result = early[1], early[2]
            else:  # the contract or policy changed meanwhile (or the read failed): judge anew
                now = self.unit.now()
                result = self._judged(who, rules, call, answer, now, *evidence, here=True)
            receipt_id = None
            if result.error is None:
                determination = determine_call(
                    result,
                    now=now,
                    response_bytes=None if answer.digest else digested_bytes(answer.body),
                    policy_digest=None if governing is None else governing.digest,
                    contract_digest=used.digest,
                )
                receipt = receipt_log.append(
                    tx,
                    lambda previous: issuer.sign(
                        determination, previous, about=call_subject(call.call_id)
                    ),
                    task_id=None,
                    at=now,
                )
                receipt_id = receipt.id
            stored = db.add_call(
                tx,
                record=result.to_dict(),
                contract_version=used.version,
                submitted_by=who.id,
                at=now,
                request=recorded,
                response=response,
                receipt_id=receipt_id,
                source="reported",
                evidence=_evidence(judgment=judgment, corroboration=corroboration),
            )
            emit_call_settled(tx, stored, now)
            return call_view(stored)

        return self.unit.once(who.id, idem, run)

    def _judged(
        self,
        who: Account,
        rules: tuple[db.StoredContract, db.StoredPolicy | None],
        call: CallRequest,
        answer: ProviderResponse,
        now: datetime,
        judgment: Judgment | None,
        corroboration: Corroboration | None,
        *,
        here: bool = False,
    ) -> CallResult:
        """The reported call judged under ``rules``: here, or in a worker process when its
        judging has no bound on its work (an answer it cannot finish is refused, nothing
        recorded). ``here``: within a write, where nothing may wait for a worker
        (``CONCURRENT_UPDATE``: send it again)."""
        used, governing = rules
        contract = _contract(used)
        parsed_policy = None if governing is None else _policy(governing, contract)
        size = len(dumps_utf8(answer.body)) if answer.status == "ok" else 0
        size += len(dumps_utf8(call.arguments))  # a rule's condition reads them too
        body = answer.body if answer.status == "ok" else None
        bounded = judged_here(judging_weight(contract, parsed_policy), contract, body, size)
        if here and not bounded:
            raise Unavailable(
                "The tool's contract or policy changed while the call was judged; send it again.",
                code="CONCURRENT_UPDATE",
            )
        job = JudgingJob(
            used.document,
            None if governing is None else governing.document,
            call,
            answer,
            now,
            judgment=judgment,
            corroboration=corroboration,
            registered_by=None if governing is None else governing.registered_by,
        )
        try:
            return self.isolation.judge_blocking(
                who.id, job, contract, parsed_policy, here=bounded
            )[0]
        except JudgingFailed as exc:
            raise BadInput(
                f"The call's answer could not be judged: {exc.message}. Nothing was recorded.",
                code="CALL_NOT_JUDGEABLE",
            ) from None

    def get(self, who: Account, call_id: str) -> dict[str, Any]:
        """A verified call's record with every check row (its submitter, its provider, admins)."""

        def run(tx: Transaction) -> dict[str, Any]:
            found = db.call(tx, call_id)
            if found is None:
                raise NotFound(f"No call {call_id}.", code="CALL_NOT_FOUND")
            if who.id not in (found.submitted_by, found.provider) and "admin" not in who.roles:
                raise NotAllowed(
                    "A call record is for its submitter and provider.", code="NOT_A_PARTY"
                )
            return call_view(found, call_reports.by_call(tx, call_id))

        return self.unit.read(run)

    # --- reports of bad results -----------------------------------------------------------

    def file_report(
        self, who: Account, call_id: str, reason: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """The caller reports a bad result despite the checks, by the filing deadline.

        Refusals: ``CALL_NOT_FOUND``; ``NOT_A_PARTY`` for anyone but the call's caller;
        ``REPORT_NOT_ALLOWED`` for a call that was not settled (refunded, voided, an error:
        nothing was charged for it); ``REPORT_WINDOW_CLOSED`` after the deadline;
        ``REPORT_EXISTS`` for a second report.
        """
        text = _reason(reason, "A report's reason")
        idem = Idempotency.of(key, "calls.file_report", {"call": call_id, "reason": text})

        def run(tx: Transaction) -> dict[str, Any]:
            found = db.call(tx, call_id)
            if found is None:
                raise NotFound(f"No call {call_id}.", code="CALL_NOT_FOUND")
            if who.id != found.submitted_by:
                raise NotAllowed(
                    "Only the call's caller may report its result.", code="NOT_A_PARTY"
                )
            # A forwarded call's status as it stands: a judgment after the answer may have
            # refunded a call its first record settled (it was then refused as past its
            # deadline, its hold found refunded, whatever the deadline said).
            forwarded = gateway_db.call(tx, call_id) if found.source == "gateway" else None
            if not _settled(found) or (forwarded is not None and forwarded.status != "settled"):
                raise StateError(
                    "This call was not settled (it was refunded, voided or ended in an error), "
                    "so nothing was charged for its result: there is nothing to report.",
                    code="REPORT_NOT_ALLOWED",
                )
            deadline = found.record.get("report_deadline")
            now = self.unit.now()
            if not isinstance(deadline, str) or now > datetime.fromisoformat(deadline):
                raise StateError(
                    f"The filing deadline for reporting this call was {deadline}.",
                    code="REPORT_WINDOW_CLOSED",
                )
            if call_reports.by_call(tx, call_id) is not None:
                raise Conflict(f"The call {call_id} was already reported.", code="REPORT_EXISTS")
            if (
                found.source == "gateway"
                and holds.get(tx, call_id) is not None
                and not settlement.claim_hold(tx, call_id)
            ):
                # The deadline passed on another process's clock first: the charge was paid out.
                raise StateError(
                    f"The filing deadline for reporting this call was {deadline}.",
                    code="REPORT_WINDOW_CLOSED",
                )
            report = call_reports.add(
                tx, call_id=call_id, provider=found.provider, by=who.id, reason=text, at=now
            )
            reported = events.call_reported(
                call_id, tool=found.tool, provider=found.provider, caller=who.id, filed_at=now
            )
            _emit(tx, found, reported, now)
            return report_view(report)

        return self.unit.once(who.id, idem, run)

    def rule_report(
        self,
        who: Account,
        call_id: str,
        *,
        upheld: bool,
        reasons: list[str],
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """An admin rules once on an open report (see the module's docstring for what each
        ruling does). Refusals: ``ROLE_REQUIRED``; ``CONFLICT_OF_INTEREST`` for the call's caller
        or provider; ``REPORT_NOT_FOUND``; ``REPORT_RULED``; ``INSUFFICIENT_FUNDS`` only for a
        call settled before holds existed whose provider's wallet cannot give the charge back
        (then nothing is written)."""
        _need_any(who, {"admin"}, "rules on a report")
        need_primary(who, "rules on a report")  # an upheld one takes the charge back
        if not 1 <= len(reasons) <= MAX_RULING_REASONS:
            raise BadInput(
                f"A ruling gives 1 to {MAX_RULING_REASONS} reasons.", code="TOO_MANY_REASONS"
            )
        texts = tuple(_reason(r, "A ruling's reason") for r in reasons)
        idem = Idempotency.of(
            key, "calls.rule_report", {"call": call_id, "upheld": upheld, "reasons": texts}
        )

        def run(tx: Transaction) -> dict[str, Any]:
            report = call_reports.by_call(tx, call_id)
            found = db.call(tx, call_id)
            if report is None or found is None:
                raise NotFound(f"No report of the call {call_id}.", code="REPORT_NOT_FOUND")
            if who.id in (found.submitted_by, found.provider):
                raise NotAllowed(
                    "The call's caller or provider cannot rule on its report.",
                    code="CONFLICT_OF_INTEREST",
                )
            if report.status != call_reports.OPEN:
                raise StateError(
                    f"The report of {call_id} was already ruled on.", code="REPORT_RULED"
                )
            now = self.unit.now()
            if not upheld:
                settlement.unclaim_hold(tx, call_id)  # it matures as if never reported
                ruled = call_reports.rule(
                    tx,
                    call_id,
                    upheld=False,
                    by=who.id,
                    reasons=texts,
                    at=now,
                    refunded_minor=None,
                    receipt_id=None,
                )
                _emit(tx, found, _ruled(ruled), now)
                return report_view(ruled)
            issuer = self.issuer
            # The receipt in force: a forwarded call's judgment after its answer supersedes its
            # first, and a receipt is superseded once (the ruling superseding the first again,
            # the log no longer verified as a chain). Read with the call's row held, which a
            # judgment at once holds too: one waits for the other.
            forwarded = gateway_db.call_held(tx, call_id) if found.source == "gateway" else None
            charge, currency = _charge(tx, found)
            current = found.receipt_id if forwarded is None else forwarded.receipt_id
            replaced = receipt_log.receipt(tx, current or found.receipt_id or "")
            envelope = None if replaced is None else replaced.body.get("envelope")
            determination = determine_upheld_report(
                call_id,
                str(found.record["response_digest"]),
                judge=who.id,
                reasons=texts,
                refund_minor=charge,
                currency=currency,
                now=now,
                criteria_digest=_judged_under(envelope),
                caller=found.submitted_by,
            )
            receipt = receipt_log.append(
                tx,
                lambda previous: issuer.sign(
                    determination,
                    previous,
                    about=call_subject(call_id),
                    supersedes=envelope,
                ),
                task_id=None,
                at=now,
            )
            if charge > 0:
                settlement.refund_upheld_report(
                    tx,
                    call_id=call_id,
                    provider=found.provider,
                    payer=found.submitted_by,
                    amount=charge,
                    receipt_id=receipt.id,
                    at=now,
                )
            ruled = call_reports.rule(
                tx,
                call_id,
                upheld=True,
                by=who.id,
                reasons=texts,
                at=now,
                refunded_minor=charge,
                receipt_id=receipt.id,
            )
            _emit(tx, found, _ruled(ruled), now)
            return report_view(ruled)

        return self.unit.once(who.id, idem, run)

    def reports(
        self,
        who: Account,
        *,
        status: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> dict[str, Any]:
        """The review queue for admins: reports oldest first, by status, paged by call id."""
        _need_any(who, {"admin"}, "reads the report queue")
        if status not in (None, call_reports.OPEN, call_reports.UPHELD, call_reports.DISMISSED):
            raise BadInput("A report's status is open, upheld or dismissed.", code="INVALID_STATUS")
        limit = max(1, min(limit, MAX_REPORT_PAGE))

        def run(tx: Transaction) -> dict[str, Any]:
            page = call_reports.page(tx, status=status, after=cursor, limit=limit + 1)
            more = len(page) > limit
            shown = page[:limit]
            return {
                "reports": [report_view(r) for r in shown],
                "next_cursor": shown[-1].call_id if more else None,
            }

        return self.unit.read(run)

    def quality(self, provider: str, *, window_days: int | None = None) -> dict[str, Any]:
        """A provider's quality window now: counts, failure rate (null with no observations),
        the penalty assessment under its declared terms, and its latest proposal's status."""
        return self.unit.read(lambda tx: self.quality_in(tx, provider, window_days=window_days))

    def termed_in(self, tx: Transaction) -> list[tuple[QualityTerms | None, QualityWindow]]:
        """Every provider with declared terms, its terms and its window now, as
        :meth:`quality_in` reads them (the operator's list), in a number of round trips that
        does not grow with the providers (one each took seven). Terms stored that no longer
        parse are None, read over the default window: one provider's page says what is wrong
        with them, and the list of all of them still reads."""
        now = self.unit.now()
        terms = {p: parsed_terms(declared) for p, declared in db.every_terms(tx).items()}
        default = timedelta(days=DEFAULT_WINDOW_DAYS)
        spans = {p: default if t is None else t.window for p, t in terms.items()}
        found = quality_windows.windows(tx, spans, now)
        return [(t, found[p]) for p, t in terms.items()]

    def quality_in(
        self, tx: Transaction, provider: str, *, window_days: int | None = None
    ) -> dict[str, Any]:
        """:meth:`quality` read in ``tx``: several providers' in one read (the operator's
        dashboard), each from the same moment of the database."""
        account = records.account(tx, provider)
        if account is None or "provider" not in account.roles:
            raise NotFound(f"No provider {provider}.", code="ACCOUNT_NOT_FOUND")
        now = self.unit.now()
        declared = db.terms(tx, provider)
        terms = None if declared is None else _terms(declared)
        if window_days is not None:
            span = timedelta(days=window_days)
        elif terms is not None:
            span = terms.window
        else:
            span = timedelta(days=DEFAULT_WINDOW_DAYS)
        window = quality_windows.window(tx, provider, span, now)
        assessment = None if terms is None else assess_penalty(window, terms, now).reason
        shown = window.to_dict()
        stored = db.latest_proposal(tx, provider)
        proposal = None
        if stored is not None:
            proposal = dict(stored) | {"status": _proposal_of(stored).status(now).value}
        return {
            "provider": provider,
            "at": now.isoformat(),
            "terms": declared,
            "window": shown,
            "failure_rate": shown["failure_rate"],
            # Human findings on callers' reports, counted apart: they never strike.
            "upheld_reports": call_reports.count_upheld(tx, provider, now - span),
            "assessment": assessment,
            "proposal": proposal,
        }


def parsed_terms(declared: Mapping[str, Any] | None) -> QualityTerms | None:
    """Stored terms parsed, or None (none declared, or they no longer parse: the provider's
    quality page says what is wrong with them; a list of providers reads on)."""
    if declared is None:
        return None
    try:
        return _terms(declared)
    except CriteriaError:
        return None


def _check_key_judges(tx: Transaction, judges: Sequence[str], now: datetime, provider: str) -> None:
    """Each verifier key a policy names as a meaning judge is registered and not revoked
    (``MEANING_JUDGE_KEY_UNKNOWN``): a key nobody holds would only ever be silent. Nor is it
    the provider's own (``CONFLICT_OF_INTEREST``): its word on its own calls is refused when
    given, so the key would only ever be silent too, while callers read an independent judge
    in the tool's panel and each sampled call's charge waited for it until its deadline."""
    for judge in judges:
        if not judge.startswith("key:"):
            continue
        found = records.verifier_key(tx, judge.removeprefix("key:"))
        if found is None or not found.active_at(now):
            raise NotFound(
                f"The meaning judge {judge} is not a registered, active verifier key; name a "
                "key as key:<fingerprint> of a verifier's registered key.",
                code="MEANING_JUDGE_KEY_UNKNOWN",
            )
        if found.account_id == provider:
            raise NotAllowed(
                f"The meaning judge {judge} is a key of {provider}, the tool's provider: a "
                "party's word about its own calls is no judgment of them. Name a key of "
                "another account. Nothing was stored.",
                code="CONFLICT_OF_INTEREST",
            )


def _evidence(**inputs: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What a reported call's verification read besides its request and response, as the caller
    sent it (kept so the call replays offline); None when it read nothing else."""
    kept = {name: dict(value) for name, value in inputs.items() if value is not None}
    return kept or None


def _on_the_providers_word(policy: Policy, who: Account, provider: str, now: datetime) -> None:
    """What only the tool's provider itself puts in a policy over its calls; anyone else, an
    admin included, is refused it, nothing stored. An admin may register the rules that judge
    a provider as a proposal, never make them move the provider's money or record:

    - a declared corroborator is paid from the provider's wallet on every empty answer (a tool
      of the admin's choosing, at a bound of its own: ``CORROBORATION_PROVIDER_ONLY``);
    - a verifier key named as a meaning judge signs judgments that, k of n, refund the
      provider's charges and strike it: a person's word, not the service's checks, where an
      admin's ruling on a caller's report never strikes (``KEY_JUDGES_PROVIDER_ONLY``);
    - an enforcing policy refunds the calls that fail it and strikes the provider; another
      account registers it in shadow mode (its verdicts recorded, nothing refunded or struck)
      or withdrawn, for the provider to adopt (``POLICY_ENFORCE_PROVIDER_ONLY``).

    A policy stored before these refusals is read by the same rule when a call is judged
    (:func:`adjudge.calls.policy.providers_own`): it acts as shadow, corroborates nothing and
    asks no key.
    """
    if providers_own(who.id, provider):
        return
    rule = policy.empty_result
    if rule is not None and rule.corroborator is not None:
        raise NotAllowed(
            f"The policy declares {rule.corroborator.tool} as the corroborator of "
            f"{policy.tool}'s empty answers, paid from {provider}'s wallet on each: only "
            f"{provider} itself registers a policy that spends its money. Register it without "
            "`empty_result.corroboration`, or ask the provider to register it. Nothing was "
            "stored.",
            code="CORROBORATION_PROVIDER_ONLY",
        )
    keys = [j for j in policy.judges if j.startswith("key:")]
    if keys:
        raise NotAllowed(
            f"The policy names {', '.join(keys)} as meaning judges of {policy.tool}: a key's "
            f"signed judgment refunds {provider}'s charges and strikes it, so only {provider} "
            "itself registers a policy naming one. Register it with the service's judges only, "
            "or ask the provider to register it. Nothing was stored.",
            code="KEY_JUDGES_PROVIDER_ONLY",
        )
    if policy.mode is not Mode.SHADOW and not policy.withdrawn(now):
        raise NotAllowed(
            f"An enforcing policy refunds {provider}'s failing calls and strikes it, so only "
            f"{provider} itself registers one over {policy.tool}. Register it with "
            '"mode": "shadow" (its verdicts are recorded and enforce nothing) for the provider '
            "to adopt, or ask the provider to register it. Nothing was stored.",
            code="POLICY_ENFORCE_PROVIDER_ONLY",
        )


def _check_corroborator(tx: Transaction, policy: Policy, provider: str) -> None:
    """A declared corroborator must be a callable tool of another provider (independence is
    structural: a provider does not corroborate itself), priced in the ledger's currency."""
    rule = policy.empty_result
    spec = None if rule is None else rule.corroborator
    if spec is None:
        return
    other = gateway_db.tool(tx, spec.tool)
    if other is None:
        raise CriteriaError(
            f"The declared corroborator {spec.tool} is not a tool callable through the gateway.",
            code="POLICY_CORROBORATOR_INVALID",
        )
    if other.provider == provider:
        raise CriteriaError(
            f"The declared corroborator {spec.tool} is {provider}'s own tool: an empty answer is "
            "corroborated only by another provider.",
            code="POLICY_CORROBORATOR_INVALID",
        )
    assert rule is not None
    for expression in (spec.path or rule.path, spec.arguments):
        # Run by the gateway itself between two calls, outside any judging worker.
        if expression is not None and not plain_selection(expression.cost):
            raise CriteriaError(
                f"The corroborator's expression {expression.source!r} must select, without "
                "functions or copies of one value, so its work is bounded by what it reads.",
                code="POLICY_CORROBORATOR_INVALID",
            )


def _contract(stored: db.StoredContract) -> Contract:
    """A stored contract, parsed once per process."""
    document = stored.document
    parsed: Contract = _PARSED.get((stored.digest,), document, lambda: register_contract(document))
    return parsed


def _policy(stored: db.StoredPolicy, contract: Contract) -> Policy:
    """A stored policy on the contract it was registered against, parsed once per process."""
    parsed: Policy = _PARSED.get(
        ("policy", stored.digest, stored.tool, stored.contract_version),
        stored.document,
        lambda: register_policy(stored.document, contract),
    )
    return parsed


def _charge(tx: Transaction, call: db.StoredCall) -> tuple[int, str | None]:
    """What the caller paid for a call and in what currency: a forwarded call's settled charge;
    nothing for a reported one (adjudge moved no money for it)."""
    if call.source != "gateway":
        return 0, None
    forwarded = gateway_db.call(tx, call.id)
    if forwarded is None or forwarded.status != "settled":
        return 0, None
    return forwarded.price_minor, forwarded.currency


def _judging_rules(
    tx: Transaction, call: CallRequest, policy_id: str | None, policy_version: int | None
) -> tuple[db.StoredContract, db.StoredPolicy | None]:
    """The contract and policy that judge the call, after the refusals of a call id
    taken or a tool unknown."""
    if db.call(tx, call.call_id) is not None:
        raise Conflict(f"The call {call.call_id} was already verified.", code="CALL_EXISTS")
    if gateway_db.call(tx, call.call_id) is not None:
        # A forwarded call's id (its provider sees it) is the gateway's to verify: taken
        # here, the gateway could never settle or end that call.
        raise Conflict(
            f"The call {call.call_id} is one the gateway forwarded; it verifies that call "
            "itself. Report a call under an id of your own.",
            code="CALL_EXISTS",
        )
    current = db.latest_contract(tx, call.tool)
    owner = db.tool_owner(tx, call.tool)
    if current is None or owner is None:
        raise NotFound(f"No tool {call.tool} is registered.", code="TOOL_NOT_FOUND")
    if call.provider != owner:
        raise BadInput(
            f"{call.tool} is provided by {owner}, not {call.provider}.",
            code="CALL_PROVIDER_MISMATCH",
        )
    governing = _governing(tx, call.tool, policy_id, policy_version)
    used = current
    if governing is not None:
        found = db.contract(tx, call.tool, governing.contract_version)
        assert found is not None  # a policy is registered against a stored contract
        used = found
    return used, governing


def _governing(
    tx: Transaction, tool: str, policy_id: str | None, version: int | None
) -> db.StoredPolicy | None:
    if policy_id is None:
        return db.latest_policy(tx, tool)
    found = db.policy(tx, tool, policy_id, version)
    if found is None:
        named = policy_id if version is None else f"{policy_id} version {version}"
        raise NotFound(f"{tool} has no policy {named}.", code="POLICY_NOT_FOUND")
    return found
