"""A generated block inside a hand-written page: the text between two marker comments.

The generators of ``docs/`` tables (``gen_error_table.py``, ``gen_settings_table.py``) fill such a
block and leave everything around it as written; their tests compare the committed page with
what they would write.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Block:
    """The block of ``doc`` from the ``begin`` marker to the ``end`` marker, both kept."""

    doc: Path
    begin: str
    end: str

    def rendered(self, text: str, body: str) -> str:
        """``text`` (the page) with its block's content replaced by ``body``."""
        head, found, rest = text.partition(self.begin)
        _, ended, tail = rest.partition(self.end)
        if not (found and ended):
            raise SystemExit(f"{self.doc} has no {self.begin!r} … {self.end!r} block to fill.")
        return f"{head}{self.begin}\n\n{body}\n\n{self.end}{tail}"

    def write(self, body: str) -> None:
        """Rewrite the page's block in place."""
        text = self.doc.read_text(encoding="utf-8")
        self.doc.write_text(self.rendered(text, body), encoding="utf-8")
