"""An account's extra API keys, with spending limits: the budget an owner gives each agent.

An account's own key can do all the account may. An owner makes more keys for the agents and
scripts it runs, each optionally limited **per call** and **per UTC day** (what its paid calls
reserve; a refunded or voided call gives its price back to the day). A call past a limit is
refused before anything is reserved or forwarded (``PAYMENT_LIMIT_EXCEEDED``, a payment error
the goassay client raises as one).

An extra key cannot make, limit or revoke keys, and cannot post and fund tasks: those are the
owner's, with the account's own key (``PRIMARY_KEY_REQUIRED``); nor can an admin's create
accounts, reissue keys or deposit, nor a verifier's change its signing keys
(:func:`adjudge.app.accounts.need_primary`). Otherwise it acts as its
account. A key is shown once, when made; the service keeps its digest only. A revoked key stops
at once for paid calls (their limits are read in the transaction that reserves the price) and
within :data:`adjudge.app.accounts.AUTH_CACHE_SECONDS` on other processes for the rest.
"""

from __future__ import annotations

import secrets
from datetime import UTC
from typing import Any

from adjudge.app.accounts import Accounts, need_primary, new_api_key
from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.errors import BadInput, NotFound, StateError
from adjudge.store import Account, Transaction, api_keys, records
from adjudge.store.api_keys import KeyGrant
from adjudge.store.records import key_hash

#: The most extra keys an account may hold at once (revoked ones do not count).
MAX_KEYS = 50
#: The most extra keys an account makes, revoked ones counted: each stays on record with what
#: it spent, so without a bound one account grew the table at will; a key a day is 27 years.
MAX_KEYS_MADE = 10_000
#: The longest label.
MAX_LABEL = 100
#: The most revoked keys a page lists.
MAX_KEY_PAGE = 100
#: The largest limit, in minor units (the ledger's 64-bit columns).
MAX_LIMIT = 2**63 - 1


def key_view(grant: KeyGrant, spent_today: int | None = None) -> dict[str, Any]:
    """An extra key as its owner sees it (never the key itself)."""
    view: dict[str, Any] = {
        "id": grant.id,
        "label": grant.label,
        "max_per_call_minor": grant.max_per_call,
        "max_per_day_minor": grant.max_per_day,
        "created_at": grant.created_at.isoformat(),
        "revoked_at": None if grant.revoked_at is None else grant.revoked_at.isoformat(),
    }
    if spent_today is not None:
        view["spent_today_minor"] = spent_today
    return view


def _limit(value: int | None, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LIMIT:
        raise BadInput(
            f"A key's limit {what} is a whole number of minor units, 0 or more (250000 is 0.25 "
            "USDC), or null for none.",
            code="INVALID_AMOUNT",
        )
    return value


class Keys:
    """The use cases of extra API keys."""

    def __init__(self, unit: UnitOfWork, accounts: Accounts) -> None:
        self.unit = unit
        self.accounts = accounts

    def create(
        self,
        owner: Account,
        label: str,
        *,
        max_per_call: int | None = None,
        max_per_day: int | None = None,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Make an extra key; answers its view and the key (``api_key``), shown this once."""
        need_primary(owner, "makes keys")
        text = label.strip()
        if not 0 < len(text) <= MAX_LABEL or not text.isprintable():
            raise BadInput(
                f"A key's label is 1 to {MAX_LABEL} printable characters.", code="INVALID_REQUEST"
            )
        per_call, per_day = _limit(max_per_call, "per call"), _limit(max_per_day, "per day")
        inputs = {"label": text, "per_call": per_call, "per_day": per_day}
        idem = Idempotency.of(key, "keys.create", inputs)

        def run(tx: Transaction) -> dict[str, Any]:
            records.lock_account(tx, owner.id)  # two processes at once: one passes the cap
            if api_keys.live_count(tx, owner.id) >= MAX_KEYS:
                raise StateError(
                    f"An account holds at most {MAX_KEYS} extra keys; revoke one first.",
                    code="KEY_LIMIT_REACHED",
                )
            if api_keys.made_count(tx, owner.id) >= MAX_KEYS_MADE:
                raise StateError(
                    f"An account makes at most {MAX_KEYS_MADE} extra keys, revoked ones too "
                    "(they stay on record with what they spent); keep using a live key, or "
                    "ask an admin for another account.",
                    code="KEY_LIMIT_REACHED",
                )
            secret = new_api_key()
            grant = KeyGrant(
                id="key_" + secrets.token_hex(8),
                account_id=owner.id,
                label=text,
                max_per_call=per_call,
                max_per_day=per_day,
                created_at=self.unit.now(),
            )
            api_keys.add(tx, grant, key_hash(secret))
            return {"key": key_view(grant, 0), "api_key": secret}

        return self.unit.once(owner.id, idem, run, seal=True)

    def list(
        self, owner: Account, *, revoked: bool = False, cursor: str | None = None, limit: int = 50
    ) -> dict[str, Any]:
        """The account's live extra keys, oldest first (at most :data:`MAX_KEYS`: one answer);
        with ``revoked``, a page of the keys it revoked, newest revoked first. Each with what it
        spent today. Neither reads the keys of the other kind, however many it revoked."""
        need_primary(owner, "lists keys")
        if not 1 <= limit <= MAX_KEY_PAGE:
            raise BadInput(
                f"A page of revoked keys holds 1 to {MAX_KEY_PAGE}.", code="INVALID_REQUEST"
            )

        def run(tx: Transaction) -> dict[str, Any]:
            day = self.unit.now().astimezone(UTC).date().isoformat()
            more = None
            if revoked:
                grants, more = api_keys.revoked(tx, owner.id, cursor=cursor, limit=limit)
            else:
                grants = api_keys.live(tx, owner.id)
            spent = api_keys.spent_by(tx, [g.id for g in grants], day)
            return {"keys": [key_view(g, spent[g.id]) for g in grants], "next_cursor": more}

        return self.unit.read(run)

    def set_limits(
        self,
        owner: Account,
        key_id: str,
        *,
        max_per_call: int | None,
        max_per_day: int | None,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Replace a key's limits (null: none); they hold from the next call."""
        need_primary(owner, "sets limits")
        per_call, per_day = _limit(max_per_call, "per call"), _limit(max_per_day, "per day")
        inputs = {"key": key_id, "per_call": per_call, "per_day": per_day}
        idem = Idempotency.of(key, "keys.set_limits", inputs)

        def run(tx: Transaction) -> dict[str, Any]:
            grant = _own(tx, owner, key_id)
            api_keys.set_limits(tx, key_id, max_per_call=per_call, max_per_day=per_day)
            day = self.unit.now().astimezone(UTC).date().isoformat()
            found = api_keys.get(tx, grant.id)
            assert found is not None
            return key_view(found, api_keys.spent(tx, key_id, day))

        answer = self.unit.once(owner.id, idem, run)
        self.accounts.forget_keys(owner.id)
        return answer

    def revoke(
        self, owner: Account, key_id: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """End a key (revoking one already revoked answers it as it is)."""
        need_primary(owner, "revokes keys")
        idem = Idempotency.of(key, "keys.revoke", {"key": key_id})

        def run(tx: Transaction) -> dict[str, Any]:
            _own(tx, owner, key_id)
            api_keys.revoke(tx, key_id, self.unit.now())
            found = api_keys.get(tx, key_id)
            assert found is not None
            return key_view(found)

        answer = self.unit.once(owner.id, idem, run)
        self.accounts.forget_keys(owner.id)
        return answer


def _own(tx: Transaction, owner: Account, key_id: str) -> KeyGrant:
    grant = api_keys.get(tx, key_id)
    if grant is None or grant.account_id != owner.id:
        raise NotFound(f"You have no key {key_id}.", code="KEY_NOT_FOUND")
    return grant
