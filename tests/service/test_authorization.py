"""Every door reads the ``Authorization`` header alike: the routes, the finalize lane, the MCP
endpoint and the goassay receipt look-up each take the first such header, the ``Bearer``
scheme in any case and the key after it (trimmed), and nothing else."""

from __future__ import annotations

import json

import pytest

from adjudge.store import Store
from support.harness import Harness, make_harness

PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


@pytest.fixture
def h(sqlite_store: Store) -> Harness:
    return make_harness(sqlite_store)


def _doors(h: Harness, headers: list[tuple[str, str]]) -> dict[str, bool]:
    """Whether each door let the request in (anything but a 401)."""
    mcp = [("content-type", "application/json"), ("accept", "application/json"), *headers]
    answers = {
        "route": h.client.get("/api/v1/accounts/me", headers=headers),
        "finalize lane": h.client.post("/api/v1/tasks/task_none/finalize", headers=headers),
        "mcp": h.client.post("/", content=PING, headers=mcp),
        "receipt look-up": h.client.get("/assay/v1/receipts/no-such-call", headers=headers),
    }
    return {door: r.status_code != 401 for door, r in answers.items()}


@pytest.mark.parametrize(
    ("header", "admitted"),
    [
        (["Bearer {key}"], True),
        (["bearer {key}"], True),
        (["BEARER {key}"], True),
        (["Bearer  {key} "], True),  # the key is what follows the scheme, trimmed
        (["Basic {key}"], False),
        (["{key}"], False),
        (["Bearer"], False),
        (["Bearer {key}", "Bearer adj_not_a_key"], True),  # the first header is the one read
        (["Bearer adj_not_a_key", "Bearer {key}"], False),
    ],
)
def test_every_door_reads_the_authorization_header_alike(
    h: Harness, header: list[str], admitted: bool
) -> None:
    key = h.keys["ann"]
    found = _doors(h, [("authorization", value.format(key=key)) for value in header])
    assert found == dict.fromkeys(found, admitted)
