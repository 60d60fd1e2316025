"""The policy each of a page of tools names at a moment, read a reference at a time, is the one a
model of every version gives: the version named if it was registered by then, else the highest
registered by then; nothing for a policy registered only after."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from adjudge.store import Store, calls, records
from support.steps import sqlite_steps
from support.trips import traced

T0 = datetime(2026, 2, 1, tzinfo=UTC)


def _registered(
    store: Store, versions: range = range(1, 6), *, account: bool = True
) -> list[calls.StoredPolicy]:
    """Three tools' policies, two ids each, versions registered at shuffled moments."""
    rng = random.Random(3)
    made: list[calls.StoredPolicy] = []
    with store.write() as tx:
        if account:
            records.create_account(tx, "prov", ["provider"], "key-prov", opt_in=False, at=T0)
        for tool in ("maps", "tides", "weather"):
            for pid in ("strict", "loose"):
                for version in versions:
                    made.append(
                        calls.add_policy(
                            tx,
                            policy_id=pid,
                            version=version,
                            tool=tool,
                            contract_version="1",
                            document={"v": version},
                            digest=f"sha256:{tool}{pid}{version}".ljust(71, "0"),
                            by="prov",
                            at=T0 + timedelta(hours=version * 10 + rng.randint(0, 9)),
                        )
                    )
    return made


def _model(
    made: list[calls.StoredPolicy], ref: tuple[str, str, int | None], at: datetime
) -> int | None:
    tool, pid, version = ref
    kept = [
        p.version
        for p in made
        if (p.tool, p.policy_id) == (tool, pid)
        and p.registered_at <= at
        and version in (None, p.version)
    ]
    return max(kept, default=None)


def test_each_reference_is_the_policy_a_model_of_every_version_gives(store: Store) -> None:
    made = _registered(store)
    refs = [
        (tool, pid, version)
        for tool in ("maps", "tides", "weather", "none")
        for pid in ("strict", "loose", "other")
        for version in (None, 1, 3, 5)
    ]
    for hours in (5, 15, 33, 47, 80):
        at = T0 + timedelta(hours=hours)
        with store.read() as tx:
            found = calls.policies_in_force(tx, [*refs, refs[0]], at)
        wanted = {ref: _model(made, ref, at) for ref in refs}
        assert {ref: p.version for ref, p in found.items()} == {
            ref: v for ref, v in wanted.items() if v is not None
        }, hours
        assert all(p.tool == ref[0] and p.policy_id == ref[1] for ref, p in found.items())


def test_a_page_of_references_costs_the_round_trips_of_one_on_postgresql(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL the references of a page are read together: three cost the round trips
    one does."""
    _registered(store)
    if store.dialect != "postgresql":
        return
    sent = traced(monkeypatch)
    trips = []
    for tools in (("maps",), ("maps", "tides", "weather")):
        with store.read() as tx:
            calls.policies_in_force(
                tx, [(t, "strict", None) for t in tools], T0 + timedelta(days=9)
            )
        trips.append(sent[-1].trips)
    assert trips[0] == trips[1], trips


def test_the_work_of_a_page_does_not_grow_with_the_versions(store: Store) -> None:
    """On SQLite, the policies in force for three references take the same virtual machine
    steps with 5 versions of each policy as with 200 (within 10%; the code before read every
    version of the page's tools' policies: 40× the steps)."""
    _registered(store)
    refs = [(tool, "strict", None) for tool in ("maps", "tides", "weather")]
    at = T0 + timedelta(days=999)
    few = sqlite_steps(store, lambda tx: calls.policies_in_force(tx, refs, at))
    _registered(store, range(6, 201), account=False)
    many = sqlite_steps(store, lambda tx: calls.policies_in_force(tx, refs, at))
    assert [p.version for p in few[0].values()] == [5, 5, 5]
    assert [p.version for p in many[0].values()] == [200, 200, 200]
    if store.dialect == "sqlite":
        assert many[1] <= few[1] * 1.1, (few[1], many[1])
