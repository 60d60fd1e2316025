"""Stored tool and policy documents, parsed once per process, and the policy version that
judges a call.

A stored document is named by its digest, so a parsed copy kept under that digest can never
be stale; each cache is emptied when it passes 1,024 entries or its documents' size
(:class:`adjudge.calls.kept.Kept`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from adjudge.calls import Contract, Policy, Tool, parse_tool, register_policy
from adjudge.calls.kept import Kept
from adjudge.calls.verify import judging_weight
from adjudge.store import Read, Transaction
from adjudge.store import calls as calls_db
from adjudge.store import gateway as db

#: The most parsed documents each cache keeps before it starts again.
CACHED = 1024

_TOOLS: Kept[Tool] = Kept(CACHED)
_POLICIES: Kept[Policy] = Kept(CACHED)
_WEIGHTS: dict[tuple[str, str | None], int | None] = {}


def parsed_tool(stored: db.StoredTool) -> Tool:
    """A stored tool document, parsed once per process (its digest names its bytes)."""
    return _TOOLS.get(stored.digest, stored.document, lambda: parse_tool(stored.document))


def kept_tool(stored: db.StoredTool) -> Tool | None:
    """The stored tool as parsed in this process, or None where it is not kept parsed."""
    return _TOOLS.peek(stored.digest)


def kept_policy(digest: str, tool_digest: str) -> Policy | None:
    """The registered policy as parsed against its tool in this process, or None."""
    return _POLICIES.peek((digest, tool_digest))


def parsed_policy(
    digest: str, tool_digest: str, document: Mapping[str, Any], contract: Contract
) -> Policy:
    """A registered policy, parsed against its tool's contract once per process (the two
    digests name both documents' bytes)."""
    return _POLICIES.get(
        (digest, tool_digest), document, lambda: register_policy(document, contract)
    )


def judging_weight_of(
    tool_digest: str, policy_digest: str | None, contract: Contract, policy: Policy | None
) -> int | None:
    """:func:`adjudge.calls.verify.judging_weight` of a tool and its policy, once per process."""
    key = (tool_digest, policy_digest)
    if key in _WEIGHTS:
        return _WEIGHTS[key]
    if len(_WEIGHTS) > CACHED:
        _WEIGHTS.clear()
    found = _WEIGHTS[key] = judging_weight(contract, policy)
    return found


def judging_policy(
    tx: Transaction, stored: db.StoredTool, tool: Tool, now: datetime
) -> calls_db.StoredPolicy | None:
    """The registered policy version that judges a call of ``tool`` starting at ``now``: the one
    it pins, or its highest registered by then (a later one judges only later calls)."""
    if tool.policy is None:
        return None
    return calls_db.policy(tx, stored.name, tool.policy.id, tool.policy.version, at=now)


def judging_policy_read(stored: db.StoredTool, tool: Tool, now: datetime) -> Read | None:
    """What :func:`judging_policy` reads, if it reads (to read it ahead with others)."""
    if tool.policy is None:
        return None
    return calls_db.policy_read(stored.name, tool.policy.id, tool.policy.version, at=now)
