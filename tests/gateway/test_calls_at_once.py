"""A caller's paid calls in flight at once are bounded in a process (``max_per_caller``): one
past the bound is refused before anything is reserved or forwarded (``429
CALLS_AT_ONCE_EXCEEDED``, retry in a second), so one caller whose calls a provider answers
slowly (or never, refunded every time) cannot hold every place of the forwarder's pool that
the provider's other callers, or every provider's, need."""

from __future__ import annotations

import threading
import time
from typing import Any

from adjudge.store import Store, ledger
from support.audit import audit
from support.harness import FUNDS
from support.weather import PRICE, weather_world


def _seen(count: int, script: Any) -> None:
    deadline = time.monotonic() + 5
    while len(script.seen) < count:
        assert time.monotonic() < deadline, script.seen
        time.sleep(0.01)


def test_a_callers_calls_past_its_bound_are_refused_and_others_served(store: Store) -> None:
    """With a bound of one: ann's call waits on a slow provider; her second at once is
    refused with its code and Retry-After, reserving nothing and never reaching the provider;
    bob's call at the same moment is forwarded; once hers ends (the provider too slow:
    voided and refunded), her next call is served. The books end where they began for her."""
    with weather_world(store, timeout=1.0, max_per_caller=1) as w:
        w.script.answer = "slow"
        first: list[Any] = []
        waiting = threading.Thread(target=lambda: first.append(w.call({"city": "berlin"})))
        waiting.start()
        try:
            _seen(1, w.script)
            refused = w.call({"city": "paris"})
            assert refused.status_code == 429, refused.text
            assert refused.json()["error"]["code"] == "CALLS_AT_ONCE_EXCEEDED"
            assert refused.headers["retry-after"] == "1"
            others: list[Any] = []
            bob = threading.Thread(
                target=lambda: others.append(w.call({"city": "rome"}, who="bob"))
            )
            bob.start()
            _seen(2, w.script)  # bob's reached the provider while ann's still waited
            assert [s["city"] for s in w.script.seen] == ["berlin", "rome"]
        finally:
            waiting.join()
        bob.join()
        assert first[0].status_code == 200 and first[0].json()["status"] == "refunded"
        w.script.answer = "good"
        again = w.call({"city": "paris"})
        assert again.status_code == 200 and again.json()["status"] == "settled", again.text
        assert len(w.script.seen) == 3
    audit(store)
    with store.read() as tx:
        assert FUNDS - ledger.balance(tx, "wallet:ann") == PRICE  # the one settled call
