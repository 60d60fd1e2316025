"""Reading a file a person names (a command's input, the settings file): up to a bound, and
only a regular file, so a device or a pipe given by mistake is refused at once rather than
read without end or waited on for good. This module imports nothing of adjudge."""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

__all__ = ["INPUT_BYTES", "new_command", "read_input"]

#: The most bytes a command reads of an input file, or of its standard input: past it, the file
#: is refused rather than held whole (``/dev/zero`` as a result filled the memory until the
#: command died).
INPUT_BYTES = 64 * 1024 * 1024


#: The standard input read once already by the running command (a second read got nothing: a
#: command given ``-`` for two inputs checked the second as empty, and signed that).
_stdin_read: object = None


def new_command() -> None:
    """A command begins: its standard input has not been read (the CLI's root calls this, so
    a second command in one process, or one run as a library, reads its own)."""
    global _stdin_read  # noqa: PLW0603 - the mark :func:`read_input` keeps for one command
    _stdin_read = None


def read_input(source: str | Path, limit: int | None = None, *, stdin: bool = False) -> bytes:
    """The bytes of the file ``source`` (with ``stdin``, ``-`` is standard input, where a
    command says so: once a command), at most ``limit`` (by default :data:`INPUT_BYTES`). An
    ``OSError`` (what each command already says for an unreadable file) for a file that is not
    a regular one (a device or a pipe, read without end or waited on for good: it is opened
    without waiting, and looked at before it is read), or is larger than ``limit``."""
    limit = INPUT_BYTES if limit is None else limit
    if stdin and str(source) == "-":
        global _stdin_read  # noqa: PLW0603 - what this process's standard input gave already
        if _stdin_read is sys.stdin:
            raise OSError(errno.EINVAL, "standard input was read already for another input")
        _stdin_read = sys.stdin
        data = sys.stdin.buffer.read(limit + 1)
    else:  # binary where the platform has text files; a pipe or device opened without a wait
        flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(source, flags)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file (a device, a pipe or a directory)")
            data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes")
    return data
