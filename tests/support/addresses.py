"""A resolver and a dialer for the address guard's tests: names answer what the test says, and
no connection leaves the machine.

``StubResolver`` answers each lookup of a name with the next of its answers (the last one
repeats), so a name can answer a public address first and ``127.0.0.1`` next (DNS rebinding).
``Dialer`` (the guard's ``dial``) records every address a connection tries; it dials loopback as
is, serves the "public" addresses it is told to from loopback on the same port, and treats any
other address as unreachable (refused without a packet sent).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohappyeyeballs import AddrInfoType

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


class Dialer:
    """Records each address dialed; loopback and ``serves`` reach 127.0.0.1, others fail.

    The guard's ``dial``: it makes the socket for each address a connection tries, and that
    socket connects the "public" addresses it serves to 127.0.0.1 on the same port instead.
    """

    def __init__(self, serves: Iterable[str] = ()) -> None:
        self.serves = set(serves)
        self.dialed: list[str] = []

    def __call__(self, addr_info: AddrInfoType) -> socket.socket:
        family, kind, proto, _, _ = addr_info
        return _FakeNetwork(self, family, kind, proto)

    def route(self, address: Any) -> Any:
        """Where a connection to ``address`` (a socket address) goes: itself for loopback,
        127.0.0.1 for a served address (IPv4-mapped on an IPv6 socket), nowhere for others."""
        host, port = str(address[0]), int(address[1])
        self.dialed.append(host)
        if ipaddress.ip_address(host).is_loopback:
            return address
        if host in self.serves:
            return ("127.0.0.1", port) if len(address) == 2 else ("::ffff:127.0.0.1", port, 0, 0)
        raise ConnectionRefusedError(f"{host} is not reachable from a test")


class _FakeNetwork(socket.socket):
    """A TCP socket whose connection goes where its ``Dialer`` routes the address dialed (the
    event loop connects a non-blocking socket through its ``connect``)."""

    def __init__(self, dialer: Dialer, family: int, kind: int, proto: int) -> None:
        super().__init__(family, kind, proto)
        self._dialer = dialer

    def connect(self, address: Any) -> None:
        super().connect(self._dialer.route(address))
