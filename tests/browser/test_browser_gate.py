"""Where Chromium is missing the browser tests skip and say why; CI makes that a failure."""

from __future__ import annotations

import pytest

from support.browser import chromium_or_skip


def test_a_missing_chromium_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """The skip names the path looked at and how to install it."""
    monkeypatch.delenv("ADJUDGE_REQUIRE_BROWSER", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.skip.Exception, match="Chromium is not installed at /no/chromium"):
        chromium_or_skip("/no/chromium")


def test_ci_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ADJUDGE_REQUIRE_BROWSER set, a missing Chromium fails the test."""
    monkeypatch.setenv("ADJUDGE_REQUIRE_BROWSER", "1")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(pytest.fail.Exception, match="ADJUDGE_REQUIRE_BROWSER is set"):
        chromium_or_skip("/no/chromium")
