"""The broker's own settings (the engine's are :class:`pgqueue.config.Config`)."""

from __future__ import annotations

from dataclasses import dataclass

from pgqueue.config import at_least
from pgqueue.errors import ConfigError
from pgqueue.manager.projection import BYTES_DEFAULT as PROJECTION_BYTES_DEFAULT
from pgqueue.manager.projection import ENTRIES_DEFAULT as PROJECTION_ENTRIES_DEFAULT
from pgqueue.protocol import MAX_FRAME_SIZE

__all__ = ["AuthToken", "BrokerSettings"]

# (setting, its least value): checked by BrokerSettings.validate.
_MINIMUMS = (
    ("max_frame_bytes", 1024),
    ("max_inflight_per_connection", 1),
    ("max_write_buffer_bytes", 1024),
    ("max_connections_per_address", 0),
    ("idle_partial_frame_ms", 0),
    ("max_http_body_bytes", 1024),
    ("sse_keepalive_ms", 100),
    ("max_request_age_ms", 0),
    ("readiness_timeout_ms", 50),
)

TCP_PORT_DEFAULT = 6789
HTTP_PORT_DEFAULT = 6790
HTTP_BODY_BYTES_DEFAULT = 10 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class AuthToken:
    """A client token; ``name`` is what audits record (``name=secret`` on the CLI)."""

    name: str
    secret: str

    @classmethod
    def parse(cls, text: str, index: int) -> AuthToken:
        name, sep, secret = text.partition("=")
        if sep and name and secret:
            return cls(name, secret)
        if not text:
            raise ConfigError("an auth token must not be empty")
        return cls(f"token-{index + 1}", text)


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """Listening addresses, auth, TLS and per-connection limits.

    ``auth_tokens`` may use every namespace; ``tokens_file`` holds hashed tokens
    bound to namespaces (:mod:`pgqueue.server.tokens`), and ``tokens_from_db``
    adds those of the ``pgqueue_tokens`` table; both are re-read on SIGHUP.
    ``tls_cert`` / ``tls_key`` (PEM files) turn TLS on for the TCP and HTTP
    listeners."""

    host: str = "0.0.0.0"
    tcp_port: int = TCP_PORT_DEFAULT
    http_port: int = HTTP_PORT_DEFAULT
    auth_tokens: tuple[AuthToken, ...] = ()
    tokens_file: str | None = None
    tokens_from_db: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    max_frame_bytes: int = MAX_FRAME_SIZE
    max_inflight_per_connection: int = 50
    idle_partial_frame_ms: int = 60_000
    max_write_buffer_bytes: int = 64 * 1024 * 1024
    max_connections_per_address: int = 1024
    drain_timeout_ms: int = 30_000
    enable_http: bool = True
    projection_entries: int = PROJECTION_ENTRIES_DEFAULT
    projection_bytes: int = PROJECTION_BYTES_DEFAULT
    max_http_body_bytes: int = HTTP_BODY_BYTES_DEFAULT
    sse_keepalive_ms: int = 15_000
    readiness_timeout_ms: int = 2_000
    max_request_age_ms: int = 30_000

    def validate(self) -> BrokerSettings:
        for name, port in (("tcp_port", self.tcp_port), ("http_port", self.http_port)):
            if not 0 <= port <= 65535:
                raise ConfigError(f"{name} must be between 0 and 65535")
        for name, minimum in _MINIMUMS:
            at_least(name, getattr(self, name), minimum)
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("tls_cert and tls_key go together: give both or neither")
        names = [t.name for t in self.auth_tokens]
        if len(set(names)) != len(names):
            raise ConfigError("auth token names must be unique")
        return self
