"""One HTTP POST per delivery attempt, through connections the SSRF guard vetted.

Every new connection resolves its host with the guard and connects to the
address the guard allowed (no second resolution, so a DNS answer that
changes between the check and the connect cannot redirect it); TLS still
verifies the certificate against the URL's host name.  No proxy from the
environment, no redirects followed.  The outcome of an attempt:

* 2xx: delivered;
* any other status, a timeout, a refused or broken connection, a name that
  does not resolve: a failure worth a retry;
* a host that is (or now resolves to) a refused address: a final failure.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import httpcore

from pgqueue._version import __version__
from pgqueue.errors import ValidationError
from pgqueue.manager.webhooks.policy import sign
from pgqueue.ssrf import AddressGuard

__all__ = ["Attempt", "AttemptResult", "WebhookSender"]

log = logging.getLogger("pgqueue.webhooks")

MAX_ANSWER_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one POST sends."""

    delivery_id: str
    url: str
    event: str
    body: str
    secret: str | None
    attempt: int
    timestamp_ms: float


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """How one POST went."""

    delivered: bool
    status_code: int | None = None
    error: str | None = None
    retryable: bool = True


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to addresses the guard allowed for the host."""

    def __init__(self, guard: AddressGuard) -> None:
        self._guard = guard
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._guard.vet(host, port)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("webhooks never use unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def user_agent() -> str:
    return f"pgqueue-webhooks/{__version__}"


def _headers(attempt: Attempt, body: bytes) -> list[tuple[str, str]]:
    parts = urlsplit(attempt.url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    headers = [
        ("Host", host),
        ("User-Agent", user_agent()),
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("X-Webhook-Event", attempt.event),
        ("X-Webhook-Timestamp", str(round(attempt.timestamp_ms))),
        ("X-Webhook-Delivery", attempt.delivery_id),
        ("X-Webhook-Attempt", str(attempt.attempt)),
    ]
    if attempt.secret:
        headers.append(("X-Webhook-Signature", sign(body, attempt.secret)))
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers.append(
            ("Authorization", "Basic " + base64.b64encode(credentials.encode()).decode())
        )
    return headers


async def _drain(response: httpcore.Response) -> None:
    """Read a small answer so the connection can be reused; give up on a large one."""
    read = 0
    async for chunk in response.aiter_stream():
        read += len(chunk)
        if read > MAX_ANSWER_BYTES:
            break


class WebhookSender:
    """A connection pool that POSTs deliveries; :meth:`aclose` when done."""

    def __init__(self, guard: AddressGuard, *, timeout_ms: int, max_connections: int = 100) -> None:
        self._timeout = timeout_ms / 1000
        self._pool = httpcore.AsyncConnectionPool(
            max_connections=max_connections,
            keepalive_expiry=30.0,
            network_backend=_GuardedBackend(guard),
        )

    async def send(self, attempt: Attempt) -> AttemptResult:
        body = attempt.body.encode()
        timeout = {"connect": self._timeout, "read": self._timeout, "write": self._timeout}
        try:
            async with asyncio.timeout(self._timeout):
                async with self._pool.stream(
                    "POST",
                    attempt.url,
                    headers=_headers(attempt, body),
                    content=body,
                    extensions={"timeout": {**timeout, "pool": self._timeout}},
                ) as response:
                    status = response.status
                    await _drain(response)
        except ValidationError as exc:
            return AttemptResult(False, error=exc.message, retryable=False)
        except (TimeoutError, httpcore.TimeoutException):
            return AttemptResult(False, error=f"timed out after {round(self._timeout * 1000)} ms")
        except (httpcore.NetworkError, httpcore.ProtocolError, OSError) as exc:
            return AttemptResult(False, error=f"{type(exc).__name__}: {exc}"[:500])
        if 200 <= status < 300:
            return AttemptResult(True, status_code=status)
        return AttemptResult(False, status_code=status, error=f"HTTP {status}")

    async def aclose(self) -> None:
        await self._pool.aclose()
