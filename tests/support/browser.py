"""A page on the served web UI, for the browser tests (``tests/browser``)."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from adjudge.receipts import SigningKey
from support.harness import Harness

#: axe-core, vendored (tests/support/axe/README.md says which version and from where).
AXE = Path(__file__).parent / "axe" / "axe.min.js"
#: The digest of that file, as the package's sri-history.json records it for 4.14.1: a
#: changed or truncated copy fails the scan instead of scanning with something else.
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
#: The impacts an accessibility scan refuses.
REFUSED_IMPACTS = ("serious", "critical")


@dataclass
class Browser:
    """A page on the served UI, the service's harness, and what went wrong on the way."""

    page: Any
    url: str
    h: Harness
    signing_key: SigningKey
    shots: Path | None
    outside: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)

    def sign_in(self, who: str) -> None:
        """Paste ``who``'s API key into the page and wait until the page knows them."""
        if not self.page.url.startswith(self.url):
            self.page.goto(f"{self.url}/ui/")
        self.page.fill("#key", self.h.keys[who])
        self.page.click("text=Use key")
        self.page.locator("#who strong", has_text=who).wait_for()

    def open(self, path: str) -> None:
        """Go to ``#/path`` on the UI; the page it is on already is loaded afresh (a hash that
        does not change fires no navigation, and the view shown may be another key's)."""
        target = f"{self.url}/ui/#/{path}"
        if self.page.url == target:
            self.page.reload()
        else:
            self.page.goto(target)

    def axe(self, *, context: str = "body") -> list[dict[str, Any]]:
        """Run axe-core (vendored; evaluated in the page through the browser's protocol, so the
        page's Content-Security-Policy, which admits only its own scripts, need not change) on
        ``context``; its serious and critical violations, each with the nodes it found."""
        source = AXE.read_bytes()
        assert hashlib.sha256(source).hexdigest() == AXE_SHA256, (
            "tests/support/axe/axe.min.js is not the vendored axe-core 4.14.1"
        )
        self.page.evaluate(source.decode("utf-8") + "\n;0")
        found: list[dict[str, Any]] = self.page.evaluate(
            """async (context) => {
                const r = await axe.run(context, { resultTypes: ["violations"] });
                return r.violations.map((v) => ({
                    id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.map((n) => n.target.join(" ")),
                }));
            }""",
            context,
        )
        return [v for v in found if v["impact"] in REFUSED_IMPACTS]

    def shot(self, name: str) -> None:
        """A screenshot of the page now, when ``ADJUDGE_BROWSER_SHOTS`` asks for them."""
        if self.shots is not None:
            self.shots.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)


def chromium_or_skip(path: str) -> str:
    """The Chromium to drive, or a skip saying it is missing (a failure when
    ``ADJUDGE_REQUIRE_BROWSER`` is set, as CI sets it)."""
    found = path if os.access(path, os.X_OK) else shutil.which("chromium")
    if found:
        return found
    reason = (
        f"Chromium is not installed at {path}: the browser tests skipped "
        "(apt-get install chromium, as .ci/run does, to run them)"
    )
    if os.environ.get("ADJUDGE_REQUIRE_BROWSER"):
        pytest.fail(f"{reason} — and ADJUDGE_REQUIRE_BROWSER is set (as CI sets it)")
    pytest.skip(reason)
