"""The web UI in a real browser: Playwright for Python driving the system's Chromium.

No browser is ever downloaded: the tests launch ``/usr/bin/chromium`` (Debian's package;
``ADJUDGE_CHROMIUM`` names another) headless with a fresh profile. Where it is not installed
they skip, saying so; with ``ADJUDGE_REQUIRE_BROWSER=1`` (as CI sets it) they fail instead.

Each test gets a page on a service served on loopback (``browser``: a fresh marketplace;
``world_browser``: the weather provider's world of ``support/weather.py``, for the gateway's
pages); any request to another host is aborted and fails the test, and so does any
Content-Security-Policy violation the page reports. When a test fails, a screenshot of the page
is saved under the test's tmp dir and its path printed.
``ADJUDGE_BROWSER_SHOTS=DIR`` saves a screenshot of every page a test names as it goes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from adjudge.receipts import SignedReceipts, SigningKey
from adjudge.store import Store
from support.audit import audit
from support.browser import Browser, chromium_or_skip
from support.harness import Harness, make_harness
from support.live import serving
from support.weather import World, weather_world

CHROMIUM = os.environ.get("ADJUDGE_CHROMIUM", "/usr/bin/chromium")
#: How Chromium is started: headless, no sandbox (CI runs as root), and nothing that would
#: reach the network on its own (updates, sync, first-run pages).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keep each phase's report on the item, so a fixture knows its test failed."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"report_{report.when}", report)


@pytest.fixture(scope="module")
def _chromium() -> Iterator[Any]:
    """One Chromium for a module's browser tests: starting one is about a second of CPU, and
    each test gets a context of its own (its own cookies, storage and downloads, as a fresh
    profile would have). Not one for the whole process: Playwright's synchronous API keeps an
    event loop marked running on the thread while it is open, and the next module's tests
    that start a loop of their own would find it."""
    executable = chromium_or_skip(CHROMIUM)
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, args=FLAGS, headless=True)
        yield chromium
        chromium.close()


@contextmanager
def attached(
    url: str, h: Harness, signing_key: SigningKey, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Browser]:
    """A fresh browser context (as a fresh profile: nothing kept from another test) on the UI
    served at ``url`` by ``h``'s service, watched for requests leaving loopback and policy
    violations (either fails the test), with a screenshot of the page when the test fails."""
    chromium = request.getfixturevalue("_chromium")
    shots = os.environ.get("ADJUDGE_BROWSER_SHOTS")
    context = chromium.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        b = Browser(page, url, h, signing_key, Path(shots) if shots else None)

        def route(r: Any) -> None:
            host = urlsplit(r.request.url).hostname or ""
            if urlsplit(r.request.url).scheme in ("http", "https") and host not in LOOPBACK:
                b.outside.append(r.request.url)
                r.abort()
            else:
                r.continue_()

        context.route("**/*", route)
        page.on(
            "console",
            lambda m: b.violations.append(m.text) if "Content Security Policy" in m.text else None,
        )
        page.on("pageerror", lambda e: b.violations.append(f"page error: {e}"))
        try:
            yield b
        finally:
            failed = getattr(request.node, "report_call", None)
            if failed is not None and failed.failed:
                path = tmp_path / "failure.png"
                try:
                    page.screenshot(path=str(path), full_page=True)
                    print(f"\nscreenshot of the failing page: {path}", file=sys.stderr)
                except Exception as exc:  # the page may be gone; the test's own error stands
                    print(f"\nno screenshot: {exc}", file=sys.stderr)
    finally:
        context.close()
    assert not b.outside, f"requests left the machine: {b.outside}"
    assert not b.violations, f"the page reported: {b.violations}"


@pytest.fixture
def browser(
    sqlite_store: Store, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Browser]:
    """A page on a service over a fresh store with signed receipts and the real auto check."""
    key = SigningKey.generate()
    h = make_harness(sqlite_store, real_checker=True, issuer=SignedReceipts(key))
    with serving(h.app) as url, attached(url, h, key, tmp_path, request) as b:
        yield b


@pytest.fixture
def world(sqlite_store: Store) -> Iterator[World]:
    """The weather provider's world (a served adjudge, the provider behind the real
    middleware, its tool and policy), its books audited after the test."""
    with weather_world(sqlite_store) as w:
        yield w
    audit(sqlite_store)


@pytest.fixture
def world_browser(
    world: World, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Browser]:
    """A page on the weather world's service."""
    with attached(world.service, world.h, world.signer, tmp_path, request) as b:
        yield b
