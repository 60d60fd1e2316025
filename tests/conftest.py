"""Shared test helpers: node for differential cases; fresh stores on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.testing
from hypothesis import settings
from typer.main import get_command

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked slow first, the rest in their order: every worker starts on the
    longest tests and the others fill in around them (each worker takes a run of the list
    and steals from the end of another's), so none is left running one long test alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


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


class _Copies:
    """Copies of a migrated PostgreSQL database, each made while the test before it runs, and
    dropped while the tests after it run.

    Copying a database is 0.2-0.4 s of PostgreSQL writing files, with little CPU, in every
    PostgreSQL test: two copies are made ahead, on a thread, so a test takes one ready (and a
    short test after a long one finds the next one ready too). Dropping
    one makes PostgreSQL checkpoint, writing out every changed page of every database and
    waiting for the disk (0.1 s on an idle machine, 0.5-3 s on a busy one, little of it CPU):
    a used copy is given back and dropped on another thread, a few at most waiting there."""

    #: Used copies waiting to be dropped before a test that gives one back waits for the
    #: oldest (each is some megabytes on the server's disk).
    PENDING_DROPS = 8
    #: Copies made ahead of the tests that will take them.
    AHEAD = 2

    def __init__(self, template: str) -> None:
        self.template = template
        self._maker = ThreadPoolExecutor(1, thread_name_prefix="postgres-copies")
        self._ahead = deque(
            self._maker.submit(postgres.create_database, template) for _ in range(self.AHEAD)
        )
        self._dropper = ThreadPoolExecutor(1, thread_name_prefix="postgres-drops")
        self._drops: deque[Future[None]] = deque()

    def take(self) -> str:
        """A new copy's URL (:class:`postgres.Unreachable` if none could be made)."""
        ready = self._ahead.popleft()
        self._ahead.append(self._maker.submit(postgres.create_database, self.template))
        return ready.result()

    def give_back(self, url: str) -> None:
        """Drop a used copy on the dropping thread (its connections closed or left: the drop
        ends them); a drop that failed raises here, in a later test, or in :meth:`close`."""
        while self._drops and (self._drops[0].done() or len(self._drops) >= self.PENDING_DROPS):
            self._drops.popleft().result()
        self._drops.append(self._dropper.submit(_drop, url))

    def close(self) -> None:
        """Drop the copies made ahead, once made, and wait for the used ones to be dropped: the
        template can be dropped after."""
        for ahead in self._ahead:
            with contextlib.suppress(postgres.Unreachable):
                _drop(ahead.result())
        self._maker.shutdown()
        self._dropper.shutdown()
        while self._drops:
            self._drops.popleft().result()


def _postgres_or_skip(copies: _Copies | None) -> str:
    """A throwaway database (one of ``copies`` if given) and its URL, or skip (fail, in CI)
    saying why."""
    try:
        return copies.take() if copies is not None else postgres.create_database()
    except postgres.Unreachable as exc:
        if os.environ.get("ADJUDGE_REQUIRE_POSTGRES"):
            pytest.fail(f"{exc} — and ADJUDGE_REQUIRE_POSTGRES is set (as CI sets it)")
        pytest.skip(str(exc))


def _drop(url: str) -> None:
    postgres.drop_database(url)


# Migrating a new store runs every Alembic revision (0.15-0.3 s on SQLite, 0.6 s on PostgreSQL,
# for each of some thousands of tests): each test worker migrates one store of each kind once,
# and every test gets a copy of it — a copied file, or a database made from it as a template.
# The migrations themselves are still run and checked by tests/store.


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "adjudge.db"
    st = Store(f"sqlite:///{path}")
    st.migrate()
    st.dispose()  # the last connection closed: the write-ahead log is in the file
    return path


@pytest.fixture(scope="session")
def _postgres_copies() -> Iterator[_Copies | None]:
    """Copies of a migrated database, or None where PostgreSQL is unreachable (each test that
    needs one then skips, or fails in CI, saying why)."""
    try:
        url = postgres.create_database()
    except postgres.Unreachable:
        yield None
        return
    st = Store(url)
    st.migrate()
    st.dispose()  # a template must have no connection when it is copied
    copies = _Copies(url)
    yield copies
    copies.close()
    _drop(url)


def _sqlite_copy(template: Path, tmp_path: Path) -> Store:
    target = tmp_path / "adjudge.db"
    shutil.copyfile(template, target)
    return Store(f"sqlite:///{target}")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty store on each database the tests can reach."""
    if request.param == "sqlite":
        st = _sqlite_copy(request.getfixturevalue("_sqlite_template"), tmp_path)
    else:
        copies = request.getfixturevalue("_postgres_copies")
        url = _postgres_or_skip(copies)
        st = Store(url)
        if copies is None:
            st.migrate()
    try:
        yield st
    finally:
        st.dispose()
        if request.param == "postgresql":
            if copies is not None:
                copies.give_back(st.url)
            else:
                _drop(st.url)


@pytest.fixture
def sqlite_store(_sqlite_template: Path, tmp_path: Path) -> Iterator[Store]:
    """A migrated, empty SQLite store."""
    st = _sqlite_copy(_sqlite_template, tmp_path)
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


@pytest.fixture(autouse=True, scope="session")
def _one_command_tree() -> Iterator[None]:
    """Typer's test runner builds an app's whole command tree from its functions' annotations
    on each call (70 ms for adjudge's): each app's is built once, as the console script builds
    it once a process (the tree depends only on the functions it was built from)."""
    trees: dict[int, tuple[typer.Typer, Any]] = {}

    def built(app: typer.Typer) -> Any:
        if id(app) not in trees:
            trees[id(app)] = (app, get_command(app))  # the app kept: its id stays its own
        return trees[id(app)][1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", built)
        yield
