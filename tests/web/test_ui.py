"""The web UI: served by the service, and its helpers correct (node runs their tests)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import NODE, requires_node

from adjudge.store import Store
from support.harness import make_harness

HERE = Path(__file__).parent


@requires_node
def test_ui_helpers_in_node() -> None:
    """ui.js is an ES module with no DOM in it: node's test runner checks it as it is."""
    assert NODE is not None
    done = subprocess.run(
        [NODE, "--test", str(HERE / "ui.test.mjs")],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_service_serves_the_ui(sqlite_store: Store) -> None:
    """`/` leads to the UI; its page, modules and stylesheet are served with their types, and
    none of it is in the API's schema."""
    client = make_harness(sqlite_store).client
    home = client.get("/", follow_redirects=False)
    assert (home.status_code, home.headers["location"]) == (307, "/ui/")
    page = client.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="app.js">' in page.text
    for name, kind in [("app.js", "javascript"), ("ui.js", "javascript"), ("style.css", "css")]:
        served = client.get(f"/ui/{name}")
        assert served.status_code == 200 and kind in served.headers["content-type"], name
    assert client.get("/ui/nothing.js").status_code == 404
    paths = client.get("/openapi.json").json()["paths"]
    assert not [p for p in paths if not p.startswith("/api/")]


def test_the_ui_puts_service_text_on_the_page_as_text() -> None:
    """Briefs and results are other people's words: app.js never assigns markup from them."""
    source = (HERE.parent.parent / "src/adjudge/web/static/app.js").read_text()
    assert "innerHTML" not in source and "insertAdjacentHTML" not in source
    assert "outerHTML" not in source and "document.write" not in source
