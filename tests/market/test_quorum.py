"""A panel of verifiers, k of n, in the pure market: the tally of the votes on a submission,
and the panel's rules at posting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adjudge import Error
from adjudge.market import Context, Draft, Mode, Seat, Task, Vote, post, proof
from support.fakes import FakeChecker

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KEYS = [f"{i:x}" * 64 for i in range(1, 10)]


def _task(n: int, k: int, verdicts: str) -> Task:
    panel = tuple(Seat(f"v{i}", KEYS[i]) for i in range(n))
    votes = tuple(
        Vote(f"v{i}", KEYS[i], v == "P", {"P": "PASS", "F": "FAIL", "U": "UNKNOWN"}[v], {}, T0)
        for i, v in enumerate(verdicts)
    )
    return Task("t", "pat", Mode.AGENT, 10, T0, T0, panel=panel, quorum=k, votes=votes)


@pytest.mark.parametrize(
    ("n", "k", "votes", "decided"),
    [
        (3, 2, "", None),
        (3, 2, "P", None),
        (3, 2, "PP", "PASS"),
        (3, 2, "PF", None),  # the third vote decides: FAIL fails, PASS splits
        (3, 2, "PFF", "FAIL"),
        (3, 2, "PFP", "split"),  # a dissent sinks a PASS
        (3, 2, "FF", "FAIL"),
        (3, 2, "PU", "split"),  # no PASS without dissent, and one FAIL is too few
        (3, 1, "UP", None),  # a FAIL is still reachable
        (2, 2, "PF", "split"),
        (2, 1, "P", "PASS"),
        (2, 1, "F", "FAIL"),
        (2, 1, "U", None),
        (2, 1, "UP", "split"),
        (3, 3, "PPP", "PASS"),
        (3, 3, "PPF", "split"),
        (9, 5, "FFFFF", "FAIL"),
    ],
)
def test_the_tally(n: int, k: int, votes: str, decided: str | None) -> None:
    """k PASS with no dissent decide PASS, k FAIL decide FAIL, neither reachable is a split."""
    assert proof.tally(_task(n, k, votes)) == decided


def _draft(names: list[str], quorum: int | None = None) -> Draft:
    seats = tuple(Seat(name, KEYS[i % 9], opted_in=True) for i, name in enumerate(names))
    return Draft("pat", 10, T0 + timedelta(days=1), Mode.AGENT.value, panel=seats, quorum=quorum)


def test_a_panel_is_posted_with_its_quorum_and_one_seat_is_one_verifier() -> None:
    """A majority by default; a panel of one posts a task of one verifier, no panel at all."""
    ctx = Context(now=T0, checker=FakeChecker())
    task = post("t", _draft(["a", "b", "c"]), ctx).task
    assert (len(task.panel), task.quorum, task.verifier) == (3, 2, None)
    assert task.verifiers == ("a", "b", "c")
    one = post("t", _draft(["a"]), ctx).task
    assert (one.panel, one.verifier, one.verifier_key) == ((), "a", KEYS[0])
    assert proof.trust_policy(task).verifier_keys == frozenset(KEYS[:3])


@pytest.mark.parametrize(
    ("names", "quorum", "code"),
    [
        ([f"v{i}" for i in range(10)], None, "VERIFIERS_TOO_MANY"),
        (["a", "a"], None, "VERIFIER_REPEATED"),
        (["a", "pat"], None, "VERIFIER_IS_POSTER"),
        (["a", "b"], 3, "QUORUM_INVALID"),
        (["a", "b"], 0, "QUORUM_INVALID"),
    ],
)
def test_a_panel_that_cannot_stand_is_refused(
    names: list[str], quorum: int | None, code: str
) -> None:
    """The panel's rules, each with its code."""
    with pytest.raises(Error) as refused:
        post("t", _draft(names, quorum), Context(now=T0, checker=FakeChecker()))
    assert refused.value.code == code
