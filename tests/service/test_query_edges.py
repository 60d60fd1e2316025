"""Every GET operation's query parameters at the edges a random fuzzer rarely reaches — the
calendar's first and last days, offsets that move a time past them, integers past 64 bits, a
NUL — as an admin and as a poster: each answer is a refusal or a page, never a server error."""

from __future__ import annotations

import urllib.parse

from adjudge.store import Store
from support.harness import make_harness

#: Strings at the edges: dates and times, numbers as text, and bytes a parser may choke on.
TEXTS = (
    "9999-12-31",
    "0001-01-01",
    "0001-01-01T00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "9999-12-31T23:59:59.999999",
    "2026-13-01",
    "\x00",
    "-1",
    "NaN",
    "1e400",
    "a" * 39,
)
#: Integers at the edges.
NUMBERS = ("0", "-1", str(2**63), str(2**64), "1e3", "NaN", "")


def test_no_query_at_the_edges_makes_a_server_error(sqlite_store: Store) -> None:
    """Each query parameter of each GET operation alone, at each edge value of its type."""
    h = make_harness(sqlite_store)
    task = h.post("manual")
    spec = h.client.get("/openapi.json").json()
    failures = []
    tried = 0
    for path, ops in spec["paths"].items():
        op = ops.get("get")
        if op is None:
            continue
        url = path.removeprefix("/api/v1")
        params = op.get("parameters", [])
        for p in params:
            if p["in"] == "path":
                url = url.replace("{" + p["name"] + "}", task if "task" in p["name"] else "x")
        for p in (p for p in params if p["in"] == "query"):
            schema = p.get("schema", {})
            kind = schema.get("type") or next(
                (s.get("type") for s in schema.get("anyOf", []) if s.get("type") != "null"), None
            )
            for value in NUMBERS if kind == "integer" else TEXTS:
                query = urllib.parse.urlencode({p["name"]: value})
                for who in ("root", "pat"):
                    tried += 1
                    status = h.call(who, "GET", f"{url}?{query}").status_code
                    if status >= 500:
                        failures.append((url, p["name"], value, who, status))
    assert tried > 500, tried  # the operations' parameters were found
    assert failures == []


def test_every_integer_a_route_takes_in_its_path_or_query_is_bounded(sqlite_store: Store) -> None:
    """An integer past the database's 64 bits never reaches a handler: each integer path or
    query parameter of each operation declares its bounds in the schema, and the review route's
    attempt (once unbounded) refuses one past them with the request's own error."""
    h = make_harness(sqlite_store)
    spec = h.client.get("/openapi.json").json()
    unbounded = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            for p in op.get("parameters", []):
                schema = p.get("schema", {})
                kinds = [schema, *schema.get("anyOf", [])]
                if any(k.get("type") == "integer" for k in kinds) and not any(
                    "maximum" in k for k in kinds
                ):
                    unbounded.append((method, path, p["name"]))
    assert unbounded == []
    task = h.post("manual")
    r = h.call("vera", "POST", f"/reviews/{task}/{2**80}/failed", {"error": "timed out"})
    assert (r.status_code, r.json()["error"]["code"]) == (422, "INVALID_REQUEST")
