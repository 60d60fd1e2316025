"""Verify one paid call end to end: mapping and schema, empty result, rules, meaning, clauses.

Pure: the call's time, the model's judgment and any corroboration arrive as inputs. The steps:

(1) A request or system error is recorded apart from data quality; no check runs.
(2) With no policy the call is UNVERIFIED; the shape is still checked and listed, undeclared.
(3) The response is mapped into the tool's shape and checked against the output schema.
(4) If the shape broke where the policy counts it (a declared schema check), every later check
    is listed as not run and the clauses decide. A schema failure the policy does not count is
    recorded and changes nothing: the declared checks judge the mapped output as if there were
    no schema. A response that cannot be mapped at all leaves nothing in the tool's shape: the
    declared rule stage fails (the provider's data did not fit its own contract's mapping).
(5) An empty result under an ``accept`` empty-result rule is EMPTY_CONFIRMED only with
    independent corroboration, else EMPTY_UNVERIFIED.
(6) The quality rules run and the stage is scored; a misapplied rule makes the call MISAPPLIED.
(7) The meaning check, if declared: skipped unless sampled; unavailable without a grounded
    judgment; a FAIL vote only for a conflict citing the response; never a PASS vote.
(8) The clauses decide; a withdrawn policy turns any verdict into DEGRADED.
(9) The verdict's payment decision and strike under the policy's mode; an enforcing policy that
    is not its provider's own word (registered by another account, before that was refused)
    acts as shadow.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from adjudge.calls.bounds import dotted_names, in_process, weight
from adjudge.calls.contract import Contract, ExpressionError, ShapeCheck, map_response
from adjudge.calls.outcomes import DETERMINISTIC, IMPORTED, SEMANTIC, CheckRow, Outcome
from adjudge.calls.pointers import is_pointer, pointer, resolve
from adjudge.calls.policy import DEFAULT_REPORT_WINDOW, Mode, Policy, parse_time, providers_own
from adjudge.calls.rules import RulesStage, evaluate_rules
from adjudge.calls.verdicts import CallVerdict, Effect, Payment, apply_clauses, effect_of
from adjudge.digests import is_digest, sha256_digest
from adjudge.errors import CriteriaError
from adjudge.json_text import (
    JSON_DEPTH,
    deeper_than,
    dumps_utf8,
    finite_float,
    json_text,
    no_constant,
)
from adjudge.receipts.canonical import canonical_json

__all__ = [
    "CallError",
    "CallRequest",
    "CallResult",
    "Corroboration",
    "Judgment",
    "ProviderResponse",
    "digest_of",
    "digested_bytes",
    "judged_here",
    "judging_weight",
    "meaning_pending",
    "parse_corroboration",
    "parse_judgment",
    "parse_request",
    "parse_response",
    "received_response",
    "require_plain_json",
    "to_wire",
    "verify_call",
    "wants_corroboration",
    "wants_judges",
]

_INPUT = "CALL_INPUT_INVALID"


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class CallRequest:
    """The call as the caller made it: identity, provider, tool, arguments and reserved price."""

    call_id: str
    provider: str
    tool: str
    arguments: Mapping[str, Any]
    price_minor: int  # integer minor units (cents); never a float
    currency: str
    at: datetime | None = None
    #: What the meaning check's sampling draws from with the call's identity
    #: (:func:`~adjudge.calls.policy.sampled`): drawn once the provider has answered.
    sample_seed: str | None = None


@dataclass(frozen=True)
class ProviderResponse:
    """What came back: a body, or a request error (the provider's) or a system error (ours).

    ``digest`` is the sha256 of the response as received; the edge that read the bytes should
    set it. When absent it is computed from the body's canonical JSON.

    The body must be plain JSON: objects with string keys, lists, strings, booleans, null and
    finite numbers. NaN and Infinity are not JSON (and compare false with every bound, so they
    would pass ``minimum`` and ``maximum``); they, and any other Python value, are refused when
    the response is built (``CALL_INPUT_INVALID``).
    """

    status: str  # "ok", "request_error" or "system_error"
    body: Any = None
    error_code: str = ""
    error_message: str = ""
    digest: str = ""

    def __post_init__(self) -> None:
        if self.status == "ok":
            require_plain_json(self.body, "The response's `body`")


@dataclass(frozen=True)
class Citation:
    """A cited piece of the mapped output: its RFC 6901 JSON Pointer and the sha256 of its value."""

    path: str
    quote_sha256: str


@dataclass(frozen=True)
class Judgment:
    """A model's meaning-and-relevance judgment, produced outside the pure core.

    It is grounded only when bound to this call and to this response's digest. ``available``
    False means the judge was asked and could not answer.
    """

    call_id: str
    response_digest: str
    available: bool
    conflict: bool = False
    citations: tuple[Citation, ...] = ()
    reason: str = ""
    #: The judge's key (a model or a verifier the service knows by that name), for a policy
    #: that names its judges; empty for a judgment handed in whole.
    judge: str = ""


@dataclass(frozen=True)
class Corroboration:
    """An independent source's answer to the same request: did it also find nothing?

    ``source`` is the provider that answered. A corroboration from the source the policy
    declares (``tool`` is its corroborating tool) also names the corroborating call
    (``call_id``, ``receipt_id``, ``response_digest``: the gateway's own paid call, with its own
    receipt); ``available`` False means that call could not answer the question (down, refused,
    too dear, its own checks did not pass), which is never read as corroboration either way.
    """

    source: str
    empty: bool
    reason: str = ""
    tool: str = ""
    call_id: str = ""
    receipt_id: str = ""
    response_digest: str = ""
    available: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The corroboration's wire shape (what :func:`parse_corroboration` reads back)."""
        out: dict[str, Any] = {"source": self.source, "empty": self.empty, "reason": self.reason}
        if self.tool:
            out |= {
                "tool": self.tool,
                "call_id": self.call_id,
                "receipt_id": self.receipt_id,
                "response_digest": self.response_digest,
                "available": self.available,
            }
        return out


@dataclass(frozen=True)
class CallError:
    """A request or system error, recorded apart from data-quality failures."""

    kind: str  # "request_error" (the provider failed to answer) or "system_error" (ours)
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """The error's wire shape."""
        return {"kind": self.kind, "code": self.code, "message": self.message}


# A request error means the provider did not deliver: the reservation goes back. A system error
# is nobody's data-quality failure: no charge, no provider credit. Neither strikes.
_ERROR_EFFECTS = {"request_error": Payment.REFUND, "system_error": Payment.VOID}


@dataclass(frozen=True)
class CallResult:
    """A verified call: verdict (or error), effect, and every check considered."""

    call_id: str
    provider: str
    tool: str
    at: datetime
    policy: Policy | None
    verdict: CallVerdict | None
    decided_by: str
    effect: Effect
    rows: tuple[CheckRow, ...]
    response_digest: str
    price_minor: int
    currency: str
    policy_verdict: CallVerdict | None = None  # before a withdrawal turned it into DEGRADED
    error: CallError | None = None
    score: tuple[int, int] | None = None  # (passed weight, applied weight) of the rule stage
    notes: tuple[str, ...] = field(default=())
    #: The corroboration an empty answer's verdict read (None: none was handed in).
    corroboration: Corroboration | None = None
    #: True when the policy's judges split (some cited a conflict, fewer than its quorum): the
    #: call goes to a person, and the meaning check casts no vote meanwhile.
    needs_review: bool = False
    #: The account that registered an enforcing policy in the provider's stead: the policy
    #: acted as shadow (None: it acted as its mode says).
    registered_by: str | None = None

    @property
    def report_deadline(self) -> datetime | None:
        """Until when the caller may report a bad result (the policy's report window after the
        call, the default window without a policy); None for a request or system error."""
        if self.error is not None:
            return None
        window = DEFAULT_REPORT_WINDOW if self.policy is None else self.policy.report_window
        return self.at + window

    @property
    def charge_minor(self) -> int:
        """What the caller may be charged, in minor units: the price on settle, else 0."""
        return self.price_minor if self.effect.payment is Payment.SETTLE else 0

    def to_dict(self) -> dict[str, Any]:
        """The call record's wire shape (stable key order; exact integers for money)."""
        policy = self.policy
        deadline = self.report_deadline
        return {
            "call_id": self.call_id,
            "provider": self.provider,
            "tool": self.tool,
            "at": self.at.isoformat(),
            "policy": None if policy is None else self._policy_dict(policy),
            "verdict": None if self.verdict is None else self.verdict.value,
            "policy_verdict": None if self.policy_verdict is None else self.policy_verdict.value,
            "decided_by": self.decided_by,
            "payment": self.effect.payment.value,
            "strike": self.effect.strike,
            "effect": self.effect.to_dict(),
            "error": None if self.error is None else self.error.to_dict(),
            "price": {"amount_minor": self.price_minor, "currency": self.currency},
            "charge_minor": self.charge_minor,
            "score": None
            if self.score is None
            else {"passed_weight": self.score[0], "applied_weight": self.score[1]},
            "response_digest": self.response_digest,
            "report_deadline": None if deadline is None else deadline.isoformat(),
            "checks": [row.to_dict() for row in self.rows],
            "corroboration": None if self.corroboration is None else self.corroboration.to_dict(),
            "needs_review": self.needs_review,
        }

    def _policy_dict(self, policy: Policy) -> dict[str, Any]:
        """The judging policy as the record names it, and how it acted when not as its mode."""
        named = {"policy": policy.policy_id, "version": policy.version, "mode": policy.mode.value}
        if self.registered_by is not None:
            named |= {"acts_as": Mode.SHADOW.value, "registered_by": self.registered_by}
        return named


# ----------------------------------------------------------------------------- parsing inputs


def _object(data: object, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise CriteriaError(f"{what} must be a JSON object.", code=_INPUT)
    return data


def _text(data: Mapping[str, Any], key: str, what: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise CriteriaError(f"{what} needs a non-empty string `{key}`.", code=_INPUT)
    return value


def parse_request(data: object) -> CallRequest:
    """Parse a call request; the price is integer minor units (a float is refused)."""
    obj = _object(data, "The request")
    price = _object(obj.get("price"), "The request's `price`")
    amount = price.get("amount_minor")
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise CriteriaError(
            "`price.amount_minor` must be a whole number of minor units (cents), 0 or more.",
            code=_INPUT,
        )
    arguments = obj.get("arguments", {})
    require_plain_json(arguments, "The request's `arguments`")
    return CallRequest(
        call_id=_text(obj, "call_id", "The request"),
        provider=_text(obj, "provider", "The request"),
        tool=_text(obj, "tool", "The request"),
        arguments=_object(arguments, "The request's `arguments`"),
        price_minor=amount,
        currency=_text(price, "currency", "The request's `price`"),
        at=None if obj.get("at") is None else parse_time(obj["at"], "`at`", _INPUT),
        sample_seed=_seed(obj.get("sample_seed")),
    )


def _seed(value: object) -> str | None:
    """A request's ``sample_seed``: absent, or 32 lowercase hex digits."""
    if value is None:
        return None
    if not (isinstance(value, str) and _SEED.fullmatch(value)):
        raise CriteriaError(
            "A request's `sample_seed` is 32 lowercase hex digits, as the service draws it.",
            code=_INPUT,
        )
    return value


_SEED = re.compile(r"[0-9a-f]{32}")


def parse_response(data: object) -> ProviderResponse:
    """Parse a provider response envelope: ``{"status", "body"}`` or ``{"status", "error"}``."""
    obj = _object(data, "The response")
    status = obj.get("status")
    if status == "ok":
        if "body" not in obj:
            raise CriteriaError("An `ok` response needs a `body`.", code=_INPUT)
        digest = obj.get("digest", "")
        if digest != "" and not is_digest(digest):
            raise CriteriaError(
                "The response's `digest` must be sha256:<64 lowercase hex> (the sha256 of the "
                "bytes as received), or absent.",
                code=_INPUT,
            )
        return ProviderResponse(status="ok", body=obj["body"], digest=digest)
    if isinstance(status, str) and status in _ERROR_EFFECTS:
        error = _object(obj.get("error", {}), "The response's `error`")
        return ProviderResponse(
            status=status,
            error_code=str(error.get("code", status.upper())),
            error_message=str(error.get("message", "")),
        )
    raise CriteriaError(
        "The response's `status` must be `ok`, `request_error` or `system_error`.", code=_INPUT
    )


def received_response(raw: bytes) -> ProviderResponse:
    """The ``ok`` response of the bytes a provider answered, as the gateway reads them.

    The body is the bytes' JSON; bytes that are not JSON (garbage, HTML, empty; ``NaN`` and
    ``Infinity``, which Python's parser would take, included) are passed as their UTF-8 text
    with undecodable bytes replaced, so the contract judges them. So are bytes whose JSON is no
    plain value: a number too large for a float (``1e999``, which Python reads as infinity) and
    a string holding half of a surrogate pair (``"\\ud800"``, which no UTF-8 text can hold:
    the record and the answer could not be written). The digest is always the sha256 of the
    bytes themselves. A replay reads a forwarded call's stored bytes through this same
    function, so it sees the body the gateway judged. JSON nesting arrays and objects more than
    :data:`JSON_DEPTH` deep is passed as its text too, on a count of its characters: where Python's
    parser gives up depended on the stack it was called on, so the gateway read an answer
    nested 960 deep as text and failed it while a replay read it as JSON and passed it.
    """
    try:
        text = json_text(raw)  # as json reads bytes, so the count reads what the parser does
        if deeper_than(text, JSON_DEPTH):
            raise ValueError(f"the answer nests more than {JSON_DEPTH} deep")
        body: Any = json.loads(text, parse_constant=no_constant, parse_float=finite_float)
        utf8 = json.detect_encoding(raw).startswith("utf-8")  # else a search of bytes misses
        if not utf8 or ((b"\\u" in raw or b"\xed" in raw) and _SURROGATE.search(raw)):
            dumps_utf8(body)  # the record's writer: UnicodeEncodeError on a lone half
    except (ValueError, UnicodeDecodeError, RecursionError):
        body = raw.decode("utf-8", errors="replace")
    return ProviderResponse(status="ok", body=body, digest=sha256_digest(raw))


#: Where JSON's parser can make a surrogate: an escape of one, or one encoded in the bytes
#: (Python reads JSON bytes with ``surrogatepass``). Only a body with one is checked whole; the
#: two byte searches before it spare most bodies the scan (0.1 µs against 4 for a forecast).
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def parse_judgment(data: object) -> Judgment:
    """Parse a meaning judgment as a judge worker hands it in."""
    obj = _object(data, "The judgment")
    status = obj.get("status")
    if status not in ("judged", "unavailable"):
        raise CriteriaError("A judgment's `status` must be `judged` or `unavailable`.", code=_INPUT)
    cited = obj.get("citations", [])
    if not isinstance(cited, list):
        raise CriteriaError(
            "A judgment's `citations` must be a list of citations, each "
            '{"path": POINTER, "quote_sha256": DIGEST} ([] when it cites nothing).',
            code=_INPUT,
        )
    citations = []
    for item in cited:
        cite = _object(item, "A citation")
        quote = _text(cite, "quote_sha256", "A citation")
        if not is_digest(quote):
            raise CriteriaError("A citation's `quote_sha256` must be sha256:<64 hex>.", code=_INPUT)
        path = cite.get("path")
        if not isinstance(path, str) or not is_pointer(path):
            raise CriteriaError(
                f"A citation's `path` must be an RFC 6901 JSON Pointer into the mapped output, "
                f'such as /results/2/title ("" is the whole output); got {path!r}.',
                code=_INPUT,
            )
        citations.append(Citation(path=path, quote_sha256=quote))
    conflict = obj.get("conflict", False)
    if not isinstance(conflict, bool):
        raise CriteriaError("A judgment's `conflict` must be true or false.", code=_INPUT)
    return Judgment(
        call_id=_text(obj, "call_id", "The judgment"),
        response_digest=_text(obj, "response_digest", "The judgment"),
        available=status == "judged",
        conflict=conflict,
        citations=tuple(citations),
        reason=str(obj.get("reason", "")),
        judge=str(obj.get("judge", "")),
    )


def parse_corroboration(data: object) -> Corroboration:
    """Parse a corroboration: ``{"source", "empty", "reason"?}``."""
    obj = _object(data, "The corroboration")
    empty = obj.get("empty")
    if not isinstance(empty, bool):
        raise CriteriaError("A corroboration's `empty` must be true or false.", code=_INPUT)
    available = obj.get("available", True)
    if not isinstance(available, bool):
        raise CriteriaError("A corroboration's `available` must be true or false.", code=_INPUT)
    named = {}
    for key in ("tool", "call_id", "receipt_id", "response_digest"):
        value = obj.get(key, "")
        if not isinstance(value, str):
            raise CriteriaError(f"A corroboration's `{key}` must be a string.", code=_INPUT)
        named[key] = value
    digest = named["response_digest"]
    if digest and not is_digest(digest):
        raise CriteriaError(
            "A corroboration's `response_digest` must be sha256:<64 lowercase hex>.", code=_INPUT
        )
    return Corroboration(
        source=_text(obj, "source", "The corroboration"),
        empty=empty,
        reason=str(obj.get("reason", "")),
        available=available,
        **named,
    )


# ----------------------------------------------------------------------------- evidence


def digested_bytes(value: Any) -> bytes:
    """The bytes :func:`digest_of` hashes: a string's UTF-8 text, else its canonical JSON."""
    return value.encode() if isinstance(value, str) else canonical_json(value)


def digest_of(value: Any) -> str:
    """``sha256:<hex>`` of a JSON value: a string over its UTF-8 text, else its canonical JSON.

    The edge that received a response should pass the digest of the bytes it read instead
    (``ProviderResponse.digest``); this is the fallback, and the form citations use.
    """
    return sha256_digest(digested_bytes(value))


def _resolves(citation: Citation, output: Any) -> bool:
    found, value = resolve(output, citation.path)
    return found and digest_of(value) == citation.quote_sha256


_SCALARS = frozenset({str, int, bool, type(None)})


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain JSON: one recursive walk that never descends into a scalar."""
    kind = type(value)
    if kind is dict:
        for key, member in value.items():
            if type(key) is not str:
                return False
            member_kind = type(member)
            if member_kind in _SCALARS:
                continue
            if member_kind is float:
                if member - member != 0.0:  # NaN and the infinities: x - x is NaN
                    return False
            elif not _plain(member):
                return False
        return True
    if kind is list:
        for member in value:
            member_kind = type(member)
            if member_kind in _SCALARS:
                continue
            if member_kind is float:
                if member - member != 0.0:
                    return False
            elif not _plain(member):
                return False
        return True
    if kind in _SCALARS:
        return True
    return kind is float and value - value == 0.0


def _first_impurity(value: Any, where: list[str | int]) -> tuple[list[str | int], str] | None:
    """Where ``value`` stops being plain JSON, and what is there (only called on failure)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return None
    if kind is float:
        return None if value - value == 0.0 else (where, f"the number {value!r}, not finite")
    if kind is dict:
        for key, member in value.items():
            if type(key) is not str:
                return where, f"the object key {key!r}, not a string"
            found = _first_impurity(member, [*where, key])
            if found is not None:
                return found
        return None
    if kind is list:
        for index, member in enumerate(value):
            found = _first_impurity(member, [*where, index])
            if found is not None:
                return found
        return None
    return where, f"a Python {kind.__name__}, which JSON has no form for"


def require_plain_json(value: Any, what: str) -> None:
    """Refuse (``CALL_INPUT_INVALID``) a value that is not plain JSON, naming where it is not.

    Plain JSON is what ``json.loads`` returns for strict JSON: dicts with string keys, lists,
    strings, ints, finite floats, booleans and None (exactly those types).
    """
    try:
        if _plain(value):
            return
        found = _first_impurity(value, [])
    except RecursionError:
        raise CriteriaError(f"{what} is nested too deeply to be judged.", code=_INPUT) from None
    where, what_is_there = found if found is not None else ([], "a value that is not JSON")
    at = pointer(where) or "the top"
    raise CriteriaError(
        f"{what} must be plain JSON with finite numbers; at {at} it holds {what_is_there}.",
        code=_INPUT,
    )


# ----------------------------------------------------------------------------- the stages


def _shape_row(shape: ShapeCheck, declared: bool) -> CheckRow:
    if shape.ok:
        if not shape.schema_declared:
            outcome, reason = Outcome.NOT_APPLICABLE, "the contract declares no output schema"
        else:
            outcome, reason = Outcome.PASS, "the mapped response matches the output schema"
    else:
        outcome, reason = Outcome.FAIL, f"{shape.stage}: {shape.reason}"
    return CheckRow(
        name="schema",
        stage="schema",
        authority=DETERMINISTIC,
        outcome=outcome,
        reason=reason,
        path=shape.path,
        declared=declared,
    )


def _not_run(policy: Policy, why: str, unmapped: ShapeCheck | None = None) -> list[CheckRow]:
    """Rows for every later check that an earlier stage made moot: listed, never passed.

    ``unmapped``: the response could not be mapped and the policy does not count the schema
    check, so the rule stage itself fails (there is no output in the tool's shape to judge).
    """
    rows = [
        CheckRow(rule.name, "rule", DETERMINISTIC, Outcome.NOT_RUN, why, weight=rule.weight)
        for rule in policy.rules
    ]
    if policy.rules:
        if unmapped is None:
            rows.append(
                CheckRow("quality_rules", "quality_rules", DETERMINISTIC, Outcome.NOT_RUN, why)
            )
        else:
            reason = (
                "the response could not be mapped into the tool's shape, so there is no output "
                f"for the rules to judge: {unmapped.reason}"
            )
            rows.append(
                CheckRow(
                    "quality_rules",
                    "quality_rules",
                    DETERMINISTIC,
                    Outcome.FAIL,
                    reason,
                    path=unmapped.path,
                )
            )
    if "meaning" in policy.checks:
        rows.append(CheckRow("meaning", "meaning", SEMANTIC, Outcome.NOT_RUN, why))
    return rows


def _stage_row(stage: RulesStage) -> CheckRow:
    score = stage.score
    if score is None:
        text = "no rule applied, so there is no score"
    else:
        text = (
            f"passed weight {stage.passed_weight} of applied weight {stage.applied_weight}"
            f" ({float(score):.4g}) against threshold {stage.threshold}"
        )
    if stage.outcome is Outcome.MISAPPLIED:
        text = f"a rule was misapplied (the policy is wrong); {text}"
    return CheckRow("quality_rules", "quality_rules", DETERMINISTIC, stage.outcome, text)


def _meaning_rows(
    policy: Policy,
    request: CallRequest,
    output: Any,
    digest: str,
    judgment: Judgment | None,
    judgments: Sequence[Judgment],
) -> list[CheckRow]:
    """The meaning check's row, and with named judges one row per judge before it.

    Each judge is judged alone (grounded, cited, never a pass vote); the ``meaning`` row folds
    them k of n: at least ``quorum`` cited conflicts is a fail vote; some but fewer is a split,
    which casts no vote and sends the call to a person; otherwise no vote (``no_conflict``), or
    ``unavailable`` when fewer than ``quorum`` judges answered at all.
    """
    assert policy.meaning_rate is not None
    if not policy.sampled(request.call_id, request.sample_seed):
        reason = f"not selected by sampling (rate {policy.meaning_rate})"
        return [CheckRow("meaning", "meaning", SEMANTIC, Outcome.SKIPPED, reason)]
    if not policy.judges:
        return [_meaning_row(request, output, digest, judgment)]
    if policy.meaning_when == "after_answer" and not judgments:
        reason = "selected by sampling; pending: the judges are asked after the answer"
        return [CheckRow("meaning", "meaning", SEMANTIC, Outcome.PENDING, reason)]
    by_judge = {j.judge: j for j in judgments}
    rows = [
        _meaning_row(
            request, output, digest, by_judge.get(key), name=f"meaning:{key}", stage="judge"
        )
        for key in policy.judges
    ]
    failed = [r for r in rows if r.outcome is Outcome.FAIL]
    answered = [r for r in rows if r.outcome is not Outcome.UNAVAILABLE]
    n, k = len(policy.judges), policy.quorum
    keys = ", ".join(r.name.removeprefix("meaning:") for r in failed)

    def row(outcome: Outcome, reason: str, path: str = "", cited: tuple[str, ...] = ()) -> CheckRow:
        return CheckRow("meaning", "meaning", SEMANTIC, outcome, reason, path, cited=cited)

    if len(failed) >= k:
        cited = tuple(dict.fromkeys(q for r in failed for q in r.cited))
        reason = f"{len(failed)} of {n} judges cited a conflict (quorum {k}): {keys}"
        return [*rows, row(Outcome.FAIL, reason, failed[0].path, cited)]
    if failed:
        reason = (
            f"split: {len(failed)} of {n} judges cited a conflict ({keys}), fewer than the "
            f"quorum of {k}: sent to human review"
        )
        return [*rows, row(Outcome.UNAVAILABLE, reason)]
    if len(answered) < k:
        reason = f"only {len(answered)} of {n} judges answered; the quorum is {k}"
        return [*rows, row(Outcome.UNAVAILABLE, reason)]
    reason = (
        f"{len(answered)} of {n} judges answered and none cited a conflict; "
        "a model cannot vote PASS"
    )
    return [*rows, row(Outcome.NO_CONFLICT, reason)]


def _meaning_row(
    request: CallRequest,
    output: Any,
    digest: str,
    judgment: Judgment | None,
    *,
    name: str = "meaning",
    stage: str = "meaning",
) -> CheckRow:
    def row(outcome: Outcome, reason: str, path: str = "", cited: tuple[str, ...] = ()) -> CheckRow:
        declared = stage == "meaning"  # a judge's row is counted through the meaning row
        return CheckRow(name, stage, SEMANTIC, outcome, reason, path, None, declared, cited)

    if judgment is None or not judgment.available:
        why = "" if judgment is None or not judgment.reason else f": {judgment.reason}"
        return row(Outcome.UNAVAILABLE, f"selected by sampling, but no judgment was available{why}")
    if judgment.call_id != request.call_id or judgment.response_digest != digest:
        # An ungrounded judgment is not considered at all: it is bound to another case.
        return row(Outcome.UNAVAILABLE, "the judgment is not bound to this call's response")
    if not judgment.conflict:
        return row(Outcome.NO_CONFLICT, "the model found no conflict; a model cannot vote PASS")
    cited = [c for c in judgment.citations if _resolves(c, output)]
    if not cited:
        return row(Outcome.UNCITED, "the model claimed a conflict but cited nothing that resolves")
    quotes = tuple(dict.fromkeys(c.quote_sha256 for c in cited))
    reason = f"cited conflict: {judgment.reason}".rstrip(": ")
    return row(Outcome.FAIL, reason, cited[0].path, quotes)


def _empty_row(
    policy: Policy, request: CallRequest, corroboration: Corroboration | None
) -> CheckRow:
    """The empty answer's corroboration row.

    Without a declared source it is recorded, not counted: another index having results is
    not evidence that this provider broke its contract. With one (``empty_result.corroboration``,
    the provider's own choice, shown to callers before they pay) the row counts: a contradiction
    is a fail, a source that could not answer is unavailable.
    """
    assert policy.empty_result is not None
    declared = policy.empty_result.corroborator
    counted = (
        declared is not None and corroboration is not None and corroboration.tool == (declared.tool)
    )
    evidence = (
        ()
        if corroboration is None or not corroboration.response_digest
        else (corroboration.response_digest,)
    )
    via = (
        ""
        if corroboration is None or not corroboration.call_id
        else f" (call {corroboration.call_id}, receipt {corroboration.receipt_id or 'none'})"
    )

    def row(outcome: Outcome, reason: str) -> CheckRow:
        return CheckRow(
            "empty_result",
            "empty_result",
            IMPORTED,
            outcome,
            reason + via,
            declared=declared is not None,
            cited=evidence,
        )

    if corroboration is None:
        if declared is not None:
            return row(
                Outcome.UNAVAILABLE,
                f"the declared corroborator {declared.tool} was not asked",
            )
        return row(Outcome.NOT_RUN, "no independent corroboration was available")
    if corroboration.source == request.provider:
        # Independence is read from structure: a provider cannot corroborate itself.
        return row(Outcome.NOT_APPLICABLE, "the corroboration came from the provider itself")
    if declared is not None and not counted:
        return row(
            Outcome.UNAVAILABLE,
            f"the corroboration came from {corroboration.tool or corroboration.source}, not the "
            f"declared corroborator {declared.tool}",
        )
    if not corroboration.available:
        why = f": {corroboration.reason}" if corroboration.reason else ""
        return row(Outcome.UNAVAILABLE, f"{corroboration.source} could not corroborate{why}")
    if corroboration.empty:
        return row(Outcome.PASS, f"{corroboration.source} also found nothing")
    return row(Outcome.FAIL, f"{corroboration.source} found results")


def _empty_verdict(row: CheckRow) -> tuple[CallVerdict, str]:
    """The verdict of an empty answer from its corroboration row."""
    if row.outcome is Outcome.PASS:
        return CallVerdict.EMPTY_CONFIRMED, "empty-result rule: independently corroborated"
    if row.declared and row.outcome is Outcome.FAIL:
        return CallVerdict.FAIL, "empty-result rule: the declared corroborator found results"
    if row.declared and row.outcome is Outcome.UNAVAILABLE:
        return (
            CallVerdict.DEGRADED,
            "empty-result rule: the declared corroborator was unavailable, so a needed check "
            "did not run",
        )
    return CallVerdict.EMPTY_UNVERIFIED, "empty-result rule: no independent corroboration"


def wants_judges(result: CallResult) -> bool:
    """True when ``result`` was selected for a meaning check its policy names judges for, and
    their judgments were not handed in yet: the gateway then asks them and verifies again."""
    policy = result.policy
    if policy is None or not policy.judges:
        return False
    rows = [r for r in result.rows if r.stage == "judge"]
    return bool(rows) and all(
        r.outcome is Outcome.UNAVAILABLE and r.reason.endswith("no judgment was available")
        for r in rows
    )


def meaning_pending(result: CallResult) -> bool:
    """True when ``result``'s meaning check waits for judges asked after the answer (its policy
    says ``meaning.when: after_answer`` and the call was selected)."""
    return any(r.stage == "meaning" and r.outcome is Outcome.PENDING for r in result.rows)


def to_wire(judgment: Judgment) -> dict[str, Any]:
    """A judgment's wire shape (what :func:`parse_judgment` reads back)."""
    return {
        "call_id": judgment.call_id,
        "response_digest": judgment.response_digest,
        "status": "judged" if judgment.available else "unavailable",
        "conflict": judgment.conflict,
        "reason": judgment.reason,
        "judge": judgment.judge,
        "citations": [{"path": c.path, "quote_sha256": c.quote_sha256} for c in judgment.citations],
    }


def wants_corroboration(result: CallResult) -> bool:
    """True when ``result`` is an empty answer its policy declares a corroborator for and no
    corroboration was handed in yet: the gateway then asks the corroborator and verifies again."""
    policy = result.policy
    if policy is None or policy.empty_result is None or policy.empty_result.corroborator is None:
        return False
    return result.corroboration is None and any(r.stage == "empty_result" for r in result.rows)


def _is_empty(policy: Policy, output: Any) -> bool:
    rule = policy.empty_result
    if rule is None or rule.on_empty != "accept":
        return False
    try:
        found = rule.path.search(output)
    except ExpressionError:  # a path that fails here is not an empty result
        return False
    return isinstance(found, list) and not found


# ----------------------------------------------------------------------------- verify


def verify_call(
    contract: Contract,
    policy: Policy | None,
    request: CallRequest,
    response: ProviderResponse,
    at: datetime,
    *,
    judgment: Judgment | None = None,
    corroboration: Corroboration | None = None,
    judgments: Sequence[Judgment] = (),
    registered_by: str | None = None,
) -> CallResult:
    """Verify one call at time ``at``; never raises for bad *data*, only for unusable inputs.

    ``judgment`` is the meaning check's judgment handed in whole; ``judgments`` are the named
    judges' (each with its ``judge`` key) for a policy that names them (k of n). Whether the
    policy was withdrawn is read at the call's start (``request.at``), ``at`` if it has none.
    ``registered_by`` is the account that registered the policy (None: not known, the policy
    acts as its mode says): an enforcing one that is not the provider's own word
    (:func:`~adjudge.calls.policy.providers_own`) acts as shadow, its verdict recorded,
    nothing refunded or struck on it.

    Raises ``CriteriaError`` (``CALL_INPUT_INVALID``) when the request or the policy names
    another tool than the contract, or ``at`` has no UTC offset.
    """
    if request.tool != contract.tool:
        raise CriteriaError(
            f"The request is for tool {request.tool!r}, but the contract is for {contract.tool!r}.",
            code=_INPUT,
        )
    if at.tzinfo is None:
        raise CriteriaError("The call's time needs a UTC offset.", code=_INPUT)
    if policy is not None and policy.tool != contract.tool:
        raise CriteriaError(
            f"The policy governs tool {policy.tool!r}, not {contract.tool!r}.", code=_INPUT
        )

    def result(
        verdict: CallVerdict | None,
        decided: str,
        effect: Effect,
        rows: list[CheckRow],
        digest: str,
        **extra: Any,
    ) -> CallResult:
        return CallResult(
            call_id=request.call_id,
            provider=request.provider,
            tool=contract.tool,
            at=at,
            policy=policy,
            verdict=verdict,
            decided_by=decided,
            effect=effect,
            rows=tuple(rows),
            response_digest=digest,
            price_minor=request.price_minor,
            currency=request.currency,
            **extra,
        )

    if response.status != "ok":  # (1)
        error = CallError(response.status, response.error_code, response.error_message)
        payment = _ERROR_EFFECTS[response.status]
        effect = Effect(payment, False, False, payment, False)
        return result(None, f"{response.status}: no check ran", effect, [], "", error=error)

    digest = response.digest or digest_of(response.body)
    # Withdrawn by the call's time: its start (the request's), not when its answer is judged;
    # else a provider could withdraw its policy for a moment ahead and answer after it.
    withdrawn = policy is not None and policy.withdrawn(request.at or at)
    shape = map_response(contract, response.body)  # (3)
    if policy is None:  # (2)
        effect = effect_of(CallVerdict.UNVERIFIED, None, withdrawn=False)
        rows = [_shape_row(shape, declared=False)]
        return result(CallVerdict.UNVERIFIED, "no decision policy", effect, rows, digest)

    rows = [_shape_row(shape, declared="schema" in policy.checks)]
    score: tuple[int, int] | None = None
    used: Corroboration | None = None
    verdict, decided = _decide(
        policy,
        request,
        shape,
        rows=rows,
        at=at,
        digest=digest,
        judgment=judgment,
        judgments=judgments,
    )
    if verdict is None:  # (5)
        empty = _empty_row(policy, request, corroboration)
        rows.append(empty)
        rows.extend(_not_run(policy, "the result is empty; the empty-result rule decides"))
        verdict, decided = _empty_verdict(empty)
        used = corroboration
    stage_row = next((r for r in rows if r.stage == "quality_rules"), None)
    if stage_row is not None and stage_row.outcome in (Outcome.PASS, Outcome.FAIL):
        weights = [(r.outcome, r.weight or 0) for r in rows if r.stage == "rule"]
        passed = sum(w for o, w in weights if o is Outcome.PASS)
        applied = passed + sum(w for o, w in weights if o is Outcome.FAIL)
        score = (passed, applied) if applied else None
    policy_verdict = verdict
    if withdrawn:  # (8)
        verdict, decided = CallVerdict.DEGRADED, f"the policy was withdrawn ({decided})"
    # (9) Money moves only on the word of the party it binds: an enforcing policy another
    # account registered over the provider's tool (an admin, before that was refused) is shadow.
    stead = (
        registered_by
        if registered_by is not None
        and policy.mode is not Mode.SHADOW
        and not providers_own(registered_by, request.provider)
        else None
    )
    effect = effect_of(verdict, policy, withdrawn=withdrawn, as_shadow=stead is not None)
    return result(
        verdict,
        decided,
        effect,
        rows,
        digest,
        policy_verdict=policy_verdict,
        score=score,
        corroboration=used,
        needs_review=any(r.stage == "meaning" and r.reason.startswith("split:") for r in rows),
        registered_by=stead,
    )


def _decide(
    policy: Policy,
    request: CallRequest,
    shape: ShapeCheck,
    *,
    rows: list[CheckRow],
    at: datetime,
    digest: str,
    judgment: Judgment | None,
    judgments: Sequence[Judgment] = (),
) -> tuple[CallVerdict | None, str]:
    """Steps (4)-(8) before withdrawal; ``None`` means the empty-result rule decides."""
    if not shape.ok:  # (4)
        if "schema" in policy.checks:
            rows.extend(_not_run(policy, "the response did not have the tool's shape"))
            return apply_clauses(policy, rows)
        if shape.stage == "mapping":
            why = "the response could not be mapped into the tool's shape"
            rows.extend(_not_run(policy, why, unmapped=shape))
            return apply_clauses(policy, rows)
        # A schema failure the policy does not count: recorded above, and nothing more.
    output = shape.output
    if _is_empty(policy, output):
        return None, ""
    if policy.rules:  # (6)
        stage = evaluate_rules(policy.rules, output, request.arguments, at, policy.threshold)
        rows.extend(stage.rows)
        rows.append(_stage_row(stage))
        if stage.outcome is Outcome.MISAPPLIED:
            if "meaning" in policy.checks:
                rows.append(
                    CheckRow(
                        "meaning", "meaning", SEMANTIC, Outcome.NOT_RUN, "the policy is misapplied"
                    )
                )
            return (
                CallVerdict.MISAPPLIED,
                "a rule was misapplied: the policy is wrong, not the provider",
            )
    if "meaning" in policy.checks:  # (7)
        rows.extend(_meaning_rows(policy, request, output, digest, judgment, judgments))
    return apply_clauses(policy, rows)


def judged_here(weight: int | None, contract: Contract, body: Any, size: int) -> bool:
    """Whether an answer (``body``, its bytes and its arguments' in ``size``) may be judged on
    the event loop: within the bound ``weight`` (:func:`judging_weight`), and without a member
    name that would send the compiled validator's failure to the reference to locate."""
    if not in_process(weight, size):
        return False
    if contract.schema is None or not contract.schema.fast_path:
        return True
    return not contract.dotted_output and not dotted_names(body)


def judging_weight(contract: Contract, policy: Policy | None) -> int | None:
    """The steps judging one value of an answer under ``contract`` and ``policy`` costs at
    most, or None when their programs have no such bound (:mod:`adjudge.calls.bounds`)."""
    rules = 0 if policy is None else policy.rules_cost
    return weight(contract.mapping_cost, contract.schema_weight, rules)
