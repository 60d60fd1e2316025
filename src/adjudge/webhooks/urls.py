"""Which endpoint URLs a webhook may be sent to.

An endpoint URL is absolute ``http`` or ``https``, ASCII (an international host name in its
``xn--`` form), at most :data:`MAX_URL` characters, with a host, without credentials
(``user:pass@`` would be sent to whoever answers and stored in the clear) and without a
fragment. Unless the deployment allows it (``allow_private``), a host that *is* a loopback,
private, link-local or otherwise non-public address — or ``localhost`` — is refused when the
endpoint is registered, and each attempt connects only to a public address its name resolves
to (the gateway's address guard, :mod:`adjudge.gateway.addresses`, whose policy is used here
too), so the service cannot be pointed at its own network.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from adjudge.errors import BadInput
from adjudge.gateway.addresses import public_host

#: The longest endpoint URL.
MAX_URL = 2000


def endpoint_url(url: str, *, allow_private: bool = False) -> str:
    """``url`` checked as an endpoint URL (the module's rules), with a path (``/`` if none).

    Refused with ``WEBHOOK_URL_INVALID``, ``WEBHOOK_URL_CREDENTIALS`` or
    ``WEBHOOK_URL_PRIVATE``, each naming what to change.
    """
    if not isinstance(url, str) or not 0 < len(url) <= MAX_URL:
        raise BadInput(f"An endpoint URL is 1-{MAX_URL} characters.", code="WEBHOOK_URL_INVALID")
    if not url.isascii() or any(c <= " " or c == "\x7f" for c in url):
        raise BadInput(
            "An endpoint URL is ASCII without spaces or control characters (write an "
            "international host name in its xn-- form, and percent-encode the path).",
            code="WEBHOOK_URL_INVALID",
        )
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        raise BadInput(f"That is not a URL: {exc}.", code="WEBHOOK_URL_INVALID") from None
    if parts.scheme not in ("http", "https"):
        raise BadInput(
            "An endpoint URL starts with https:// (or http://).", code="WEBHOOK_URL_INVALID"
        )
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise BadInput(
            "An endpoint URL must not carry credentials (user:password@); verify deliveries "
            "by their signature instead.",
            code="WEBHOOK_URL_CREDENTIALS",
        )
    if not host:
        raise BadInput("An endpoint URL names a host.", code="WEBHOOK_URL_INVALID")
    if parts.fragment or url.endswith("#"):
        raise BadInput("An endpoint URL has no #fragment.", code="WEBHOOK_URL_INVALID")
    if port == 0:
        raise BadInput("An endpoint URL's port is 1-65535.", code="WEBHOOK_URL_INVALID")
    if not allow_private and not public_host(host):
        raise BadInput(
            f"{host} is not a public address; webhooks are sent to the internet only "
            "(the operator may allow private addresses).",
            code="WEBHOOK_URL_PRIVATE",
        )
    if not parts.path:
        url = parts._replace(path="/").geturl()
    return url
