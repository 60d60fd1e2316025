"""Every error code adjudge answers with, declared once: its kind, its HTTP status, its meaning.

The one list of codes. The service answers a refusal with the status written here
(:func:`status`), the client raises the kind written here (:mod:`adjudge.client`), and the error
table in ``docs/errors.md`` is generated from it (``scripts/gen_error_table.py``).
``tests/test_error_codes.py`` reads the source and fails when a code is raised but not declared
here, declared but never raised, or raised as a class of another kind than the one written here.

A new code is one line in its kind's group, in alphabetical order: the code, its kind (a class of
:mod:`adjudge.errors`), the status the service answers with, and one sentence saying what it means
(the raise site's own message says the particulars). The status is the code's own: most codes of a
kind share one, and some do not (a receipt that does not verify is 400, a verdict signature that
does not verify is 403, as the spec says).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from adjudge.errors import (
    BadInput,
    Conflict,
    Error,
    InternalError,
    NotAllowed,
    NotFound,
    StateError,
    Unavailable,
    VerificationFailed,
    kind_of,
)


@dataclass(frozen=True)
class Code:
    """One error code: its name, its kind, the HTTP status it is answered with, what it means."""

    name: str
    kind: type[Error]
    status: int
    meaning: str


#: What a code the registry does not hold is answered with: its class's kind decides (a code
#: missing here is a bug the tests catch, so this is the fallback, not a second table).
KIND_STATUS: Mapping[type[Error], int] = MappingProxyType(
    {
        BadInput: 400,
        NotAllowed: 403,
        NotFound: 404,
        Conflict: 409,
        StateError: 409,
        VerificationFailed: 400,
        Unavailable: 503,
        InternalError: 500,
    }
)

#: Codes the service writes itself, never raised as an :class:`Error`: a body that does not fit
#: the schema, an unknown route, a wrong method, a body too large, a crash, a body not I-JSON.
SERVICE_CODES = frozenset(
    {
        "INVALID_REQUEST",
        "NOT_FOUND",
        "METHOD_NOT_ALLOWED",
        "PAYLOAD_TOO_LARGE",
        "CONTENT_ENCODING_UNSUPPORTED",
        "HEADERS_TOO_LARGE",
        "REQUEST_TIMEOUT",
        "CONNECTIONS_AT_ONCE_EXCEEDED",
        "INTERNAL_ERROR",
        "INVALID_JSON",
    }
)

# One line per code, so a new one is a one-line change that merges cleanly.
# fmt: off
_TABLE = (
    # --- BadInput: the request cannot be used as sent; fix it and send again
    Code("ABOUT_INVALID", BadInput, 400, "A receipt's subject name is empty, too long, padded or holds a control character."),
    Code("AMOUNT_AMBIGUOUS", BadInput, 400, "A whole number typed without a currency is large enough to be minor units as well as units: say which."),
    Code("AMOUNT_TOO_PRECISE", BadInput, 400, "An amount has more decimals than its currency: it is refused, never rounded."),
    Code("AUTO_CRITERIA_REQUIRED", BadInput, 400, "An auto task's criteria hold no real check."),
    Code("BRIEF_REQUIRED", BadInput, 400, "An agent-review task needs a brief for its verdict to quote."),
    Code("BUNDLE_UNUSABLE", BadInput, 400, "A replay bundle that cannot be read: not a zip, no manifest, a missing or broken file."),
    Code("CALL_INPUT_INVALID", BadInput, 400, "A paid call's record has a field the store cannot hold (too long, a NUL, a bad time), or a reported call's request names the sampling seed the service draws."),
    Code("CALL_LOG_INVALID", BadInput, 400, "A line of a call log is not a JSON call record."),
    Code("CALL_NOT_JUDGEABLE", BadInput, 422, "The reported answer could not be judged within the service's bounds of time and memory; nothing was recorded."),
    Code("CALL_NO_RESPONSE", BadInput, 400, "The call ended without a response, so there is nothing to determine or sign."),
    Code("CALL_PROVIDER_MISMATCH", BadInput, 400, "The call names a provider other than the tool's."),
    Code("CALL_ROW_INVALID", BadInput, 400, "A call check names an authority a call check cannot have."),
    Code("CAPTURE_KEY_INVALID", BadInput, 400, "A baseline capture key is shorter than 32 bytes."),
    Code("CHECKPOINT_REQUIRED", BadInput, 400, "A log on several lanes is exported through a checkpoint of it (through=)."),
    Code("CHECK_INVALID", BadInput, 400, "A kernel check (or a determination's checks) is not of the kernel's types."),
    Code("CONFIG_FILE_INVALID", BadInput, 400, "A settings file is not TOML, names what is no setting, or gives a setting a table or a list."),
    Code("CONTENT_ENCODING_UNSUPPORTED", BadInput, 415, "A request body was sent compressed (a Content-Encoding); send it as it is."),
    Code("CONTRACT_INVALID", BadInput, 400, "A tool contract is not one: a missing or malformed field."),
    Code("CONTRACT_MAPPING_INVALID", BadInput, 400, "A contract's response mapping is not a valid JMESPath mapping."),
    Code("CONTRACT_SCHEMA_INVALID", BadInput, 400, "A contract's output schema is not usable JSON Schema 2020-12."),
    Code("CREDENTIAL_INVALID", BadInput, 400, "A provider credential names a header it may not set."),
    Code("CRITERIA_INVALID", BadInput, 400, "A criteria field has the wrong type or shape."),
    Code("CRITERIA_OVER_LIMIT", BadInput, 400, "The criteria are over the size limit."),
    Code("CRITERIA_UNFALSIFIABLE", BadInput, 400, "The criteria could never fail, so they check nothing."),
    Code("CRITERIA_UNKNOWN_FIELD", BadInput, 400, "A criteria field the auto check does not know (it would check nothing)."),
    Code("CURSOR_INVALID", BadInput, 400, "A listing's cursor is not one a listing gave."),
    Code("DETERMINATION_INVALID", BadInput, 400, "A kernel determination is built from values of the wrong types."),
    Code("DIGEST_INVALID", BadInput, 400, "A digest is not sha256:<64 lowercase hex>."),
    Code("EVIDENCE_INVALID", BadInput, 400, "Evidence names no sha256 digest."),
    Code("EVIDENCE_NOT_ADMITTED", BadInput, 400, "Evidence was built by hand instead of admitted (its independence unassessed)."),
    Code("EXPRESSION_INVALID", BadInput, 400, "An observable or its expression is not a string the kernel can bind."),
    Code("FILE_UNREADABLE", BadInput, 400, "A file named on the command line (or as the settings file) cannot be read, is not a regular file, is past the size a command reads, or names standard input a second time."),
    Code("FILE_UNWRITABLE", BadInput, 400, "A file named on the command line cannot be written."),
    Code("HEADERS_TOO_LARGE", BadInput, 431, "A request's line and headers are over the size limit; the connection is closed."),
    Code("INDEPENDENCE_NOT_ASSESSED", BadInput, 400, "Independence was given as a label instead of assessed from structure."),
    Code("INPUT_UNREADABLE", BadInput, 400, "An input file cannot be read or parsed."),
    Code("INVALID_AMOUNT", BadInput, 400, "An amount is not a positive whole number of minor units (or, typed, not a number in its currency)."),
    Code("INVALID_BRIEF", BadInput, 400, "A brief is not text within the length limit."),
    Code("INVALID_CRITERIA", BadInput, 400, "Criteria (or a contract, a policy, a check) that cannot be used as given."),
    Code("INVALID_DEADLINE", BadInput, 400, "A task's deadline is missing, doubled or out of range."),
    Code("INVALID_FEE", BadInput, 400, "The fee is outside 0 to the most the service allows."),
    Code("INVALID_IDEMPOTENCY_KEY", BadInput, 400, "An Idempotency-Key is not 1-255 printable ASCII characters."),
    Code("INVALID_JSON", BadInput, 400, "A body or file is not JSON, or a request body not I-JSON (RFC 7493)."),
    Code("INVALID_LINE", BadInput, 400, "A line of a batch is not an object with a result and criteria."),
    Code("INVALID_REASON", BadInput, 400, "A reason is blank, too long or holds a NUL."),
    Code("INVALID_REQUEST", BadInput, 422, "The request does not fit the operation's schema."),
    Code("INVALID_RESULT", BadInput, 400, "A result is neither a string nor a JSON object."),
    Code("INVALID_REWARD", BadInput, 400, "A reward is not a positive whole number of minor units."),
    Code("INVALID_SETTING", BadInput, 400, "A setting's value (a flag, an ADJUDGE_* variable, a settings file's entry) is not of its type or out of its range."),
    Code("INVALID_STATUS", BadInput, 400, "A status filter names no status."),
    Code("INVALID_TAKE_LIMIT", BadInput, 400, "The take limit is out of its range."),
    Code("INVALID_TAKE_WINDOW", BadInput, 400, "A take window is not a whole number of hours in range."),
    Code("INVALID_TEXT", BadInput, 400, "A result or batch file is not UTF-8 text."),
    Code("INVALID_TRANSFER", BadInput, 400, "A transfer names the same account twice."),
    Code("JUDGMENT_INVALID", BadInput, 400, "A judgment (its citations, its quotes) is not of the kernel's types."),
    Code("KEYRING_EMPTY", BadInput, 400, "The gateway's key ring holds no key that signs now: rotate one in."),
    Code("KEYRING_ERROR", BadInput, 400, "The key ring cannot do what was asked."),
    Code("KEYRING_KID_INVALID", BadInput, 400, "A key id is not 1-128 printable characters."),
    Code("KEYRING_KID_TAKEN", BadInput, 400, "The key ring already holds a key with that id."),
    Code("KEYRING_KID_UNKNOWN", BadInput, 400, "The key ring holds no key with that id."),
    Code("KEYRING_LEAD_INVALID", BadInput, 400, "A rotation's lead time is negative."),
    Code("KEYRING_TIME_NAIVE", BadInput, 400, "A key time has no time zone."),
    Code("KEYRING_UNREADABLE", BadInput, 400, "The key ring file is damaged."),
    Code("KEY_FILE_IS_DIRECTORY", BadInput, 400, "A key file named is a directory."),
    Code("KEY_FILE_UNPROTECTED", BadInput, 400, "A private key file is readable by others than its owner."),
    Code("KEY_INVALID", BadInput, 400, "A key is not an Ed25519 key (or a fingerprint of one) in a form adjudge reads."),
    Code("KEY_WRITE_FAILED", BadInput, 400, "A key file cannot be made where it was asked for."),
    Code("LEASE_TOKEN_REQUIRED", BadInput, 400, "A review failure report names no lease (the lease_token of its claimed job)."),
    Code("MCP_TOOL_INVALID", BadInput, 400, "An MCP tool definition is not one adjudge can import."),
    Code("MEANING_KEY_JUDGE_NEEDS_AFTER_ANSWER", BadInput, 400, "A policy names a verifier key as a meaning judge but judges before settling; a key judges only after the answer."),
    Code("METHOD_NOT_ALLOWED", BadInput, 405, "The route exists; the method does not."),
    Code("MISMATCH_ORACLE_ONLY", BadInput, 400, "A MISMATCH was authored outside the oracle seam, which alone can mint one."),
    Code("OPENAPI_INVALID", BadInput, 400, "An OpenAPI document is not valid."),
    Code("OPENAPI_OPERATION_UNKNOWN", BadInput, 400, "The OpenAPI document has no such operation, or several and none named."),
    Code("OPENAPI_UNSUPPORTED", BadInput, 400, "An OpenAPI document uses something a tool contract cannot express."),
    Code("ORACLE_RECORD_REQUIRED", BadInput, 400, "The oracle seam was handed something other than the verifying side's own record."),
    Code("PAYLOAD_TOO_LARGE", BadInput, 413, "The request body is over the size limit; nothing was read."),
    Code("PAYMENT_MAX_INVALID", BadInput, 400, "The most a caller accepts to pay is not a price of the ledger's currency."),
    Code("PAYMENT_VOUCHER_UNSUPPORTED", BadInput, 400, "A payment voucher was sent; calls here are paid from the prepaid balance."),
    Code("PENDING_EXPIRY_INVALID", BadInput, 400, "A PENDING check expires into a verdict it cannot expire into."),
    Code("POLICY_CLAUSE_INVALID", BadInput, 400, "A decision policy's clause is not one."),
    Code("POLICY_CORROBORATOR_INVALID", BadInput, 400, "A policy's declared corroborator is not another provider's callable tool."),
    Code("POLICY_DECISION_INVALID", BadInput, 400, "A policy decision is not an object of strings."),
    Code("POLICY_INVALID", BadInput, 400, "A decision policy is not one: a missing or malformed field."),
    Code("POLICY_RULE_INVALID", BadInput, 400, "A quality rule is not one."),
    Code("PRICE_CURRENCY_UNSUPPORTED", BadInput, 400, "A tool is priced in a currency the ledger does not hold."),
    Code("QUALITY_TERMS_INVALID", BadInput, 400, "A provider's declared quality terms are out of range."),
    Code("QUORUM_INVALID", BadInput, 400, "A task's quorum is not a whole number from 1 to the number of its verifiers."),
    Code("RECEIPT_UNSIGNABLE", BadInput, 400, "A value cannot be signed: not plain JSON, or a sequence past I-JSON's integers."),
    Code("RECORD_INVALID", BadInput, 400, "An oracle record does not hold bytes."),
    Code("REGEX_PATTERN_INVALID", BadInput, 400, "A regex_pattern is not a JavaScript regular expression."),
    Code("REGEX_PATTERN_TIMEOUT", BadInput, 400, "A regex_pattern's match passed the time limit and was stopped."),
    Code("REGEX_PATTERN_UNUSABLE", BadInput, 400, "A regex_pattern is too long or can take exponential time."),
    Code("REQUEST_TIMEOUT", BadInput, 408, "A request's line and headers, or its body, did not arrive in time; the connection is closed."),
    Code("RESULT_TOO_LARGE", BadInput, 400, "A result is over the size limit."),
    Code("REVIEW_INVALID", BadInput, 400, "A review (a verdict with its reasons and quotes) is not usable."),
    Code("SEAL_INVALID", BadInput, 400, "A seal is a sha256 commitment, on an auto task whose public criteria do not carry the sealed field."),
    Code("SEAL_REVEAL_INVALID", BadInput, 400, "A reveal is an object of exactly criteria (an object) and salt (a string), in plain JSON."),
    Code("SECRET_KEY_INVALID", BadInput, 400, "A server key (or the server key file) is not base64url of 32 bytes."),
    Code("SERVER_KEY_BURNT", BadInput, 400, "The server key that seals is the published demo key."),
    Code("SIGNING_INVALID", BadInput, 400, "A provider request cannot be signed as asked."),
    Code("SIGN_NEEDS_RECEIPT", BadInput, 400, "Signing a call needs the receipt options given together."),
    Code("TIME_INVALID", BadInput, 400, "A time is not time-zone-aware."),
    Code("TOOL_ARGUMENTS_INVALID", BadInput, 400, "A call's arguments do not fit the tool's input schema; nothing was charged."),
    Code("TOOL_ARGUMENTS_NOT_CHECKED", BadInput, 422, "The arguments could not be checked against the tool's input schema within the service's bounds of time and memory; nothing was charged."),
    Code("TOOL_ENDPOINT_INVALID", BadInput, 400, "A tool's endpoint (base URL, method, path, argument placement) is not one."),
    Code("TOOL_INPUT_SCHEMA_INVALID", BadInput, 400, "A tool's input schema is not an object schema of JSON Schema 2020-12."),
    Code("TOOL_INVALID", BadInput, 400, "A tool definition is not one: a missing or malformed field."),
    Code("TOOL_NAME_RESERVED", BadInput, 400, "A tool is named like one of the MCP endpoint's own tools."),
    Code("TOO_MANY_REASONS", BadInput, 400, "A ruling or verdict gives too many reasons (or none)."),
    Code("TRUST_POLICY_INVALID", BadInput, 400, "A trust policy is not of the kernel's types."),
    Code("VERDICT_SIGNATURE_REQUIRED", BadInput, 400, "A verifier's verdict carries no signature."),
    Code("VERIFICATION_MODE_UNSUPPORTED", BadInput, 400, "A verification mode that is not auto, agent or manual."),
    Code("VERIFIERS_TOO_MANY", BadInput, 400, "A task names more than 9 verifiers."),
    Code("VERIFIER_IS_POSTER", BadInput, 400, "A poster named itself as its task's verifier."),
    Code("VERIFIER_NOT_ALLOWED", BadInput, 400, "A verifier was named for a task that is not agent-reviewed."),
    Code("VERIFIER_REPEATED", BadInput, 400, "A task names the same verifier (or verifier key) twice."),
    Code("VERIFIER_REQUIRED", BadInput, 400, "An agent-review task names no verifier."),
    Code("WEBHOOK_EVENT_TYPE_UNKNOWN", BadInput, 400, "A webhook endpoint subscribes to an event type that does not exist."),
    Code("WEBHOOK_URL_CREDENTIALS", BadInput, 400, "A webhook URL carries credentials."),
    Code("WEBHOOK_URL_INVALID", BadInput, 400, "A webhook URL is not an https (or http) URL of an allowed length."),
    Code("WEBHOOK_URL_PRIVATE", BadInput, 400, "A webhook URL names an address that is not public."),
    # --- NotAllowed: not yours to do
    Code("BUNDLE_WITHHELD", NotAllowed, 403, "A replay bundle holds what this account may not read (a withheld output, a hidden answer)."),
    Code("CONFLICT_OF_INTEREST", NotAllowed, 403, "A call's caller or provider cannot rule on its report, nor judge its meaning (nor its provider's key be named to)."),
    Code("CORROBORATION_PROVIDER_ONLY", NotAllowed, 403, "A policy declaring a corroborator, paid from the tool's provider's wallet, is registered only by that provider itself."),
    Code("IS_VERIFIER", NotAllowed, 403, "A task's verifier cannot also take it."),
    Code("KEY_JUDGES_PROVIDER_ONLY", NotAllowed, 403, "A policy naming a verifier key as a meaning judge, whose word refunds and strikes the tool's provider, is registered only by that provider itself."),
    Code("NOT_A_PARTY", NotAllowed, 403, "Only a task's (or a call's) parties may read this."),
    Code("NOT_TASK_AGENT", NotAllowed, 403, "Only the agent holding the task may do this."),
    Code("NOT_TASK_POSTER", NotAllowed, 403, "Only the task's poster may do this."),
    Code("NOT_TASK_VERIFIER", NotAllowed, 403, "Only the task's named verifier may do this."),
    Code("NOT_TOOL_PROVIDER", NotAllowed, 403, "Only a tool's provider (or an admin) may do this."),
    Code("NOT_YOUR_ACCOUNT", NotAllowed, 403, "Only an admin reads another account's ledger lines."),
    Code("POLICY_ENFORCE_PROVIDER_ONLY", NotAllowed, 403, "An enforcing policy, which refunds and strikes the tool's provider, is registered only by that provider itself; anyone else registers it in shadow mode."),
    Code("POSTER_CANNOT_ACCEPT", NotAllowed, 403, "A poster cannot take its own task."),
    Code("PRIMARY_KEY_REQUIRED", NotAllowed, 403, "Only the account's own key may do this, not an extra key."),
    Code("PROVIDER_ADDRESS_REFUSED", NotAllowed, 400, "The provider's endpoint is not a public address; nothing was charged."),
    Code("RELEASED_FROM_TASK", NotAllowed, 403, "The poster released this agent from the task."),
    Code("ROLE_REQUIRED", NotAllowed, 403, "This needs an account with another role."),
    Code("SELF_VERIFICATION", NotAllowed, 409, "An agent never judges its own work."),
    Code("TAKE_LAPSED", NotAllowed, 403, "This agent's take of the task lapsed without a submission."),
    Code("UNAUTHORIZED", NotAllowed, 401, "No API key, or one the service does not know."),
    # --- NotFound: no such thing, or none you may see
    Code("ACCOUNT_NOT_FOUND", NotFound, 404, "No such account."),
    Code("CALL_NOT_FOUND", NotFound, 404, "No such call."),
    Code("KEY_NOT_FOUND", NotFound, 404, "No such key of this account."),
    Code("MEANING_JUDGE_KEY_UNKNOWN", NotFound, 404, "A policy names a verifier key as a meaning judge that is not registered or was revoked."),
    Code("MEANING_JUDGMENT_NOT_FOUND", NotFound, 404, "No pending meaning judgment of that call names that key."),
    Code("NOT_FOUND", NotFound, 404, "No such route."),
    Code("POLICY_NOT_FOUND", NotFound, 404, "No such decision policy for the tool."),
    Code("RECEIPT_NOT_FOUND", NotFound, 404, "No such receipt (or it is not signed)."),
    Code("REPORT_NOT_FOUND", NotFound, 404, "No report of that call."),
    Code("TASK_NOT_FOUND", NotFound, 404, "No such task."),
    Code("TOOL_NOT_FOUND", NotFound, 404, "No such tool (or its provider is gone)."),
    Code("WEBHOOK_DELIVERY_NOT_FOUND", NotFound, 404, "No such webhook delivery of this account."),
    Code("WEBHOOK_ENDPOINT_NOT_FOUND", NotFound, 404, "No such webhook endpoint of this account."),
    # --- Conflict: it exists already, or clashes with an earlier request
    Code("ACCOUNT_EXISTS", Conflict, 409, "An account with that id exists."),
    Code("CALL_EXISTS", Conflict, 409, "That call was verified already."),
    Code("CONTRACT_EXISTS", Conflict, 409, "That contract version is registered with other terms."),
    Code("IDEMPOTENCY_KEY_REUSED", Conflict, 409, "The Idempotency-Key was used for a different request."),
    Code("KEY_EXISTS", Conflict, 409, "That key is registered already."),
    Code("MEANING_JUDGMENT_DIGEST_MISMATCH", Conflict, 409, "The judgment names another response digest than the call's."),
    Code("MEANING_JUDGMENT_REPLAYED", Conflict, 409, "This key already judged this call."),
    Code("POLICY_EXISTS", Conflict, 409, "That policy version is registered already."),
    Code("REPORT_EXISTS", Conflict, 409, "That call was reported already."),
    Code("VOTE_ALREADY_CAST", Conflict, 409, "A task's verifier votes once per submission."),
    # --- StateError: not now, not in this state
    Code("APPEAL_WINDOW_CLOSED", StateError, 409, "The appeal window after a failed verdict has closed."),
    Code("APPEAL_WINDOW_OPEN", StateError, 409, "The agent's appeal window after a failed verdict is still open."),
    Code("BUNDLE_NOT_AVAILABLE", StateError, 409, "This verdict cannot be replayed offline (a human or verifier judged it)."),
    Code("COLLECT_TOO_EARLY", StateError, 409, "An escalated reward is collected only once its wait is over."),
    Code("CONTRACT_LIMIT_REACHED", StateError, 409, "The tool has registered the most contract versions it may."),
    Code("DEADLINE_NOT_REACHED", StateError, 409, "The reward is reclaimed only after the deadline."),
    Code("DEADLINE_REACHED", StateError, 409, "The task's deadline has passed."),
    Code("ILLEGAL_TRANSITION", StateError, 409, "The task's state does not allow this step."),
    Code("INSUFFICIENT_FUNDS", StateError, 409, "The account holds too little for this."),
    Code("KEY_LIMIT_REACHED", StateError, 409, "The account holds the most extra keys it may, or has made the most it may (revoked ones counted), or a verifier has registered the most signing keys it may."),
    Code("LAPSE_NOT_DUE", StateError, 409, "No take of the task is due to lapse."),
    Code("LEASE_NOT_HELD", StateError, 409, "The review lease a report names is no longer in force (another claim took the submission, or a report ended it); nothing was counted."),
    Code("MAX_ATTEMPTS_REACHED", StateError, 409, "Every submission the task allows has been used."),
    Code("MEANING_JUDGMENT_LATE", StateError, 409, "The call's meaning judgment was already given, or its window for key judges closed."),
    Code("NOT_AGENT_MODE", StateError, 409, "Only an agent-review task takes a verifier's verdict."),
    Code("NOT_AUTO_MODE", StateError, 409, "Only an auto task is finalized."),
    Code("NOT_CLAIMED", StateError, 409, "That submission was never claimed for review."),
    Code("NOT_MANUAL_MODE", StateError, 409, "Only a manual task (or an agent review routed to the poster) is reviewed by the poster."),
    Code("NOT_SEALED", StateError, 409, "This task has no sealed criteria to reveal."),
    Code("NO_CRITERIA", StateError, 409, "The task has no criteria to check against."),
    Code("PAYMENT_LIMIT_EXCEEDED", StateError, 409, "The call would pass the API key's spending limit; nothing was charged."),
    Code("PAYMENT_PRICE_ABOVE_MAXIMUM", StateError, 409, "The call costs more than the most the caller accepts; nothing was charged."),
    Code("POLICY_LIMIT_REACHED", StateError, 409, "The tool has registered the most policy versions it may (every policy of it counted)."),
    Code("PROPOSAL_NOT_ENFORCEABLE", StateError, 409, "A price proposal in this state cannot be enforced."),
    Code("PROPOSAL_NOT_WITHDRAWABLE", StateError, 409, "A price proposal in this state cannot be withdrawn."),
    Code("QUORUM_DECIDED", StateError, 409, "The verifiers' quorum decided this submission already; a later vote changes nothing."),
    Code("RELEASE_TOO_EARLY", StateError, 409, "The agent's hold on the task has not lasted long enough to release it."),
    Code("REPORT_NOT_ALLOWED", StateError, 409, "The call was not settled, so there is nothing to report."),
    Code("REPORT_RULED", StateError, 409, "The report was ruled on already."),
    Code("REPORT_WINDOW_CLOSED", StateError, 409, "The filing deadline for reporting the call has passed."),
    Code("REVEAL_NOT_DUE", StateError, 409, "Sealed criteria are revealed once a submission waits to be judged."),
    Code("REVEAL_OVERDUE", StateError, 409, "The time to reveal is over (it was due and passed, or the seal broke); the task escalated."),
    Code("REVIEW_NOT_AWAITED", StateError, 409, "A review failure report names a submission that no longer awaits the verifier (its verdict or vote is in, or the task moved on); nothing was counted."),
    Code("SEAL_ALREADY_REVEALED", StateError, 409, "A task's sealed criteria are revealed once."),
    Code("SUBMISSION_CHANGED", StateError, 409, "The agent submitted again since the reviewed submission was read; read the latest, then review it."),
    Code("TAKE_LIMIT_REACHED", StateError, 409, "The agent holds the most open takes the service allows."),
    Code("TOOL_LIMIT_REACHED", StateError, 409, "The provider has registered the most tools it may."),
    Code("TOOL_POLICY_MISSING", StateError, 400, "The tool's decision policy is not registered yet; nothing was charged."),
    Code("TOOL_VERSION_LIMIT_REACHED", StateError, 409, "The tool name has registered the most catalog versions it may."),
    Code("VERIFIER_KEY_REQUIRED", StateError, 409, "The verifier has registered no key to sign verdicts with."),
    Code("VERIFIER_NOT_OPTED_IN", StateError, 409, "The agent named as verifier does not take verification jobs."),
    Code("WEBHOOK_DELIVERY_IN_FLIGHT", StateError, 409, "The delivery is being attempted right now."),
    Code("WEBHOOK_ENDPOINT_DISABLED", StateError, 409, "The webhook endpoint is disabled."),
    Code("WEBHOOK_ENDPOINT_LIMIT", StateError, 409, "The account has the most enabled endpoints it may, or has made the most it may (deleted ones counted)."),
    # --- VerificationFailed: what was checked is wrong
    Code("INTEGRITY_PROOF_REQUIRED", VerificationFailed, 400, "A PASS without the oracle's evidence-integrity proof is refused."),
    Code("INVALID_RECEIPT", VerificationFailed, 400, "A receipt that does not verify."),
    Code("MEANING_JUDGMENT_KEY_INVALID", VerificationFailed, 403, "The judgment's key is not yours, not active, or not the key that signed it."),
    Code("MEANING_JUDGMENT_SIGNATURE_INVALID", VerificationFailed, 403, "A key judge's signature does not verify over the judgment's payload."),
    Code("RECEIPT_CHAIN_BROKEN", VerificationFailed, 400, "A receipt log's chain is broken: a receipt deleted, reordered, inserted or truncated."),
    Code("RECEIPT_KEY_MISMATCH", VerificationFailed, 400, "A receipt names a signer key other than the pinned one."),
    Code("RECEIPT_LOG_INVALID", VerificationFailed, 400, "A file to append to is not a receipt log signed by this key."),
    Code("RECEIPT_MALFORMED", VerificationFailed, 400, "Not a DSSE envelope or an adjudge receipt statement, byte for byte."),
    Code("RECEIPT_POLICY_INVALID", VerificationFailed, 400, "A receipt's trust policy is not one the kernel allows."),
    Code("RECEIPT_SIGNATURE_INVALID", VerificationFailed, 400, "A receipt's signature does not verify under the pinned key."),
    Code("RECEIPT_SUPERSESSION_INVALID", VerificationFailed, 400, "A receipt supersedes one it cannot: another subject, or one superseded already."),
    Code("RECEIPT_VERDICT_INVALID", VerificationFailed, 400, "A receipt's verdict does not re-derive from its own checks and policy."),
    Code("RESULT_DIGEST_MISMATCH", VerificationFailed, 409, "The result to judge differs from the one submitted."),
    Code("SEAL_MISMATCH", VerificationFailed, 409, "The reveal does not open the seal made at posting; the task escalated for an admin to rule."),
    Code("SECRET_UNREADABLE", VerificationFailed, 400, "A sealed secret does not open: the wrong key or context, or damaged text."),
    Code("VERDICT_SIGNATURE_INVALID", VerificationFailed, 403, "A verifier's verdict signature does not verify, or not under the task's verifier key."),
    # --- Unavailable: not now; the same request may succeed later
    Code("CALLS_AT_ONCE_EXCEEDED", Unavailable, 429, "The caller has the most paid calls in flight at once that it may; wait for one to end."),
    Code("CHECKER_UNAVAILABLE", Unavailable, 503, "The time-limited checker could not run; nothing was judged."),
    Code("CHECKS_AT_ONCE_EXCEEDED", Unavailable, 429, "The account has the most dry runs and lints running at once that it may; wait for one to finish."),
    Code("CONCURRENT_UPDATE", Unavailable, 409, "Another transaction changed the same rows first; send the request again."),
    Code("CONNECTIONS_AT_ONCE_EXCEEDED", Unavailable, 429, "The client's address holds the most connections open at once that it may; the new one is closed."),
    Code("DRY_RUN_QUOTA_EXCEEDED", Unavailable, 429, "The task's dry runs for this hour are used up (Retry-After says when)."),
    Code("IDEMPOTENCY_IN_PROGRESS", Unavailable, 429, "The first request with this Idempotency-Key has not ended; send it again later."),
    Code("IDEMPOTENCY_KEYS_QUOTA_EXCEEDED", Unavailable, 429, "The account's state changes with a new Idempotency-Key for this hour are used up (Retry-After says when); a key already answered still replays."),
    Code("JUDGE_FAILED", Unavailable, 400, "The judge gave no usable answer; no verdict was posted."),
    Code("LINT_QUOTA_EXCEEDED", Unavailable, 429, "The account's criteria lints for this hour are used up (Retry-After says when)."),
    Code("POSTS_QUOTA_EXCEEDED", Unavailable, 429, "The account's tasks posted this hour are used up (Retry-After says when)."),
    Code("PROVIDER_UNREACHABLE", Unavailable, 400, "The provider's host does not resolve; nothing was charged."),
    Code("RATE_LIMITED", Unavailable, 429, "A bounded action is used up for now (Retry-After says when)."),
    Code("REGISTRATIONS_AT_ONCE_EXCEEDED", Unavailable, 429, "The account has the most tool and contract registrations being checked at once that it may; wait for one to finish."),
    Code("SERVICE_UNAVAILABLE", Unavailable, 400, "The client got no usable answer from the service (no connection, a time-out, not the API's JSON)."),
    Code("STORAGE_ERROR", Unavailable, 503, "The database failed; nothing was written."),
    Code("VERIFICATIONS_QUOTA_EXCEEDED", Unavailable, 429, "The account's calls submitted for verification this hour are used up (Retry-After says when)."),
    # --- InternalError: adjudge itself is wrong; nothing to fix on the caller's side
    Code("ADJUDGE_ERROR", InternalError, 500, "A refusal raised without a code of its own (a bug)."),
    Code("CRITERIA_SALT_MISSING", InternalError, 500, "Criteria holding an expected_answer reached the market without the secret salt their receipts' digest needs; nothing was posted."),
    Code("INTERNAL_ERROR", InternalError, 500, "The service failed; nothing was written."),
    Code("RECORD_UNREADABLE", InternalError, 500, "A stored record holds a value that cannot be shown; an operator must repair it."),
    Code("UNPROVEN_RELEASE", InternalError, 500, "Money was to leave a holding account without a receipt of the same transaction; nothing moved."),
)
# fmt: on


def _index(table: tuple[Code, ...]) -> Mapping[str, Code]:
    found: dict[str, Code] = {}
    for code in table:
        if code.name in found:
            raise ValueError(f"The error code {code.name} is declared twice.")
        if kind_of(code.kind) is not code.kind:
            raise ValueError(f"{code.name}'s kind {code.kind.__name__} is not a kind.")
        found[code.name] = code
    return MappingProxyType(found)


#: Every code, by name.
CODES: Mapping[str, Code] = _index(_TABLE)


def status(error: Error) -> int:
    """The HTTP status a refusal is answered with: its code's; for a code not declared, its
    kind's (400 for an error of no kind)."""
    declared = CODES.get(error.code)
    if declared is not None:
        return declared.status
    kind = kind_of(error)
    return 400 if kind is None else KIND_STATUS[kind]


def kind(code: str) -> type[Error] | None:
    """The kind of a code, or None for a code not declared (a newer service's, say)."""
    declared = CODES.get(code)
    return None if declared is None else declared.kind
