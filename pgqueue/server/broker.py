"""The broker process: the namespaces it serves, the listeners, the tokens, a clean drain.

``Broker.start()`` starts its own namespace (``Config.namespace``) and every
namespace its tokens name (one :class:`~pgqueue.server.tenant.Tenant` each:
an engine with its broker session, sharing one pool), then listens (TLS when
``BrokerSettings.tls_cert`` is set).  A request is served by the tenant of its
client's namespace (:meth:`Broker.for_namespace`).  ``Broker.reload_tokens()``
(SIGHUP) re-reads the tokens file and, with ``tokens_from_db``, the
``pgqueue_tokens`` table: a token removed or narrowed is refused on
the next request of every connection, and the event streams opened with it
end (docs/security.md).

``Broker.stop()`` is the SIGTERM path: stop accepting, let requests in flight
finish, give back the jobs pulled on its connections (so other brokers can run
them at once), end the sessions.  Leases it does not hold stay: a detached
pull (the SDK, HTTP) and a lease a worker renewed through this broker belong
to a worker that goes on through other brokers.  A ``kill -9`` leaves leases
that expire on the database clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from typing import Any

from pgqueue.config import Config
from pgqueue.db.queries import Q
from pgqueue.errors import AuthError, ConfigError, PgQueueError
from pgqueue.manager.completion import FailItem
from pgqueue.manager.models import AckItem, ItemOutcome
from pgqueue.manager.options import JobSpec
from pgqueue.manager.projection import Projection
from pgqueue.runtime import PostgresQueueManager
from pgqueue.server.access import Credential, choose_namespace
from pgqueue.server.claims import ClaimBook
from pgqueue.server.groupcommit import Coalescer
from pgqueue.server.host import BrokerHost
from pgqueue.server.metrics import BrokerMetrics
from pgqueue.server.request import ClientState
from pgqueue.server.security import open_warning, server_tls_context
from pgqueue.server.settings import BrokerSettings
from pgqueue.server.tcp import TcpServer
from pgqueue.server.tenant import Tenant
from pgqueue.server.tokens import (
    TokenBook,
    TokenEntry,
    checked_entry,
    digest_of,
    read_tokens_file,
)
from pgqueue.service import Service

__all__ = ["Broker"]

log = logging.getLogger("pgqueue.broker")


class Broker:
    """One broker process (see the module docstring).

    It is a ``BrokerHost`` itself: what it answers for (``manager``, ``claims``,
    ``push`` ...) is its own namespace's, the primary tenant's."""

    def __init__(
        self,
        config: Config,
        settings: BrokerSettings,
        manager: PostgresQueueManager | None = None,
    ) -> None:
        self.config = config.validate()
        self.settings = settings.validate()
        self.tokens = self._read_tokens()
        self.draining = False
        self.started_at = time.time()
        self.tls: ssl.SSLContext | None = None
        self.warnings: dict[str, str] = {}
        self.tcp = TcpServer(self)
        self.http: Any = None
        self.primary = Tenant(self, self.config, manager)
        self.tenants: dict[str, Tenant] = {self.config.namespace: self.primary}
        self.stopped = asyncio.Event()
        self._reloading = asyncio.Lock()

    # -- the primary namespace's parts -----------------------------------------------

    @property
    def manager(self) -> PostgresQueueManager:
        return self.primary.manager

    @property
    def claims(self) -> ClaimBook:
        return self.primary.claims

    @property
    def metrics(self) -> BrokerMetrics:
        return self.primary.metrics

    @property
    def projection(self) -> Projection | None:
        return self.primary.projection

    @property
    def pushes(self) -> Coalescer[JobSpec, str]:
        return self.primary.pushes

    @property
    def acks(self) -> Coalescer[AckItem, ItemOutcome]:
        return self.primary.acks

    @property
    def fails(self) -> Coalescer[FailItem, ItemOutcome]:
        return self.primary.fails

    async def push(self, spec: JobSpec) -> str:
        return await self.primary.push(spec)

    async def ack(self, item: AckItem) -> ItemOutcome:
        return await self.primary.ack(item)

    async def fail(self, item: FailItem) -> ItemOutcome:
        return await self.primary.fail(item)

    def count_stale(self, outcomes: list[ItemOutcome]) -> None:
        self.primary.count_stale(outcomes)

    async def subscribe(self, client: ClientState, queue: str, after: str | None) -> None:
        await self.tenant_of(client).subscribe(client, queue, after)

    def unsubscribe(self, client: ClientState) -> None:
        self.tenant_of(client).unsubscribe(client)

    async def client_closed(self, client: ClientState) -> None:
        await self.tenant_of(client).client_closed(client)

    def observe(self, command: str, seconds: float, ok: bool) -> None:
        self.primary.observe(command, seconds, ok)

    def services(self) -> list[Service]:
        """Every supervised long-lived service of this broker (health, metrics)."""
        return [service for tenant in self.tenants.values() for service in tenant.services()]

    # -- namespaces -------------------------------------------------------------------

    def served(self) -> set[str]:
        return set(self.tenants)

    def tenant_of(self, client: ClientState) -> Tenant:
        return self.tenants.get(client.namespace or self.config.namespace, self.primary)

    def for_namespace(self, namespace: str | None) -> BrokerHost:
        """The tenant serving ``namespace`` (None: the broker's own)."""
        tenant = self.tenants.get(namespace or self.config.namespace)
        if tenant is None:
            raise AuthError(f"Namespace {namespace!r} is not served by this broker")
        return tenant

    async def _start_tenants(self, namespaces: set[str]) -> None:
        """Start a tenant for each namespace not served yet (sharing the pool)."""
        for namespace in sorted(namespaces - set(self.tenants)):
            config = self.config.with_changes(namespace=namespace, broker_id=self.manager.broker_id)
            tenant = Tenant(self, config, PostgresQueueManager(config, self.manager.db))
            await tenant.start()
            self.tenants[namespace] = tenant
            log.info("namespace %s started (for its tokens)", namespace)

    # -- tokens -----------------------------------------------------------------------

    def _read_tokens(self, rows: list[TokenEntry] | None = None) -> TokenBook:
        """The token book: ``--auth-token``, the tokens file, the database's ``rows``."""
        entries = [TokenEntry(t.name, digest_of(t.secret), None) for t in self.settings.auth_tokens]
        path = self.settings.tokens_file
        if path is not None:
            entries += read_tokens_file(path)
        entries += rows or []
        required = path is not None or self.settings.tokens_from_db
        return TokenBook(entries, required=required)

    async def _read_all_tokens(self) -> TokenBook:
        rows: list[TokenEntry] = []
        if self.settings.tokens_from_db:
            rows = [
                checked_entry(
                    r["name"], r["digest"], r["namespaces"], r["read_only"], "pgqueue_tokens"
                )
                for r in await self.manager.db.fetch(Q.token_list)
            ]
        return self._read_tokens(rows)

    @property
    def auth_required(self) -> bool:
        return self.tokens.required

    def check_token(self, token: str) -> str | None:
        """The name of the matching token, else None."""
        entry = self.tokens.match(token)
        return None if entry is None else entry.name

    def authenticate(self, token: str | None, namespace: str | None) -> tuple[str, Credential]:
        """(actor, credential) of a client presenting ``token`` for ``namespace``
        (None: the token's own); :class:`AuthError` when refused."""
        entry = self.tokens.match(token or "")
        if entry is None:
            raise AuthError("Invalid token")
        chosen = choose_namespace(entry, namespace, self.config.namespace, self.served())
        return entry.name, Credential(entry.digest, chosen)

    async def reload_tokens(self) -> bool:
        """Re-read the tokens file (SIGHUP).  A file that does not parse changes
        nothing (logged); new namespaces start before their tokens are accepted."""
        async with self._reloading:
            try:
                book = await self._read_all_tokens()
                await self._start_tenants(book.namespaces())
            except (ConfigError, PgQueueError) as exc:
                log.error("tokens not reloaded, the old ones stay: %s", exc)
                return False
            old = {e.name for e in self.tokens.entries}
            self.tokens = book
            new = {e.name for e in book.entries}
            closed = self.tcp.revoke(book) + (self.http.revoke(book) if self.http else 0)
            log.info(
                "tokens reloaded: %d tokens (%d added, %d removed); %d connections and "
                "event streams of revoked tokens closed",
                len(new),
                len(new - old),
                len(old - new),
                closed,
            )
            return True

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        if self.settings.tls_cert is not None and self.settings.tls_key is not None:
            self.tls = server_tls_context(self.settings.tls_cert, self.settings.tls_key)
        await self.primary.start()
        try:
            self.tokens = await self._read_all_tokens()
            await self._start_tenants(self.tokens.namespaces())
            await self.tcp.start(self.settings.host, self.settings.tcp_port, ssl=self.tls)
            if self.settings.enable_http:
                from pgqueue.server.http.server import HttpServer

                self.http = HttpServer(self, tls=self.tls)
                await self.http.start(self.settings.host, self.settings.http_port)
        except BaseException:
            for tenant in reversed(list(self.tenants.values())):
                await tenant.status_reporter.stop()
                await tenant.manager.close()
            raise
        warning = open_warning(self.settings.host, self.auth_required)
        if warning is not None:
            self.warnings["auth"] = warning
            log.warning("%s", warning)
        log.info(
            "broker %s listening: tcp %s:%d%s%s (namespaces %s)",
            self.manager.broker_id,
            self.settings.host,
            self.tcp.port,
            f", http {self.settings.host}:{self.http.port}" if self.http else "",
            " with TLS" if self.tls is not None else "",
            ", ".join(sorted(self.tenants)),
        )

    async def stop(self) -> None:
        """Drain: stop accepting, finish requests in flight, give jobs back, end."""
        if self.stopped.is_set():
            return
        self.draining = True
        for tenant in self.tenants.values():
            with contextlib.suppress(Exception):  # best effort: the drain goes on without it
                await tenant.manager.mark_draining()
            tenant.manager.notifier.begin_drain()
        await self.tcp.stop_accepting()
        if self.http is not None:
            await self.http.stop_accepting()
        timeout = self.settings.drain_timeout_ms / 1000
        await self.tcp.wait_idle(timeout)
        await self.tcp.close_all()
        for tenant in self.tenants.values():
            await tenant.close_coalescers()
        if self.http is not None:
            await self.http.stop()
        # The primary owns the shared pool: it closes last.
        for tenant in [t for t in self.tenants.values() if t is not self.primary]:
            await tenant.stop()
        await self.primary.stop()
        self.stopped.set()
        log.info("broker stopped")
