"""Paid-call verification (spec 003): contracts, quality rules, policies, verdicts, quality.

Pure: no IO, no clock reads, no randomness. The call's time, a model's meaning judgment and any
corroboration of an empty answer are inputs.

    contract = register_contract(contract_json)
    policy = register_policy(policy_json, contract)
    result = verify_call(contract, policy, parse_request(r), parse_response(resp), at)
    result.verdict, result.effect.payment, result.effect.strike, result.rows
    result.report_deadline          # the caller's filing deadline for a report (policy's window)
    determination = determine_call(result, now=now, response_bytes=stored)   # for a receipt

    tool = parse_tool(tool_json)                         # a provider endpoint + contract + price
    method, url, headers, body = build_request(tool, arguments)   # TOOL_ARGUMENTS_INVALID first
"""

from adjudge.calls.contract import Contract, register_contract
from adjudge.calls.kernel_rows import determine_call, kernel_checks
from adjudge.calls.openapi import (
    import_mcp_tool,
    import_openapi,
    mcp_tool_document,
    openapi_tool_document,
)
from adjudge.calls.outcomes import CheckRow, Outcome
from adjudge.calls.policy import (
    DEFAULT_REPORT_WINDOW,
    POLICY_ID,
    Mode,
    Policy,
    register_policy,
    sampled,
)
from adjudge.calls.quality import (
    PenaltyAssessment,
    PenaltyProposal,
    ProposalStatus,
    QualityTerms,
    QualityWindow,
    TailTest,
    assess_penalty,
    binomial_tail_test,
    binomial_upper_tail,
    observation_of,
    quality_window,
)
from adjudge.calls.rules import Rule, is_valid_url
from adjudge.calls.tools import (
    ArgumentProblem,
    ArgumentsInvalid,
    BuiltRequest,
    PolicyRef,
    Price,
    Tool,
    build_request,
    check_arguments,
    parse_tool,
    registrable,
)
from adjudge.calls.verdicts import EFFECTS, CallVerdict, Effect, Payment
from adjudge.calls.verify import (
    CallRequest,
    CallResult,
    Corroboration,
    Judgment,
    ProviderResponse,
    parse_corroboration,
    parse_judgment,
    parse_request,
    parse_response,
    verify_call,
)

__all__ = [
    "DEFAULT_REPORT_WINDOW",
    "EFFECTS",
    "POLICY_ID",
    "ArgumentProblem",
    "ArgumentsInvalid",
    "BuiltRequest",
    "CallRequest",
    "CallResult",
    "CallVerdict",
    "CheckRow",
    "Contract",
    "Corroboration",
    "Effect",
    "Judgment",
    "Mode",
    "Outcome",
    "Payment",
    "PenaltyAssessment",
    "PenaltyProposal",
    "Policy",
    "PolicyRef",
    "Price",
    "ProposalStatus",
    "ProviderResponse",
    "QualityTerms",
    "QualityWindow",
    "Rule",
    "TailTest",
    "Tool",
    "assess_penalty",
    "binomial_tail_test",
    "binomial_upper_tail",
    "build_request",
    "check_arguments",
    "determine_call",
    "import_mcp_tool",
    "import_openapi",
    "is_valid_url",
    "kernel_checks",
    "mcp_tool_document",
    "observation_of",
    "openapi_tool_document",
    "parse_corroboration",
    "parse_judgment",
    "parse_request",
    "parse_response",
    "parse_tool",
    "quality_window",
    "register_contract",
    "register_policy",
    "registrable",
    "sampled",
    "verify_call",
]
