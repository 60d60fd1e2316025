"""Corroborating an empty answer: the source its policy declares, asked the same question.

A policy may name a corroborator for empty answers (``empty_result.corroboration``): another
provider's tool, asked through this gateway with the same arguments (or the arguments its
``arguments`` expression makes of them). The corroborating call is an ordinary paid call:

- **who pays**: the policy's provider (``paid_by: provider``), from its own wallet, reserved and
  settled like any call against that call's own signed receipt. The caller of the empty answer
  is charged the listed price it agreed to and nothing more;
- **on the provider's word**: only a policy the provider registered itself spends its money; a
  corroborator declared in a policy someone else registered (an admin, before such a policy was
  refused at registration) is not asked, and the empty answer is DEGRADED, nothing paid;
- **not the caller's**: a corroborator whose provider made the call is not asked (its own tool
  would decide its own call: results it passed would fail the empty answer and refund it);
- **bounded**: at most ``max_price_minor`` a corroboration (the gateway's max-price refusal,
  before anything is reserved or forwarded), at most one per call (its Idempotency-Key is
  ``corroborate <call id>``, with a space no caller's key may hold: the provider, which sees
  the call's id while it answers, cannot spend the key first on a call of its own and so have
  its corroboration refused as unavailable), and never a corroboration of a corroboration;
- **shown before paying**: the declaration is in the policy view a caller reads before calling
  (``judged_by.corroboration``, MCP ``_meta["adjudge/policy"]``).

What it found decides nothing by itself: the pure verifier reads it (``verify_call(...,
corroboration=...)``). A corroborator that could not answer (down, refused, too dear, its payer
short of funds, its own call not settled, or results its own checks did not pass) is
``available: False`` — the empty answer is then DEGRADED, never corroborated by accident and
never failed on no evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from adjudge.app.unit import Answer
from adjudge.calls import Policy
from adjudge.calls.bounds import in_process, plain_selection
from adjudge.calls.contract import ExpressionError
from adjudge.calls.policy import providers_own
from adjudge.calls.verify import Corroboration
from adjudge.errors import Error
from adjudge.json_text import dumps_utf8
from adjudge.store import Account, Transaction, records
from adjudge.store import calls as calls_db
from adjudge.store import gateway as gateway_db

__all__ = ["KEY_PREFIX", "corroborate"]

#: The corroborating call's Idempotency-Key is this prefix and the corroborated call's id: the
#: space puts it where no key a caller sends can be (``Idempotency.of`` refuses spaces).
KEY_PREFIX = "corroborate "

T = TypeVar("T")


class Asker(Protocol):
    """What corroboration needs of the gateway (which calls it, so it is named by what it
    does here, not imported): a paid call made as an account, and a read of the store."""

    async def call_async(
        self,
        caller: Account,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        key: str | None = None,
        max_price: int | None = None,
        corroborating: bool = False,
    ) -> Answer[dict[str, Any]]: ...

    async def read_async(self, fn: Callable[[Transaction], T]) -> T: ...


async def corroborate(
    gateway: Asker,
    *,
    call_id: str,
    provider: str,
    caller: str,
    policy: Policy,
    declared_by: str | None,
    arguments: Mapping[str, Any],
) -> Corroboration:
    """Ask ``policy``'s declared corroborator about the call ``call_id`` of ``provider``, made
    by ``caller``, paid by ``provider``; what it found, or why it could not say. ``declared_by``
    registered the policy: unless it is ``provider``, whose money it would spend, nothing is
    asked."""
    rule = policy.empty_result
    assert rule is not None and rule.corroborator is not None
    spec = rule.corroborator

    def unavailable(reason: str, source: str = spec.tool, **found: str) -> Corroboration:
        return Corroboration(
            source=source, empty=False, reason=reason, tool=spec.tool, available=False, **found
        )

    if not providers_own(declared_by, provider):
        # The provider's money moves only on its own word: not on a policy another account
        # (an operator) registered for its tool, naming a tool and a bound of its choosing.
        return unavailable(
            f"the policy declaring it was registered by {declared_by}, not by the provider "
            f"{provider}, whose wallet would pay for it"
        )
    path = spec.path if spec.path is not None else rule.path
    for expression in (spec.arguments, path):  # a policy registered before they were checked
        if expression is not None and not plain_selection(expression.cost):
            return unavailable(f"its expression {expression.source!r} does more than select")
    if spec.arguments is not None and not in_process(
        spec.arguments.cost[0] if spec.arguments.cost else None, len(dumps_utf8(arguments))
    ):
        return unavailable("the call's arguments are too large to make its arguments from")
    asked: Any = dict(arguments)
    if spec.arguments is not None:
        try:
            asked = spec.arguments.search(asked)
        except ExpressionError as exc:
            return unavailable(f"its arguments could not be made from the call's: {exc}")
        if not isinstance(asked, dict):
            return unavailable("its arguments expression did not make an object")
    payer, source = await gateway.read_async(lambda tx: _parties(tx, provider, spec.tool))
    if payer is None:
        return unavailable(f"the paying provider {provider} has no account")
    if source == caller:
        # Its tool would judge its own call: results its own checks pass would fail the empty
        # answer, refund the caller and strike the provider, who pays the caller's tool besides.
        return unavailable(f"its provider {caller} made the call it would corroborate", caller)
    try:
        answer = await gateway.call_async(
            payer,
            spec.tool,
            asked,
            key=KEY_PREFIX + call_id,
            max_price=spec.max_price_minor,
            corroborating=True,
        )
    except Error as exc:
        return unavailable(f"its call was refused: {exc.code}: {exc.message}")
    got = answer.value
    named = {"call_id": str(got["intentId"]), "receipt_id": str(got.get("receiptId") or "")}
    source = str(got["provider"])
    if got["status"] != "settled":
        return unavailable(
            f"its call was {got['status']} ({got.get('decidedBy')})", source, **named
        )
    digest = await gateway.read_async(lambda tx: _response_digest(tx, named["call_id"]))
    named["response_digest"] = digest
    try:
        found = path.search(got.get("output"))
    except ExpressionError as exc:
        return unavailable(
            f"its answer has no result list at {path.source}: {exc}", source, **named
        )
    if not isinstance(found, list):
        return unavailable(f"its answer has no result list at {path.source}", source, **named)
    if found and got.get("verdict") != "PASS":
        return unavailable(
            f"it found {len(found)} result(s), but its own checks did not pass them "
            f"(verdict {got.get('verdict')})",
            source,
            **named,
        )
    reason = "no results" if not found else f"{len(found)} result(s) that passed its checks"
    return Corroboration(
        source=source, empty=not found, reason=reason, tool=spec.tool, available=True, **named
    )


def _parties(tx: Transaction, provider: str, tool: str) -> tuple[Account | None, str | None]:
    """The paying provider's account, and the corroborator tool's provider (None: no such
    tool)."""
    stored = gateway_db.tool(tx, tool)
    return records.account(tx, provider), None if stored is None else stored.provider


def _response_digest(tx: Transaction, call_id: str) -> str:
    """The corroborating call's response digest, from its stored record."""
    stored = calls_db.call(tx, call_id)
    if stored is None:
        return ""
    return str(stored.record.get("response_digest") or "")
