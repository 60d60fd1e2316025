"""Shared test helpers: node for differential cases; fresh stores on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from adjudge.store import Store
from adjudge.webhooks import Sender
from support import postgres
from support.receiver import Receiver

# Properties are checked for what they compute, never for how fast: a timed test fails on a
# loaded machine for no fault of the code, and speed is measured in benchmarks/ instead.
settings.register_profile("adjudge", deadline=None)
settings.load_profile("adjudge")

NODE = shutil.which("node")

requires_node = pytest.mark.skipif(
    NODE is None, reason="node is not on PATH: the differential tests compare against node itself"
)


def run_node(script: str, cases: list[Any]) -> list[Any]:
    """Run ``script`` in node with ``cases`` (JSON) as the global ``CASES``; return its results.

    The script must evaluate ``RESULTS`` (a list, one entry per case). One process per batch.
    """
    assert NODE is not None
    program = (
        "const CASES = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
        f"{script}\n"
        "process.stdout.write(JSON.stringify(RESULTS));\n"
    )
    done = subprocess.run(
        [NODE, "-e", program],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    results: list[Any] = json.loads(done.stdout)
    return results


def _postgres_or_skip() -> str:
    """Create a throwaway database and return its URL, or skip (fail, in CI) saying why."""
    try:
        return postgres.create_database()
    except postgres.Unreachable as exc:
        if os.environ.get("ADJUDGE_REQUIRE_POSTGRES"):
            pytest.fail(f"{exc} — and ADJUDGE_REQUIRE_POSTGRES is set (as CI sets it)")
        pytest.skip(str(exc))


def _drop(url: str) -> None:
    postgres.drop_database(url)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty store on each database the tests can reach."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'adjudge.db'}"
    else:
        url = _postgres_or_skip()
    st = Store(url)
    st.migrate()
    try:
        yield st
    finally:
        st.dispose()
        if request.param == "postgresql":
            _drop(url)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty SQLite store."""
    st = Store(f"sqlite:///{tmp_path / 'adjudge.db'}")
    st.migrate()
    yield st
    st.dispose()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on loopback that verifies every delivery's signature."""
    r = Receiver().up()
    yield r
    r.down()


@pytest.fixture
def sender() -> Iterator[Sender]:
    """The delivery worker's sender with the default bounds, allowed to reach loopback."""
    s = Sender(allow_private=True)
    yield s
    s.close()
