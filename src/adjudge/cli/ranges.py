"""A receipt log verified on several cores: ranges of its lines, one process a range.

``adjudge receipt verify-chain --jobs N`` cuts the log into N ranges of lines. This process
verifies the first while forked children verify the others (a fork shares the lines, so none is
copied), each sending back what :func:`~adjudge.receipts.verify_lines` found; the links are then
checked here in log order (:func:`~adjudge.receipts.link_ranges`), so the answer and the first
line named are exactly one pass's. Processes, not threads: a thread's Python half of each
receipt waits for the interpreter's lock, and handing the lock between cores costs more CPU
than the verification saves (docs/receipts.md, *Speed*).

Where a process cannot be forked (not Linux), the log is verified in one pass. A fork copies
only the thread that forks, so this is for a process with no other threads: the command's.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from adjudge.receipts import (
    ChainReport,
    Verified,
    VerifyingKey,
    link_ranges,
    verify_chain,
    verify_lines,
)

#: The fewest lines worth a process of their own: a short log is verified in one pass.
LINES_PER_JOB = 1_000


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_jobs(lines: int) -> int:
    """One process a core, and none with fewer than :data:`LINES_PER_JOB` lines."""
    return max(1, min(cores(), lines // LINES_PER_JOB))


def verify_in_ranges(
    lines: Sequence[bytes],
    key: VerifyingKey | str,
    *,
    expected_head: str | None = None,
    jobs: int = 1,
) -> ChainReport:
    """What :func:`~adjudge.receipts.verify_chain` answers for ``lines``, verified as ``jobs``
    ranges at once; it raises the same refusal, naming the same line."""
    if jobs <= 1 or len(lines) < 2 or not sys.platform.startswith("linux"):
        return verify_chain(lines, key, expected_head=expected_head)
    size = -(-len(lines) // jobs)  # ceiling: at most ``jobs`` ranges
    context = multiprocessing.get_context("fork")
    children: list[tuple[BaseProcess, Connection, int]] = []
    try:
        for start in range(size, len(lines), size):
            receiver, sender = context.Pipe(duplex=False)
            child = context.Process(
                target=_send_range, args=(sender, lines, key, start, start + size), daemon=True
            )
            child.start()
            sender.close()
            children.append((child, receiver, start))
        first = verify_lines(lines, key, 0, size)
        return link_ranges(_parts(first, children, lines, key, size), expected_head=expected_head)
    finally:
        for process, receiver, _ in children:
            receiver.close()
            if process.is_alive():
                process.kill()  # its range is not needed: the log was refused before it
            process.join()


def _parts(
    first: Verified,
    children: list[tuple[BaseProcess, Connection, int]],
    lines: Sequence[bytes],
    key: VerifyingKey | str,
    size: int,
) -> Iterator[Verified]:
    """Each range's part in log order, as each child sends it; a child that died without
    sending its part has its range verified here instead."""
    yield first
    for _, receiver, start in children:
        try:
            part = receiver.recv()
        except (EOFError, OSError):
            part = None
        yield part if isinstance(part, Verified) else verify_lines(lines, key, start, start + size)


def _send_range(
    sender: Connection, lines: Sequence[bytes], key: VerifyingKey | str, start: int, stop: int
) -> None:
    """A child's work: verify its range, send what it found."""
    try:
        sender.send(verify_lines(lines, key, start, stop))
    finally:
        sender.close()
