"""The web UI: static pages that drive the JSON API from a browser (``adjudge serve`` serves them
at ``/ui/``). No templates and no build step: an HTML page, a stylesheet and two ES modules, one
of them pure helpers that ``tests/web`` runs in node."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"

__all__ = ["STATIC"]
