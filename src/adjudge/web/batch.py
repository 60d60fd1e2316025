"""The batch viewer as one HTML file: ``adjudge check-batch --html`` and ``--open``.

The page is the web UI's batch viewer (``static/batch.js`` and ``static/style.css``, inlined)
with the run embedded as JSON in a ``<script type="application/json">`` block: it opens from
disk with no service and fetches nothing. The results may hold private text, so the file is the
only copy of them outside the terminal; the JSON is escaped so that no text in it can end the
block or start markup (``<``, ``>``, ``&``, U+2028 and U+2029 become ``\\u`` escapes, which JSON
reads back unchanged), and the viewer puts every text on the page as text. A Content-Security-
Policy allows the page's own inline script and style (by hash) and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable, Mapping
from typing import Any

from adjudge.web import STATIC

_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def embedded_json(value: Any) -> str:
    """``value`` as JSON that is safe inside an HTML ``<script>`` block: no ``<``, ``>`` or
    ``&`` (so no ``</script>`` and no ``<!--``), no line or paragraph separator; ``json.loads``
    reads it back as ``value``."""
    text = json.dumps(value, ensure_ascii=False)
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _asset(name: str, closing: str) -> str:
    text = (STATIC / name).read_text(encoding="utf-8")
    if closing in text.lower() or "<!--" in text:
        raise ValueError(f"{name} cannot be inlined: it holds {closing!r} or '<!--'")
    return text


def batch_html(name: str, records: Iterable[Mapping[str, Any]]) -> str:
    """A self-contained page showing one run of ``check-batch``: ``records`` are its output
    lines, each with the case's ``result`` and ``criteria`` where the case had them."""
    script = _asset("batch.js", "</script")
    style = _asset("style.css", "</style")
    payload = embedded_json({"runs": [{"name": name, "records": list(records)}]})
    policy = (
        f"default-src 'none'; script-src '{_digest(script)}'; style-src '{_digest(style)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>adjudge batch: {html.escape(name)}</title>\n"
        '<link rel="icon" href="data:,">\n'
        f"<style>{style}</style>\n"
        f'<script type="application/json" id="batch-data">{payload}</script>\n'
        f'<script type="module">{script}</script>\n'
        "</head>\n<body>\n"
        f"<header><h1>adjudge batch: {html.escape(name)}</h1></header>\n"
        "<main><p>Loading…</p></main>\n"
        "<noscript>This page needs JavaScript to show the results.</noscript>\n"
        "</body>\n</html>\n"
    )


__all__ = ["batch_html", "embedded_json"]
