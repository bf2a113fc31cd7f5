"""Connection strings: which transport a ``connection=`` argument means.

``postgresql://user@host/db?namespace=app`` (or ``postgres://``): embedded, the
engine in this process.  ``pgqueue://host:6789,host2:6789?token=...&pool=4``:
TCP to brokers.  A transport object passes through unchanged.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from pgqueue.client.transport import Transport
from pgqueue.errors import ConfigError

__all__ = ["check_connection", "open_transport"]

EMBEDDED_OPTIONS = {
    "namespace": str,
    "pool_max_size": int,
    "lease_ms": int,
    "poll_interval_ms": int,
}


def check_connection(connection: str) -> None:
    """Raise :class:`ConfigError` now for a string no transport accepts (a wrong
    scheme, a malformed broker list or option), before anything connects."""
    scheme = urlsplit(connection).scheme if isinstance(connection, str) else ""
    if scheme in ("postgresql", "postgres"):
        return
    if scheme == "pgqueue":
        from pgqueue.client.tcp_settings import parse_url

        parse_url(connection)
        return
    raise _wrong_scheme(connection)


def _wrong_scheme(connection: str) -> ConfigError:
    shown = urlsplit(connection).scheme or connection[:20]
    return ConfigError(
        f"connection must start with postgresql:// (embedded) or pgqueue:// (brokers), "
        f"not {shown!r}"
    )


def open_transport(connection: str | Transport, **options: Any) -> Transport:
    """The transport for ``connection`` (not started yet: call ``await t.start()``)."""
    if not isinstance(connection, str):
        return connection
    parts = urlsplit(connection)
    if parts.scheme in ("postgresql", "postgres"):
        from pgqueue.client.embedded import EmbeddedTransport

        query = dict(parse_qsl(parts.query))
        settings: dict[str, Any] = {}
        for key, kind in EMBEDDED_OPTIONS.items():
            if key in query:
                settings[key] = kind(query.pop(key))
        settings.update(options)
        settings.setdefault("run_maintenance", True)
        rest = "&".join(f"{k}={v}" for k, v in query.items())
        dsn = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, ""))
        return EmbeddedTransport(dsn, **settings)
    if parts.scheme == "pgqueue":
        from pgqueue.client.tcp import TcpTransport

        return TcpTransport.from_url(connection, **options)
    raise _wrong_scheme(connection)
