"""Schemathesis fuzzes every operation of the OpenAPI schema: no request makes a 5xx."""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from adjudge.service import create_app
from adjudge.store import Store
from support.harness import Harness, make_harness


def _harness() -> Harness:
    """One service for the whole fuzz run, with a task in each mode awaiting judgment."""
    store = Store(f"sqlite:///{Path(tempfile.mkdtemp(prefix='adjudge-fuzz-')) / 'fuzz.db'}")
    store.migrate()
    h = make_harness(store)
    for mode in ("auto", "agent", "manual"):
        tid = h.post(mode)
        h.ok("ann", "POST", f"/tasks/{tid}/accept")
        h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "A long enough result."})
    return h


HARNESS = _harness()
schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(HARNESS.app))


@schema.parametrize()
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: schemathesis.Case) -> None:
    """Any generated request, as each role and with no key, is answered without a server error."""
    for who in ("root", "pat", "ann", "vera", None):
        headers = {"Authorization": f"Bearer {HARNESS.keys[who]}"} if who else {}
        case.call_and_validate(headers=headers, checks=[not_a_server_error])
    HARNESS.ledger()
