"""Hypothesis properties of the fold, resolution and trust (spec 002 invariants)."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adjudge.digests import sha256_digest
from adjudge.errors import CriteriaError, ReceiptError
from adjudge.kernel import (
    PRECEDENCE,
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
from adjudge.kernel.authority import DEFAULT_TRUSTED
from adjudge.kernel.determination import effective
from adjudge.kernel.verdicts import EXPIRY_VERDICTS, resolve

verdicts = st.sampled_from(list(Verdict))
moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
# An evaluator's expiry verdicts: MISMATCH needs the oracle's seal.
evaluator_expiries = st.sampled_from(sorted(EXPIRY_VERDICTS - {Verdict.MISMATCH}))


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(st.lists(verdicts), st.randoms())
def test_fold_is_order_free(items: list[Verdict], rnd: object) -> None:
    """Shuffling the checks never changes the fold."""
    shuffled = list(items)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert fold(items) is fold(shuffled)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(st.lists(verdicts), st.integers(min_value=0))
def test_adding_fail_never_improves_a_fold(items: list[Verdict], at: int) -> None:
    """Adding a FAIL anywhere never moves the fold towards PASS."""
    worse = list(items)
    worse.insert(at % (len(items) + 1), Verdict.FAIL)
    assert PRECEDENCE[fold(worse)] >= PRECEDENCE[fold(items)]
    assert fold(worse) is not Verdict.PASS


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(st.lists(verdicts, min_size=1))
def test_fold_is_one_of_its_inputs(items: list[Verdict]) -> None:
    """A non-empty fold returns the highest-ranked input, never an invented verdict."""
    assert fold(items) in items
    assert fold(items) is max(items, key=PRECEDENCE.__getitem__)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(moments, evaluator_expiries, moments)
def test_pending_never_resolves_to_pass(
    deadline: datetime, expires_to: Verdict, now: datetime
) -> None:
    """Whenever it is read, a PENDING reads as PENDING or its expiry — never PASS."""
    check = Check(
        "p",
        Verdict.PENDING,
        Authority.HUMAN,
        pending=Pending(deadline, expires_to),  # type: ignore[arg-type]
    )
    got = resolve(check, now)
    assert got is not Verdict.PASS
    assert got is (expires_to if now >= deadline else Verdict.PENDING)
    assert resolve(check, deadline + timedelta(microseconds=1)) is expires_to


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(verdicts, st.sampled_from(list(Authority)), st.frozensets(st.sampled_from(list(Authority))))
def test_trust_only_lowers_verdicts(
    verdict: Verdict, authority: Authority, listed: frozenset[Authority]
) -> None:
    """A policy listing more than deterministic and human cannot exist; under any policy that
    can, trust never raises a verdict, and PASS survives only by membership."""
    if not listed <= DEFAULT_TRUSTED:
        with pytest.raises(CriteriaError) as err:
            TrustPolicy(listed)
        assert err.value.code == "TRUST_POLICY_INVALID"
        return
    got = effective(verdict, authority, None, TrustPolicy(listed))
    assert PRECEDENCE[got] >= PRECEDENCE[verdict]
    if got is Verdict.PASS:
        assert authority in listed and authority in DEFAULT_TRUSTED


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(st.sampled_from(["evidence.content-digest", "evidence.present", "x.y"]), st.text())
def test_any_expression_binds(observable: str, expression: str) -> None:
    """Arbitrary text always binds (malformed text included) and answers PASS, FAIL or UNKNOWN;
    only the exact decidable form can answer anything but UNKNOWN."""
    binding = observables.bind(observable, expression)
    seen = observables.evaluate(binding, {"result": sha256_digest(b"r")})
    assert seen.verdict in {Verdict.PASS, Verdict.FAIL, Verdict.UNKNOWN}
    if seen.verdict is not Verdict.UNKNOWN:
        assert binding.status is observables.BindingStatus.DECIDABLE
        assert observable == observables.CONTENT_DIGEST
        assert re.fullmatch(r'\(= [A-Za-z_][A-Za-z0-9_.\-]* "sha256:[0-9a-f]{64}"\)', expression)


_BLANKS = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2003", "\u200b", "\ufeff"])


_EXACT = f'(= result "{sha256_digest(b"r")}")'


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(st.integers(min_value=0, max_value=len(_EXACT)), _BLANKS, st.sampled_from([None, 2, 9]))
def test_no_whitespace_variation_of_the_exact_form_decides(
    at: int, blank: str, swap: int | None
) -> None:
    """A blank added anywhere in (= result "sha256:…") or around it, or one of its two spaces
    swapped for another blank: the expression binds and answers UNKNOWN — only the exact form
    decides."""
    assert _EXACT[2] == _EXACT[9] == " "
    if swap is not None and blank != " ":
        varied = _EXACT[:swap] + blank + _EXACT[swap + 1 :]
    else:
        varied = _EXACT[:at] + blank + _EXACT[at:]
    binding = observables.bind(observables.CONTENT_DIGEST, varied)
    assert binding.status is observables.BindingStatus.UNDECIDABLE
    assert observables.evaluate(binding, {"result": sha256_digest(b"r")}).verdict is (
        Verdict.UNKNOWN
    )


citations = st.builds(
    semantic.Citation,
    st.sampled_from(["log", "diff", "missing"]),
    st.text(max_size=12),
    st.one_of(st.text(max_size=8), st.builds(lambda t: sha256_digest(t.encode()), st.text())),
)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(
    st.sampled_from(list(semantic.Stance)),
    st.lists(citations, max_size=3),
    st.one_of(st.none(), st.text(max_size=5)),
    st.booleans(),
)
def test_a_model_never_says_yes(
    stance: semantic.Stance,
    cited: list[semantic.Citation],
    predicate: str | None,
    frozen: bool,
) -> None:
    """Whatever a model outputs, its routed verdict is never PASS, and only a cited conflict
    on a grounded judgment is FAIL."""
    case = semantic.EvaluationCase("c", sha256_digest(b"c"), frozen)
    judgment = semantic.Judgment("c", sha256_digest(b"c"), stance, tuple(cited), predicate)
    admitted = {"log": b"tests: 3 failed", "diff": b"+ added line"}
    routed = semantic.route(judgment, case, admitted)
    assert routed.verdict is not Verdict.PASS
    if routed.verdict is Verdict.FAIL:
        assert routed.outcome is semantic.Outcome.CITED_CONFLICT and cited and frozen
    check = semantic.semantic_check("m", judgment, routed)
    assert check.verdict in {Verdict.FAIL, Verdict.UNKNOWN}


D1, D2, D3 = (sha256_digest(b"%d" % i) for i in range(3))
leaves = st.builds(
    observables.DigestEquals, st.sampled_from(["a", "b"]), st.sampled_from([D1, D2])
) | st.builds(ob.Const, st.booleans())
predicates = st.recursive(
    leaves,
    lambda inner: (
        st.builds(ob.Not, inner)
        | st.builds(ob.AllOf, st.lists(inner, max_size=3).map(tuple))
        | st.builds(ob.AnyOf, st.lists(inner, max_size=3).map(tuple))
    ),
    max_leaves=8,
)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(predicates)
def test_falsifiability_is_decided_exactly(predicate: ob.Predicate) -> None:
    """An obligation is admitted exactly when some assignment makes it fail, and the witness it
    returns does fail it (checked against brute force over a wider domain)."""
    result = ob.admit(ob.Obligation("o", predicate), None)
    leaves_ = list(ob._leaves(predicate))
    symbols = sorted({x.symbol for x in leaves_ if isinstance(x, observables.DigestEquals)})
    if not symbols:
        assert isinstance(result, ob.Refused) and result.code is ob.ObligationCode.VACUOUS_PREDICATE
        return
    can_fail = any(
        not ob.holds(predicate, dict(zip(symbols, values, strict=True)))
        for values in itertools.product([D1, D2, D3], repeat=len(symbols))
    )
    assert isinstance(result, ob.Admitted) is can_fail
    if isinstance(result, ob.Admitted):
        assert not ob.holds(predicate, result.witness)


SUBJECT = sha256_digest(b"result")
_KEY = "1" * 64
caller_checks = st.builds(
    Check,
    name=st.sampled_from(["evidence-integrity", "auto-check", "model", "x"]),
    verdict=st.sampled_from(sorted(set(Verdict) - {Verdict.MISMATCH, Verdict.PENDING})),
    authority=st.sampled_from(list(Authority)),
    evidence=st.just((SUBJECT,)) | st.just(()),
    reason=st.text(max_size=5),
    observable=st.sampled_from([None, observables.CONTENT_DIGEST, observables.PRESENT, "x.y"]),
    expression=st.sampled_from(
        [None, f'(= result "{SUBJECT}")', f'(=  result "{SUBJECT}")', "(present result)"]
    ),
    verifier_key=st.sampled_from([None, _KEY]),
)
# The integrity proof's exact shape, as a caller (or a model) would write it.
lookalike_proofs = st.builds(
    Check,
    name=st.sampled_from(["evidence-integrity", "integrity"]),
    verdict=st.just(Verdict.PASS),
    authority=st.sampled_from([Authority.DETERMINISTIC, Authority.HUMAN]),
    evidence=st.just((SUBJECT,)),
    reason=st.sampled_from(["the stored result has the declared digest", "the model says so"]),
    observable=st.just(observables.CONTENT_DIGEST),
    expression=st.just(f'(= result "{SUBJECT}")'),
)
policies = st.sampled_from(
    [
        TrustPolicy(),
        TrustPolicy().with_verifier(_KEY),
        TrustPolicy(frozenset({Authority.DETERMINISTIC})),
    ]
)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(st.lists(lookalike_proofs | caller_checks, max_size=5), policies)
def test_no_caller_built_check_yields_pass_without_the_oracle(
    checks: list[Check], policy: TrustPolicy
) -> None:
    """Whatever checks a caller builds — integrity look-alikes for the very subject included —
    and under any policy, a set without the oracle's own proof never folds to PASS: it folds to
    something else, or a PASS is refused outright."""
    try:
        got = determine(SUBJECT, checks, now=datetime(2026, 1, 1, tzinfo=UTC), policy=policy)
    except ReceiptError as exc:
        assert exc.code == "INTEGRITY_PROOF_REQUIRED"
        return
    assert got.verdict is not Verdict.PASS


_SPELLINGS = st.sampled_from([str.upper, str.lower, str.title, lambda s: f" {s}\t", lambda s: s])


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1), _SPELLINGS)
def test_one_actor_in_any_case_or_padding_is_one_actor(name: str, spell: Any) -> None:
    """An actor id respelt in another case or with blanks around it is the same actor to every
    rail and to the independence assessment: never shown distinct from itself."""
    other = spell(name)
    claim, check = [rails.Claim(name, 1)], [rails.Verification(other, 1)]
    assert rails.no_self_verification(claim, check, current_cycle=1) is not None
    assert rails.verifier_not_author(other, [rails.Link(name)]) is not None
    box = rails.Boundary("b", mutable=False)
    assert rails.separate_boundary(name, box, other, rails.Boundary("c", False)) is not None
    assert rails.no_contract_self_acceptance(name, other) is not None
    assessed = ev.assess_independence(ev.Party(name, "b1", "s1"), ev.Party(other, "b2", "s2"))
    assert assessed.actor_distinct is False
    assert assessed.independence is ev.Independence.SELF_ATTESTED


_BRIEF_TEXT = "Name three primes and say why each is prime."
_RESULT_TEXT = "2, 3 and 5 🌱: each has exactly two divisors, 1 and itself."
_BRIEF_RECORD = oracle.Record(_BRIEF_TEXT.encode(), "brief")
_RESULT_RECORD = oracle.Record(_RESULT_TEXT.encode())
spans = st.tuples(st.integers(0, 60), st.integers(1, 20)).map(lambda t: (t[0], t[0] + t[1]))


def _grounded_quotes(brief_span: tuple[int, int], result_span: tuple[int, int]) -> list[Any]:
    b = (min(brief_span[0], len(_BRIEF_TEXT) - 1), min(brief_span[1], len(_BRIEF_TEXT)))
    r = (min(result_span[0], len(_RESULT_TEXT) - 1), min(result_span[1], len(_RESULT_TEXT)))
    return [
        semantic.Quote.of("brief", _BRIEF_TEXT, *b),
        semantic.Quote.of("result", _RESULT_TEXT, *r),
    ]


def _true_quote(q: semantic.Quote) -> bool:
    """Whether ``q`` is what its artifact holds at its span, worked out here independently."""
    text = {"brief": _BRIEF_TEXT, "result": _RESULT_TEXT}[q.artifact]
    return (
        0 <= q.start < q.end <= len(text)
        and text[q.start : q.end] == q.text
        and sha256_digest(q.text.encode()) == q.quote_hash
    )


def _ground(quotes: list[Any], passed: bool) -> semantic.Grounding:
    review = semantic.Review(
        "1" * 64, passed, _BRIEF_RECORD.digest, _RESULT_RECORD.digest, tuple(quotes)
    )
    return semantic.ground_review(review, brief=_BRIEF_RECORD, result=_RESULT_RECORD)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(spans, spans, st.booleans())
def test_quotes_taken_from_the_records_ground(
    brief_span: tuple[int, int], result_span: tuple[int, int], passed: bool
) -> None:
    """Quotes cut from the records at any code-point span (an emoji included) always ground,
    and the check says exactly what the verifier said."""
    grounding = _ground(_grounded_quotes(brief_span, result_span), passed)
    assert grounding.grounded
    assert grounding.check.verdict is (Verdict.PASS if passed else Verdict.FAIL)


@settings(deadline=None)  # speed is not the property under test; machines vary
@given(
    spans,
    spans,
    st.booleans(),
    st.sampled_from(["shift", "grow", "text", "hash", "artifact"]),
    st.booleans(),
)
def test_any_altered_quote_is_ungrounded_and_decides_nothing(
    brief_span: tuple[int, int],
    result_span: tuple[int, int],
    passed: bool,
    how: str,
    which: bool,
) -> None:
    """One grounded quote altered — its span moved or widened, its text or hash changed, its
    artifact swapped — and the review is ungrounded: UNKNOWN, routed to the poster, whichever
    way the verifier voted."""
    quotes = _grounded_quotes(brief_span, result_span)
    q = quotes[which]
    if how == "shift":
        altered = semantic.Quote(q.artifact, q.start + 1, q.end + 1, q.text, q.quote_hash)
    elif how == "grow":
        altered = semantic.Quote(q.artifact, q.start, q.end + 1, q.text, q.quote_hash)
    elif how == "text":
        changed = q.text[:-1] + ("x" if q.text[-1] != "x" else "y")
        altered = semantic.Quote(
            q.artifact, q.start, q.end, changed, sha256_digest(changed.encode())
        )
    elif how == "hash":
        altered = semantic.Quote(q.artifact, q.start, q.end, q.text, sha256_digest(b"other"))
    else:
        other = "result" if q.artifact == "brief" else "brief"
        altered = semantic.Quote(other, q.start, q.end, q.text, q.quote_hash)
    if _true_quote(altered):
        return  # the alteration happened to land on another true quote (same text there)
    quotes[which] = altered
    grounding = _ground(quotes, passed)
    assert not grounding.grounded and grounding.route_to_poster
    assert grounding.check.verdict is Verdict.UNKNOWN
