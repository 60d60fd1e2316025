"""The batch viewer page `check-batch --html` writes: its embedded JSON cannot end its block."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser

from adjudge.web.batch import batch_html, embedded_json

EVIL = "</script><script>alert(1)</script> <!-- & \u2028\u2029 </SCRIPT >"


class _Scripts(HTMLParser):
    """The page's script elements as a browser's tokenizer splits them: (attributes, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._open = dict(attrs)
            self.scripts.append((self._open, ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None


def test_embedded_json_escapes_markup_and_round_trips() -> None:
    """No `<`, `>`, `&`, U+2028 or U+2029 is left in the JSON, and it reads back unchanged."""
    value = {"result": EVIL, "reasons": [EVIL], "n": 1}
    text = embedded_json(value)
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == value


def test_a_malicious_record_stays_inside_the_json_block() -> None:
    """A record holding `</script><script>…` leaves the page with exactly its two scripts: the
    JSON block (which holds the record intact) and the viewer, whose hash the policy allows."""
    record = {
        "line": 1,
        "id": EVIL,
        "passed": False,
        "score": 0,
        "reasons": [EVIL],
        "breakdown": [],
        "errors": {},
        "result": EVIL,
        "criteria": {},
    }
    page = batch_html("cases <b>.jsonl", [record])
    parser = _Scripts()
    parser.feed(page)
    assert [a.get("type") for a, _ in parser.scripts] == ["application/json", "module"]
    data = json.loads(parser.scripts[0][1])
    assert data["runs"] == [{"name": "cases <b>.jsonl", "records": [record]}]
    script = parser.scripts[1][1]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None and f"script-src 'sha256-{digest}'" in policy.group(1)
    assert "<b>" not in page
