"""The layout says where money moves and who signs: only ``adjudge.app.settlement`` writes the
ledger, and only the issuer port signs the service's receipts."""

from __future__ import annotations

import ast
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


#: The layers of the service: they sign receipts only through the issuer port they hold.
SERVICE_LAYERS = ("app", "market", "service", "workers", "gateway", "webhooks", "store")
#: What signs: the chain's signing function and the log that calls it.
SIGNING = {"issue", "ReceiptLog"}


def test_the_issuer_is_the_only_signer_of_the_service() -> None:
    """Nothing in the service's layers imports the receipts' signing function or log: every use
    case signs through the one issuer port (``adjudge.receipts.Issuer``), which signs the
    determination the pure core built and decides nothing."""
    root = Path(adjudge.__file__).parent
    found = []
    for layer in SERVICE_LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "adjudge.receipts"
                ):
                    names = {alias.name for alias in node.names}
                    if names & SIGNING:
                        found.append(f"{path.relative_to(root)}: {sorted(names & SIGNING)}")
    assert found == []
