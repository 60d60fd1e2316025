"""Another account's plain posts, timed while one account keeps the service busy: what a test
of "one party's work holds nobody else's writes" measures over real HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from support.harness import Harness
from support.live import serving

#: A plain manual task, the other account's post.
PLAIN = {"title": "t", "reward": "2000000", "deadline_hours": 24, "mode": "manual"}


def posts_beside(
    h: Harness, busy: Callable[[httpx.Client], bool], *, who: str, seconds: float = 3
) -> tuple[list[float], list[str]]:
    """Serve ``h``'s app; on 8 connections of ``who``, call ``busy`` (with a client of the API)
    until it returns False or ``seconds`` pass, while ``pam`` (made and funded here) posts
    plain tasks: pam's posts' times, and the answers that were not ``201``."""
    root = h.app.accounts.authenticate(h.keys["root"])
    h.keys["pam"] = h.app.accounts.create(None, "pam", ["poster"]).value["api_key"]
    h.app.accounts.deposit(root, "pam", 10**12)
    stop = threading.Event()
    times: list[float] = []
    failures: list[str] = []

    with serving(h.app) as base:

        def client(name: str) -> httpx.Client:
            auth = {"Authorization": f"Bearer {h.keys[name]}"}
            return httpx.Client(base_url=base + "/api/v1", timeout=60, headers=auth)

        def work() -> None:
            with client(who) as c:
                while not stop.is_set() and busy(c):
                    pass

        def other() -> None:
            with client("pam") as c:
                c.post("/tasks", json=PLAIN)  # the connection made before timing starts
                while not stop.is_set():
                    started = time.perf_counter()
                    r = c.post("/tasks", json=PLAIN)
                    times.append(time.perf_counter() - started)
                    if r.status_code != 201:
                        failures.append(r.text)
                    time.sleep(0.02)

        threads: list[Any] = [threading.Thread(target=work) for _ in range(8)]
        threads.append(threading.Thread(target=other))
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
    return times, failures
