"""Which addresses the gateway and the webhook sender connect to, and connecting only to those.

A provider registers its own endpoint and an account its own webhook URL, so without a check
either could make the service send requests into its own network (an admin port on loopback, a
database, cloud metadata at ``169.254.169.254``) and, through the gateway, read the answer.
Checking a name and then letting the HTTP client resolve it again to connect is not enough: a
name can answer a public address to the check and ``127.0.0.1`` to the connection (DNS
rebinding). So here the check and the connection are one step. :class:`AddressGuard` is the
HTTP client's resolver and socket factory: to open a connection it resolves the host once
(:class:`Resolver`), refuses the host if *any* of its addresses is not public
(:func:`public_address`; a name that mixes public and internal answers is not tried on its public
ones), and the connection goes to one of exactly those addresses. The request keeps its ``Host``
header and TLS its server name: aiohttp takes SNI and the certificate's host name from the URL,
never from what was dialed. :func:`pinned_connector` is the aiohttp connector built on it: its
resolver is the guard (:class:`GuardedResolver`), so the connector connects only to the addresses
the guard returned, and every socket it opens is made by :meth:`AddressGuard.socket`, which checks
once more the address about to be dialed (a literal address in a URL is never given to a
resolver).

The policy, :func:`public_address` (pure; the same at registration and at connect time):

- IPv4: global unicast (``ipaddress``'s ``is_global``, from IANA's special-purpose registries)
  and not multicast. So loopback, ``0/8``, ``10/8``, ``100.64/10``, ``169.254/16``, ``172.16/12``,
  ``192.168/16``, the documentation and benchmarking ranges, ``240/4`` and broadcast are refused.
- IPv6: the same, and whatever the Python version's tables say, also the local-use NAT64 prefix
  ``64:ff9b:1::/48`` (a translator on the service's own network, RFC 8215), ``3fff::/20``
  (documentation), ``5f00::/16`` (SRv6 segment ids), the old site-local ``fec0::/10`` and the
  IPv4-translated ``::ffff:0:0:0/96``. ``::1``, ``fe80::/10``, ``fc00::/7`` and multicast are
  refused as not global.
- An IPv6 address that carries an IPv4 address is judged by that IPv4 address alone, because
  that is where its packets end up: IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible
  ``::a.b.c.d``, NAT64 ``64:ff9b::/96`` (the low 32 bits), 6to4 ``2002::/16`` (bits 16-47) and
  Teredo ``2001::/32`` (its server, bits 32-63, and its client, the low 32 bits inverted: both
  must be public). So ``::7f00:1`` and ``64:ff9b::a00:1`` are refused and ``64:ff9b::808:808``
  (8.8.8.8 through the well-known NAT64 prefix) is not.
- An address with a zone (``fe80::1%eth0``) is refused, and so are the names ``localhost``,
  ``localhost.localdomain`` and anything under ``.localhost`` (RFC 6761), without resolving them.

With ``allow_private`` (tests, the local demo) nothing is vetted, but the connection is still
made the same way: resolved once, dialed by address.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import socket
import ssl
from collections.abc import Sequence
from typing import Any, Protocol

import aiohttp
import certifi
import pycares
from aiohappyeyeballs import AddrInfoType, SocketFactoryType
from aiohttp.abc import AbstractResolver, ResolveResult

__all__ = [
    "AddressGuard",
    "AddressRefused",
    "AresResolver",
    "GuardedResolver",
    "Resolver",
    "pinned_connector",
    "public_address",
    "public_host",
    "shared_resolver",
    "tls_context",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})
#: Refused whatever the running Python's ``is_global`` says of them (its tables vary by version).
_NOT_PUBLIC_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in ("64:ff9b:1::/48", "3fff::/20", "5f00::/16", "fec0::/10", "::ffff:0:0:0/96")
)
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def public_address(address: str | IPAddress) -> bool:
    """Whether a resolved address is one the service may connect to (the module's policy).

    Text that is not an IP address is not public.
    """
    if isinstance(address, str):
        if "%" in address:  # a zone: only link-local addresses need one
            return False
        try:
            address = ipaddress.ip_address(address)
        except ValueError:
            return False
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried_ipv4(address)
        if carried:
            return all(_public(v4) for v4 in carried)
        if any(address in net for net in _NOT_PUBLIC_V6):
            return False
    return _public(address)


def _public(ip: IPAddress) -> bool:
    return ip.is_global and not ip.is_multicast


def _carried_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _MAPPED or ip in _COMPATIBLE or ip in _NAT64:
        return (low,)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        return ip.teredo  # (server, client): the client already un-inverted
    return ()


def public_host(host: str) -> bool:
    """False for a ``localhost`` name and for a literal address that is not public; True for
    any other name (a name is judged by its addresses when it is resolved to connect)."""
    name = host.strip("[]").lower()
    if _local_name(name):
        return False
    literal = _literal(name)
    return literal is None or public_address(literal)


def _local_name(name: str) -> bool:
    name = name.lower().rstrip(".")
    return name in _LOCAL_NAMES or name.endswith(".localhost")


def _literal(host: str) -> str | None:
    """``host`` if it is an IP address literal (brackets removed), else None. The older numeric
    forms of an IPv4 address that resolvers still read (``2130706433``, ``0177.0.0.1``,
    ``127.1``, ``0x7f.1``: all 127.0.0.1) are that address, written in four decimal parts: taken
    for a name, they passed as public when registered. One trailing dot (a name's root, which
    URLs may write) is the same address: ``127.0.0.1.`` passed registration as a name."""
    name = host.strip("[]")
    if name.endswith(".") and not name.endswith(".."):
        name = name[:-1]
    try:
        ipaddress.ip_address(name)
    except ValueError:
        pass
    else:
        return name
    if not name or not (name[0].isdigit() and name.rstrip(".").replace(".", "").isalnum()):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(name))
    except OSError:
        return None


class Resolver(Protocol):
    """Resolves a host name to its addresses (as text, in the order to try them).

    Raises ``OSError`` when the name does not resolve.
    """

    async def resolve(self, host: str, port: int) -> list[str]: ...


class AresResolver:
    """Names looked up by c-ares (``pycares``) on its own event thread, never on a thread of
    the event loop's pool.

    The system's ``getaddrinfo`` blocks a thread of the loop's default executor (six here) for
    as long as the name servers take; a lookup abandoned at the connect time-out keeps its thread
    until the resolver gives up. So ten webhook URLs or provider endpoints whose names answer
    slowly, all of one account, held every thread, and another account's call or delivery to a
    healthy host failed its connect time-out waiting for one. Here a lookup is a query c-ares
    multiplexes with all the others on one socket: a slow one holds nothing anyone else waits
    for, and one abandoned is dropped when its answer (or c-ares' own ``timeout`` x ``tries``)
    comes. The names come from ``/etc/hosts`` first, then the name servers and search domains of
    ``/etc/resolv.conf`` (or ``servers``, ``host:port`` each); other name services the system
    may list (``nsswitch.conf``) are not asked.

    ``pycares`` is used directly rather than through ``aiodns``, which binds a channel to one
    event loop: the guard serves connectors on several loops, and each lookup here answers on
    the loop that asked. Thread-safe; one channel (one c-ares thread) for every loop.
    """

    def __init__(
        self, servers: Sequence[str] | None = None, *, timeout: float = 2.0, tries: int = 2
    ) -> None:
        self._channel = pycares.Channel(servers=servers, timeout=timeout, tries=tries)

    def __repr__(self) -> str:
        return f"AresResolver(servers={self._channel.servers!r})"

    async def resolve(self, host: str, port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[list[Any]] = loop.create_future()

        def answered(result: Any, error: int | None) -> None:  # on c-ares' thread, or this one
            # A loop closed while the lookup was out refuses the call: nobody waits for it.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, answer, host, result, error)

        try:
            self._channel.getaddrinfo(host, port, type=socket.SOCK_STREAM, callback=answered)
        except (pycares.AresError, UnicodeError, ValueError) as exc:
            raise OSError(f"{host} is not a name that can be looked up: {exc}") from None
        nodes = await answer
        return list(
            dict.fromkeys(
                node.addr[0].decode("ascii")
                for node in nodes
                if node.family in (socket.AF_INET, socket.AF_INET6)
            )
        )


def _settle(answer: asyncio.Future[list[Any]], host: str, result: Any, error: int | None) -> None:
    """A lookup's result given to whoever still waits for it (a cancelled wait is left be)."""
    if answer.done():
        return
    if error is not None:
        reason = pycares.errno.strerror(error)
        if isinstance(reason, bytes):
            reason = reason.decode("ascii", "replace")
        answer.set_exception(OSError(f"{host} does not resolve: {reason}"))
    else:
        answer.set_result(list(result.nodes))


@functools.cache
def shared_resolver() -> AresResolver:
    """The process's one resolver, made on first use (the default of every guard)."""
    return AresResolver()


class AddressRefused(Exception):
    """A host that is, or resolves to, an address the guard does not connect to."""

    def __init__(self, host: str, address: str | None = None) -> None:
        self.host = host
        self.address = address
        if address is None or address == host:
            message = f"{host} is not a public address"
        else:
            message = f"{host} resolves to {address}, which is not a public address"
        super().__init__(message)


class AddressGuard:
    """Connections only to vetted addresses: resolve once, check all, dial only those.

    ``resolver`` answers the names (:func:`shared_resolver` by default; tests give a stub);
    ``dial`` makes the socket for each address a connection tries, from its
    ``getaddrinfo``-style ``(family, type, proto, canonname, sockaddr)`` (a plain TCP socket by
    default; tests give a fake network's). With ``allow_private`` nothing is refused. Holds no
    state of its own: one guard may serve many connectors.
    """

    def __init__(
        self,
        resolver: Resolver | None = None,
        *,
        allow_private: bool = False,
        dial: SocketFactoryType | None = None,
    ) -> None:
        self.resolver: Resolver = resolver or shared_resolver()
        self.allow_private = allow_private
        self._dial = dial

    def __repr__(self) -> str:
        return f"AddressGuard(allow_private={self.allow_private})"

    async def addresses(self, host: str, port: int) -> list[str]:
        """``host``'s addresses, resolved once, every one vetted (unless private ones are
        allowed). Raises :class:`AddressRefused` if any is not public, ``OSError`` if the name
        does not resolve; a literal address is its own answer."""
        literal = _literal(host)
        if literal is not None:
            found = [literal]
        elif not self.allow_private and _local_name(host):
            raise AddressRefused(host)
        else:
            found = await self.resolver.resolve(host, port)
            if not found:
                raise OSError(f"{host} has no address")
        if not self.allow_private:
            for address in found:
                if not public_address(address):
                    raise AddressRefused(host, address)
        return found

    def socket(self, addr_info: AddrInfoType) -> socket.socket:
        """The socket for the address a connection is about to dial, refused
        (:class:`AddressRefused`) unless that address is public or private ones are allowed:
        the last check, which also covers a URL's literal address (the connector resolves no
        literal, so :class:`GuardedResolver` never sees one)."""
        address = str(addr_info[4][0])
        if not self.allow_private and not public_address(address):
            raise AddressRefused(address)
        if self._dial is not None:
            return self._dial(addr_info)
        return socket.socket(addr_info[0], addr_info[1], addr_info[2])


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, answering a name with the addresses ``guard`` vetted (and only
    those): the connector then connects to exactly them, in this order."""

    def __init__(self, guard: AddressGuard) -> None:
        self.guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            found = await self.guard.addresses(host, port)
        except UnicodeError as exc:  # a name IDNA refuses: it does not resolve
            raise OSError(f"{host} is not a host name: {exc}") from None
        flags = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=flags,
            )
            for address in found
        ]

    async def close(self) -> None:
        return None


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context connections verify providers with: the certifi roots (nothing is read
    from the environment), the host name checked. Made once a process and shared, unchanged,
    by every connector: reading the CA bundle costs tens of milliseconds."""
    return ssl.create_default_context(cafile=certifi.where())


def pinned_connector(
    guard: AddressGuard,
    *,
    max_connections: int,
    keepalive_expiry: float = 4.0,
    verify: ssl.SSLContext | None = None,
) -> aiohttp.TCPConnector:
    """An aiohttp connector that connects only through ``guard``: HTTP/1.1 keep-alive
    connections, at most ``max_connections`` in use, an idle one closed after
    ``keepalive_expiry`` seconds; ``verify`` is the TLS context (:func:`tls_context` by default).

    Every new connection resolves again (no DNS cache: an answer is vetted each time it is used),
    and a name's addresses are tried one after another in the resolver's order (no Happy
    Eyeballs race), within the client's connect time-out.
    """
    return aiohttp.TCPConnector(
        resolver=GuardedResolver(guard),
        use_dns_cache=False,
        happy_eyeballs_delay=None,
        socket_factory=guard.socket,
        ssl=verify or tls_context(),
        limit=max_connections,
        limit_per_host=0,
        keepalive_timeout=keepalive_expiry,
    )
