"""Every command reads its input files (and standard input) up to a bound, and only regular
files: a device such as ``/dev/zero`` or a pipe nobody writes to is refused at once with exit
2 and the reason, a file past the bound likewise (before, ``/dev/zero`` filled the memory until
the command died with a traceback, and a pipe hung it for good)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adjudge import input_files
from adjudge.cli import app

runner = CliRunner()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    criteria = tmp_path / "criteria.json"
    criteria.write_text(json.dumps({"min_length": 3}))
    result = tmp_path / "result.txt"
    result.write_text("A result long enough.")
    fifo = tmp_path / "nobody-writes.fifo"
    os.mkfifo(fifo)
    large = tmp_path / "large.json"
    large.write_text(json.dumps({"min_length": 3, "pad": "x" * 2048}))
    return {"criteria": criteria, "result": result, "fifo": fifo, "large": large}


@pytest.mark.parametrize("bad", ["/dev/zero", "fifo", "large"])
@pytest.mark.parametrize("where", ["criteria", "result", "lint"])
def test_an_input_that_is_no_regular_file_or_too_large_is_refused(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch, bad: str, where: str
) -> None:
    """``check``'s criteria and result and ``criteria lint``'s file: a device, a pipe and a
    file past the bound (here 1 KiB) each exit 2 naming the file and why."""
    monkeypatch.setattr(input_files, "INPUT_BYTES", 1024)
    source = bad if bad == "/dev/zero" else str(files[bad])
    args = {
        "criteria": ["check", "--criteria", source, str(files["result"])],
        "result": ["check", "--criteria", str(files["criteria"]), source],
        "lint": ["criteria", "lint", source],
    }[where]
    done = runner.invoke(app, args)
    assert done.exit_code == 2, (done.exit_code, done.output, done.exception)
    said = " ".join(done.stderr.split())
    why = "larger than 1,024 bytes" if bad == "large" else "not a regular file"
    assert "FILE_UNREADABLE" in said and why in said, said


def test_standard_input_is_read_to_the_bound(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result on standard input past the bound is refused; within it, checked."""
    monkeypatch.setattr(input_files, "INPUT_BYTES", 1024)
    args = ["check", "--criteria", str(files["criteria"]), "-"]
    done = runner.invoke(app, args, input="x" * 2048)
    assert done.exit_code == 2 and "larger than 1,024 bytes" in done.stderr, done.stderr
    done = runner.invoke(app, [*args, "--json"], input="A result long enough.")
    assert done.exit_code == 0, done.output


def test_standard_input_is_read_only_where_a_command_says_so(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-`` is standard input for ``check``'s result, and a file's name for its criteria (as
    the help says): criteria named ``-`` are a file that is not there, whatever standard input
    holds (read there, ``--sign`` read it a second time, empty, and signed that)."""
    monkeypatch.chdir(files["criteria"].parent)
    criteria = files["criteria"].read_text()
    done = runner.invoke(app, ["check", "--criteria", "-", str(files["result"])], input=criteria)
    assert done.exit_code == 2 and "FILE_UNREADABLE" in done.stderr, done.stderr


def test_a_file_is_opened_binary_where_the_platform_says_text(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the platform opens files as text unless told (its ``O_BINARY``), the flag is given:
    the bytes read are the file's, which a receipt's digest covers."""
    opened: list[int] = []
    real = os.open

    def open_(path: Any, flags: int, *args: Any) -> int:
        opened.append(flags)
        return real(path, flags, *args)

    monkeypatch.setattr(os, "O_BINARY", 0x8000, raising=False)
    monkeypatch.setattr(os, "open", open_)
    assert input_files.read_input(files["result"]) == files["result"].read_bytes()
    assert opened and opened[-1] & 0x8000


def test_standard_input_is_read_once_a_command(files: dict[str, Path]) -> None:
    """``criteria lint - --brief -``: standard input cannot be both; the second is refused,
    exit 2 (before, it read nothing the second time and linted with an empty brief)."""
    done = runner.invoke(app, ["criteria", "lint", "-", "--brief", "-"], input='{"min_length": 3}')
    assert done.exit_code == 2 and "standard input was read already" in done.stderr, done.stderr


def test_the_settings_file_and_key_files_are_read_as_inputs_are(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """``serve --config`` and a key file: a device or a pipe is refused at once, not read
    without end (``--config /dev/zero`` ended in a MemoryError) or waited on for good."""
    from adjudge.cli import keyfiles  # noqa: PLC0415
    from adjudge.errors import BadInput  # noqa: PLC0415
    from adjudge.settings import Settings  # noqa: PLC0415

    for source in (Path("/dev/zero"), files["fifo"]):
        with pytest.raises(BadInput) as refused:
            Settings.load(config=source)
        assert refused.value.code == "FILE_UNREADABLE" and "not a regular file" in str(
            refused.value
        )
    files["fifo"].chmod(0o600)
    with pytest.raises(BadInput) as refused:
        keyfiles.read_private(files["fifo"], "signing key")
    assert refused.value.code == "FILE_UNREADABLE"


def test_each_command_in_one_process_reads_its_own_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two `criteria lint -` run in one process on one standard input (the CLI called as a
    library, a terminal after ^D): each reads its own; the once-a-command mark starts anew
    with each command (kept for the process, the second was refused as read already)."""
    import io  # noqa: PLC0415
    import sys  # noqa: PLC0415

    def feed(fd: int, data: bytes) -> None:  # what a shell redirecting the input does
        r, w = os.pipe()
        os.write(w, data)
        os.close(w)
        os.dup2(r, fd)
        os.close(r)

    fd = os.dup(0)
    stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(fd, "r", closefd=True)))
    monkeypatch.setattr(sys, "stdin", stdin)
    try:
        for _ in range(2):
            feed(fd, b'{"min_length": 3}')
            code = 0
            try:
                app(["criteria", "lint", "-", "--json"], prog_name="adjudge")
            except SystemExit as exc:
                code = int(exc.code or 0)
            assert code in (0, 1), capsys.readouterr().err
    finally:
        stdin.close()
