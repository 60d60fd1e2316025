"""A provider's running quality counts always equal a full recount of its window: as calls
arrive, as they expire at the window's edge, when the span changes or the clock goes back,
with reported calls, the provider's own calls of its tool, shadow (not enforced) calls and
errors mixed in."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adjudge.calls.quality import counted_as, enters_window, quality_window
from adjudge.store import Store, Transaction, calls, quality_windows, records
from support.at_once import at_once

T0 = datetime(2026, 3, 1, tzinfo=UTC)
_providers = itertools.count()

#: (verdict, enforced, error kind): every kind of observation a call record can hold.
KINDS = [
    ("PASS", True, None),
    ("FAIL", True, None),
    ("PASS", False, None),  # a shadow or withdrawn policy: not counted
    ("FAIL", False, None),
    ("MISAPPLIED", True, None),
    ("DEGRADED", True, None),
    (None, False, "request_error"),
    (None, False, "system_error"),
]

_call = st.tuples(
    st.just("call"),
    st.integers(0, 40),  # seconds since the step before (0: the same instant)
    st.sampled_from(KINDS),
    st.sampled_from(["gateway", "gateway", "gateway", "reported"]),
    st.sampled_from(["caller", "caller", "own"]),  # "own": the provider calls its own tool
)
_span = st.tuples(st.just("span"), st.sampled_from([30, 60, 200]))
_clock_back = st.tuples(st.just("back"), st.integers(1, 90))
_read = st.tuples(st.just("read"), st.integers(0, 120))
#: A judgment after the answer superseding an earlier call's verdict (which of the calls made
#: so far: by index, modulo their number).
_supersede = st.tuples(
    st.just("supersede"),
    st.integers(0, 39),
    st.sampled_from(["PASS", "FAIL", "DEGRADED", "MISAPPLIED"]),
)


def _record(call_id: str, provider: str, kind: tuple[str | None, bool, str | None]) -> dict:
    verdict, enforced, error = kind
    return {
        "call_id": call_id,
        "provider": provider,
        "tool": "weather",
        "verdict": verdict,
        "effect": {"enforced": enforced},
        "error": None if error is None else {"kind": error, "code": "X"},
        "policy": None,
    }


def _add(
    tx: Transaction,
    call_id: str,
    provider: str,
    kind: tuple[str | None, bool, str | None],
    at: datetime,
    source: str = "gateway",
    caller: str = "caller",
) -> None:
    """Record ``caller``'s call of ``provider`` at ``at`` whose verdict, enforcement and error
    are ``kind``."""
    calls.add_call(
        tx,
        record=_record(call_id, provider, kind),
        contract_version="1",
        submitted_by=caller,
        at=at,
        request={},
        response={},
        receipt_id=None,
        source=source,
    )


def _recount(store: Store, provider: str, span: timedelta, now: datetime) -> dict[str, int]:
    far = now + timedelta(days=365)  # the running counts hold every call after the edge
    with store.read() as tx:
        seen = calls.observations(tx, provider, now - span, far)
    counted = quality_window(seen, provider, far, far - (now - span))
    return {k: v for k, v in counted.to_dict().items() if isinstance(v, int)}


def _counts(window: object) -> dict[str, int]:
    wire = window.to_dict()  # type: ignore[attr-defined]
    return {k: v for k, v in wire.items() if isinstance(v, int)}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.one_of(_call, _call, _call, _span, _clock_back, _read, _supersede), max_size=40
    )
)
@pytest.mark.parametrize("unit", [timedelta(seconds=1), timedelta(hours=1)], ids=["s", "h"])
def test_running_counts_equal_a_recount(
    sqlite_store: Store, unit: timedelta, steps: list[tuple[object, ...]]
) -> None:
    """After every call, span change, clock step back, read and verdict superseded (inside
    the window or expired from it), the window the store keeps equals a recount of the calls
    themselves — in seconds, and in hours, where a window spans days and one no running
    counts fit is read from the daily counts and its edge's day."""
    store = sqlite_store
    provider = f"prov-{next(_providers)}"
    with store.write() as tx:
        if records.account(tx, "caller") is None:
            records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)
        records.create_account(tx, provider, ["provider"], f"key-{provider}", opt_in=False, at=T0)
    now, span = T0, 60 * unit
    made: list[str] = []
    for n, step in enumerate(steps):
        if step[0] == "call":
            _, gap, kind, source, who = step
            now += int(gap) * unit  # type: ignore[call-overload]
            made.append(f"{provider}-{n}")
            caller = provider if who == "own" else "caller"
            observed = enters_window(str(source), caller, provider)
            with store.write() as tx:
                _add(tx, made[-1], provider, kind, now, str(source), caller)  # type: ignore[arg-type]
                if observed:
                    verdict, enforced, error = kind  # type: ignore[misc]
                    kept = quality_windows.observe(
                        tx, provider, span, now, counted_as(verdict, enforced, error)
                    )
                else:
                    kept = quality_windows.window(tx, provider, span, now)
            assert _counts(kept) == _recount(store, provider, span, now)
        elif step[0] == "span":
            span = int(step[1]) * unit  # type: ignore[call-overload]
        elif step[0] == "supersede":
            _, which, verdict = step
            if not made:
                continue
            with store.write() as tx:
                chosen = made[int(which) % len(made)]  # type: ignore[call-overload]
                quality_windows.superseded(tx, chosen, verdict)  # type: ignore[arg-type]
                kept = quality_windows.window(tx, provider, span, now)
            assert _counts(kept) == _recount(store, provider, span, now)
        elif step[0] == "back":
            now -= int(step[1]) * unit  # type: ignore[call-overload]
        else:
            later = now + int(step[1]) * unit  # type: ignore[call-overload]
            with store.read() as tx:
                seen = quality_windows.window(tx, provider, span, later)
            assert _counts(seen) == _recount(store, provider, span, later)


def test_a_call_that_expired_leaves_the_window_once(store: Store) -> None:
    """Calls leave the window as the edge passes them, on each database: one PASS and one FAIL
    counted, then only the FAIL, then none."""
    with store.write() as tx:
        records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)
    span = timedelta(seconds=60)
    for n, (kind, at) in enumerate([(KINDS[0], T0), (KINDS[1], T0 + timedelta(seconds=30))]):
        with store.write() as tx:
            _add(tx, f"c{n}", "prov", kind, at)
            window = quality_windows.observe(tx, "prov", span, at, counted_as(*kind))
    assert (window.passes, window.fails) == (1, 1)
    with store.read() as tx:
        later = quality_windows.window(tx, "prov", span, T0 + timedelta(seconds=61))
        gone = quality_windows.window(tx, "prov", span, T0 + timedelta(seconds=91))
    assert (later.passes, later.fails) == (0, 1)
    assert (gone.passes, gone.fails) == (0, 0)


def test_a_superseded_verdict_moves_its_call_while_in_the_window(store: Store) -> None:
    """On each database: a PASS judged FAIL after its answer moves from the passes to the
    fails while the window holds it; one the window's edge has passed moves nothing."""
    with store.write() as tx:
        records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)
    span = timedelta(seconds=60)
    # c0 leaves the window as c2 arrives (its edge then T0 + 10 s); c1 stays in it.
    for n, at in enumerate([T0, T0 + timedelta(seconds=30), T0 + timedelta(seconds=70)]):
        with store.write() as tx:
            _add(tx, f"c{n}", "prov", KINDS[0], at)
            quality_windows.observe(tx, "prov", span, at, "passes")
    now = T0 + timedelta(seconds=70)
    with store.write() as tx:
        assert quality_windows.superseded(tx, "c0", "FAIL") is None
        assert quality_windows.superseded(tx, "c1", "FAIL") == "prov"
        window = quality_windows.window(tx, "prov", span, now)
    assert (window.passes, window.fails) == (1, 1)
    assert _counts(window) == _recount(store, "prov", span, now)


def test_two_transactions_make_a_providers_first_window_at_once(store: Store) -> None:
    """A provider's first two calls observed at once, on two engines (two committing threads
    or two processes): the second waits for the first's row and moves it; both commit and the
    window counts both calls (on PostgreSQL the second failed on the row's key before)."""
    with store.write() as tx:
        records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)
    span, now = timedelta(seconds=60), T0 + timedelta(seconds=1)

    def first(tx: Transaction) -> None:
        _add(tx, "c0", "prov", KINDS[0], T0)
        quality_windows.observe(tx, "prov", span, T0, "passes")

    def second(tx: Transaction) -> None:
        _add(tx, "c1", "prov", KINDS[1], now)
        quality_windows.observe(tx, "prov", span, now, "fails")

    assert at_once(store, first, second) == []
    with store.read() as tx:
        window = quality_windows.window(tx, "prov", span, now)
    assert (window.passes, window.fails) == (1, 1)
    assert _counts(window) == _recount(store, "prov", span, now)


def test_many_windows_read_together_equal_each_read_alone(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's read of every termed provider's window (``windows``) gives each what a
    read of it alone gives, and a recount of its calls, on each database and in chunks (two
    providers a chunk here): a window whose running counts fit, with calls expired since its
    last; one with nothing expired; one read with a span other than its counts' (recounted
    from its edge's day and the daily counts after), in seconds and in days; one of days; and
    one with no calls."""
    monkeypatch.setattr(quality_windows, "_ROWS_AT_ONCE", 2)
    monkeypatch.setattr(quality_windows, "_WINDOWS_AT_ONCE", 2)
    with store.write() as tx:
        records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)
    second, hour = timedelta(seconds=1), timedelta(hours=1)
    # provider: (span it is observed with, span it is read with, its calls' times)
    plans = {
        "expiring": (60 * second, 60 * second, [0, 20, 40, 50]),
        "fresh": (60 * second, 60 * second, [90, 95]),
        "respanned": (60 * second, 200 * second, [0, 30, 70]),
        "by_days": (60 * hour, 60 * hour, [0, 3_600 * 30, 3_600 * 50]),
        "respanned_days": (20 * hour, 60 * hour, [0, 3_600 * 30, 3_600 * 50]),
        "silent": (60 * second, 60 * second, []),
    }
    for n, (provider, (span, _, times)) in enumerate(plans.items()):
        for i, seconds in enumerate(times):
            at, kind = T0 + seconds * second, KINDS[(n + i) % 3]
            with store.write() as tx:
                _add(tx, f"{provider}-{i}", provider, kind, at)
                quality_windows.observe(tx, provider, span, at, counted_as(*kind))
    later = T0 + 70 * hour
    now = T0 + 100 * second
    held: dict[datetime, dict[str, int]] = {}
    for moment in (now, later):
        spans = {p: read_span for p, (_, read_span, _) in plans.items()}
        with store.read() as tx:
            found = quality_windows.windows(tx, spans, moment)
            alone = {p: quality_windows.window(tx, p, spans[p], moment) for p in spans}
        assert list(found) == list(spans)
        for provider, span in spans.items():
            assert _counts(found[provider]) == _counts(alone[provider])
            assert _counts(found[provider]) == _recount(store, provider, span, moment)
        held[moment] = {p: sum(_counts(w).values()) for p, w in found.items()}
    # (40 s, 100 s] holds one of the first's calls; 200 s back all the third's; at 70 h the
    # window of days holds the calls of the second and third days.
    assert list(held[now].values()) == [1, 2, 3, 3, 3, 0]
    assert list(held[later].values()) == [0, 0, 0, 2, 2, 0]
