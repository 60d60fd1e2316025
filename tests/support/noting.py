"""Where the market's checker was asked, and when the use cases wrote: what the tests of
"screens and checks run before the write, never on the committing thread" read."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from adjudge.app import App
from adjudge.autocheck import _sandbox
from adjudge.store import Transaction


def where(app: App) -> tuple[bool, bool, str]:
    """Whether this runs on the caller's (main) thread, whether a unit of work is committing
    here, and whose regex work it is."""
    commits = app.tasks.unit.commits
    committing = commits is not None and commits.here()
    on_caller = threading.current_thread() is threading.main_thread()
    return on_caller, committing, _sandbox.regex_owner.get()


def note_writes(app: App, events: list[str]) -> None:
    """Note ``"write"`` in ``events`` each time the task use cases write."""
    real_write = app.tasks.unit.write

    def write(fn: Callable[[Transaction], Any], **kw: Any) -> Any:
        events.append("write")
        return real_write(fn, **kw)

    app.tasks.unit.write = write  # type: ignore[method-assign]
