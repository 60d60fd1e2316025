"""How much work SQLite's virtual machine does for a read: the same figure however much history
the store holds, where a read's cost does not grow with it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from adjudge.store import Store, Transaction

T = TypeVar("T")


def sqlite_steps(store: Store, run: Callable[[Transaction], T]) -> tuple[T, int]:
    """``run``'s result in a read of ``store`` and the virtual machine steps SQLite took for it
    (0 on another database)."""
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0

    with store.read() as tx:
        raw: Any = tx.conn.connection.driver_connection
        if store.dialect == "sqlite":
            raw.set_progress_handler(step, 1)
        try:
            found = run(tx)
        finally:
            if store.dialect == "sqlite":
                raw.set_progress_handler(None, 1)
    return found, steps[0]
