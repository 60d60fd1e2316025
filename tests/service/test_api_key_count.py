"""An account holds at most ``MAX_KEYS`` live extra keys, counted without listing them: a revoked
key frees its place. The listing shows the live keys, the revoked ones a page at a time, each
with its spending today read at once."""

from __future__ import annotations

import pytest

from adjudge.app import keys as keys_module
from adjudge.app.keys import MAX_KEYS
from adjudge.store import Store
from support.harness import make_harness


def test_the_live_keys_are_counted_and_a_revoked_one_frees_its_place(store: Store) -> None:
    h = make_harness(store)
    made = [
        h.ok("ann", "POST", "/accounts/me/api-keys", {"label": f"k{n}"}) for n in range(MAX_KEYS)
    ]
    assert h.refused("ann", "POST", "/accounts/me/api-keys", {"label": "one more"}) == (
        409,
        "KEY_LIMIT_REACHED",
    )
    first = made[0]["key"]["id"]
    h.ok("ann", "POST", f"/accounts/me/api-keys/{first}/revoke")
    h.ok("ann", "POST", "/accounts/me/api-keys", {"label": "in its place"})
    assert h.refused("ann", "POST", "/accounts/me/api-keys", {"label": "again"})[1] == (
        "KEY_LIMIT_REACHED"
    )
    listed = h.ok("ann", "GET", "/accounts/me/api-keys")
    assert len(listed["keys"]) == MAX_KEYS and listed["next_cursor"] is None
    assert {k["spent_today_minor"] for k in listed["keys"]} == {0}
    assert first not in {k["id"] for k in listed["keys"]}
    gone = h.ok("ann", "GET", "/accounts/me/api-keys?revoked=true")
    assert [k["id"] for k in gone["keys"]] == [first] and gone["next_cursor"] is None
    assert gone["keys"][0]["revoked_at"] is not None
    assert h.ok("bob", "POST", "/accounts/me/api-keys", {"label": "bob's"})  # counted apart


def test_the_revoked_keys_page_newest_revoked_first(store: Store) -> None:
    """Revoked keys come newest revoked first, ``limit`` a page, until ``next_cursor`` is null;
    a limit outside 1-100 or a cursor no listing gave is refused."""
    h = make_harness(store)
    made = [h.ok("ann", "POST", "/accounts/me/api-keys", {"label": f"k{n}"}) for n in range(5)]
    for k in made:
        h.advance(seconds=1)
        h.ok("ann", "POST", f"/accounts/me/api-keys/{k['key']['id']}/revoke")
    seen, cursor = [], None
    while True:
        page = h.ok(
            "ann",
            "GET",
            "/accounts/me/api-keys?revoked=true&limit=2"
            + ("" if cursor is None else f"&cursor={cursor}"),
        )
        assert len(page["keys"]) <= 2
        seen += [k["id"] for k in page["keys"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [k["key"]["id"] for k in reversed(made)]
    assert h.ok("ann", "GET", "/accounts/me/api-keys")["keys"] == []
    for query in ("revoked=true&limit=0", "revoked=true&limit=101", "revoked=maybe"):
        assert h.refused("ann", "GET", f"/accounts/me/api-keys?{query}") == (
            422,
            "INVALID_REQUEST",
        )
    assert h.refused("ann", "GET", "/accounts/me/api-keys?revoked=true&cursor=nope") == (
        400,
        "CURSOR_INVALID",
    )


def test_the_keys_an_account_makes_are_bounded_revoked_ones_counted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revoked key stays on record with what it spent, so an account makes a bounded number
    of keys (here three), revoked ones counted: the next is ``409 KEY_LIMIT_REACHED``, its
    message naming the bound, nothing made, however few are live; a retry of one made answers
    it again; another account is counted apart (before, making and revoking grew the table at
    will)."""
    monkeypatch.setattr(keys_module, "MAX_KEYS_MADE", 3)
    h = make_harness(store)
    first = h.call("ann", "POST", "/accounts/me/api-keys", {"label": "k0"}, Idempotency_Key="k0")
    assert first.status_code == 201
    for n in (1, 2):
        made = h.ok("ann", "POST", "/accounts/me/api-keys", {"label": f"k{n}"})
        h.ok("ann", "POST", f"/accounts/me/api-keys/{made['key']['id']}/revoke")
    refused = h.call("ann", "POST", "/accounts/me/api-keys", {"label": "one more"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "KEY_LIMIT_REACHED")
    assert "at most 3 extra keys, revoked ones too" in refused.json()["error"]["message"]
    again = h.call("ann", "POST", "/accounts/me/api-keys", {"label": "k0"}, Idempotency_Key="k0")
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert len(h.ok("ann", "GET", "/accounts/me/api-keys")["keys"]) == 1
    assert len(h.ok("ann", "GET", "/accounts/me/api-keys?revoked=true")["keys"]) == 2
    assert h.ok("bob", "POST", "/accounts/me/api-keys", {"label": "bob's"})
