"""A real uvicorn server on loopback, in a thread, over a harness's use cases."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from adjudge.app import App
from adjudge.service import create_app
from adjudge.service.http11 import BoundedHttpTools


class QuickServer(uvicorn.Server):
    """uvicorn's server, stopping as soon as it is told to.

    uvicorn looks at its exit flag every 100 ms and then sleeps 100 ms more before it waits
    for the open connections, polling every 100 ms: a fifth of a second or more a server,
    and a test world stops two, over several hundred tests. This one looks every 5 ms and
    otherwise stops as uvicorn does: no new connections, the open ones told to close and
    waited for (a request still running finishes first), then the application's shutdown.
    """

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            await asyncio.sleep(0.005)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        while self.server_state.connections or self.server_state.tasks:
            await asyncio.sleep(0.005)
        await self.lifespan.shutdown()


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: App, around: Callable[[Any], Any] | None = None) -> Iterator[str]:
    """Serve ``app`` on loopback (its ASGI application wrapped by ``around``, if given);
    yields the base URL; stops the server on exit."""
    port = free_port()
    asgi = create_app(app) if around is None else around(create_app(app))
    config = uvicorn.Config(
        asgi, host="127.0.0.1", port=port, log_level="warning", http=BoundedHttpTools
    )
    server = QuickServer(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(2000):
        if server.started:
            break
        time.sleep(0.002)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
