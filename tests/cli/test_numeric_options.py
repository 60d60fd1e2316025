"""Every number a command takes is read by one of two strict readers: a whole number is ASCII
digits (a ``-`` first at most), a number a plain finite decimal, each in its option's range;
``8_000``, `` 5``, ``5.0``, ``nan``, ``inf`` and ``1e400`` are usage errors (exit 2) naming the
option, before anything is read or called."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
import typer.main
from typer.testing import CliRunner

from adjudge.cli import app
from adjudge.cli._common import Number, Whole, seconds
from support.live import free_port


def _params(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """Each option and argument of every command under ``command``, with its command's path."""
    for param in command.params:
        yield " ".join((*path, str(param.name))), param
    for name, sub in getattr(command, "commands", {}).items():
        yield from _params(sub, (*path, name))


def _number_kind(annotation: Any) -> type | None:
    """``int`` or ``float`` if a parameter's annotation holds that number (``int | None``, a
    list of them), else None."""
    for kind in (annotation, *get_args(annotation)):
        if kind in (int, float):
            return kind
    return None


PARAMS = list(_params(typer.main.get_command(app)))
NUMBERS = [(name, p) for name, p in PARAMS if _number_kind(p.type_descriptor.annotation)]


def test_the_walk_sees_every_command_s_numbers() -> None:
    """The walk reaches nested groups' options (a walk that shrank would pass vacuously)."""
    names = {name for name, _ in NUMBERS}
    assert {"serve port", "worker poll", "task list limit", "calls quality window_days"} <= names


@pytest.mark.parametrize(("name", "param"), NUMBERS, ids=[name for name, _ in NUMBERS])
def test_every_number_is_read_by_a_strict_reader(name: str, param: Any) -> None:
    """A whole number is read by :class:`Whole`, a number by :class:`Number`; a range shown in
    the help is the one read (typer's own reading took ``8_000``, ``nan`` and ``inf``)."""
    kind = _number_kind(param.type_descriptor.annotation)
    reader = param.type_descriptor.parameter_info.parser
    assert isinstance(reader, Whole if kind is int else Number), name
    assert (param.min, param.max) in {(None, None), (reader.least, reader.most)}, name


def _invoke(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run ``adjudge args`` where no service answers, serving nothing and in ``tmp_path``."""
    monkeypatch.setattr("uvicorn.run", lambda *_, **__: pytest.fail("served"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "result": "x", "criteria": {}}\n')
    env = {"ADJUDGE_URL": f"http://127.0.0.1:{free_port()}", "ADJUDGE_API_KEY": "adj_k"}
    return CliRunner().invoke(app, args, env=env)


@pytest.mark.parametrize(
    "args",
    [
        *[["calls", "list", "--limit", v] for v in ("1_0", " 5", "5 ", "5.0", "+5", "٥", "0x5")],
        *[["task", "list", "--limit", v] for v in ("2_0", "1e1")],
        *[["task", "post", "--hours", v] for v in ("nan", "inf", "-inf", "1e400", "1_0.5", " 5")],
        *[["task", "post", "--reward-minor", v] for v in ("2_000_000", "2e6", "2000000.0")],
        ["receipt", "export", "--after", "-1"],
        ["check-batch", "cases.jsonl", "--workers", "-3"],
        ["serve", "--port", "8_000"],
        ["serve", "--port", " 8000"],
        ["serve", "--upkeep-seconds", "nan"],
        ["serve", "--price-notice-hours", "1e400"],
        ["worker", "--model", "m", "--key", "k", "--poll", "1_0"],
    ],
    ids=repr,
)
def test_a_lax_number_is_a_usage_error_naming_its_option(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each was read as a number before (``1_0`` as 10, ``nan`` as not a number, ``-3``
    workers crashed the batch): now exit 2, the option named, nothing called or served."""
    r = _invoke(args, tmp_path, monkeypatch)
    option = next(a for a in reversed(args) if a.startswith("--"))
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
    assert f"Invalid value for '{option}'" in r.stderr, r.stderr
    assert "Cannot reach" not in r.stderr and not (tmp_path / "adjudge.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["calls", "list", "--limit", "5"],
        ["calls", "list", "--limit", "005"],
        ["task", "list", "--limit", "200"],
        ["receipt", "export", "--after", "0"],
    ],
)
def test_digits_in_range_are_read(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Digits in range pass the reader: the command goes on to ask the service."""
    r = _invoke(args, tmp_path, monkeypatch)
    assert r.exit_code == 2 and "Cannot reach the service" in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("reader", "given", "value"),
    [
        (Whole(1, 200), "200", 200),
        (Whole(), "-7", -7),
        (Whole(), 50, 50),  # a default comes typed
        (Number(), "2.5e1", 25.0),
        (Number(1, 2160), "2160", 2160.0),
        (Number(), 24.0, 24.0),
        (seconds, "0.5", 0.5),
    ],
)
def test_a_reader_reads_its_form(reader: Any, given: Any, value: object) -> None:
    """Digits, a decimal with a fraction or exponent, and a typed default are read."""
    assert reader(given) == value


@pytest.mark.parametrize(
    ("reader", "given", "said"),
    [
        (Whole(1, 200), "0", "0 is not a whole number from 1 to 200."),
        (Whole(1), "0", "0 is not a whole number of at least 1."),
        (Whole(), "9" * 5000, "is not a whole number: write digits only"),
        (Number(1, 2160), "0.5", "0.5 is not a number at least 1 and at most 2160"),
        (Number(), "1e400", "1e400 is too large to be a number."),
        (seconds, "0", "0 is not a number of seconds above 0 and at most 86400"),
    ],
)
def test_a_reader_refuses_out_of_its_range(reader: Any, given: str, said: str) -> None:
    """Out of range, or past what a number holds, is refused saying the range."""
    with pytest.raises(typer.BadParameter) as err:
        reader(given)
    assert said in str(err.value.message)
