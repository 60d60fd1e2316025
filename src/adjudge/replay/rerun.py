"""Re-running a verdict from a bundle's inputs: an auto check's, or a paid call's verification.

Each re-run does what the service did, with the service's own functions: the auto check over
the stored result and the criteria, folded with the oracle's integrity check into the kernel's
determination (as :func:`adjudge.market.proof.judged` builds it for an auto task: the default
trust policy, the criteria digest bound); or the call's verification
under its contract and policy, determined as the gateway and the call report do. The
determination is then built into a statement at the receipt's own place on its log, so it can be
compared with the signed one byte for byte.

What the service decided beside the verdict is kept apart: a task receipt's ``policyDecision``
records the money the verdict released (the market's rule, not the check's), so it is carried
over from the receipt and said so; a call's policy decision (payment, strike) is re-derived.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from adjudge.autocheck import auto_check
from adjudge.calls import (
    parse_corroboration,
    parse_judgment,
    parse_request,
    parse_response,
    register_contract,
    register_policy,
    verify_call,
)
from adjudge.calls.kernel_rows import determine_call
from adjudge.calls.verify import digest_of, digested_bytes, received_response
from adjudge.digests import from_hex, sha256_digest
from adjudge.errors import Error
from adjudge.kernel import DEFAULT_POLICY, Check, Determination, determine, semantic
from adjudge.kernel.adapters import auto_check_check
from adjudge.kernel.oracle import Record, integrity
from adjudge.kernel.verdicts import format_time, parse_time
from adjudge.market import Mode, Seat, Task, Vote, proof
from adjudge.market.seal import SYMBOL as SEAL_SYMBOL
from adjudge.market.seal import parse_reveal
from adjudge.receipts import VerifyingKey, statement
from adjudge.replay.bundle import Bundle, response_digest, unusable
from adjudge.replay.report import Difference, statement_differences
from adjudge.replay.seal import sealed_commitment


@dataclass
class Rerun:
    """What re-running the verdict gave: the statement it rebuilds, the verdict, what the check
    said line by line, and the differences and notes found on the way."""

    statement: dict[str, Any] | None = None
    verdict: str | None = None
    lines: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)

    def differ(self, what: str, recorded: str | None, replayed: str | None, why: str) -> None:
        """Record one difference."""
        self.differences.append(Difference(what, recorded, replayed, why))


def task(bundle: Bundle, signed: dict[str, Any]) -> Rerun:
    """Re-run an auto check's verdict: the stored result against the criteria, at the receipt's
    decision time, as the service's checker and issuer did."""
    out = Rerun()
    p = signed["predicate"]
    subject = _subject(signed)
    raw = bundle.files["result.txt"]
    criteria = bundle.json("criteria.json")
    if not isinstance(criteria, dict):
        raise unusable("criteria.json is not a JSON object")
    actual = sha256_digest(raw)
    if actual != subject:
        out.differ(
            "result.txt",
            subject,
            actual,
            "a changed byte in the result: the receipt judged other bytes",
        )
    bound = p.get("criteriaDigest")
    salt = _salt(bundle, criteria)
    digest = proof.signed_digest(criteria, salt, bound)
    if salt is not None and digest == digest_of(criteria):
        out.notes.append(
            "The receipt binds the criteria by their plain digest: it was signed before the "
            "criteria of a hidden answer were digested with a salt."
        )
    if bound is None:
        out.notes.append(
            "The receipt binds no criteria (it was signed before task receipts named their "
            "criteria digest): that these are the task's criteria is the service's word."
        )
    elif digest != bound:
        out.differ(
            "criteria.json", bound, digest, "the criteria are not the ones the receipt binds"
        )
    sealing = _bind_seal(bundle, p, criteria, out)
    if "votes.json" in bundle.files:
        return _panel(bundle, signed, criteria, digest, out)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        out.notes.append("result.txt is not UTF-8: it was read with replacement characters.")
    result = auto_check(text, criteria)  # what AutoCheck.check runs on the stored result
    out.lines = [f"score {result.score}", *result.reasons]
    out.detail = {"passed": result.passed, "score": result.score, "reasons": list(result.reasons)}
    _compare_stored(bundle, "verification.json", result.to_dict(), out)
    try:
        decided = parse_time(p.get("decidedAt"), "decidedAt")
        checks = [
            integrity(Record(raw), subject),
            *sealing,
            auto_check_check(result, subject),
        ]
        determination = determine(
            subject,
            checks,
            now=decided,
            policy=DEFAULT_POLICY,
            criteria_digest=None if bound is None else digest,
            policy_decision=p.get("policyDecision"),
        )
    except Error as exc:
        out.differ("determination", None, None, f"it cannot be re-derived: {exc}")
        return out
    if "policyDecision" in p:
        out.notes.append(
            "The receipt's policyDecision (the money the verdict released) is the market's "
            "rule, not the check's: it is carried over as signed, not re-derived."
        )
    out.verdict = determination.verdict.value
    out.statement = _rebuilt(determination, signed)
    return out


def _salt(bundle: Bundle, criteria: dict[str, Any]) -> str | None:
    """The salt the criteria are digested with when they hold a hidden answer: a sealed task's
    reveal's (``reveal.json``), else the one drawn at posting (``salt.json``); None when they
    hide nothing, or the bundle holds no salt (a task posted before digests were salted)."""
    if "expected_answer" not in criteria:
        return None
    reveal = bundle.optional("reveal.json")
    salt = reveal.get("salt") if isinstance(reveal, dict) else bundle.optional("salt.json")
    if salt is not None and not isinstance(salt, str):
        raise unusable("the criteria's salt is not a string")
    return salt


def _panel(
    bundle: Bundle, signed: dict[str, Any], criteria: dict[str, Any], digest: str, out: Rerun
) -> Rerun:
    """Re-run a panel of verifiers' decision (k of n): each vote's signature re-verified over
    the payload rebuilt from the bundle (the task, the round, the result's and the brief's
    digests), its quotes re-grounded in ``brief.txt`` and ``result.txt``, the votes tallied and
    folded as the market did (:mod:`adjudge.market.proof`)."""
    p = signed["predicate"]
    subject = _subject(signed)
    raw = bundle.files["result.txt"]
    brief = bundle.files.get("brief.txt")
    held = bundle.json("votes.json")
    if brief is None or not isinstance(held, dict):
        raise unusable("a panel's bundle needs brief.txt and votes.json (an object)")
    try:
        seats = tuple(Seat(str(s["verifier"]), str(s["key"])) for s in held["panel"])
        task = Task(
            id=str(held["task_id"]),
            poster="",
            mode=Mode.AGENT,
            reward=1,
            posted_at=parse_time(p.get("decidedAt"), "decidedAt"),
            deadline=parse_time(p.get("decidedAt"), "decidedAt"),
            criteria=criteria,
            panel=seats,
            quorum=int(held["quorum"]),
            attempts=int(held["attempt"]),
            result_digest=subject,
        )
        brief_record = Record(brief, "brief")
        result_record = Record(raw)
        cast: list[Vote] = []
        for entry in held["votes"]:
            sig = entry["signed"]
            payload = dict(sig["payload"])
            passed, reasons = bool(entry["passed"]), tuple(payload.get("reasons") or ())
            key = str(entry["key"])
            review = semantic.Review.from_dict(
                {
                    "verifierKey": key,
                    "passed": passed,
                    "briefDigest": brief_record.digest,
                    "resultDigest": subject,
                    "quotes": list(payload.get("quotes") or ()),
                    "reasons": list(reasons),
                }
            )
            grounding = semantic.ground_review(review, brief=brief_record, result=result_record)
            check = proof.verifier(
                task,
                passed=passed,
                reasons=reasons,
                judge=str(entry["verifier"]),
                grounding=grounding,
                signed=sig,
                verifier_key=key,
            )
            verdict = check.verdict.value
            at = task.posted_at
            cast.append(Vote(str(entry["verifier"]), key, passed, verdict, check.to_dict(), at))
            out.lines.append(f"{entry['verifier']} ({key}): {verdict}")
        task = replace(task, votes=tuple(cast))
        tally = proof.tally(task)
        out.lines.append(f"quorum {task.quorum} of {len(seats)}: {tally or 'undecided'}")
        decision = {**dict(p.get("policyDecision") or {}), **proof.quorum_decision(task)}
        determination = determine(
            subject,
            [integrity(Record(raw), subject), *proof.vote_checks(task)],
            now=task.posted_at,
            policy=proof.trust_policy(task),
            criteria_digest=digest,
            policy_decision=decision,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise unusable(f"votes.json is not a panel's votes ({exc!r})") from exc
    except Error as exc:
        out.differ("determination", None, None, f"it cannot be re-derived: {exc}")
        return out
    out.notes.append(
        "Each vote's signature was re-verified and its quotes re-grounded; the quorum and every "
        "vote are re-derived, and the money the decision released is carried over as signed."
    )
    out.verdict = determination.verdict.value
    out.statement = _rebuilt(determination, signed)
    return out


def _bind_seal(
    bundle: Bundle, p: dict[str, Any], criteria: dict[str, Any], out: Rerun
) -> list[Check]:
    """A sealed task's reveal bound to what the receipt signs: its digest to the commitment of
    the receipt's ``(= sealed-criteria …)`` check, its criteria to ``criteria.json``. Returns
    the oracle's check of the reveal held, as the service's issuer minted it (none for a task
    that was not sealed)."""
    bound = sealed_commitment(p)
    held = bundle.optional("reveal.json")
    if bound is None:
        if held is not None:
            out.differ("reveal.json", None, None, "the receipt binds no sealed criteria")
        return []
    if held is None:
        out.differ("reveal.json", bound, None, "the receipt binds sealed criteria the bundle lacks")
        return []
    try:
        reveal = parse_reveal(held)
    except Error as exc:
        out.differ("reveal.json", bound, None, f"it is not a reveal: {exc.message}")
        return []
    if reveal.digest != bound:
        out.differ(
            "reveal.json",
            bound,
            reveal.digest,
            "the reveal is not the one committed at posting: its digest is not the commitment",
        )
    for name, value in reveal.criteria.items():
        if criteria.get(name) != value:
            out.differ(
                f"criteria.json {name}",
                _str(value),
                _str(criteria.get(name)),
                "the criteria judged do not hold what the reveal opened",
            )
    out.notes.append(f"The sealed criteria open the commitment {bound} made at posting.")
    return [integrity(Record(reveal.canonical(), SEAL_SYMBOL), bound)]


def call(bundle: Bundle, signed: dict[str, Any]) -> Rerun:
    """Re-run a paid call's verification: its response under its contract and policy, with the
    judgment and corroboration it read, at its verification time; determined at the receipt's
    decision time, as the service did."""
    out = Rerun()
    p = signed["predicate"]
    how = bundle.json("call.json")
    if not isinstance(how, dict):
        raise unusable("call.json is not a JSON object")
    try:
        at = parse_time(how.get("at"), "call.json's at")
    except Error as exc:
        raise unusable(exc.message) from exc
    if "response.bin" not in bundle.files and "response.json" not in bundle.files:
        raise unusable("a call bundle needs response.bin or response.json")
    _bind_call(bundle, signed, at, out)
    registered_by = _registrant(how, out)
    contract_doc = bundle.json("contract.json")
    policy_doc = bundle.optional("policy.json")
    try:
        contract = register_contract(contract_doc)
        policy = None if policy_doc is None else register_policy(policy_doc, contract)
        request = parse_request(bundle.json("request.json"))
        held = bundle.files.get("response.bin")
        if held is not None:
            response = received_response(held)
            response_bytes: bytes | None = held
        else:
            response = parse_response(bundle.json("response.json"))
            # A reported digest covers bytes the service never held: no integrity check then.
            response_bytes = None if response.digest else digested_bytes(response.body)
        judgment = bundle.optional("judgment.json")
        judged = bundle.optional("judgments.json")
        if judged is not None and not isinstance(judged, list):
            raise unusable("judgments.json is not a JSON list")
        corroboration = bundle.optional("corroboration.json")
        result = verify_call(
            contract,
            policy,
            request,
            response,
            at,
            judgment=None if judgment is None else parse_judgment(judgment),
            corroboration=None if corroboration is None else parse_corroboration(corroboration),
            judgments=[parse_judgment(j) for j in judged or []],
            registered_by=registered_by,
        )
    except Error as exc:
        out.differ("verification", None, None, f"it cannot be re-run on these inputs: {exc}")
        return out
    verdict = None if result.verdict is None else result.verdict.value
    out.lines = [
        f"{row.name}: {row.outcome.value}" + (f" ({row.reason})" if row.reason else "")
        for row in result.rows
    ]
    out.lines.append(
        f"call verdict {verdict}, payment {result.effect.payment.value}, "
        f"strike {str(result.effect.strike).lower()}"
    )
    out.detail = {"call_verdict": verdict, "payment": result.effect.payment.value}
    _compare_stored(bundle, "record.json", result.to_dict(), out)
    moved = _moved(how, out)
    try:
        determination = determine_call(
            result,
            now=parse_time(p.get("decidedAt"), "decidedAt"),
            response_bytes=response_bytes,
            policy_digest=None if policy_doc is None else digest_of(policy_doc),
            contract_digest=digest_of(contract_doc),
            caller=_caller(how, p),
            payment=moved,
        )
    except Error as exc:
        out.differ("determination", None, None, f"it cannot be re-derived: {exc}")
        return out
    out.verdict = determination.verdict.value
    out.statement = _rebuilt(determination, signed)
    return out


def _caller(how: dict[str, Any], predicate: dict[str, Any]) -> str | None:
    """The account the bundle says the call's money returns to, when its receipt names one (a
    receipt signed before receipts named the caller is re-derived without it); a bundle that
    names none, or another, re-derives a statement that differs from the signed one."""
    decision = predicate.get("policyDecision")
    if not isinstance(decision, dict) or "caller" not in decision:
        return None
    caller = how.get("caller")
    return caller if isinstance(caller, str) else None


def _registrant(how: dict[str, Any], out: Rerun) -> str | None:
    """The account the bundle says registered the call's policy, when not its provider (an
    enforcing policy then acted as shadow: its verdict recorded, nothing refunded or struck);
    the service's word, said so. A bundle that leaves it out, or names the provider, re-derives
    the refund and strike the receipt does not sign."""
    found = how.get("policy_registered_by")
    if found is None:
        return None
    if not isinstance(found, str):
        raise unusable("call.json's policy_registered_by, when given, is a string")
    out.notes.append(
        f"The policy was registered by {found} (call.json says so, the service's word): an "
        "enforcing policy its provider did not register itself acts as shadow."
    )
    return found


def _moved(how: dict[str, Any], out: Rerun) -> Literal["none"] | None:
    """``none`` when the bundle says the receipt moved no money (a judgment superseding the
    receipt of a call whose charge had gone back before it): the money a receipt's transaction
    moved is the ledger's fact, not the verification's, so it is the service's word, said so;
    a bundle that says it of a receipt that moved money, or not of one that moved none,
    re-derives a statement that differs from the signed one."""
    if "payment" not in how:
        return None
    if how["payment"] != "none":
        raise unusable("call.json's payment, when given, is none")
    out.notes.append(
        "The receipt moves no money (payment none): the call's charge had gone back before it "
        "was signed. call.json says so, the service's word: the ledger, not the verification, "
        "holds that fact."
    )
    return "none"


def _bind_call(bundle: Bundle, signed: dict[str, Any], at: datetime, out: Rerun) -> None:
    """Each input of a call bound to what the receipt signs: the response to its subject, the
    contract and policy to their digests, the verification time to ``calledAt``."""
    p = signed["predicate"]
    decision = p.get("policyDecision") if isinstance(p.get("policyDecision"), dict) else {}
    subject = _subject(signed)
    judged = response_digest(bundle.files)
    if judged != subject:
        out.differ(
            "response.bin" if "response.bin" in bundle.files else "response.json",
            subject,
            judged,
            "a changed byte in the response: the receipt judged another response",
        )
    if "response.bin" not in bundle.files:
        _bind_reported_body(bundle, out)
    for name, signed_digest in (
        ("contract.json", decision.get("contractDigest")),
        ("policy.json", p.get("criteriaDigest")),
    ):
        document = bundle.optional(name)
        digest = None if document is None else digest_of(document)
        if digest != signed_digest:
            out.differ(
                name,
                _str(signed_digest),
                digest,
                f"the {name.removesuffix('.json')} is not the one the receipt binds",
            )
    if decision.get("calledAt") != format_time(at):
        out.differ(
            "call.json at",
            _str(decision.get("calledAt")),
            format_time(at),
            "the verification time is not the one the receipt signs",
        )
    out.notes.append(
        "request.json's arguments are bound only through the checks that read them (the "
        "receipt signs the call's id, provider, tool and price, not its arguments)."
    )
    for name in ("judgment.json", "judgments.json", "corroboration.json"):
        if name in bundle.files:
            out.notes.append(
                f"{name} is bound only through the checks it decided (the receipt signs their "
                "outcomes, not the document)."
            )


def _bind_reported_body(bundle: Bundle, out: Rerun) -> None:
    """Say so when ``response.json``'s body is not the one the receipt binds: its caller reported
    a ``digest`` of the bytes it received, which the receipt's subject is, and the body does not
    digest to it. The receipt then binds the digest, not the body (the service never held the
    bytes), so another body that the checks read alike re-derives the same statement: that this
    is the body judged is the service's word."""
    held = bundle.optional("response.json")
    if not isinstance(held, dict) or "body" not in held:
        return
    declared = held.get("digest")
    if not isinstance(declared, str) or not declared:
        return  # the subject is the body's own digest, compared above
    try:
        bound = digest_of(held["body"]) == declared
    except (TypeError, ValueError):
        bound = False
    if not bound:
        out.notes.append(
            "response.json's body is not bound by the receipt: its subject is the digest the "
            f"caller reported ({declared}) of bytes the service never held, and the body does "
            "not digest to it. That this is the body judged is the service's word."
        )


def _compare_stored(bundle: Bundle, name: str, replayed: dict[str, Any], out: Rerun) -> None:
    """The service's stored record of the check (unsigned) against the replay's, leaf by leaf."""
    stored = bundle.optional(name)
    if stored is not None:
        out.differences += statement_differences(
            stored,
            _plain(replayed),
            name,
            f"the service's stored record ({name}, unsigned) is not what the replay gives",
        )


def _rebuilt(determination: Determination, signed: dict[str, Any]) -> dict[str, Any] | None:
    """``determination`` as the statement at the signed receipt's own place on its log, under
    its signer and engine (both checked apart); None when the signed one is too broken to say."""
    p = signed["predicate"]
    try:
        key = VerifyingKey.from_base64(p["signer"]["publicKey"])
        rebuilt = statement.build(
            determination,
            key,
            sequence=p["sequence"],
            previous=p["previous"],
            supersedes=p.get("supersedesReceiptId"),
            about=p.get("about"),
            lane=p.get("lane", 0),
        )
    except (Error, KeyError, TypeError):
        return None
    rebuilt["predicate"]["engine"] = p.get("engine")
    return rebuilt


def _subject(signed: dict[str, Any]) -> str:
    try:
        return from_hex(str(signed["subject"][0]["digest"]["sha256"]))
    except (KeyError, IndexError, TypeError) as exc:
        raise unusable("the receipt's statement names no subject") from exc


def _plain(value: Any) -> Any:
    """A value as it reads back from JSON (tuples as lists), to compare with a stored file."""
    return json.loads(json.dumps(value))


def _str(value: object) -> str | None:
    return None if value is None else str(value)
