"""The match worker: a child process that runs regress matches and can be killed mid-match.

Run as a script (``python -P _regexworker.py``) by ``_sandbox``; it imports nothing from adjudge
so it starts fast. Protocol on stdin/stdout, all integers little-endian:

* on start the worker writes one byte ``R`` once regress is imported;
* request: ``<dII`` (time limit in seconds, pattern byte length, text byte length), then the
  pattern and the text in UTF-8, both already in the engine's alphabet (``_regexsource``);
* reply: one byte, ``1`` (a match), ``0`` (no match) or ``E`` (regress refused the pattern).

Why the worker cannot outlive its parent: it exits when stdin reaches end of file (the parent
closed it or died), and before each match it arms a real-time timer with the default SIGALRM
action, so the kernel ends a match that runs past its limit plus a grace period even if no
parent is left to kill it.
"""

from __future__ import annotations

import os
import signal
import struct
from typing import Any

HEADER = struct.Struct("<dII")
READY = b"R"
MATCH = b"1"
NO_MATCH = b"0"
REFUSED = b"E"
#: Extra time the worker's own timer allows beyond the caller's limit (the parent kills first).
GRACE_SECONDS = 0.5
_CACHE_SIZE = 256


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def main() -> None:
    """Serve match requests until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent's Ctrl-C is the parent's to handle
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # a timer that fires ends this process
    # Keep the protocol's stdout private: anything printed by accident goes to stderr.
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    request_fd = 0

    import regress  # noqa: PLC0415  # after the pipes are set up, so a failure is visible

    cache: dict[str, Any] = {}
    _write_all(reply_fd, READY)
    while True:
        header = _read_exact(request_fd, HEADER.size)
        if header is None:
            return
        limit, pattern_size, text_size = HEADER.unpack(header)
        body = _read_exact(request_fd, pattern_size + text_size)
        if body is None:
            return
        pattern = body[:pattern_size].decode()
        regex = cache.get(pattern)
        if regex is None:
            try:
                regex = regress.Regex(pattern)
            except Exception:  # a refusal is a reply, never the end of the worker
                _write_all(reply_fd, REFUSED)
                continue
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            cache[pattern] = regex
        text = body[pattern_size:].decode()
        signal.setitimer(signal.ITIMER_REAL, limit + GRACE_SECONDS)
        found = regex.find(text) is not None
        signal.setitimer(signal.ITIMER_REAL, 0)
        _write_all(reply_fd, MATCH if found else NO_MATCH)


if __name__ == "__main__":
    main()
