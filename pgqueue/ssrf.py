"""The SSRF guard of webhooks: a webhook may only reach public addresses.

A URL is checked when it is registered and again for every connection the
delivery service opens (a name that resolved to a public address yesterday
may resolve to 127.0.0.1 today: DNS rebinding).  Registration needs no DNS
answer (a name not published yet is accepted); the delivery check is the one
that matters.  The delivery connects to the
very address that was checked, never to a second resolution of the name.

Refused, for IPv4 and IPv6 alike: unspecified (``0.0.0.0/8``, ``::``),
loopback, link-local (incl. cloud metadata at ``169.254.169.254``), multicast,
reserved (``240.0.0.0/4``, broadcast), private and special-purpose ranges
(RFC 1918, CGNAT ``100.64.0.0/10``, unique-local ``fc00::/7``, site-local
``fec0::/10``, documentation and benchmarking nets, NAT64 local-use) and
anything else that is not globally routable.  An IPv6 address that embeds an
IPv4 one (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4
``2002::/16``) is judged by the IPv4 address it reaches.  IPv4 literals are
read in every spelling ``inet_aton`` accepts (``2130706433``, ``0x7f000001``,
``0177.0.0.1``, ``127.1``), and ``localhost`` names are refused without asking DNS.

``Config.webhook_allow_private`` turns the address checks off (for receivers
on a private network or in tests); the scheme must still be http or https.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from pgqueue.errors import ValidationError

__all__ = [
    "MAX_URL_LENGTH",
    "AddressGuard",
    "IPAddress",
    "Resolver",
    "WebhookTarget",
    "address_refusal",
    "not_allowed",
    "parse_ip_literal",
    "parse_webhook_url",
    "resolve_host",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]

MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT_S = 5.0

_HEX = re.compile(r"^0[xX][0-9a-fA-F]*$")
_OCTAL = re.compile(r"^0[0-7]+$")
_DECIMAL = re.compile(r"^(?:0|[1-9][0-9]*)$")
_THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    """A webhook URL taken apart: ``host`` lowercased, without brackets or a final dot."""

    url: str
    scheme: str
    host: str
    port: int
    address: IPAddress | None = None


def _url_error(message: str) -> ValidationError:
    return ValidationError(message, field="url")


def not_allowed(reason: str) -> ValidationError:
    return _url_error(f"Webhook URL is not allowed: {reason}")


def parse_webhook_url(url: object) -> WebhookTarget:
    """Check the shape of a webhook URL (bunqueue's messages); no DNS."""
    if not isinstance(url, str) or not url:
        raise _url_error("Webhook URL is required")
    if len(url) > MAX_URL_LENGTH:
        raise _url_error(f"Webhook URL too long (max {MAX_URL_LENGTH} characters)")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise _url_error("Invalid URL format")
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError:
        raise _url_error("Invalid URL format") from None
    if parts.scheme not in ("http", "https"):
        raise _url_error("Webhook URL must use http or https protocol")
    if not host:
        raise _url_error("Invalid URL format")
    host = host.rstrip(".") if host.endswith(".") and ":" not in host else host
    if not host:
        raise _url_error("Invalid URL format")
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return WebhookTarget(url, parts.scheme, host, port, parse_ip_literal(host))


def _ipv4_part(text: str) -> int | None:
    if _HEX.match(text):
        return int(text[2:] or "0", 16)
    if _OCTAL.match(text):
        return int(text[1:], 8)
    if _DECIMAL.match(text):
        return int(text)
    return None


def _ipv4_any_spelling(host: str) -> ipaddress.IPv4Address | None:
    """``inet_aton``'s reading: 1-4 parts, each decimal, octal (0...) or hex (0x...);
    the last part fills the remaining bytes."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_ipv4_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    *head, last = values
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = last
    for i, n in enumerate(head):
        value |= n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address ``host`` spells, or None when it is a name."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(unquote(host))
        except ValueError:
            raise _url_error("Invalid URL format") from None
    return _ipv4_any_spelling(host)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
    return None


def _category(address: IPAddress) -> str | None:
    if address.is_unspecified or (
        isinstance(address, ipaddress.IPv4Address) and address in _THIS_NETWORK
    ):
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_reserved:
        return "reserved"
    if address.is_private or (
        isinstance(address, ipaddress.IPv6Address)
        and (address.is_site_local or address in _NAT64_LOCAL)
    ):
        return "private"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "private"
    if not address.is_global:
        return "non-public"
    return None


def _phrase(category: str) -> str:
    article = "an" if category[0] in "aeiou" else "a"
    return f"{article} {category} address"


def address_refusal(address: IPAddress) -> str | None:
    """Why a webhook may not connect to ``address`` (``"a loopback address"``), or None."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            category = _category(embedded)
            if category is None:
                return None  # it reaches a public IPv4 address
            return f"{_phrase(category)} (IPv4 {embedded} embedded in IPv6)"
    category = _category(address)
    return None if category is None else _phrase(category)


def _is_localhost_name(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


async def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, in the resolver's order (OSError when none)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(RESOLVE_TIMEOUT_S):
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]))
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise OSError(f"no address for {host}")
    return addresses


@dataclass(frozen=True, slots=True)
class AddressGuard:
    """Decides where a webhook may connect; ``resolver`` is replaceable in tests."""

    allow_private: bool = False
    resolver: Resolver = field(default=resolve_host)

    async def vet(self, host: str, port: int) -> list[IPAddress]:
        """The addresses to connect to for ``host``, every one of them allowed.

        Raises :class:`ValidationError` ("Webhook URL is not allowed: ...")
        when ``host`` is or resolves to a refused address, and ``OSError``
        when it cannot be resolved (worth a retry).  With ``allow_private``
        nothing is refused.
        """
        host = host.strip("[]").rstrip(".").lower()
        literal = parse_ip_literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            if _is_localhost_name(host) and not self.allow_private:
                raise not_allowed(f"{host} is a loopback host name")
            try:
                addresses = await self.resolver(host, port)
            except TimeoutError as exc:
                raise OSError(f"resolving {host} timed out") from exc
        if self.allow_private:
            return addresses
        for address in addresses:
            reason = address_refusal(address)
            if reason is not None:
                where = f"{host} is" if literal is not None else f"{host} resolves to"
                detail = "" if literal is not None else f" ({address})"
                raise not_allowed(f"{where} {reason}{detail}")
        return addresses

    async def check_url(self, url: object) -> WebhookTarget:
        """Registration: the URL's shape, then its host.

        A literal address and a ``localhost`` name are judged as they are; a name
        is refused when it resolves to a refused address now, and accepted when
        it does not resolve (yet): an answer at registration proves nothing about
        the answer at delivery, where every connection is checked again.
        """
        target = parse_webhook_url(url)
        if self.allow_private:
            return target
        with contextlib.suppress(OSError):
            await self.vet(target.host, target.port)
        return target
