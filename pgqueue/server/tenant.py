"""One namespace served by a broker: its engine, claims, group commit, projection.

A broker serves its own namespace (``--namespace``) and every namespace its
tokens name (docs/security.md).  Each is a :class:`Tenant`: its own
:class:`~pgqueue.runtime.PostgresQueueManager` (a broker session, a LISTEN
connection and maintenance in that namespace; the pool is the broker's, shared),
its claim book, coalescers, projection, status report and metrics.  A request
is served by the tenant of its client's namespace (``Broker.for_namespace``),
so a handler sees one namespace and nothing of the others: another
namespace's job ids read as not found because that engine's statements all
filter by namespace.  The listeners, the token book and the drain are the
broker's (:mod:`pgqueue.server.broker`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

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
from pgqueue.server.status_report import StatusReporter, broker_self_status
from pgqueue.server.wire import event_to_wire
from pgqueue.service import Service

if TYPE_CHECKING:
    from pgqueue.server.access import Credential
    from pgqueue.server.host import BrokerHost
    from pgqueue.server.settings import BrokerSettings
    from pgqueue.server.tcp import TcpServer
    from pgqueue.server.tokens import TokenBook

__all__ = ["Tenant"]

log = logging.getLogger("pgqueue.broker")


class Tenant:
    """The broker as the requests of one namespace see it (a ``BrokerHost``)."""

    def __init__(
        self, root: BrokerHost, config: Config, manager: PostgresQueueManager | None = None
    ) -> None:
        self.root = root
        self.config = config.validate()
        self.manager = manager or PostgresQueueManager(self.config)
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
        self.metrics: BrokerMetrics = BrokerMetrics(self)
        self.projection: Projection | None = None
        self.status_reporter = StatusReporter(self)

    # -- what the broker shares -------------------------------------------------------

    @property
    def namespace(self) -> str:
        return self.config.namespace

    @property
    def settings(self) -> BrokerSettings:
        return self.root.settings

    @property
    def draining(self) -> bool:
        return self.root.draining

    @property
    def started_at(self) -> float:
        return self.root.started_at

    @property
    def tcp(self) -> TcpServer:
        return self.root.tcp

    @property
    def auth_required(self) -> bool:
        return self.root.auth_required

    @property
    def tokens(self) -> TokenBook:
        return self.root.tokens

    @property
    def warnings(self) -> dict[str, str]:
        return self.root.warnings

    def check_token(self, token: str) -> str | None:
        return self.root.check_token(token)

    def authenticate(self, token: str | None, namespace: str | None) -> tuple[str, Credential]:
        return self.root.authenticate(token, namespace)

    def for_namespace(self, namespace: str | None) -> BrokerHost:
        return self.root.for_namespace(namespace)

    def observe(self, command: str, seconds: float, ok: bool) -> None:
        self.metrics.observe_command(command, seconds, ok)

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
        """Every supervised long-lived service of this namespace (health, metrics)."""
        projection = [self.projection] if self.projection is not None else []
        return [*self.manager.services(), *projection, self.status_reporter]

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Start the engine, the projection and the status report (not the listeners)."""
        await self.manager.start()
        try:
            self.projection = Projection(
                self.manager,
                max_entries=self.root.settings.projection_entries,
                max_bytes=self.root.settings.projection_bytes,
            )
            self.projection.batch_listeners.append(self.metrics.observe_events)
            await self.projection.start()
            await self.status_reporter.start()
        except BaseException:
            await self.status_reporter.stop()
            await self.manager.close()
            raise

    async def close_coalescers(self) -> None:
        for coalescer in (self.pushes, self.acks, self.fails):
            try:
                await coalescer.close()
            except Exception:  # best effort: the drain goes on without it
                log.debug("a coalescer did not close cleanly", exc_info=True)

    async def stop(self) -> None:
        """After the listeners closed: the status report, the projection, the engine."""
        try:
            await self.manager.report_status(broker_self_status(self))  # its last word
        except Exception:
            log.debug("the last status report failed", exc_info=True)
        await self.status_reporter.stop()
        if self.projection is not None:
            await self.projection.stop()
        self.metrics.up.set(0)
        # The connections' claims went back; every other lease of this session is
        # a worker's that lives on through another broker.
        await self.manager.close(release_leases=False)
