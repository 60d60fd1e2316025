"""The error registry is the one list of codes: the source raises no other, raises each, and
raises each as the kind the registry gives it; the docs' table is the registry's."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import pytest

from adjudge import error_codes
from adjudge.error_codes import CODES, KIND_STATUS, SERVICE_CODES
from adjudge.errors import KINDS, Error, NotFound, kind_of
from tests.support.error_sites import CODE, Reading, read
from tests.support.scripts import load_script

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def reading() -> Reading:
    return read()


def _generator() -> ModuleType:
    return load_script("gen_error_table")


def test_the_reader_sees_the_source(reading: Reading) -> None:
    """The reader finds raise sites of every form: a literal, a module constant, a helper's
    default, a class's own code (so an empty reading cannot pass the tests below)."""
    found = {(s.code, s.raiser.__name__ if s.raiser else None) for s in reading.sites}
    assert ("TASK_NOT_FOUND", "NotFound") in found  # raise NotFound("…", code="TASK_NOT_FOUND")
    assert ("POLICY_RULE_INVALID", "CriteriaError") in found  # code=_CODE
    assert ("TOOL_INVALID", "CriteriaError") in found  # def _invalid(…, code="TOOL_INVALID")
    assert ("CONCURRENT_UPDATE", "ConcurrentUpdate") in found  # ConcurrentUpdate("…")
    assert ("NOT_FOUND", None) in found  # the service's table of bare statuses
    assert len(reading.sites) > 400


def test_every_code_named_in_the_source_is_declared(reading: Reading) -> None:
    """A code raised (or written into an error body, or compared with) is in the registry."""
    missing = sorted({f"{s.code} ({s.where})" for s in reading.sites if s.code not in CODES})
    assert missing == [], "declare these in src/adjudge/error_codes.py: " + ", ".join(missing)


def test_every_declared_code_is_raised(reading: Reading) -> None:
    """A registry entry no source names is a code that cannot happen: remove it (the
    service's own codes are written by its handlers, and are named there too)."""
    named = {s.code for s in reading.sites}
    assert sorted(set(CODES) - named - SERVICE_CODES) == []
    assert set(CODES) >= SERVICE_CODES


def test_every_code_argument_can_be_read(reading: Reading) -> None:
    """A code is written where the reader can see it (a literal, a constant, a parameter): one
    computed some other way would escape the checks above. The client alone passes on codes it
    did not write: the ones the service answered with."""
    unread = [u for u in reading.unreadable if not u.where.startswith("adjudge/client.py:")]
    assert unread == []


def test_each_raise_site_names_its_kind(reading: Reading) -> None:
    """An error is raised as a class of the kind its code is declared with: ``NotFound(…,
    code="TASK_NOT_FOUND")``, never a bare ``Error`` or a class of another kind."""
    wrong = []
    for site in reading.sites:
        if site.raiser is None or site.code not in CODES:
            continue
        if site.raiser is Error and site.where.startswith("adjudge/errors.py:"):
            continue  # the base's own default, for an error raised without a code (none is)
        declared = CODES[site.code].kind
        if kind_of(site.raiser) is not declared:
            wrong.append(
                f"{site.where}: {site.raiser.__name__} raises {site.code}, a {declared.__name__}"
            )
    assert wrong == []


def test_a_reworded_refusal_keeps_its_kind(reading: Reading) -> None:
    """``raise Cls(f"…{exc.message}", code=exc.code)`` re-raises a caught refusal as the caught
    kind: re-wording never changes what kind of failure it was."""
    assert reading.rewraps, "the reader sees the re-worded refusals"
    wrong = [
        f"{r.where}: {[c.__name__ for c in r.caught]} re-raised as {r.raiser.__name__}"
        for r in reading.rewraps
        if not r.caught or any(kind_of(c) is not kind_of(r.raiser) for c in r.caught)
    ]
    assert wrong == []


def test_the_registry_is_well_formed() -> None:
    """Each entry: a code's spelling, a kind, an HTTP error status, one sentence; the base's
    default and every kind present."""
    for name, code in CODES.items():
        assert name == code.name and CODE.match(name), name
        assert code.kind in KINDS, name
        assert 400 <= code.status <= 599, name
        assert code.meaning.endswith(".") and "\n" not in code.meaning, name
    assert Error.code in CODES
    assert {c.kind for c in CODES.values()} == set(KINDS) == set(KIND_STATUS)


def test_the_registry_is_one_line_per_code_in_order() -> None:
    """A new code is one line in its kind's group, the group in alphabetical order, so parallel
    additions merge line by line."""
    text = (ROOT / "src" / "adjudge" / "error_codes.py").read_text(encoding="utf-8")
    lines = re.findall(r'^    Code\("([A-Z0-9_]+)", (\w+), \d{3}, ".*"\),$', text, re.M)
    assert len(lines) == len(CODES)
    groups: dict[str, list[str]] = defaultdict(list)
    for name, kind in lines:
        groups[kind].append(name)
    assert all(names == sorted(names) for names in groups.values())
    assert list(groups) == [k.__name__ for k in KINDS]


def test_a_refusal_is_answered_with_its_declared_status() -> None:
    """The service's status is the registry's, whatever class carried the code; a code the
    registry lacks takes its kind's."""
    for name, code in CODES.items():
        assert error_codes.status(Error("x", code=name)) == code.status
    assert error_codes.status(NotFound("x", code="SOMETHING_NEW")) == 404
    assert error_codes.status(Error("x", code="SOMETHING_NEW")) == 400


def test_the_docs_table_is_the_registry() -> None:
    """``docs/errors.md``'s table is what ``scripts/gen_error_table.py`` writes."""
    generator = _generator()
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert page == generator.rendered(page), "run: python scripts/gen_error_table.py"
    assert generator.table() in page
