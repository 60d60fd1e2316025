"""Spec 002 as data: one vector per rule sentence, run by one table of small runners.

Each file ``tests/vectors/kernel_*.json`` holds ``{"vectors": [...]}``; each vector has a
``description`` (the test id), the ``rule`` it pins (quoted from spec 002), a ``kind`` naming
the runner, an ``input`` and an ``expect``. In any string, ``digest(TEXT)`` stands for the
``sha256:`` digest of TEXT's UTF-8 bytes, so vectors stay readable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from adjudge.digests import sha256_digest
from adjudge.errors import Error
from adjudge.kernel import (
    Authority,
    Check,
    Pending,
    TrustPolicy,
    Verdict,
    determine,
    fold,
    observables,
    oracle,
    rails,
    semantic,
)
from adjudge.kernel import evidence as ev
from adjudge.kernel import obligations as ob
from adjudge.kernel.verdicts import format_time, resolve
from adjudge.receipts import ReceiptLog, SigningKey, as_of, issue, verify_chain

VECTORS = Path(__file__).parent / "vectors"
_DIGEST = re.compile(r"digest\(([^)]*)\)")
KEY = SigningKey.from_seed(bytes(range(32)))


def _expand(value: Any) -> Any:
    if isinstance(value, str):
        return _DIGEST.sub(lambda m: sha256_digest(m.group(1).encode()), value)
    if isinstance(value, list):
        return [_expand(v) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v) for k, v in value.items()}
    return value


FILES = sorted(VECTORS.glob("kernel_*.json"))
SCHEMA = json.loads((VECTORS / "kernel.schema.json").read_text(encoding="utf-8"))


def _load() -> list[Any]:
    cases = []
    for path in FILES:
        for vector in json.loads(path.read_text(encoding="utf-8"))["vectors"]:
            cases.append(pytest.param(vector, id=f"{path.stem}: {vector['description']}"))
    return cases


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_vector_file_matches_its_schema(path: Path) -> None:
    """Every vector file is well-formed: the schema catches a typo before a runner does."""
    jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), SCHEMA)


def test_descriptions_are_unique() -> None:
    """Test ids come from descriptions, so no two vectors may share one."""
    ids = [p.id for p in _load()]
    assert len(ids) == len(set(ids))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _check(spec: dict[str, Any]) -> Check:
    if "oracle" in spec:
        return oracle.integrity(
            oracle.Record(spec["oracle"]["stored"].encode()), spec["oracle"]["declared"]
        )
    if "semantic" in spec:
        return _semantic_check(spec["semantic"])
    pending = spec.get("pending")
    expiry: Any = None
    if pending is not None:
        # "plain": the expiry as the bare string, the way parsed input or an Any arrives.
        expiry = pending["expiresTo"] if pending.get("plain") else Verdict(pending["expiresTo"])
    return Check(
        name=spec.get("name", "check"),
        verdict=Verdict(spec["verdict"]),
        authority=Authority(spec.get("authority", "deterministic")),
        evidence=tuple(spec.get("evidence", ())),
        observable=spec.get("observable"),
        expression=spec.get("expression"),
        verifier_key=spec.get("verifierKey"),
        pending=None if pending is None else Pending(_time(pending["deadline"]), expiry),
    )


def _policy(spec: dict[str, Any] | None) -> TrustPolicy:
    return TrustPolicy() if spec is None else TrustPolicy.from_dict(spec)


def run_verdict_set(i: dict[str, Any]) -> dict[str, Any]:
    return {"verdicts": sorted(v.value for v in Verdict)}


def run_fold(i: dict[str, Any]) -> dict[str, Any]:
    return {"verdict": fold(Verdict(v) for v in i["verdicts"]).value}


def run_resolve(i: dict[str, Any]) -> dict[str, Any]:
    return {"verdict": resolve(_check(i["check"]), _time(i["now"])).value}


def run_check(i: dict[str, Any]) -> dict[str, Any]:
    _check(i["check"])
    return {"built": True}


def run_determine(i: dict[str, Any]) -> dict[str, Any]:
    checks = [_check(c) for c in i["checks"]]
    d = determine(i["subject"], checks, now=_time(i["now"]), policy=_policy(i.get("policy")))
    return {"verdict": d.verdict.value, "trustedVerifierKey": d.trusted_verifier_key}


def run_trust(i: dict[str, Any]) -> dict[str, Any]:
    policy = _policy(i.get("policy"))
    for key in i.get("addVerifiers", []):
        policy = policy.with_verifier(key)
    return {"trusted": policy.trusts(Authority(i["authority"]), i.get("verifierKey"))}


def run_observable(i: dict[str, Any]) -> dict[str, Any]:
    binding = observables.bind(i["observable"], i["expression"])
    seen = observables.evaluate(binding, i.get("facts", {}))
    return {"verdict": seen.verdict.value, "status": binding.status.value}


def _judgment(j: dict[str, Any]) -> semantic.Judgment:
    citations = tuple(
        semantic.Citation(
            c["artifact"], c["quote"], c.get("quoteHash") or sha256_digest(c["quote"].encode())
        )
        for c in j.get("citations", [])
    )
    return semantic.Judgment(
        j.get("caseId", "case-1"),
        j.get("caseDigest", sha256_digest(b"case-1")),
        semantic.Stance(j["stance"]),
        citations,
        j.get("predicate"),
        j.get("rationale", ""),
    )


def _route(i: dict[str, Any]) -> tuple[semantic.Judgment, semantic.Routed]:
    case = i.get("case", {})
    evaluation_case = semantic.EvaluationCase(
        case.get("caseId", "case-1"),
        case.get("digest", sha256_digest(b"case-1")),
        case.get("frozen", True),
    )
    admitted = {k: v.encode() for k, v in i.get("admitted", {}).items()}
    judgment = _judgment(i["judgment"])
    return judgment, semantic.route(judgment, evaluation_case, admitted)


def _semantic_check(i: dict[str, Any]) -> Check:
    judgment, routed = _route(i)
    return semantic.semantic_check("model", judgment, routed)


def run_semantic(i: dict[str, Any]) -> dict[str, Any]:
    judgment, routed = _route(i)
    return {
        "outcome": routed.outcome.value if routed.outcome else None,
        "verdict": routed.verdict.value,
        "routeToHuman": routed.route_to_human,
        "checkVerdict": semantic.semantic_check("model", judgment, routed).verdict.value,
    }


def _quote(q: dict[str, Any], brief: str, result: str) -> semantic.Quote:
    """A quote as the vector gives it; text and hash default to what the artifact holds there."""
    held = {"brief": brief, "result": result}.get(q["artifact"], "")
    text = q.get("text", held[q["start"] : q["end"]])
    return semantic.Quote(
        q["artifact"], q["start"], q["end"], text, q.get("quoteHash", sha256_digest(text.encode()))
    )


def run_review(i: dict[str, Any]) -> dict[str, Any]:
    brief, result = oracle.Record(i["brief"].encode(), "brief"), oracle.Record(i["result"].encode())
    r = i["review"]
    review = semantic.Review(
        verifier_key=r["verifierKey"],
        passed=r["passed"],
        brief_digest=r.get("briefDigest", brief.digest),
        result_digest=r.get("resultDigest", result.digest),
        quotes=tuple(_quote(q, i["brief"], i["result"]) for q in r["quotes"]),
        reasons=tuple(r.get("reasons", ())),
    )
    grounding = semantic.ground_review(review, brief=brief, result=result)
    out: dict[str, Any] = {
        "grounded": grounding.grounded,
        "routeToPoster": grounding.route_to_poster,
        "checkVerdict": grounding.check.verdict.value,
        "authority": grounding.check.authority.value,
        "verifierKey": grounding.check.verifier_key,
    }
    if "determine" in i:
        how = i["determine"]
        checks = [oracle.integrity(result, result.digest), grounding.check]
        d = determine(
            result.digest, checks, now=_time(how["now"]), policy=_policy(how.get("policy"))
        )
        out |= {"verdict": d.verdict.value, "trustedVerifierKey": d.trusted_verifier_key}
    return out


def _party(p: dict[str, Any]) -> ev.Party:
    return ev.Party(p.get("actor"), p.get("boundary"), p.get("custodian"))


def run_independence(i: dict[str, Any]) -> dict[str, Any]:
    item = ev.admit(
        sha256_digest(b"evidence"),
        type=ev.EvidenceType(i.get("type", "observation")),
        admission_source=ev.AdmissionSource(i.get("admissionSource", "collector")),
        producer=_party(i["producer"]),
        source=_party(i["source"]),
        mutability=ev.Mutability.IMMUTABLE,
        freshness=ev.Freshness.FRESH,
        accessibility=ev.Accessibility.ACCESSIBLE,
        derived_from=tuple(i.get("derivedFrom", ())),
    )
    return {"independence": item.independence.independence.value}


def run_freshness(i: dict[str, Any]) -> dict[str, Any]:
    seen = i.get("observedAt")
    value = ev.assess_freshness(
        None if seen is None else _time(seen),
        _time(i["now"]),
        fresh_for=timedelta(seconds=i["freshSeconds"]),
        valid_for=timedelta(seconds=i["validSeconds"]),
    )
    return {"freshness": value.value}


def run_rail(i: dict[str, Any]) -> dict[str, Any]:
    a = i["args"]
    name = i["rail"]
    result: rails.Refusal | rails.RailAnswer | None
    if name == "no_self_verification":
        result = rails.no_self_verification(
            [rails.Claim(c["actor"], c["cycle"]) for c in a["claims"]],
            [rails.Verification(v["actor"], v["cycle"]) for v in a["verifications"]],
            current_cycle=a["currentCycle"],
        )
    elif name == "verifier_not_author":
        result = rails.verifier_not_author(
            a["verifier"],
            [rails.Link(x["committer"], x.get("superseded", False)) for x in a["links"]],
        )
    elif name == "separate_boundary":
        result = rails.separate_boundary(
            a["worker"],
            rails.Boundary(a["workerBoundary"]["id"], a["workerBoundary"]["mutable"]),
            a["verifier"],
            rails.Boundary(a["verifierBoundary"]["id"], a["verifierBoundary"]["mutable"]),
        )
    elif name == "no_contract_self_acceptance":
        result = rails.no_contract_self_acceptance(a["worker"], a["acceptor"])
    elif name == "change_manifest":
        result = rails.change_manifest(
            rails.ChangeManifest(
                sha256_digest(b"diff"), a.get("observedInStore"), frozenset(a["producerMounts"])
            )
        )
    elif name == "before_after":
        capture = rails.BaselineCapture(b"k" * 32)
        forger = rails.BaselineCapture(b"f" * 32)
        when = _time(a.get("capturedAt", "2026-01-01T00:00:00+00:00"))
        baseline = {
            "none": None,
            "captured": capture.capture("work-1", sha256_digest(b"before"), when),
            "forged": forger.capture("work-1", sha256_digest(b"before"), when),
            "other-work": capture.capture("work-2", sha256_digest(b"before"), when),
        }[a["baseline"]]
        result = rails.before_after(
            baseline, capture, work_id="work-1", work_started_at=_time(a["workStartedAt"])
        )
    else:
        raise AssertionError(f"no rail {name}")
    out: dict[str, Any] = {"code": None if result is None else result.code.value}
    if isinstance(result, rails.RailAnswer):
        out["verdict"] = result.verdict.value
    return out


def _predicate(p: Any) -> ob.Predicate:
    kind = p["op"]
    if kind == "digest":
        return observables.DigestEquals(p["symbol"], p["digest"])
    if kind == "bind":
        return ob.from_binding(observables.bind(p["observable"], p["expression"]))
    if kind == "const":
        return ob.Const(p["value"])
    if kind == "not":
        return ob.Not(_predicate(p["part"]))
    parts = tuple(_predicate(x) for x in p["parts"])
    return ob.AllOf(parts) if kind == "all" else ob.AnyOf(parts)


def run_obligation(i: dict[str, Any]) -> dict[str, Any]:
    result = ob.admit(ob.Obligation("o", _predicate(i["predicate"])), i.get("witness"))
    if isinstance(result, ob.Refused):
        return {"admitted": False, "code": result.code.value}
    return {"admitted": True}


def run_chain(i: dict[str, Any]) -> dict[str, Any]:
    try:
        return _chain(i)
    except Error as exc:  # refused while building the log: the same refusal a verifier gives
        return {"valid": False, "code": exc.code}


def _chain(i: dict[str, Any]) -> dict[str, Any]:
    log = ReceiptLog()
    now = _time("2026-01-01T00:00:00+00:00")
    for entry in i["receipts"]:
        stored = entry["result"].encode()
        checks = [oracle.integrity(oracle.Record(stored), sha256_digest(stored))]
        checks.append(Check("auto-check", Verdict(entry["verdict"]), Authority.DETERMINISTIC))
        d = determine(sha256_digest(stored), checks, now=now)
        supersedes = entry.get("supersedes")
        log.append(
            d,
            KEY,
            supersedes=None if supersedes is None else log.receipts[supersedes].receipt_id,
            about=entry.get("about"),
        )
    lines = log.lines()
    tamper = i.get("tamper")
    if tamper is not None:
        at = tamper["at"]
        if tamper["op"] == "delete":
            del lines[at]
        elif tamper["op"] == "swap":
            lines[at], lines[at + 1] = lines[at + 1], lines[at]
        elif tamper["op"] == "edit":
            lines[at] = lines[at].replace(b'"payload":"', b'"payload":"A', 1)
    try:
        report = verify_chain(lines, KEY.keyid)
    except Error as exc:
        return {"valid": False, "code": exc.code}
    return {
        "valid": True,
        "count": report.count,
        "verdicts": [r.verdict.value for r in log],
        "superseded": len(report.superseded),
    }


def run_as_of(i: dict[str, Any]) -> dict[str, Any]:
    checks = [_check(c) for c in i["checks"]]
    d = determine(sha256_digest(b"result"), checks, now=_time(i["decidedAt"]))
    receipt = issue(d, KEY)
    standing = as_of(receipt, _time(i["at"]))
    # The same read from the envelope, and from its JSON object as the service stores it.
    assert as_of(receipt.envelope, _time(i["at"])) == standing
    assert as_of(receipt.to_dict(), _time(i["at"])) == standing
    return {
        "signed": standing.signed.value,
        "verdict": standing.verdict.value,
        "deadlines": [
            [d.check, format_time(d.deadline), d.expires_to.value, d.passed]
            for d in standing.deadlines
        ],
    }


RUNNERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "verdict-set": run_verdict_set,
    "fold": run_fold,
    "resolve": run_resolve,
    "check": run_check,
    "determine": run_determine,
    "trust": run_trust,
    "observable": run_observable,
    "semantic": run_semantic,
    "review": run_review,
    "independence": run_independence,
    "freshness": run_freshness,
    "rail": run_rail,
    "obligation": run_obligation,
    "chain": run_chain,
    "as-of": run_as_of,
}


@pytest.mark.parametrize("vector", _load())
def test_vector(vector: dict[str, Any]) -> None:
    """Each spec 002 rule, as a vector: the kernel answers what the vector expects."""
    expect = _expand(vector["expect"])
    try:
        got = RUNNERS[vector["kind"]](_expand(vector["input"]))
    except Error as exc:
        got = {"error": exc.code}
    assert {k: got.get(k) for k in expect} == expect
