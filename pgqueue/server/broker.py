"""The broker process: the engine, the TCP protocol, the HTTP API, and a clean drain.

``Broker.start()`` starts the manager (its own broker session), then listens.
``Broker.stop()`` is the SIGTERM path: stop accepting, let requests in flight
finish, give back the jobs pulled on its connections (so other brokers can run
them at once), end the session.  Leases it does not hold stay: a detached
pull (the SDK, HTTP) and a lease a worker renewed through this broker belong
to a worker that goes on through other brokers.  A ``kill -9`` leaves leases
that expire on the database clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from typing import Any

from pgqueue.config import Config
from pgqueue.errors import PgQueueError
from pgqueue.manager.completion import FailItem
from pgqueue.manager.models import AckItem, ItemOutcome
from pgqueue.manager.options import JobSpec
from pgqueue.manager.projection import Projection
from pgqueue.runtime import PostgresQueueManager
from pgqueue.server.claims import ClaimBook
from pgqueue.server.groupcommit import Coalescer
from pgqueue.server.metrics import BrokerMetrics
from pgqueue.server.request import ClientState
from pgqueue.server.settings import BrokerSettings
from pgqueue.server.status_report import StatusReporter, broker_self_status
from pgqueue.server.tcp import TcpServer
from pgqueue.server.wire import event_to_wire
from pgqueue.service import Service

__all__ = ["Broker"]

log = logging.getLogger("pgqueue.broker")


class Broker:
    """One broker process (see the module docstring)."""

    def __init__(
        self,
        config: Config,
        settings: BrokerSettings,
        manager: PostgresQueueManager | None = None,
    ) -> None:
        self.config = config.validate()
        self.settings = settings.validate()
        self.manager = manager or PostgresQueueManager(self.config)
        self.draining = False
        self.started_at = time.time()
        self.claims = ClaimBook()
        # One item per job (or custom id) in a batch: each is decided as if alone.
        self.pushes: Coalescer[JobSpec, str] = Coalescer(
            self.manager.push_specs, key=lambda spec: spec.custom_id
        )
        self.acks: Coalescer[AckItem, ItemOutcome] = Coalescer(
            self.manager.ack_batch, key=lambda item: item.job_id
        )
        self.fails: Coalescer[FailItem, ItemOutcome] = Coalescer(
            self.manager.fail_batch, key=lambda item: item.job_id
        )
        self.tcp = TcpServer(self)
        self.http: Any = None
        self.metrics: BrokerMetrics = BrokerMetrics(self)
        self.projection: Projection | None = None
        self.status_reporter = StatusReporter(self)
        self.stopped = asyncio.Event()

    # -- auth ----------------------------------------------------------------

    @property
    def auth_required(self) -> bool:
        return bool(self.settings.auth_tokens)

    def check_token(self, token: str) -> str | None:
        """The name of the matching token (constant-time comparison), else None."""
        match = None
        for candidate in self.settings.auth_tokens:
            if hmac.compare_digest(candidate.secret.encode(), token.encode()):
                match = candidate.name
        return match

    # -- hot path with group commit -------------------------------------------

    async def push(self, spec: JobSpec) -> str:
        """Admit one job; simple ones share a transaction with concurrent pushes."""
        if spec.depends_on or spec.parent_id or spec.dedup_mode != "reject":
            return (await self.manager.push_specs([spec]))[0]
        return await self.pushes.submit(spec)

    async def ack(self, item: AckItem) -> ItemOutcome:
        outcome = await self.acks.submit(item)
        self.count_stale([outcome])
        return outcome

    async def fail(self, item: FailItem) -> ItemOutcome:
        outcome = await self.fails.submit(item)
        self.count_stale([outcome])
        return outcome

    def count_stale(self, outcomes: list[ItemOutcome]) -> None:
        """Count completions refused because their claim was stale (a metric)."""
        stale = sum(1 for o in outcomes if o.reason == "lease-lost")
        if stale:
            self.metrics.stale_acks.inc(stale)

    # -- event subscriptions -------------------------------------------------------

    async def subscribe(self, client: ClientState, queue: str, after: str | None) -> None:
        self.unsubscribe(client)
        subscription = await self.manager.subscribe_events(queue, after=after)
        client.subscription = subscription
        client.forwarder = asyncio.create_task(self._forward(client), name="pgqueue:events")

    async def _forward(self, client: ClientState) -> None:
        subscription = client.subscription
        assert subscription is not None
        async for event in subscription:
            frame = event_to_wire(event)
            if frame is not None and client.send is not None and not client.closed:
                client.send(frame)

    def unsubscribe(self, client: ClientState) -> None:
        if client.subscription is not None:
            client.subscription.close()
            client.subscription = None
        if client.forwarder is not None:
            client.forwarder.cancel()
            client.forwarder = None

    async def client_closed(self, client: ClientState) -> None:
        """A connection ended: give back its pulled jobs, drop its workers and events."""
        self.unsubscribe(client)
        pulled = list(client.pulled.items())
        client.pulled.clear()
        try:
            if pulled:
                outcomes = await self.manager.release(pulled)
                for job_id, token in pulled:
                    self.claims.ended(job_id, token, by_client=False)
                released = sum(o.applied for o in outcomes)
                if released:
                    log.info("connection closed: %d pulled jobs back to waiting", released)
            if client.workers:
                await self.manager.unregister_client_workers(client.client_id)
        except PgQueueError as exc:
            log.warning("cleanup of a closed connection failed: %s", exc)

    def services(self) -> list[Service]:
        """Every supervised long-lived service of this broker (health, metrics)."""
        projection = [self.projection] if self.projection is not None else []
        return [*self.manager.services(), *projection, self.status_reporter]

    # -- metrics hook --------------------------------------------------------------

    def observe(self, command: str, seconds: float, ok: bool) -> None:
        self.metrics.observe_command(command, seconds, ok)

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        await self.manager.start()
        try:
            self.projection = Projection(
                self.manager,
                max_entries=self.settings.projection_entries,
                max_bytes=self.settings.projection_bytes,
            )
            self.projection.listeners.append(self.metrics.observe_event)
            await self.projection.start()
            await self.status_reporter.start()
            await self.tcp.start(self.settings.host, self.settings.tcp_port)
            if self.settings.enable_http:
                from pgqueue.server.http.server import HttpServer

                self.http = HttpServer(self)
                await self.http.start(self.settings.host, self.settings.http_port)
        except BaseException:
            await self.status_reporter.stop()
            await self.manager.close()
            raise
        log.info(
            "broker %s listening: tcp %s:%d%s (namespace %s)",
            self.manager.broker_id,
            self.settings.host,
            self.tcp.port,
            f", http {self.settings.host}:{self.http.port}" if self.http else "",
            self.config.namespace,
        )

    async def stop(self) -> None:
        """Drain: stop accepting, finish requests in flight, give jobs back, end."""
        if self.stopped.is_set():
            return
        self.draining = True
        with contextlib.suppress(Exception):  # best effort: the drain goes on without it
            await self.manager.mark_draining()
        self.manager.notifier.begin_drain()
        await self.tcp.stop_accepting()
        if self.http is not None:
            await self.http.stop_accepting()
        timeout = self.settings.drain_timeout_ms / 1000
        await self.tcp.wait_idle(timeout)
        await self.tcp.close_all()
        for coalescer in (self.pushes, self.acks, self.fails):
            with contextlib.suppress(Exception):
                await coalescer.close()
        if self.http is not None:
            await self.http.stop()
        with contextlib.suppress(Exception):  # its last word: draining
            await self.manager.report_status(broker_self_status(self))
        await self.status_reporter.stop()
        if self.projection is not None:
            await self.projection.stop()
        self.metrics.up.set(0)
        # The connections' claims went back above; every other lease of this
        # session is a worker's that lives on through another broker.
        await self.manager.close(release_leases=False)
        self.stopped.set()
        log.info("broker stopped")
