"""One intent whose answer is lost on the way back is done once: the client asks again with the
same Idempotency-Key, waiting while the first request is still being done (a paid call still
forwarded), and when it gives up it says the key, which the CLI takes back
(``--idempotency-key``) to be answered as the first was; a command without that option does not
offer it."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from typer.testing import CliRunner

from adjudge.cli import app as cli
from adjudge.client import Client
from adjudge.store import Store
from support.harness import make_harness
from support.live import serving
from support.weather import PRICE, World, weather_world

Handle = Callable[[httpx.HTTPTransport, httpx.Request], httpx.Response]


@pytest.fixture
def world(sqlite_store: Store) -> Iterator[World]:
    """The weather world, its provider taking 1.5 s (within the gateway's wait: it settles)."""
    with weather_world(sqlite_store) as w:
        w.script.answer = "slow"
        w.script.slow_for = 1.5
        yield w


def _lose_answers(
    monkeypatch: pytest.MonkeyPatch, path: str, lose: Callable[[], bool]
) -> list[str | None]:
    """Each POST to ``path`` reaches the service, but while ``lose()`` its answer is lost (a
    connection reset): the keys the requests were sent with."""
    real: Handle = httpx.HTTPTransport.handle_request
    keys: list[str | None] = []

    def handle(transport: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith(path):
            keys.append(request.headers.get("idempotency-key"))
            if lose():
                request.read()
                threading.Thread(target=real, args=(transport, request), daemon=True).start()
                time.sleep(0.1)  # the service has it
                raise httpx.ReadError("connection reset by peer", request=request)
        return real(transport, request)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", handle)
    return keys


def _first_only() -> Callable[[], bool]:
    lost = [False]

    def lose() -> bool:
        first, lost[0] = not lost[0], True
        return first

    return lose


def _settled(world: World) -> list[str]:
    """The caller's calls once none is pending."""
    deadline = time.monotonic() + 20
    while True:
        calls = world.h.ok("ann", "GET", "/gateway/calls?limit=50")["calls"]
        if all(c["status"] is not None for c in calls) or time.monotonic() > deadline:
            return [str(c["status"]) for c in calls]
        time.sleep(0.1)


def test_a_paid_call_whose_answer_is_lost_is_paid_once_by_the_client(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client asks again with the key while the first call is forwarded (the service says
    it is still running) and returns its answer: one call, one charge."""
    keys = _lose_answers(monkeypatch, "/gateway/calls", _first_only())
    before = world.h.balance("wallet:ann")
    with Client(world.service, world.h.keys["ann"]) as client:
        answer = client.call_tool("weather_forecast", {"city": "berlin"})
    assert answer["status"] == "settled"
    assert len(set(keys)) == 1 and len(keys) >= 2
    assert _settled(world) == ["settled"]
    assert before - world.h.balance("wallet:ann") == PRICE


def test_a_paid_call_whose_answer_is_lost_is_paid_once_by_the_cli(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`adjudge tools call` the same: it exits 0 with the first call's answer."""
    _lose_answers(monkeypatch, "/gateway/calls", _first_only())
    before = world.h.balance("wallet:ann")
    args = ["tools", "--url", world.service, "--key", world.h.keys["ann"], "call"]
    result = CliRunner().invoke(cli, [*args, "weather_forecast", '{"city": "berlin"}'])
    assert result.exit_code == 0, result.stderr
    assert _settled(world) == ["settled"]
    assert before - world.h.balance("wallet:ann") == PRICE


def test_a_post_whose_answers_are_lost_is_funded_once_with_the_key_it_printed(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every answer to `adjudge task post` is lost for a while: it exits 2 saying it may have
    been done and the key it was sent with; run again with that key, it is answered as the
    first was (one task funded), where a new key would have funded a second."""
    h = make_harness(sqlite_store)
    losing = [True]
    keys = _lose_answers(monkeypatch, "/api/v1/tasks", lambda: losing[0])
    before = h.balance("wallet:pat")
    with serving(h.app) as url:
        args = ["task", "--url", url, "--key", h.keys["pat"], "post", "--title", "Summary"]
        args += ["--reward", "2"]
        first = CliRunner().invoke(cli, args)
        assert first.exit_code == 2
        key = re.search(r"Idempotency-Key (\S+) ", first.stderr)
        assert key and key.group(1) == keys[0]
        assert f"Run the command again with --idempotency-key {key.group(1)}." in first.stderr
        losing[0] = False
        again = CliRunner().invoke(cli, [*args, "--idempotency-key", key.group(1)])
        assert again.exit_code == 0, again.stderr
        mine = h.ok("pat", "GET", "/tasks?mine=true")["tasks"]
    assert len(mine) == 1
    assert before - h.balance("wallet:pat") == 2_000_000


def test_a_step_whose_answers_are_lost_does_not_offer_a_key_its_command_lacks(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every answer to `adjudge task cancel` is lost: it exits 2 saying it may have been done,
    and, as the command takes no --idempotency-key, says to see whether it was done before
    running it again (it offered the flag the command refuses)."""
    h = make_harness(sqlite_store)
    posted = {"title": "t", "brief": "b", "reward": "1000000", "mode": "manual", "criteria": {}}
    task = h.ok("pat", "POST", "/tasks", posted | {"deadline_hours": 24})
    _lose_answers(monkeypatch, "/cancel", lambda: True)
    with serving(h.app) as url:
        args = ["task", "--url", url, "--key", h.keys["pat"], "cancel", task["id"]]
        lost = CliRunner().invoke(cli, args)
    assert lost.exit_code == 2
    assert "Run the command again with --idempotency-key" not in lost.stderr
    assert "This command takes no --idempotency-key: see whether it was done" in lost.stderr
