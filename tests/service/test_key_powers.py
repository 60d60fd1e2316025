"""An extra key does what its budget allows and no more, whatever its account may: it cannot
make, reissue or end keys (its own account's, a new account's, a verifier's), bring money in,
nor send money on its account's word (a review, a ruling);
a key revoked or reissued stops at once in the process that changed it, even for a look-up that
read it just before; and an account id is the whole of its pattern."""

from __future__ import annotations

import threading
import time as real_time
from types import SimpleNamespace
from typing import Any

import pytest

from adjudge.app import accounts as accounts_module
from adjudge.market import seal
from adjudge.receipts import SigningKey
from adjudge.store import Store, records
from support.audit import audit
from support.harness import Harness, make_harness


@pytest.fixture
def h(sqlite_store: Store) -> Harness:
    return make_harness(sqlite_store)


def _extra(h: Harness, owner: str) -> str:
    """An extra key of ``owner``'s with a budget of nothing; its name in the harness."""
    body = {"label": "ci", "max_per_call_minor": 0, "max_per_day_minor": 0}
    h.keys[f"{owner}-extra"] = h.ok(owner, "POST", "/accounts/me/api-keys", body)["api_key"]
    return f"{owner}-extra"


def test_the_account_says_which_extra_key_asks(h: Harness) -> None:
    """``GET /accounts/me`` names the extra key a request came with (null for the account's
    own), so a client offers it nothing the service would refuse it."""
    extra = _extra(h, "pat")
    assert h.ok("pat", "GET", "/accounts/me")["extra_key"] is None
    seen = h.ok(extra, "GET", "/accounts/me")
    assert seen["id"] == "pat" and seen["extra_key"]["label"] == "ci"
    listed = h.ok("pat", "GET", "/accounts/me/api-keys")["keys"]
    assert seen["extra_key"]["id"] == listed[0]["id"]


def test_an_admins_extra_key_mints_no_key_and_brings_no_money(h: Harness) -> None:
    """An admin's extra key cannot reissue its own account's key (which would lock the owner
    out with a key of no budget), create an account (a key of its choosing), or deposit; the
    admin's own key can, and the extra key still does an admin's reading."""
    extra = _extra(h, "root")
    before = h.balance("wallet:bob")
    refusals = [
        h.refused(extra, "POST", "/accounts/root/api-key"),
        h.refused(extra, "POST", "/accounts/bob/api-key"),
        h.refused(extra, "POST", "/accounts", {"id": "shadow", "roles": ["admin"]}),
        h.refused(extra, "POST", "/accounts/bob/deposits", {"amount": "5000000"}),
    ]
    assert refusals == [(403, "PRIMARY_KEY_REQUIRED")] * 4
    assert h.balance("wallet:bob") == before
    assert h.ok("root", "GET", "/accounts/me")["id"] == "root"  # the owner's key still works
    assert h.call(extra, "GET", "/ledger").status_code == 200
    assert h.ok("root", "POST", "/accounts", {"id": "shade", "roles": ["agent"]})["api_key"]


def test_an_extra_key_sends_no_money_on_its_accounts_word(h: Harness) -> None:
    """A poster's extra key cannot review a result (an approval pays the agent from the
    escrow), nor an admin's rule on a disputed task or on a call's report (before, a key whose
    owner gave it a budget of nothing released the escrow); the owners' own keys can, and the
    books hold throughout."""
    poster, admin = _extra(h, "pat"), _extra(h, "root")
    reviewed, disputed = h.post("manual"), h.post("manual")
    for tid in (reviewed, disputed):
        h.ok("bob", "POST", f"/tasks/{tid}/accept")
        h.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": "A summary of the report."})
    h.ok("bob", "POST", f"/tasks/{disputed}/disputes", {"reason": "It is whole."})
    before = h.balance("wallet:bob")
    refusals = [
        h.refused(poster, "POST", f"/tasks/{reviewed}/review", {"passed": True, "reasons": []}),
        h.refused(admin, "POST", f"/tasks/{disputed}/ruling", {"pay_agent": True, "note": "ok"}),
        h.refused(
            admin, "POST", "/calls/call_none/report/ruling", {"upheld": True, "reasons": ["x"]}
        ),
    ]
    assert refusals == [(403, "PRIMARY_KEY_REQUIRED")] * 3
    assert h.balance("wallet:bob") == before
    audit(h.app.store)
    h.ok("pat", "POST", f"/tasks/{reviewed}/review", {"passed": True, "reasons": []})
    h.ok("root", "POST", f"/tasks/{disputed}/ruling", {"pay_agent": True, "note": "ok"})
    assert h.balance("wallet:bob") > before
    audit(h.app.store)


def test_a_posters_extra_key_escalates_nothing_for_the_agent_to_collect(h: Harness) -> None:
    """A sealed task's reveal that does not match, and a reclaim of delivered work after the
    deadline, each escalate the task, and the agent then collects without a ruling: an extra
    key does neither (before, a key with a budget of nothing could, and the escrow went to the
    agent on its word); the poster's own key can."""
    poster = _extra(h, "pat")
    sealed = h.post(
        "auto",
        criteria={"max_length": 400},
        seal=seal.commit({"expected_answer": "42"}, "a-poster-chosen-salt"),
    )
    late = h.post("manual")
    for tid in (sealed, late):
        h.ok("bob", "POST", f"/tasks/{tid}/accept")
        h.ok("bob", "POST", f"/tasks/{tid}/submissions", {"result": "The answer is 42."})
    h.ok("bob", "POST", f"/tasks/{sealed}/finalize")
    wrong = {"criteria": {"expected_answer": "43"}, "salt": "a-poster-chosen-salt"}
    h.later(1)
    refusals = [
        h.refused(poster, "POST", f"/tasks/{sealed}/reveal", wrong),
        h.refused(poster, "POST", f"/tasks/{late}/reclaim"),
    ]
    assert refusals == [(403, "PRIMARY_KEY_REQUIRED")] * 2
    assert h.ok("pat", "GET", f"/tasks/{sealed}")["status"] == "awaiting_verification"
    assert h.ok("pat", "GET", f"/tasks/{late}")["status"] == "submitted"
    assert h.ok("pat", "POST", f"/tasks/{late}/reclaim")["status"] == "escalated"
    audit(h.app.store)


def test_a_verifiers_extra_key_cannot_register_or_revoke_its_signing_keys(h: Harness) -> None:
    """A verifier's signing keys sign verdicts that move money: an extra key neither adds one
    nor revokes one."""
    extra = _extra(h, "vera")
    public = SigningKey.generate().public_key.to_base64()
    assert h.refused(extra, "POST", "/accounts/me/verifier-keys", {"public_key": public}) == (
        403,
        "PRIMARY_KEY_REQUIRED",
    )
    fingerprint = h.ok("vera", "GET", "/accounts/me")["verifier_keys"][0]["fingerprint"]
    assert h.refused(extra, "POST", f"/accounts/me/verifier-keys/{fingerprint}/revoke") == (
        403,
        "PRIMARY_KEY_REQUIRED",
    )


def test_a_key_revoked_while_it_is_looked_up_is_not_remembered(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look-up that read the key before its revocation committed answers that one request,
    but does not remember the key: the next request with it is refused."""
    made = h.ok("ann", "POST", "/accounts/me/api-keys", {"label": "agent"})
    extra, key_id = made["api_key"], made["key"]["id"]
    h.app.accounts.forget_keys("ann")
    read, revoked = threading.Event(), threading.Event()
    real = records.account_by_key

    def slow(tx: Any, api_key: str) -> Any:
        found = real(tx, api_key)
        if api_key == extra and not read.is_set():
            read.set()
            revoked.wait(5)  # the revocation commits meanwhile
        return found

    monkeypatch.setattr(records, "account_by_key", slow)
    looking = threading.Thread(target=h.app.accounts.authenticate, args=(extra,))
    looking.start()
    assert read.wait(5)
    h.ok("ann", "POST", f"/accounts/me/api-keys/{key_id}/revoke")
    revoked.set()
    looking.join(5)
    r = h.client.get("/api/v1/accounts/me", headers={"Authorization": f"Bearer {extra}"})
    assert r.status_code == 401


@pytest.mark.parametrize("account_id", ["bob\n", "bob\r", " bob", "Bob", "b" * 65, ""])
def test_an_account_id_is_its_whole_pattern(h: Harness, account_id: str) -> None:
    """Not "bob" and a line break (which would read as bob in every log and page)."""
    assert h.refused("root", "POST", "/accounts", {"id": account_id, "roles": ["agent"]}) == (
        422,
        "INVALID_REQUEST",
    )


def test_a_key_revoked_between_its_look_up_and_its_remembering_is_not_remembered(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The revocation lands after the look-up read the key and before it is remembered (here:
    inside the clock the remembering reads): the next request with it is refused."""
    made = h.ok("ann", "POST", "/accounts/me/api-keys", {"label": "agent"})
    extra, key_id = made["api_key"], made["key"]["id"]
    owner = h.app.accounts.authenticate(h.keys["ann"])
    h.app.accounts.forget_keys("ann")
    fired: list[int] = []

    def monotonic() -> float:
        if not fired:
            fired.append(1)
            h.app.keys.revoke(owner, key_id)
        return real_time.monotonic()

    monkeypatch.setattr(accounts_module, "time", SimpleNamespace(monotonic=monotonic))
    h.app.accounts.authenticate(extra)  # read before the revocation: answered once
    monkeypatch.setattr(accounts_module, "time", real_time)
    r = h.client.get("/api/v1/accounts/me", headers={"Authorization": f"Bearer {extra}"})
    assert fired and r.status_code == 401


def test_one_accounts_key_change_forgets_only_its_keys(h: Harness) -> None:
    """An account changing its key's limits (or revoking one) makes this process forget that
    account's keys, not every account's (before, one account's cheap change made every other
    account's next request read its key again)."""
    for who in ("ann", "bob", "pat"):
        h.app.accounts.authenticate(h.keys[who])
    made = h.ok("ann", "POST", "/accounts/me/api-keys", {"label": "agent"})
    h.ok("ann", "PATCH", f"/accounts/me/api-keys/{made['key']['id']}", {"max_per_day_minor": 5})
    remembered = {found.id for found, _ in h.app.accounts._keys.values()}
    assert {"bob", "pat"} <= remembered and "ann" not in remembered


def test_a_verifier_registers_a_bounded_number_of_keys(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verifier's keys stay on record when revoked (its verdicts stay verifiable), and its
    view lists them: it registers at most a bound of them (here three, revoked ones counted),
    then ``409 KEY_LIMIT_REACHED``, nothing added (before, any number, and the view grew)."""
    monkeypatch.setattr(accounts_module, "MAX_VERIFIER_KEYS", 3)
    before = len(h.ok("vera", "GET", "/accounts/me")["verifier_keys"])
    for _ in range(3 - before):
        body = {"public_key": SigningKey.generate().public_key.to_base64()}
        h.ok("vera", "POST", "/accounts/me/verifier-keys", body)
    fingerprint = h.ok("vera", "GET", "/accounts/me")["verifier_keys"][0]["fingerprint"]
    h.ok("vera", "POST", f"/accounts/me/verifier-keys/{fingerprint}/revoke")
    body = {"public_key": SigningKey.generate().public_key.to_base64()}
    assert h.refused("vera", "POST", "/accounts/me/verifier-keys", body) == (
        409,
        "KEY_LIMIT_REACHED",
    )
    assert len(h.ok("vera", "GET", "/accounts/me")["verifier_keys"]) == 3
