"""A provider's running quality counts always equal a full recount of its window: as calls
arrive, as they expire at the window's edge, when the span changes or the clock goes back,
when the provider is not called for longer than its window, at UTC midnights, with reported
calls, the provider's own calls of its tool, shadow (not enforced) calls and errors mixed in;
and a read of a provider not called for long counts its edge's day, not what left its window."""

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

_KIND = st.sampled_from(KINDS)
_SOURCE = st.sampled_from(["gateway", "gateway", "gateway", "reported"])
_WHO = st.sampled_from(["caller", "caller", "own"])  # "own": the provider calls its own tool
_call = st.tuples(
    st.just("call"),
    st.integers(0, 40),  # seconds since the step before (0: the same instant)
    _KIND,
    _SOURCE,
    _WHO,
)
_span = st.tuples(st.just("span"), st.sampled_from([30, 48, 60, 200]))
_clock_back = st.tuples(st.just("back"), st.integers(1, 90))
_read = st.tuples(st.just("read"), st.integers(0, 120))
#: The provider not called for more than its window: the clock moves on by whole spans and
#: some units, and the window is read there.
_idle = st.tuples(st.just("idle"), st.integers(1, 3), st.integers(0, 59))
#: A microsecond either side of a UTC midnight, or on it: ``midnight`` is a call made there
#: (the next midnight), ``edge_at`` reads the window whose edge is there (the midnight at or
#: before the present edge, or one of the three after it).
_OFFSETS = st.sampled_from([timedelta(microseconds=-1), timedelta(0), timedelta(microseconds=1)])
_midnight = st.tuples(st.just("midnight"), _OFFSETS, _KIND, _SOURCE, _WHO)
_edge_at = st.tuples(st.just("edge_at"), st.integers(0, 3), _OFFSETS)
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


def _midnight_after(moment: datetime) -> datetime:
    """The first UTC midnight after ``moment``."""
    day = moment.astimezone(UTC).date() + timedelta(days=1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


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
        st.one_of(
            _call, _call, _call, _span, _clock_back, _read, _supersede, _idle, _midnight, _edge_at
        ),
        min_size=10,
        max_size=40,
    )
)
@pytest.mark.parametrize("unit", [timedelta(seconds=1), timedelta(hours=1)], ids=["s", "h"])
def test_running_counts_equal_a_recount(
    store: Store, unit: timedelta, steps: list[tuple[object, ...]]
) -> None:
    """On each database, after every call, span change, clock step back, read, verdict
    superseded (inside the window or expired from it), idle stretch longer than the window and
    call a microsecond from a UTC midnight or on it, the window the store keeps or reads equals
    a recount of the calls themselves — in seconds, and in hours, where a window spans days and
    one no running counts fit, or whose counts were moved before its edge's day, is read from
    the daily counts and its edge's day; and so does a read whose edge is a microsecond from a
    midnight."""
    provider = f"prov-{next(_providers)}"
    with store.write() as tx:
        if records.account(tx, "caller") is None:
            records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)
        records.create_account(tx, provider, ["provider"], f"key-{provider}", opt_in=False, at=T0)
    now, span = T0, 60 * unit
    made: list[str] = []
    for n, step in enumerate(steps):
        if step[0] in ("call", "midnight"):
            _, gap, kind, source, who = step
            if step[0] == "call":
                now += int(gap) * unit  # type: ignore[call-overload]
            else:
                now = _midnight_after(now) + gap  # type: ignore[operator]
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
            if step[0] == "idle":
                _, spans, units = step
                now += int(spans) * span + int(units) * unit  # type: ignore[call-overload]
                later = now
            elif step[0] == "edge_at":
                _, days, offset = step
                edge = _midnight_after(now - span) + (int(days) - 1) * timedelta(days=1)  # type: ignore[call-overload]
                later = edge + offset + span  # type: ignore[operator]
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


@pytest.mark.parametrize("history", [48, 480])
def test_a_read_long_after_the_last_call_counts_no_call_that_left_the_window(
    store: Store, monkeypatch: pytest.MonkeyPatch, history: int
) -> None:
    """On each database, alone and in the operator's list: the window of a provider not called
    for 33 days (its span 30) is read from the calls of its edge's day, none, and the daily
    counts, not as its running counts less the calls that left it since they were moved (all
    ``history`` of them, on every read before); every range of calls read is a day at most."""
    with store.write() as tx:
        records.create_account(tx, "caller", ["agent"], "key-caller", opt_in=True, at=T0)
    span, hour = timedelta(days=30), timedelta(hours=1)
    last = T0 + (history - 1) * hour
    with store.write() as tx:
        for n in range(history):  # an hour apart: the last call's at ``last``
            _add(tx, f"c{n}", "prov", KINDS[n % 2], T0 + n * hour)
        quality_windows.observe(tx, "prov", span, last, counted_as(*KINDS[(history - 1) % 2]))
    ranges: list[tuple[datetime, datetime]] = []
    read = quality_windows._recount_read

    def noted(
        provider: str,
        after: datetime,
        until: datetime | None = None,
        *,
        before: datetime | None = None,
    ) -> object:
        end = until if until is not None else before
        assert end is not None
        ranges.append((after, end))
        return read(provider, after, until, before=before)

    monkeypatch.setattr(quality_windows, "_recount_read", noted)
    now = last + timedelta(days=33, hours=5)  # the edge: 3 days and 5 hours after the last call
    with store.read() as tx:
        alone = quality_windows.window(tx, "prov", span, now)
        listed = quality_windows.windows(tx, {"prov": span}, now)["prov"]
    assert _counts(alone) == _counts(listed) == dict.fromkeys(_counts(alone), 0)
    assert ranges, "the edge's day is counted from its calls"
    for after, end in ranges:
        assert end - after <= timedelta(days=1), (after, end)
        counted = [n for n in range(history) if after < T0 + n * hour < end]
        assert counted == [], (after, end)
