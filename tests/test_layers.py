"""The layout says where money moves: only ``adjudge.app.settlement`` writes the ledger."""

from __future__ import annotations

from pathlib import Path

import grimp

import adjudge

LEDGER = "adjudge.store.ledger"


def test_settlement_is_the_only_writer_of_the_ledger() -> None:
    """Outside the store, the ledger is imported by settlement (which moves money) and by the
    two read models that show balances; and only settlement calls ``ledger.transfer``."""
    graph = grimp.build_graph("adjudge", cache_dir=None)
    importers = {
        m
        for m in graph.find_modules_that_directly_import(LEDGER)
        if not m.startswith("adjudge.store")
    }
    assert importers == {"adjudge.app.settlement", "adjudge.app.views", "adjudge.app.receipts"}
    root = Path(adjudge.__file__).parent
    callers = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if "ledger.transfer(" in p.read_text(encoding="utf-8")
    )
    assert callers == ["app/settlement.py"]
