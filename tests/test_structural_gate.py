"""The structural gate: no hard-gate decision path can reach the statistical scorers.

The statistical scorers (model judges, embedding similarity) live only in ``adjudge.workers``.
This walks the transitive import closure of every hard-gate package with grimp and fails if any
can reach ``adjudge.workers`` — and fails, too, if the scan covers fewer modules than there are
``.py`` files in the package, because a gate whose scan shrinks must refuse, not pass.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp
import pytest

import adjudge

GATES = ("adjudge.autocheck", "adjudge.kernel", "adjudge.calls", "adjudge.market", "adjudge.replay")
SCORERS = "adjudge.workers"


def reaches(graph: grimp.ImportGraph, gates: tuple[str, ...], forbidden: str) -> list[str]:
    """Every ``gate module -> forbidden module`` path start the graph allows, as text."""
    found = []
    for gate in gates:
        if gate not in graph.modules:
            continue
        for module in sorted({gate} | graph.find_descendants(gate)):
            upstream = graph.find_upstream_modules(module)
            for target in sorted(upstream):
                if target == forbidden or target.startswith(forbidden + "."):
                    found.append(f"{module} -> {target}")
    return found


def test_no_gate_reaches_the_scorers_and_the_scan_is_complete() -> None:
    """No gate imports adjudge.workers transitively; the scan sees every module of the package."""
    graph = grimp.build_graph("adjudge", cache_dir=None)
    package = Path(adjudge.__file__).parent
    files = list(package.rglob("*.py"))
    assert len(graph.modules) >= len(files), (
        f"the scan covered {len(graph.modules)} modules but the package has {len(files)} "
        ".py files: a shrinking scan must not pass"
    )
    present = [g for g in GATES if g in graph.modules]
    assert "adjudge.kernel" in present and "adjudge.autocheck" in present
    assert reaches(graph, tuple(present), SCORERS) == []


def test_the_gate_catches_an_indirect_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gate module that reaches workers through another module is caught (the gate can fail)."""
    root = tmp_path / "gatepkg"
    for sub in ("kernel", "workers", "util"):
        (root / sub).mkdir(parents=True)
        (root / sub / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "util" / "helper.py").write_text("import gatepkg.workers.judge\n")
    (root / "workers" / "judge.py").write_text("")
    (root / "kernel" / "fold.py").write_text("import gatepkg.util.helper\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("gatepkg", cache_dir=None)
    assert reaches(graph, ("gatepkg.kernel",), "gatepkg.workers") == [
        "gatepkg.kernel.fold -> gatepkg.workers.judge"
    ]
    for name in [m for m in sys.modules if m.startswith("gatepkg")]:
        del sys.modules[name]


CLOCK_READS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}
IO_CALLS = {"open", "input", "print"}


def test_the_pure_core_reads_no_clock_and_does_no_io() -> None:
    """kernel and receipts never call a clock or a file/console function: time is passed in."""
    package = Path(adjudge.__file__).parent
    found = []
    for area in ("kernel", "receipts"):
        for path in sorted((package / area).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in CLOCK_READS or (isinstance(func, ast.Name) and name in IO_CALLS):
                    found.append(f"{path.relative_to(package)}:{node.lineno} calls {name}")
    assert found == []
