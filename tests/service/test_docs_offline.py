"""`/docs` works offline: every asset it names is served from this machine, and its policy
allows exactly those and its one inline script."""

from __future__ import annotations

import base64
import hashlib
import re

from support.harness import Harness


def test_docs_names_only_local_assets_that_answer(h: Harness) -> None:
    """Each src/href on the page is a local path that answers 200 with its type; no URL with a
    scheme or host appears on the page at all."""
    page = h.client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    refs = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert len(refs) >= 3
    assert "://" not in page.text and "//cdn" not in page.text
    for ref in refs:
        assert ref.startswith("/") and not ref.startswith("//"), ref
        got = h.client.get(ref)
        assert got.status_code == 200, ref
    kinds = {ref.rsplit(".", 1)[-1]: h.client.get(ref).headers["content-type"] for ref in refs}
    assert "javascript" in kinds["js"] and "css" in kinds["css"]
    assert "url: '/openapi.json'" in page.text and '"validatorUrl": null' in page.text
    assert h.client.get("/redoc").status_code == 404


def test_docs_policy_allows_its_assets_and_its_inline_script_only(h: Harness) -> None:
    """script-src is 'self' plus the sha256 of the page's inline script; nothing is inline
    or remote beyond it; the API and the UI keep their own policies."""
    page = h.client.get("/docs")
    policy = page.headers["content-security-policy"]
    inline = re.findall(r"<script>(.*?)</script>", page.text, re.S)
    assert len(inline) == 1
    digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["script-src"] == f"'self' 'sha256-{digest}'"
    assert directives["default-src"] == "'none'" and directives["connect-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    asset = h.client.get("/docs/assets/swagger-ui-bundle.js")
    assert "content-security-policy" in asset.headers
    assert "'unsafe-inline'" not in policy and "http" not in policy
    assert h.client.get("/ui/").headers["content-security-policy"].count("sha256") == 0
