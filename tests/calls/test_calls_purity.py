"""The paid-call core is pure: no clock, no randomness, no files, no processes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import adjudge.calls

PACKAGE = Path(adjudge.calls.__file__).resolve().parent
MODULES = sorted(PACKAGE.glob("*.py"))
# Importing any of these would let a decision depend on something other than its inputs.
FORBIDDEN_IMPORTS = {"random", "secrets", "time", "uuid", "os", "io", "pathlib", "subprocess"}
FORBIDDEN_CALLS = {"now", "utcnow", "today", "open"}


def test_the_scan_covers_the_package() -> None:
    """A scan that shrinks must not pass: every module of the package is scanned."""
    names = {m.stem for m in MODULES}
    assert {"contract", "rules", "policy", "verdicts", "quality", "verify"} <= names


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.stem)
def test_module_is_pure(module: Path) -> None:
    """No clock read, random draw, file or process anywhere in the module."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {(node.module or "").split(".")[0]}
        else:
            names = set()
        assert not names & FORBIDDEN_IMPORTS, (module.name, names)
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            assert called not in FORBIDDEN_CALLS, (module.name, node.lineno, called)
