"""The TCP transport's settings, from a ``pgqueue://`` URL and keyword overrides.

    pgqueue://host:6789,host2:6789?token=secret&pool=4&timeout=30

``host[:port]`` items are comma-separated (port 6789 by default, IPv6 in
brackets).  Query options, each also accepted as a keyword of
:meth:`TcpTransport.from_url <pgqueue.client.tcp.TcpTransport.from_url>`
(keywords win):

=====================  =======  =================================================
option                 default  meaning
=====================  =======  =================================================
``token``              none     sent with ``Auth`` on every connection
``namespace``          none     which of the token's namespaces to use (sent
                                with ``Auth``; needs ``token``); none: the
                                token's own (docs/security.md)
``tls``                false    speak TLS (a broker started with ``--tls-cert``),
                                verifying its certificate and host name
``tls_ca``             none     PEM file of the CA (or the self-signed
                                certificate) to trust; implies ``tls``
``pool``               4        connections kept open (1..64)
``timeout``            30       seconds a request may take, waiting for a
                                connection included
``connect_timeout``    5        seconds one connection attempt may take
``autobatch``          true     coalesce concurrent single pushes into PUSHB
``batch_max_jobs``     50       most jobs in one auto-batch (1..10000)
``batch_delay_ms``     5        longest wait of a job for its auto-batch
``max_payload_bytes``  10 MiB   largest job data (JSON), checked before sending
``ping_interval``      30       seconds between keep-alive pings of an event stream
``liveness_timeout``   10       seconds of silence after which a connection with
                                requests in flight is dropped (pinged at half of
                                it; its requests fail over or end indeterminate)
=====================  =======  =================================================

Without a token a client works in the broker's own namespace (``pgqueue
serve --namespace``); with one, in the token's.  Anything unknown is refused
(a typo would go unnoticed).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pgqueue.client.pool import Address
from pgqueue.config import MAX_PAYLOAD_BYTES_DEFAULT, NAMESPACE_PATTERN
from pgqueue.errors import ConfigError

__all__ = ["DEFAULT_PORT", "TcpSettings", "parse_url"]

DEFAULT_PORT = 6789


@dataclass(frozen=True, slots=True)
class TcpSettings:
    """Validated settings of one TCP transport (see the module docstring)."""

    addresses: tuple[Address, ...]
    token: str | None = None
    pool: int = 4
    timeout: float = 30.0
    connect_timeout: float = 5.0
    autobatch: bool = True
    batch_max_jobs: int = 50
    batch_delay_ms: float = 5.0
    max_payload_bytes: int = MAX_PAYLOAD_BYTES_DEFAULT
    ping_interval: float = 30.0
    liveness_timeout: float = 10.0
    namespace: str | None = None
    tls: bool = False
    tls_ca: str | None = None

    def validate(self) -> TcpSettings:
        if not self.addresses:
            raise ConfigError("connection: at least one broker host:port is required")
        _between("pool", self.pool, 1, 64)
        _between("timeout", self.timeout, 0.001, 86_400)
        _between("connect_timeout", self.connect_timeout, 0.001, 3_600)
        _between("batch_max_jobs", self.batch_max_jobs, 1, 10_000)
        _between("batch_delay_ms", self.batch_delay_ms, 0, 1_000)
        _between("max_payload_bytes", self.max_payload_bytes, 1024, 64 * 1024 * 1024)
        _between("ping_interval", self.ping_interval, 0.01, 86_400)
        _between("liveness_timeout", self.liveness_timeout, 0.02, 86_400)
        if self.token is not None and (not isinstance(self.token, str) or not self.token):
            raise ConfigError("token must be a non-empty string")
        if self.namespace is not None:
            if not isinstance(self.namespace, str) or not NAMESPACE_PATTERN.match(self.namespace):
                raise ConfigError("namespace must be 1-64 letters, digits, '_', '.', ':' or '-'")
            if self.token is None:
                raise ConfigError(
                    "namespace needs a token: the token chooses among its namespaces; "
                    "without one a client works in the broker's own (pgqueue serve --namespace)"
                )
        if not isinstance(self.tls, bool):
            raise ConfigError("tls must be true or false")
        if self.tls_ca is not None and (not isinstance(self.tls_ca, str) or not self.tls_ca):
            raise ConfigError("tls_ca must be the path of a PEM file")
        return self

    def ssl_context(self) -> ssl.SSLContext | None:
        """The client TLS context (None: plain TCP); the CA file is read here."""
        if not self.tls and self.tls_ca is None:
            return None
        try:
            return ssl.create_default_context(cafile=self.tls_ca)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"tls_ca: cannot load {self.tls_ca}: {exc}") from None


def _between(name: str, value: object, lo: float, hi: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise ConfigError(f"{name} must be a number from {lo:g} to {hi:g}, not {value!r}")


def _flag(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


_PARSERS: dict[str, Callable[[str], Any]] = {
    "token": str,
    "pool": int,
    "timeout": float,
    "connect_timeout": float,
    "autobatch": _flag,
    "batch_max_jobs": int,
    "batch_delay_ms": float,
    "max_payload_bytes": int,
    "ping_interval": float,
    "liveness_timeout": float,
    "namespace": str,
    "tls": _flag,
    "tls_ca": str,
}


def _address(item: str) -> Address:
    host, port_text = item, ""
    if item.startswith("["):
        host, sep, rest = item[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ConfigError(f"connection: bad broker address {item!r}")
        port_text = rest[1:]
    elif item.count(":") == 1:
        host, port_text = item.split(":")
    elif ":" in item:
        raise ConfigError(f"connection: write IPv6 addresses in brackets: {item!r}")
    if not host:
        raise ConfigError(f"connection: broker address {item!r} has no host")
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"connection: bad port in broker address {item!r}")
    return host, int(port_text)


def parse_url(url: str, **overrides: Any) -> TcpSettings:
    """Settings from ``pgqueue://...`` plus keyword overrides; :class:`ConfigError`
    names what is wrong."""
    if not isinstance(url, str):
        raise ConfigError("connection must be a string")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ConfigError(f"connection: bad broker address in {url[:80]!r}: {exc}") from exc
    if parts.scheme != "pgqueue":
        raise ConfigError(f"connection must start with pgqueue://, not {url[:20]!r}")
    netloc = parts.netloc
    if "@" in netloc:
        raise ConfigError("connection: put the token in ?token=..., not before the host")
    if parts.path not in ("", "/") or parts.fragment:
        raise ConfigError("connection: pgqueue:// URLs have no path or fragment")
    items = [item.strip() for item in netloc.split(",")]
    if not netloc or any(not item for item in items):
        raise ConfigError("connection: list brokers as pgqueue://host:port[,host:port...]")
    addresses = tuple(dict.fromkeys(_address(item) for item in items))
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise ConfigError(f"connection: bad query string: {exc}") from exc
    values: dict[str, Any] = {}
    for key, text in pairs:
        _check_name(key, "connection option")
        if key in values:
            raise ConfigError(f"connection option {key} is given twice")
        try:
            values[key] = _PARSERS[key](text)
        except ValueError as exc:
            raise ConfigError(f"connection option {key}: {exc}") from exc
    for key in overrides:
        _check_name(key, "option")
    values.update(overrides)
    return TcpSettings(addresses=addresses, **values).validate()


_KNOWN = frozenset(f.name for f in fields(TcpSettings)) - {"addresses"}


def _check_name(key: str, what: str) -> None:
    if key not in _KNOWN:
        raise ConfigError(f"unknown {what}: {key} (known: {', '.join(sorted(_KNOWN))})")
