"""Accounts: who may act, their API keys, verifier keys, deposits.

An API key is shown once, when it is made, and stored only as its digest. A retried creation
with the same Idempotency-Key gets the same answer, key included: the stored answer is sealed
under the Idempotency-Key (:meth:`UnitOfWork.once`), which only the caller holds. Should even
that be lost, an admin issues a new key (:meth:`Accounts.reissue_key`), which ends the old one.

Verifier keys are made and held by the verifier: the service stores public keys only. A
verifier registers a key (which becomes its active key), may register a new one (rotation) and
revoke an old one; receipts name a key's fingerprint, and every key ever registered stays on
record, so old receipts stay verifiable.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterable
from typing import Any

from adjudge.app.maturity import mature_due
from adjudge.app.settlement import deposit
from adjudge.app.unit import Answer, Idempotency, UnitOfWork
from adjudge.app.views import account_view, key_view
from adjudge.errors import BadInput, Error, NotAllowed, NotFound, StateError
from adjudge.receipts import VerifyingKey
from adjudge.store import Account, Transaction, records

#: Roles an account may hold.
ROLES = frozenset({"poster", "agent", "verifier", "admin", "provider"})
#: How long a verified API key is remembered in this process.
AUTH_CACHE_SECONDS = 30.0
_ACCOUNT_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # whole: "$" would pass a last "\n"


def need_role(account: Account, role: str) -> None:
    """Refuse (``ROLE_REQUIRED``) unless ``account`` holds ``role``."""
    if role not in account.roles:
        raise NotAllowed(f"This needs an account with the {role} role.", code="ROLE_REQUIRED")


#: The most keys a verifier registers, revoked ones too: each stays on record (the verdicts
#: signed with it stay verifiable) and in the account's view, which grew without bound.
MAX_VERIFIER_KEYS = 100


def need_primary(who: Account, what: str) -> None:
    """Refuse an extra key what only the account's own key may do: make, reissue or end keys
    (its own account's, a new account's, a verifier's), bring money in (fund tasks, deposit),
    and send money on the account's word (a poster's review, an admin's ruling on a task or a
    report). An extra key carries a budget for calls; with any of these it could give itself,
    or another, more than its owner gave it."""
    if who.key is not None:
        raise NotAllowed(
            f"Only the account's own key {what}; this is the extra key {who.key.id!r}.",
            code="PRIMARY_KEY_REQUIRED",
        )


def new_api_key() -> str:
    """A fresh API key: ``adj_`` and 32 random URL-safe characters."""
    return "adj_" + secrets.token_urlsafe(24)


def public_key_bytes(encoded: str) -> bytes:
    """The raw 32 bytes of a base64 Ed25519 public key (``INVALID_REQUEST`` otherwise)."""
    try:
        return VerifyingKey.from_base64(encoded).raw
    except Error as exc:
        raise BadInput(
            "A verifier public key is standard base64 of a raw 32-byte Ed25519 key.",
            code="INVALID_REQUEST",
        ) from exc


class Accounts:
    """The account use cases."""

    def __init__(self, unit: UnitOfWork) -> None:
        self.unit = unit
        self._keys: dict[str, tuple[Account, float]] = {}
        #: Moves each time the remembered keys are forgotten (a key revoked or reissued).
        self._generation = 0

    def remembered(self, api_key: str | None) -> Account | None:
        """The account of a key :meth:`authenticate` knows without reading the store (seen
        within :data:`AUTH_CACHE_SECONDS`), or None."""
        cached = self._keys.get(api_key) if api_key else None
        return cached[0] if cached is not None and cached[1] > time.monotonic() else None

    def authenticate(self, api_key: str | None) -> Account:
        """The account an API key belongs to; ``UNAUTHORIZED`` otherwise.

        Known keys are remembered for :data:`AUTH_CACHE_SECONDS` (an account's id and roles
        never change; a reissued key ends the old one within that time).
        """
        if api_key:
            cached = self._keys.get(api_key)
            if cached is not None and cached[1] > time.monotonic():
                return cached[0]
            generation = self._generation
            account = self.unit.read(lambda tx: records.account_by_key(tx, api_key))
            if account is not None:
                if len(self._keys) > 10_000:
                    self._keys.clear()
                # Remembered only if no key was revoked or reissued while it was read (the
                # read may have seen the key before that change committed): stored, then taken
                # back if the generation moved, so a change between the two is never missed.
                self._keys[api_key] = (account, time.monotonic() + AUTH_CACHE_SECONDS)
                if generation != self._generation:
                    self._keys.pop(api_key, None)
                return account
        raise NotAllowed(
            "Send a valid API key as 'Authorization: Bearer <key>'.", code="UNAUTHORIZED"
        )

    def create(
        self,
        admin: Account | None,
        account_id: str,
        roles: Iterable[str],
        *,
        opt_in: bool = False,
        verifier_public_key: str | None = None,
        key: str | None = None,
    ) -> Answer[dict[str, Any]]:
        """Create an account (an admin does; ``admin=None`` is the bootstrap of the first one).

        Answers the account and its new API key (``api_key``), shown this once; a replay with
        the same Idempotency-Key answers the same.
        """
        if admin is not None:
            need_role(admin, "admin")
            need_primary(admin, "creates accounts")
        wanted = frozenset(roles)
        if not _ACCOUNT_ID.fullmatch(account_id):
            raise BadInput(
                "An account id is 1-64 lowercase letters, digits, '_' or '-'.",
                code="INVALID_REQUEST",
            )
        if not wanted or not wanted <= ROLES:
            raise BadInput(f"Roles must be some of {sorted(ROLES)}.", code="INVALID_REQUEST")
        if opt_in and "verifier" not in wanted:
            raise BadInput("Only a verifier can take verification jobs.", code="INVALID_REQUEST")
        raw_key = None
        if verifier_public_key is not None:
            if "verifier" not in wanted:
                raise BadInput("Only a verifier registers a verifier key.", code="INVALID_REQUEST")
            raw_key = public_key_bytes(verifier_public_key)
        inputs = {
            "id": account_id,
            "roles": sorted(wanted),
            "opt_in": opt_in,
            "verifier_public_key": verifier_public_key,
        }
        idem = Idempotency.of(key, "accounts.create", inputs)

        def run(tx: Transaction) -> dict[str, Any]:
            api_key = new_api_key()
            now = self.unit.now()
            account = records.create_account(tx, account_id, wanted, api_key, opt_in=opt_in, at=now)
            if raw_key is not None:
                records.add_verifier_key(tx, account_id, raw_key, at=now)
                account = records.account(tx, account_id) or account
            return {"account": account_view(account), "api_key": api_key}

        return self.unit.once(admin.id if admin else "", idem, run, seal=True)

    def reissue_key(
        self, admin: Account, account_id: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """Give an account a new API key (its old one stops working): the way back from a lost
        key. Shown once, like a new account's."""
        need_role(admin, "admin")
        need_primary(admin, "reissues keys")
        idem = Idempotency.of(key, "accounts.reissue_key", {"id": account_id})

        def run(tx: Transaction) -> dict[str, Any]:
            account = records.account(tx, account_id)
            if account is None:
                raise NotFound(f"No account {account_id}.", code="ACCOUNT_NOT_FOUND")
            api_key = new_api_key()
            records.set_api_key(tx, account_id, api_key)
            return {"account": account_view(account), "api_key": api_key}

        answer = self.unit.once(admin.id, idem, run, seal=True)
        self.forget_keys(account_id)
        return answer

    def forget_keys(self, account_id: str) -> None:
        """Forget the keys of ``account_id`` this process verified (a key's limits changed, or
        it was revoked or reissued), and any a read in flight would remember (it began before
        the change). Only that account's: clearing every account's made each one's next
        request read its key again, at one account's word."""
        self._generation += 1
        for api_key, (found, _) in list(self._keys.items()):  # a copy: others add meanwhile
            if found.id == account_id:
                self._keys.pop(api_key, None)

    def me(self, account: Account) -> dict[str, Any]:
        """The caller's account with its balance (what it can spend), what it has held (a
        provider's settled charges until their report deadlines: those past it are paid in
        first, so the balance is never behind the clock), the extra key it asked with (null
        for its own key) and, for a verifier, its keys."""
        if "provider" in account.roles:
            mature_due(self.unit, provider=account.id)

        def run(tx: Transaction) -> dict[str, Any]:
            fresh = records.account(tx, account.id)
            assert fresh is not None
            view = account_view(fresh, tx)
            # Which key asks: an extra key is refused what sends money on the account's word
            # (need_primary), so a client offers it none of that.
            grant = account.key
            view["extra_key"] = None if grant is None else {"id": grant.id, "label": grant.label}
            if "verifier" in fresh.roles:
                view["verifier_keys"] = [key_view(k) for k in records.verifier_keys(tx, fresh.id)]
            return view

        return self.unit.read(run)

    def set_opt_in(
        self, account: Account, opt_in: bool, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """Turn "take verification jobs" on or off for a verifier."""
        need_role(account, "verifier")
        idem = Idempotency.of(key, "accounts.opt_in", {"opt_in": opt_in})

        def run(tx: Transaction) -> dict[str, Any]:
            records.set_opt_in(tx, account.id, opt_in)
            found = records.account(tx, account.id)
            assert found is not None
            return account_view(found)

        return self.unit.once(account.id, idem, run)

    def deposit(
        self, admin: Account, account_id: str, amount: int, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """Credit money from outside into an account's wallet (admins only)."""
        need_role(admin, "admin")
        need_primary(admin, "deposits")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise BadInput("A deposit is a positive whole amount.", code="INVALID_AMOUNT")
        idem = Idempotency.of(key, "accounts.deposit", {"id": account_id, "amount": str(amount)})

        def run(tx: Transaction) -> dict[str, Any]:
            balance = deposit(tx, account_id, amount, at=self.unit.now())
            return {"account": account_id, "balance": str(balance)}

        return self.unit.once(admin.id, idem, run)

    def add_verifier_key(
        self, account: Account, public_key: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """A verifier registers a public key it generated; it becomes its active key.

        Tasks posted earlier keep the key they were posted with (the poster trusted that key):
        keep it until they are judged, then revoke it.
        """
        need_role(account, "verifier")
        need_primary(account, "registers verifier keys")
        raw = public_key_bytes(public_key)
        idem = Idempotency.of(key, "accounts.add_verifier_key", {"public_key": public_key})

        def run(tx: Transaction) -> dict[str, Any]:
            records.lock_account(tx, account.id)  # two processes at once: one passes the cap
            if records.verifier_key_count(tx, account.id) >= MAX_VERIFIER_KEYS:
                raise StateError(
                    f"A verifier registers at most {MAX_VERIFIER_KEYS} keys, revoked ones "
                    "too (they stay on record: the verdicts signed with them stay verifiable).",
                    code="KEY_LIMIT_REACHED",
                )
            return key_view(records.add_verifier_key(tx, account.id, raw, at=self.unit.now()))

        return self.unit.once(account.id, idem, run)

    def revoke_verifier_key(
        self, account: Account, fingerprint: str, *, key: str | None = None
    ) -> Answer[dict[str, Any]]:
        """A verifier revokes one of its keys: no verdict signed with it is accepted from now.

        Receipts that name it stay verifiable: the key stays on record, marked revoked.
        """
        need_role(account, "verifier")
        need_primary(account, "revokes verifier keys")
        idem = Idempotency.of(key, "accounts.revoke_verifier_key", {"key": fingerprint})

        def run(tx: Transaction) -> dict[str, Any]:
            found = records.verifier_key(tx, fingerprint)
            if found is None or found.account_id != account.id:
                raise NotFound(f"You have no key {fingerprint}.", code="KEY_NOT_FOUND")
            if found.revoked_at is None:
                records.revoke_verifier_key(tx, account.id, fingerprint, at=self.unit.now())
            revoked = records.verifier_key(tx, fingerprint)
            assert revoked is not None
            return key_view(revoked)

        return self.unit.once(account.id, idem, run)

    def record(self, account_id: str) -> dict[str, Any]:
        """An account's public record: roles, reputation and dispute count."""

        def run(tx: Transaction) -> dict[str, Any]:
            found = records.account(tx, account_id)
            if found is None:
                raise NotFound(f"No account {account_id}.", code="ACCOUNT_NOT_FOUND")
            return account_view(found)

        return self.unit.read(run)

    def verifiers(self, *, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """Verifier agents that take verification jobs (the only ones agent review accepts),
        by id, a page at a time (``next_cursor`` continues)."""

        def run(tx: Transaction) -> dict[str, Any]:
            page = records.verifiers(tx, limit=limit, cursor=cursor)
            return {
                "verifiers": [account_view(a) for a in page.items],
                "next_cursor": page.next_cursor,
            }

        return self.unit.read(run)

    def exist(self) -> bool:
        """Whether any account exists (a new database has none)."""
        return self.unit.read(records.any_account)
