"""Documents parsed once per process, kept by the digest that names their bytes.

A parsed document can never be stale (its key names its bytes), so a cache of them needs only a
bound: on entries, and on their size, since a parsed schema is compiled code of about 1.5 kB a
JSON value (1,024 of the largest tool documents a provider may register held some 3 GB). A
cache at either bound lets go of the documents used least recently: they are parsed again if
they are asked for again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["Kept", "json_values"]

V = TypeVar("V")

#: The most JSON values of the documents one cache keeps parsed (each entry weighs its
#: document's values): some 375 MB of compiled schemas at most.
KEPT_VALUES = 250_000


def json_values(document: object, stop: int | None = None) -> int:
    """How many JSON values ``document`` holds (each object, array and scalar once); counting
    ends once past ``stop``."""
    count, stack = 0, [document]
    while stack:
        value = stack.pop()
        count += 1
        if stop is not None and count > stop:
            return count
        if isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return count


class Kept(Generic[V]):
    """Parsed documents by key, at most ``most`` of them and ``values`` JSON values in all: the
    least recently used let go first. A document heavier than the whole bound (one registered
    before documents were bounded) is kept alone until another is asked for."""

    def __init__(self, most: int = 1024, values: int = KEPT_VALUES) -> None:
        self.most = most
        self.values = values
        self._kept: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, document: Any, parse: Callable[[], V]) -> V:
        """The parsed ``document`` kept under ``key``, parsed by ``parse`` when not kept."""
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found[0]
        made = parse()  # outside the lock: two threads may parse one document, and keep one
        weight = json_values(document)
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                return found[0]
            while self._kept and (
                len(self._kept) >= self.most or self._weight + weight > self.values
            ):
                _, (_, gone) = self._kept.popitem(last=False)
                self._weight -= gone
            self._kept[key] = (made, weight)
            self._weight += weight
            return made

    def peek(self, key: Hashable) -> V | None:
        """The parsed document kept under ``key``, or None (nothing is parsed)."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[0]

    def __len__(self) -> int:
        return len(self._kept)
