"""An account holds at most ``MAX_KEYS`` live extra keys, counted without listing them: a revoked
key frees its place, and the listing shows each key's spending today read at once."""

from __future__ import annotations

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
    listed = h.ok("ann", "GET", "/accounts/me/api-keys")["keys"]
    assert len(listed) == MAX_KEYS + 1  # the revoked one is still listed
    assert {k["spent_today_minor"] for k in listed} == {0}
    assert h.ok("bob", "POST", "/accounts/me/api-keys", {"label": "bob's"})  # counted apart
