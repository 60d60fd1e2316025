"""A name server on loopback for the resolver's tests: real DNS over UDP (``dnslib``), with
names that answer at once, answer late, or do not exist.

``NameServer(answers, slow=...)`` answers each name in ``answers`` with its IPv4 addresses (A
records; nothing for AAAA), every name under a ``slow`` suffix only after ``delay`` seconds, and
any other name NXDOMAIN. Each request is served on a thread of its own (``dnslib``'s threading
UDP server), so a late answer keeps no other waiting: what the tests measure is the client.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from dnslib import QTYPE, RCODE, RR, A
from dnslib.server import BaseResolver, DNSServer


class _Answers(BaseResolver):  # type: ignore[misc]  # dnslib carries no types
    def __init__(self, answers: dict[str, list[str]], slow: str, delay: float) -> None:
        self.answers = {name.rstrip(".").lower(): found for name, found in answers.items()}
        self.slow = slow.lower()
        self.delay = delay
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def resolve(self, request: Any, handler: Any) -> Any:
        name = str(request.q.qname).rstrip(".").lower()
        with self._lock:
            self.asked.append(name)
        if self.slow and name.endswith(self.slow):
            time.sleep(self.delay)
            return request.reply()  # no address, after the wait
        reply = request.reply()
        if name not in self.answers:
            reply.header.rcode = RCODE.NXDOMAIN
        elif request.q.qtype == QTYPE.A:
            for address in self.answers[name]:
                reply.add_answer(RR(request.q.qname, QTYPE.A, rdata=A(address), ttl=0))
        return reply


class _Quiet:
    """dnslib's logger, saying nothing (it prints every request and reply by default)."""

    def __getattr__(self, _name: str) -> Any:
        return lambda *_args: None


class NameServer:
    """A UDP name server on 127.0.0.1 (a free port), started at once; ``close()`` stops it."""

    def __init__(
        self, answers: dict[str, list[str]], *, slow: str = "", delay: float = 8.0
    ) -> None:
        self.resolver = _Answers(answers, slow, delay)
        self._server = DNSServer(self.resolver, address="127.0.0.1", port=0, logger=_Quiet())
        self._server.start_thread()
        self.address = f"127.0.0.1:{self._server.server.server_address[1]}"

    @property
    def asked(self) -> list[str]:
        """Every name asked so far, in order (lower case, no root dot)."""
        return list(self.resolver.asked)

    def close(self) -> None:
        self._server.server.shutdown()
        self._server.server.server_close()
