"""Answers are written by the fast encoder: compact, the same JSON value, never a silent null."""

from __future__ import annotations

import math

import pytest

from adjudge.app import Answer
from adjudge.service.deps import FastJSONResponse, reply
from adjudge.store import Store
from support.harness import make_harness


def test_a_state_changes_answer_is_the_same_value_written_compactly() -> None:
    response = reply(Answer({"score": 1e-7, "name": "é", "ok": True}, replayed=True))
    assert isinstance(response, FastJSONResponse)
    assert response.body == '{"score":1e-7,"name":"é","ok":true}'.encode()
    assert response.headers["idempotent-replayed"] == "true"


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_an_answer_holding_a_non_finite_number_is_refused_as_before(bad: float) -> None:
    """The standard encoder refused it (``allow_nan=False``); orjson alone would write null."""
    with pytest.raises(ValueError, match="Out of range float"):
        reply(Answer({"score": bad}))


def test_every_routes_answer_and_a_finalize_use_it(sqlite_store: Store) -> None:
    """A read answered by the framework's default and the finalize's own lane both parse as
    before: the default response class is the fast one."""
    h = make_harness(sqlite_store)
    assert h.client.app.router.default_response_class is FastJSONResponse  # type: ignore[attr-defined]
    tid = h.post("auto")
    h.ok("ann", "POST", f"/tasks/{tid}/accept")
    h.ok("ann", "POST", f"/tasks/{tid}/submissions", {"result": "Here it is."})
    view = h.ok("ann", "POST", f"/tasks/{tid}/finalize")
    assert view["id"] == tid
    assert h.ok("ann", "GET", f"/tasks/{tid}")["status"] == view["status"]
