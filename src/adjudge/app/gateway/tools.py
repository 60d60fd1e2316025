"""The gateway's catalog: callable tools registered by their providers, and read by callers.

A provider registers a tool by hand (its endpoint, input schema, contract, price and policy),
from one operation of an OpenAPI document, or from an MCP tool definition; its contract is
registered with it, so decision policies are registered against it as for any tool. A price
change is announced and waits out its notice (:mod:`adjudge.calls.pricing`). A provider that is
not behind the signature middleware gives the gateway the credential to call it with, stored
sealed. Callers list tools and read one before they pay for a call.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from adjudge.app.accounts import need_primary, need_role
from adjudge.app.at_once import AtOnce
from adjudge.app.calls import contract_view, room_for_contract
from adjudge.app.gateway.parsed import judging_policy
from adjudge.app.gateway.views import tool_view
from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.calls import parse_tool, registrable
from adjudge.calls.openapi import mcp_tool_document, openapi_tool_document
from adjudge.calls.pricing import DEFAULT_PRICE_NOTICE, announce
from adjudge.calls.tools import listed
from adjudge.calls.verify import digest_of
from adjudge.errors import BadInput, Conflict, NotAllowed, NotFound, StateError
from adjudge.gateway import ProviderCredential, SecretBox
from adjudge.market.money import LEDGER_CURRENCY
from adjudge.store import Account, Transaction
from adjudge.store import calls as calls_db
from adjudge.store import gateway as db

#: The MCP endpoint's own tools: no provider tool may take these names.
META_TOOLS = frozenset({"search_tools", "get_tool", "call_tool"})
#: The most catalog versions a tool name registers: each registration that changes its
#: document, its price included, is one, kept for good (a call names the version it was made
#: at), so without a bound one provider grew them at will; a change a day is 27 years.
MAX_TOOL_VERSIONS = 10_000


class Tools:
    """The catalog's use cases."""

    def __init__(
        self,
        unit: UnitOfWork,
        *,
        box: SecretBox,
        price_notice: timedelta = DEFAULT_PRICE_NOTICE,
        registering: AtOnce | None = None,
    ) -> None:
        self.unit = unit
        #: Seals providers' credentials at rest.
        self.box = box
        #: How long a price increase waits before calls are charged it (see calls.pricing).
        self.price_notice = price_notice
        #: Each account's registrations being checked (their schemas compiled) at once.
        self.registering = registering or AtOnce()

    def register(
        self, provider: Account, document: Mapping[str, Any], *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """A provider registers a callable tool (``TOOL_INVALID`` and kin for a bad document;
        ``NOT_TOOL_PROVIDER`` when the document names another provider or the name is taken).

        Its contract is registered with it, so decision policies are registered against it as
        for any tool.
        """
        need_role(provider, "provider")
        need_primary(provider, "registers a tool")  # its price, its contract, its endpoint
        registrable(document, "A tool document", "TOOL_INVALID")
        with self.registering.held(
            provider.id, "registrations", code="REGISTRATIONS_AT_ONCE_EXCEEDED"
        ):
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
            owner = calls_db.tool_owner(tx, tool.name)
            if owner is not None and owner != provider.id:
                # The name's first contract says whose rules judge its calls: a tool over
                # another provider's contract would be judged by that provider's policies.
                raise NotAllowed(
                    f"{tool.name} is {owner}'s tool; register yours under another name.",
                    code="NOT_TOOL_PROVIDER",
                )
            found = room_for_contract(tx, provider.id, tool.name, version)
            previous = db.tool(tx, tool.name)
            if (
                previous is not None
                and found is not None
                and previous.digest == digest_of(normalized)
            ):
                # The latest version again (a deploy that registers its tools each time): no
                # new version, which would count against the bound and announce nothing new.
                view = tool_view(previous, now, judging_policy(tx, previous, tool, now))
                view["contract"] = contract_view(found)
                return view
            if previous is not None and previous.version >= MAX_TOOL_VERSIONS:
                raise StateError(
                    f"A tool registers at most {MAX_TOOL_VERSIONS} versions; {tool.name} has "
                    "them all: register the changed tool under a new name.",
                    code="TOOL_VERSION_LIMIT_REACHED",
                )
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
            view = tool_view(stored, now, judging_policy(tx, stored, tool, now))
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
        return self.register(provider, made, key=key)

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
        return self.register(provider, made, key=key)

    def search(
        self, *, query: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> dict[str, Any]:
        """Callable tools by name, a page at a time (``next_cursor``)."""

        def run(tx: Transaction) -> dict[str, Any]:
            now = self.unit.now()
            page = db.list_tools(tx, query=query, limit=limit, cursor=cursor)
            parsed = [(t, listed(t.document)) for t in page.items]  # nothing compiled
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
                    tool,
                )
                for t, tool in parsed
            ]
            return {"tools": views, "next_cursor": page.next_cursor}

        return self.unit.read(run)

    def get(self, name: str, viewer: Account | None = None) -> dict[str, Any]:
        """One callable tool (``TOOL_NOT_FOUND``): the listed view, and how it is called and
        judged — its endpoint, input schema and contract (mapping and output schema), and the
        document of the policy that would judge a call starting now (its rules, clauses and
        threshold, whose digest ``judged_by`` names), which a caller reads before paying for a
        call and a listing leaves out.

        Where the provider lives (``base_url``, ``authority``) is for the tool's provider and
        admins only: a caller learns how its arguments are sent, not an address it could call
        around the gateway or probe."""

        def run(tx: Transaction) -> dict[str, Any]:
            stored = db.tool(tx, name)
            if stored is None:
                raise NotFound(f"No tool {name} can be called here.", code="TOOL_NOT_FOUND")
            # Its stored document is what parse_tool checked and normalized at registration:
            # read as it is, never compiled (a reader walking a provider's tools compiled each,
            # 0.3 s of CPU at the bound, and pushed the tools being called out of the cache).
            document = stored.document
            shown = listed(document)
            ref = shown.policy
            now = self.unit.now()
            judge = None
            if ref is not None:
                judge = calls_db.policy(tx, stored.name, ref.id, ref.version, at=now)
            view = tool_view(stored, now, judge, shown)
            for part in ("endpoint", "input_schema", "contract"):
                view[part] = document[part]
            view["policy_document"] = None if judge is None else judge.document
            party = viewer is not None and (viewer.id == stored.provider or "admin" in viewer.roles)
            if not party:
                view["endpoint"] = {
                    k: v for k, v in view["endpoint"].items() if k not in ("base_url", "authority")
                }
            return view

        return self.unit.read(run)

    def set_credential(
        self, provider: Account, header: str, secret: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """A provider not behind the signature middleware gives the gateway the credential to
        call it with; it is stored sealed and no API ever returns it."""
        need_role(provider, "provider")
        need_primary(provider, "sets the credential calls are sent with")
        credential = ProviderCredential(header, secret)
        sealed = credential.seal(self.box, provider=provider.id)
        idem = Idempotency.of(
            key, "gateway.set_credential", {"header": header, "secret": digest_of(secret)}
        )

        def run(tx: Transaction) -> dict[str, Any]:
            db.set_credential(tx, provider.id, credential.header, sealed, self.unit.now())
            return {"provider": provider.id, "header": credential.header, "secret": "set"}

        return self.unit.once(provider.id, idem, run)
