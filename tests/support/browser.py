"""A page on the served web UI, for the browser tests (``tests/browser``)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from adjudge.receipts import SigningKey
from support.harness import Harness


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
        """Go to ``#/path`` on the UI."""
        self.page.goto(f"{self.url}/ui/#/{path}")

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
