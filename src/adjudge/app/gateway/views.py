"""What the gateway's use cases answer: a callable tool as listed, the policy that judges it, a
forwarded call with its money as it stands, and a call's answer (what a retry replays).

These are plain JSON data built from what one transaction read; amounts are decimal strings of
minor units with their asset and decimals, as the client reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from adjudge.calls.policy import Mode, providers_own
from adjudge.calls.tools import DECIMALS, Listed, listed
from adjudge.calls.verify import CallResult
from adjudge.market.money import LEDGER_CURRENCY
from adjudge.store import calls as calls_db
from adjudge.store import gateway as db
from adjudge.store import holds as holds_db


def money(amount: int, currency: str) -> dict[str, Any]:
    """An amount as the client reads it: decimal minor units, the asset, its decimals."""
    return {"amount": str(amount), "asset": currency, "decimals": DECIMALS.get(currency, 0)}


def tool_view(
    stored: db.StoredTool,
    now: datetime,
    judged_by: calls_db.StoredPolicy | None = None,
    shown: Listed | None = None,
) -> dict[str, Any]:
    """A callable tool as listed: its MCP definition, provider, the price a call starting now
    is charged (and an announced increase with its date), and which policy version would judge
    a call starting now — what a caller reads before paying. Read from the stored document,
    never compiled (:func:`adjudge.calls.tools.listed`): a listing's page costs its documents'
    size, not their schemas' compiling (``shown``: that reading, where the caller made it
    already to find the judging policy)."""
    tool = shown or listed(stored.document)
    price = stored.listed
    pending = price.pending(now)
    return {
        "name": stored.name,
        "version": stored.version,
        "provider": stored.provider,
        "description": tool.description,
        "price": money(price.at(now), stored.currency),
        "pending_price": None
        if pending is None
        else money(pending[0], stored.currency) | {"from": pending[1].isoformat()},
        "policy": None if tool.policy is None else tool.policy.to_dict(),
        "judged_by": None if judged_by is None else judge_view(judged_by, stored.provider),
        "refunded_output": tool.refunded_output,
        "registered_at": stored.registered_at.isoformat(),
        "definition": tool.definition,
        "digest": stored.digest,
    }


def judge_view(p: calls_db.StoredPolicy, provider: str) -> dict[str, Any]:
    """The policy version that judges a tool's calls: its id, version, digest, mode, report
    window and withdrawal (a caller sees what it agrees to before it pays). A policy
    ``provider`` did not register itself (:func:`adjudge.calls.policy.providers_own`) moves
    none of its money: an enforcing one says it acts as shadow (``acts_as``, with who
    registered it), and its corroborator is not shown, as it corroborates nothing."""
    document = p.document
    mode = str(document.get("mode", "enforce"))
    own = providers_own(p.registered_by, provider)
    shown = {
        "id": p.policy_id,
        "version": p.version,
        "digest": p.digest,
        "mode": mode,
    }
    if not own and mode != Mode.SHADOW:
        shown |= {"acts_as": Mode.SHADOW.value, "registered_by": p.registered_by}
    return shown | {
        "report_window_hours": int(document.get("report_window_hours", 72)),
        "withdrawn_at": document.get("withdrawn_at"),
        "registered_at": p.registered_at.isoformat(),
        "corroboration": corroboration_view(document) if own else None,
        "judges": judges_view(document, keys_heeded=own),
    }


def judges_view(document: Mapping[str, Any], *, keys_heeded: bool = True) -> dict[str, Any] | None:
    """A policy's meaning judges as a caller reads them: their keys, the quorum (k of n), the
    share of calls sampled, and when they judge (before the call settles, or after the answer).
    Verifier keys named by a policy the provider did not register are never asked
    (:func:`adjudge.calls.policy.providers_own`): they are listed apart, as ``not_asked``."""
    meaning = document.get("meaning")
    if not isinstance(meaning, Mapping) or not meaning.get("judges"):
        return None
    judges = list(meaning["judges"])
    unheeded = [] if keys_heeded else [j for j in judges if str(j).startswith("key:")]
    shown: dict[str, Any] = {"not_asked": unheeded} if unheeded else {}
    return shown | {
        "keys": [j for j in judges if j not in unheeded],
        "quorum": int(meaning.get("quorum", 1)),
        "sample_rate": str(meaning.get("sample_rate")),
        "when": "after the answer" if meaning.get("when") == "after_answer" else "before settling",
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


def call_answer(
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
