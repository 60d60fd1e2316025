"""A resolver and a dialer for the address guard's tests: names answer what the test says, and
no connection leaves the machine.

``StubResolver`` answers each lookup of a name with the next of its answers (the last one
repeats), so a name can answer a public address first and ``127.0.0.1`` next (DNS rebinding).
``Dialer`` records every address the guard asks it to dial; it dials loopback as is, serves the
"public" addresses it is told to from loopback on the same port, and treats any other address
as unreachable.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpcore

#: Public addresses the tests pretend a name has (never dialed: a ``Dialer`` serves them).
PUBLIC = "93.184.216.34"
PUBLIC_TOO = "8.8.8.8"


@dataclass
class StubResolver:
    """Each name's answers in turn, the last repeated; every lookup recorded."""

    answers: dict[str, list[list[str]]]
    lookups: list[str] = field(default_factory=list)

    async def resolve(self, host: str, port: int) -> list[str]:
        turns = self.answers.get(host)
        seen = self.lookups.count(host)
        self.lookups.append(host)
        if not turns:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(turns[min(seen, len(turns) - 1)])


class Dialer(httpcore.AsyncNetworkBackend):
    """Records each address dialed; loopback and ``serves`` reach 127.0.0.1, others fail."""

    def __init__(self, serves: Iterable[str] = ()) -> None:
        self.serves = set(serves)
        self.dialed: list[str] = []
        self._real = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.dialed.append(host)
        if host in self.serves or ipaddress.ip_address(host).is_loopback:
            return await self._real.connect_tcp("127.0.0.1", port, timeout=timeout)
        raise httpcore.ConnectError(f"{host} is not reachable from a test")
