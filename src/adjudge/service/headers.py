"""The security headers every answer carries, said once: the application's (every route, the
UI's and the API's) and the refusals written below it (a request head too large or too slow)."""

from __future__ import annotations

__all__ = ["API_POLICY", "COMMON_HEADERS", "NO_STORE", "UI_POLICY"]

#: Sent with every response: no MIME sniffing, no framing, no referrer leaving the site.
COMMON_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]
#: The web UI's policy: its own scripts and styles only, talking to its own origin only.
UI_POLICY = (
    b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
#: Every other answer's policy: nothing to load, never framed.
API_POLICY = b"default-src 'none'; frame-ancestors 'none'"
#: Sent with every answer but the UI's and the docs' files (the same for everyone): an answer
#: is one account's, and a browser keeping it on disk gave it to the next person at a shared
#: computer, without a key.
NO_STORE = (b"cache-control", b"no-store")
