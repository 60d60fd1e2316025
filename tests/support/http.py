"""Requests from the tests to servers on loopback, on one client.

``httpx.post`` and its kin make a client for each request, and each client a TLS context that
reads the whole CA bundle: about 35 ms of CPU a request on the development machine, more than
the request itself, over some thousands of requests. This client is made once; as with
``httpx.post``, each request stands alone: it opens its own connection (a server a test kills
or restarts leaves nothing stale behind) and keeps no cookie (every loopback server is one
cookie domain). httpx documents a client as safe to share between threads."""

from __future__ import annotations

from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx

_CLIENT = httpx.Client(
    limits=httpx.Limits(max_keepalive_connections=0),
    cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
    timeout=30,
)


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """``httpx.request`` on the shared client (its time-out 30 s unless given)."""
    return _CLIENT.request(method, url, **kwargs)


def get(url: str, **kwargs: Any) -> httpx.Response:
    return _CLIENT.get(url, **kwargs)


def post(url: str, **kwargs: Any) -> httpx.Response:
    return _CLIENT.post(url, **kwargs)
