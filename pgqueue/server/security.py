"""The listeners' security: TLS contexts, and the warning of an open broker.

A broker listening beyond loopback without any token serves anyone who can
reach its ports: :func:`open_warning` says so, and the broker repeats it on
stderr (the CLI), in its log and in ``/readyz`` / ``/health``
(``warnings: ["auth"]``) for as long as it runs.
"""

from __future__ import annotations

import ipaddress
import ssl

from pgqueue.errors import ConfigError

__all__ = ["is_loopback", "open_warning", "server_tls_context"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost`` included)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def open_warning(host: str, auth_required: bool) -> str | None:
    """The warning for a broker on ``host`` (None: loopback, or tokens asked)."""
    if auth_required or is_loopback(host):
        return None
    return (
        f"WARNING: listening on {host} with no token (--auth-token or --tokens-file): "
        "anyone who can reach this port can push, read and delete jobs"
    )


def server_tls_context(cert: str, key: str) -> ssl.SSLContext:
    """A server context for ``cert`` (PEM chain) and ``key``; TLS 1.2 at least."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the TLS certificate {cert} and key {key}: {exc}") from None
    return context
