"""Hypothesis properties of the fold, resolution and trust (spec 002 invariants)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from adjudge.kernel import PRECEDENCE, Authority, Check, Pending, TrustPolicy, Verdict, fold
from adjudge.kernel.determination import effective
from adjudge.kernel.verdicts import EXPIRY_VERDICTS, resolve

verdicts = st.sampled_from(list(Verdict))
moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
# An evaluator's expiry verdicts: MISMATCH needs the oracle's seal.
evaluator_expiries = st.sampled_from(sorted(EXPIRY_VERDICTS - {Verdict.MISMATCH}))


@given(st.lists(verdicts), st.randoms())
def test_fold_is_order_free(items: list[Verdict], rnd: object) -> None:
    """Shuffling the checks never changes the fold."""
    shuffled = list(items)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert fold(items) is fold(shuffled)


@given(st.lists(verdicts), st.integers(min_value=0))
def test_adding_fail_never_improves_a_fold(items: list[Verdict], at: int) -> None:
    """Adding a FAIL anywhere never moves the fold towards PASS."""
    worse = list(items)
    worse.insert(at % (len(items) + 1), Verdict.FAIL)
    assert PRECEDENCE[fold(worse)] >= PRECEDENCE[fold(items)]
    assert fold(worse) is not Verdict.PASS


@given(st.lists(verdicts, min_size=1))
def test_fold_is_one_of_its_inputs(items: list[Verdict]) -> None:
    """A non-empty fold returns the highest-ranked input, never an invented verdict."""
    assert fold(items) in items
    assert fold(items) is max(items, key=PRECEDENCE.__getitem__)


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


@given(verdicts, st.sampled_from(list(Authority)), st.frozensets(st.sampled_from(list(Authority))))
def test_trust_only_lowers_verdicts(
    verdict: Verdict, authority: Authority, trusted: frozenset[Authority]
) -> None:
    """Applying a trust policy never raises a verdict, and PASS survives only by membership."""
    got = effective(verdict, authority, None, TrustPolicy(trusted))
    assert PRECEDENCE[got] >= PRECEDENCE[verdict]
    if got is Verdict.PASS:
        assert authority in trusted
