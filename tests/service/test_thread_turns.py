"""The request threads are taken in turn by account: one account's flood of requests queues
behind itself, and another account's request is answered after at most one of the flood's."""

from __future__ import annotations

import json
import threading
from functools import partial
from typing import Any

import anyio
import httpx
import pytest

from adjudge.service import ingress, turns
from adjudge.service.app import create_app
from adjudge.store import records
from support.harness import Harness


def test_a_flood_of_one_account_does_not_queue_another_behind_it(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One thread; the flood's first request holds it and nine more wait; another account's
    request, sent after them, is the next one served (first come, first served, it was the
    eleventh: behind every request of the flood)."""
    gate = threading.Event()
    served: list[str] = []
    me = h.app.accounts.me
    names = {h.account(name).id: name for name in ("ann", "bob")}

    def blocking(who: Any) -> Any:
        served.append(names[who.id])
        if len(served) == 1:
            gate.wait(10)
        return me(who)

    monkeypatch.setattr(h.app.accounts, "me", blocking)
    api = create_app(h.app, threads=1)

    async def main() -> None:
        transport = httpx.ASGITransport(app=api)
        async with (
            api.router.lifespan_context(api),
            httpx.AsyncClient(transport=transport, base_url="http://adjudge") as client,
        ):

            async def get(who: str) -> None:
                headers = {"Authorization": f"Bearer {h.keys[who]}"}
                r = await client.get("/api/v1/accounts/me", headers=headers)
                assert r.status_code == 200, r.text

            async with anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(get, "bob")
                with anyio.fail_after(5):
                    while not served:
                        await anyio.sleep(0.005)
                await anyio.sleep(0.05)  # the other nine wait for the thread
                group.start_soon(get, "ann")
                await anyio.sleep(0.05)
                gate.set()
        assert served[:2] == ["bob", "ann"], served
        assert len(served) == 11

    anyio.run(main)


def test_a_waiter_given_up_leaves_no_turn_behind() -> None:
    """A request cancelled while it waits for a thread takes no turn with it: the next one
    still gets the thread, and every turn is given back."""
    gate = threading.Event()

    async def main() -> None:
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = 1
        turns.install()

        async def run(owner: str, fn: Any) -> Any:
            turns.serve_as(owner)
            return await anyio.to_thread.run_sync(fn)

        async with anyio.create_task_group() as group:
            group.start_soon(run, "a", lambda: gate.wait(10))
            await anyio.sleep(0.02)
            with anyio.move_on_after(0.05):
                await run("b", lambda: None)  # waits, then gives up
            gate.set()
            with anyio.fail_after(5):
                assert await run("c", lambda: "answered") == "answered"
        assert limiter.borrowed_tokens == 0
        found = turns._turns(limiter)
        assert found.admitted == 0
        assert not found.waiting
        assert found.holding == found.last == found.borrowers == {}

    anyio.run(main)


def test_one_account_leaves_a_large_body_parser_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two threads that parse large bodies: one account's stream of bodies holds one of
    them at most, so another account's body is parsed at once (before, it waited behind every
    body of the stream: 25-45 s behind forty 4 MiB bodies)."""
    gate = threading.Event()
    parsed: list[str] = []
    real = ingress.parse

    def slow(body: bytes) -> Any:
        value = real(body)
        parsed.append(value["who"])
        if value["who"] == "flood":
            gate.wait(10)
        return value

    monkeypatch.setattr(ingress, "parse", slow)
    pad = "x" * (ingress.PARSE_ON_LOOP + 1)

    async def send(who: str) -> Any:
        turns.serve_as(who)
        return await ingress.parse_async(json.dumps({"who": who, "pad": pad}).encode())

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(send, "flood")
            await anyio.sleep(0.1)
            assert parsed == ["flood"]  # one parser theirs, the other left free
            with anyio.fail_after(5):
                assert (await send("ann"))["who"] == "ann"
            gate.set()
        assert parsed.count("flood") == 6

    anyio.run(main)


def test_one_account_reads_a_few_large_bodies_at_once(h: Harness) -> None:
    """An account's large bodies are read four at a time: its further requests wait before
    their bodies are read (held whole with their parsed values, 200 of one account's 4 MiB
    bodies took the process to 1.24 GB), and another account's body is read at once."""
    api = create_app(h.app)
    body = json.dumps({"criteria": {}, "pad": "x" * (ingress.PARSE_ON_LOOP + 1)}).encode()
    reading: list[str] = []
    never = anyio.Event()

    def scope(who: str, path: str) -> dict[str, Any]:
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "server": ("adjudge", 80),
            "client": ("127.0.0.1", 1),
            "headers": [
                (b"host", b"adjudge"),
                (b"authorization", f"Bearer {h.keys[who]}".encode()),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }

    async def request(who: str, path: str, *, slow: bool) -> int:
        sent = False
        status = 0

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await never.wait()
                return {"type": "http.disconnect"}
            reading.append(who)
            sent = True
            if slow:
                await never.wait()  # a sender that never finishes
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        await api(scope(who, path), receive, send)
        return status

    async def main() -> None:
        async with api.router.lifespan_context(api), anyio.create_task_group() as group:
            for path in ("/api/v1/criteria/lint", "/"):
                for _ in range(3):
                    group.start_soon(partial(request, "bob", path, slow=True))
            await anyio.sleep(0.1)
            assert reading == ["bob"] * turns.LARGE_BODIES  # through either door
            with anyio.fail_after(5):
                assert await request("ann", "/api/v1/criteria/lint", slow=False) == 200
            assert reading.count("ann") == 1
            group.cancel_scope.cancel()

    anyio.run(main)


def test_a_key_the_service_does_not_know_is_looked_up_off_the_event_loop(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wrong keys are looked up on threads of their own: while their reads are slow, an
    account whose key the service knows is answered (before, each wrong key's reads ran on the
    event loop, which answered nothing else meanwhile)."""
    gate = threading.Event()
    real = records.account_by_key

    def slow(tx: Any, api_key: str) -> Any:
        if api_key.startswith("adj_wrong"):
            gate.wait(2)
        return real(tx, api_key)

    api = create_app(h.app)
    done: list[str] = []

    async def main() -> None:
        transport = httpx.ASGITransport(app=api)
        async with (
            api.router.lifespan_context(api),
            httpx.AsyncClient(transport=transport, base_url="http://adjudge") as client,
        ):

            async def get(who: str, key: str, status: int) -> None:
                headers = {"Authorization": f"Bearer {key}"}
                r = await client.get("/api/v1/accounts/me", headers=headers)
                assert r.status_code == status, r.text
                done.append(who)

            await get("ann", h.keys["ann"], 200)  # the service knows ann's key now
            monkeypatch.setattr(records, "account_by_key", slow)
            async with anyio.create_task_group() as group:
                for n in range(3):
                    group.start_soon(get, "wrong", f"adj_wrong{n}", 401)
                await anyio.sleep(0.05)
                started = anyio.current_time()
                await get("ann", h.keys["ann"], 200)
                assert anyio.current_time() - started < 1
                gate.set()
        assert done == ["ann", "ann", "wrong", "wrong", "wrong"]

    anyio.run(main)
