"""One answer judged from the documents that judge it: the work a judging process is sent
(and a call's arguments checked against its tool's input schema, the same way).

The gateway judges an answer whose programs have no bound on their work
(:mod:`adjudge.calls.bounds`) in a worker process it can kill. The worker holds nothing of the
service: it is sent the contract and policy documents with the call, rebuilds them (once per
document, as the service does) and runs the same pure functions, so where an answer is judged
never changes how.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from adjudge.calls.contract import Contract, ShapeCheck, map_response, register_contract
from adjudge.calls.kept import Kept
from adjudge.calls.policy import Policy, register_policy
from adjudge.calls.tools import BuiltRequest, Tool, build_request, parse_tool
from adjudge.calls.verify import (
    CallRequest,
    CallResult,
    Corroboration,
    Judgment,
    ProviderResponse,
    digest_of,
    verify_call,
)

__all__ = ["JudgingJob", "built_request", "judge", "judged_with"]

#: The documents a worker keeps parsed (at most 256) before it starts again from none.
_PARSED: Kept[Any] = Kept(256)


@dataclass(frozen=True)
class JudgingJob:
    """One ``verify_call`` (and the mapping the caller is shown), by documents."""

    contract: Mapping[str, Any]
    policy: Mapping[str, Any] | None
    request: CallRequest
    response: ProviderResponse
    at: datetime
    judgment: Judgment | None = None
    corroboration: Corroboration | None = None
    judgments: tuple[Judgment, ...] = ()
    #: The account that registered the policy (``verify_call``'s ``registered_by``).
    registered_by: str | None = None


def judge(job: JudgingJob) -> tuple[CallResult, ShapeCheck | None]:
    """:func:`judged_with` the job's documents, parsed (once per worker).

    The result's ``policy`` is left out (None): the sender holds the same policy, parsed from
    the same document, and puts it back.
    """
    contract = _contract(job.contract)
    policy = None if job.policy is None else _policy(job.policy, job.contract, contract)
    result, shape = judged_with(contract, policy, job)
    return replace(result, policy=None), shape


def judged_with(
    contract: Contract, policy: Policy | None, job: JudgingJob
) -> tuple[CallResult, ShapeCheck | None]:
    """The call's result, and its response mapped and checked (None unless it answered)."""
    result = verify_call(
        contract,
        policy,
        job.request,
        job.response,
        job.at,
        judgment=job.judgment,
        corroboration=job.corroboration,
        judgments=job.judgments,
        registered_by=job.registered_by,
    )
    shape = map_response(contract, job.response.body) if job.response.status == "ok" else None
    return result, shape


def built_request(job: tuple[Mapping[str, Any], Mapping[str, Any]]) -> BuiltRequest:
    """The provider's request for a tool document's call with these arguments, checked against
    its input schema (:func:`adjudge.calls.tools.build_request`; its refusals raise)."""
    document, arguments = job
    key = ("tool", digest_of(dict(document)))
    tool: Tool = _PARSED.get(key, document, lambda: parse_tool(document))
    return build_request(tool, arguments)


def _contract(document: Mapping[str, Any]) -> Contract:
    key = ("contract", digest_of(dict(document)))
    found: Contract = _PARSED.get(key, document, lambda: register_contract(document))
    return found


def _policy(document: Mapping[str, Any], under: Mapping[str, Any], contract: Contract) -> Policy:
    key = ("policy", digest_of(dict(document)), digest_of(dict(under)))
    found: Policy = _PARSED.get(key, document, lambda: register_policy(document, contract))
    return found
