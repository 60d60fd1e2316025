"""The benchmarks' load generator: a minimal HTTP/1.1 keep-alive client.

The load generator shares the machine's CPUs with the server it measures, and a full client
library costs more CPU per request than the server's own work; this one sends a request and
reads a Content-Length answer, nothing more. And what the whole machine spent while it ran
(:func:`machine_cpu`): on a machine of two cores the server, the database and the load share it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path


class Http:
    """Keep-alive connections to one ``http://host:port``, each request with ``headers``."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self.head = f"Host: {host}:{port}\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()
        )
        self.free: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.opened: list[asyncio.StreamWriter] = []

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        """One request (with ``headers`` beside the connection's); returns the status and the
        body."""
        head = self.head + "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        request = (
            f"{method} {path} HTTP/1.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body
        )
        line = b""
        if self.free:
            reader, writer = self.free.pop()
            with contextlib.suppress(ConnectionError):  # closed while idle: open a new one
                writer.write(request)
                line = await reader.readline()
        if not line:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            self.opened.append(writer)
            writer.write(request)
            line = await reader.readline()
        status = int(line.split()[1])
        length = None
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise SystemExit("An answer came without a Content-Length.")
        answer = await reader.readexactly(length)
        self.free.append((reader, writer))
        return status, answer

    async def close(self) -> None:
        for writer in self.opened:
            writer.close()


def machine_cpu() -> tuple[float, float] | None:
    """The machine's busy and all CPU seconds since boot, over every core (Linux
    ``/proc/stat``; None elsewhere): what the servers, PostgreSQL and this driver spent."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle and waiting for IO
    return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick
