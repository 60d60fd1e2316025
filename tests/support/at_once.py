"""Two write transactions on two engines at once (as two committing threads or two processes
have): the second starts once the first has written, and runs while the first still holds
what it wrote uncommitted."""

from __future__ import annotations

import threading
from collections.abc import Callable

from adjudge.store import Store, Transaction


def at_once(
    store: Store, first: Callable[[Transaction], None], second: Callable[[Transaction], None]
) -> list[BaseException]:
    """Run ``first`` in a write on ``store`` and, once it has run (uncommitted for a moment
    more), ``second`` in a write on another engine of the same database; what either raised."""
    other = Store(store.url)
    written, errors = threading.Event(), []

    def run_first() -> None:
        try:
            with store.write() as tx:
                first(tx)
                written.set()
                threading.Event().wait(0.3)  # the second reaches what this one wrote
        except BaseException as exc:  # returned to the test
            errors.append(exc)
        finally:
            written.set()

    def run_second() -> None:
        written.wait(10)
        try:
            with other.write() as tx:
                second(tx)
        except BaseException as exc:  # returned to the test
            errors.append(exc)

    threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    other.dispose()
    return errors
