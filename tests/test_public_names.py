"""Every ``__all__`` in the package names what its module has, so ``import *`` works."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import adjudge

ROOT = Path(adjudge.__file__).parent


def _exported() -> list[str]:
    """Every module whose source declares ``__all__`` (``__main__`` runs the CLI: not one)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "__main__.py" or "__all__" not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_the_scan_sees_the_use_cases_and_the_kernel() -> None:
    """The walk finds the packages whose names the faces import (a scan that shrinks fails)."""
    assert {"adjudge", "adjudge.app", "adjudge.kernel", "adjudge.receipts"} <= set(_exported())


@pytest.mark.parametrize("name", _exported())
def test_every_exported_name_resolves(name: str) -> None:
    """Each name in a module's ``__all__`` is an attribute of it, and ``from … import *``
    succeeds."""
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)  # the statement under test
    assert set(module.__all__) <= set(namespace)
