"""``/docs``: the API's Swagger UI, served from this machine with nothing fetched elsewhere.

FastAPI's own ``/docs`` page loads Swagger UI's script and stylesheet from a CDN, so offline (or
behind a firewall) it is a blank page. The same files ship in the ``fastapi-offline`` package
(Swagger UI's ``dist`` build, kept current by its maintainer); they are mounted at
``/docs/assets`` and the page is FastAPI's own :func:`get_swagger_ui_html` pointed at them.

Swagger UI starts from one inline script. The page's Content-Security-Policy allows exactly
that script by its sha256 (computed from the page itself, so it cannot drift from it), the
mounted assets, ``data:`` images (the stylesheet's icons) and requests to this origin (the
schema and "Try it out"); nothing else. The validator badge, which would call an outside
service, is turned off.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: Where the page and its assets are served.
DOCS_PATH = "/docs"
ASSETS_PATH = "/docs/assets"
#: The package's copy of Swagger UI's dist files.
ASSETS = Path(fastapi_offline.__file__).parent / "static"

_INLINE = re.compile(rb"<script>(.*?)</script>", re.S)


def page(openapi_url: str, title: str) -> bytes:
    """The Swagger UI page over ``openapi_url``, every asset local."""
    response = get_swagger_ui_html(
        openapi_url=openapi_url,
        title=title,
        swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS_PATH}/favicon.png",
        oauth2_redirect_url=None,
        swagger_ui_parameters={"validatorUrl": None},
    )
    return bytes(response.body)


def policy(html: bytes) -> bytes:
    """The page's Content-Security-Policy: its own assets, and its inline scripts by hash."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(script).digest()).decode() + "'"
        for script in _INLINE.findall(html)
    )
    return (
        f"default-src 'none'; script-src 'self' {hashes}; style-src 'self'; "
        "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'none'"
    ).encode()


def install(api: FastAPI) -> bytes:
    """Serve ``/docs`` and its assets on ``api`` (made with ``docs_url=None``); return the
    page's policy, which the security-headers middleware sends on ``/docs`` paths."""
    assert api.openapi_url is not None
    html = page(api.openapi_url, f"{api.title} — API")
    api.mount(ASSETS_PATH, StaticFiles(directory=ASSETS), name="docs-assets")

    @api.get(DOCS_PATH, include_in_schema=False)
    async def docs() -> HTMLResponse:
        """The Swagger UI page."""
        return HTMLResponse(html)

    return policy(html)
