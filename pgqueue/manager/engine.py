"""``QueueEngine``: the engine's public face.

One engine = one broker session on one namespace.  It owns an asyncpg pool,
a LISTEN connection (the notifier), the session heartbeat and the
maintenance it was given (:class:`~pgqueue.manager.parts.EngineParts`: the
composition root, :class:`pgqueue.runtime.PostgresQueueManager`, gives it the
leader elector, the reaper and the leader's upkeep).  Each method delegates to
the module that owns that flow (admission, claim, completion, leases, reads).

    async with QueueEngine.connect(dsn, namespace="app") as m:
        job_id = await m.push("emails", "welcome", {"to": "a@example.com"})
        [claim] = await m.pull_batch("emails", 1, owner="w1", lock_ttl_ms=30_000)
        await m.ack(claim.id, claim.token, {"sent": True})
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Self

from pgqueue.config import Config
from pgqueue.db.asyncpg_db import connect_asyncpg
from pgqueue.db.executor import Database
from pgqueue.db.queries import Q
from pgqueue.db.schema import check_schema
from pgqueue.errors import (
    AlreadyFinalized,
    ConfigError,
    JobCancelled,
    JobNotFound,
    LeaseLost,
    PgQueueError,
)
from pgqueue.manager import admission, claim, completion, flows, leases, reads
from pgqueue.manager.base import ManagerBase
from pgqueue.manager.bulk import bulk_specs
from pgqueue.manager.completion import FailItem
from pgqueue.manager.context import EngineContext
from pgqueue.manager.control.ops import ControlOps
from pgqueue.manager.cron.ops import CronOps
from pgqueue.manager.dlq.ops import DlqOps
from pgqueue.manager.forwarding import forward
from pgqueue.manager.interest import TALLY, EventInterest
from pgqueue.manager.limits.ops import LimitOps
from pgqueue.manager.models import AckItem, ClaimedJob, ItemOutcome, Job
from pgqueue.manager.options import JobSpec, build_job_spec
from pgqueue.manager.outbox import OutboxReader, Subscription, subscription_start
from pgqueue.manager.parts import EngineParts
from pgqueue.manager.webhooks.ops import WebhookOps
from pgqueue.service import Service

__all__ = ["QueueEngine"]

log = logging.getLogger("pgqueue")


def _raise_for(outcome: ItemOutcome) -> None:
    if outcome.error is not None:
        raise outcome.error
    if outcome.applied:
        return
    if outcome.reason == "already-finalized":
        raise AlreadyFinalized(outcome.job_id)
    if outcome.reason == "not-found":
        raise JobNotFound(outcome.job_id, f"Job not found: {outcome.job_id}")
    if outcome.reason == "cancelled":
        raise JobCancelled(outcome.job_id)
    raise LeaseLost(outcome.job_id)


class QueueEngine(ControlOps, DlqOps, LimitOps, WebhookOps, CronOps, ManagerBase):
    """The queue engine on PostgreSQL (see the module docstring)."""

    def __init__(
        self, config: Config, db: Database | None = None, *, parts: EngineParts | None = None
    ) -> None:
        super().__init__(config)
        self._db = db
        self._owns_db = db is None
        self.parts = parts or EngineParts()
        self.outbox: OutboxReader | None = None
        self._interest: EventInterest | None = None

    # -- lifecycle ---------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def connect(
        cls, dsn: str, *, namespace: str = "default", broker_id: str | None = None, **settings: Any
    ) -> AsyncIterator[Self]:
        """Start a manager for the block; close it (releasing its leases) after."""
        manager = cls(Config(dsn=dsn, namespace=namespace, broker_id=broker_id, **settings))
        await manager.start()
        try:
            yield manager
        finally:
            await manager.close()

    async def start(self) -> None:
        """Connect, check durability and schema, register the session, start services."""
        config = self.config
        if self._db is None:
            self._db = await connect_asyncpg(
                config.dsn,
                min_size=config.pool_min_size,
                max_size=config.pool_max_size,
                application_name=f"pgqueue:{config.broker_id or 'manager'}",
                server_settings={
                    "statement_timeout": str(config.statement_timeout_ms),
                    "lock_timeout": str(config.lock_timeout_ms),
                    "idle_in_transaction_session_timeout": str(
                        config.idle_in_transaction_timeout_ms
                    ),
                    **config.server_settings,
                },
                statement_cache_size=config.statement_cache_size,
            )
        db = self._db
        try:
            await self._check_durability(db)
            schema = await check_schema(db)
            if schema.warning is not None:
                log.warning("%s", schema.warning)
            session = self.parts.session(db, config)
            notifier = self.parts.notifier(db, config)
            self._ctx = EngineContext(db=db, config=config, session=session, notifier=notifier)
            await session.start()
            await notifier.start()
            if self.parts.maintenance is not None:
                self.maintenance = self.parts.maintenance(self._ctx)
                await self.maintenance.start()
        except BaseException:
            await self._shutdown(release_leases=False)
            raise

    def services(self) -> list[Service]:
        """Every long-lived service this manager started (for health and metrics)."""
        ctx = self._ctx
        parts: list[Service | None] = [
            *((ctx.session, ctx.notifier) if ctx is not None else ()),
            *(self.maintenance.services() if self.maintenance is not None else ()),
            self.outbox,
        ]
        return [service for service in parts if service is not None]

    async def _check_durability(self, db: Database) -> None:
        row = await db.fetchrow(Q.server_durability_get)
        assert row is not None
        if row["fsync"] != "on" and not self.config.unsafe_durability:
            raise ConfigError(
                "PostgreSQL runs with fsync=off: a crash can lose acknowledged jobs. "
                "Turn fsync on, or start with unsafe_durability=True (--unsafe-durability)"
            )
        if row["server_version_num"] < 140000:
            raise ConfigError("pgqueue needs PostgreSQL 14 or newer")

    async def close(self, *, release_leases: bool = True) -> None:
        """Stop services; release this session's leases at once; end the session."""
        await self._shutdown(release_leases=release_leases)

    async def _shutdown(self, *, release_leases: bool) -> None:
        ctx, self._ctx = self._ctx, None
        self._interest = None  # its rows go with the session
        if self.outbox is not None:
            await self.outbox.stop()
            self.outbox = None
        if self.maintenance is not None:
            await self.maintenance.stop()
        if ctx is not None:
            try:
                if release_leases and not ctx.session.fenced.is_set():
                    released = await leases.release_session_leases(ctx)
                    if released:
                        log.info("released %d leases of broker %s", released, ctx.broker_id)
                await ctx.session.end()
            except PgQueueError as exc:
                log.warning("could not end the broker session cleanly: %s", exc)
            await ctx.session.stop()
            await ctx.notifier.flush_hints()
            await ctx.notifier.stop()
        if self._owns_db and self._db is not None:
            await self._db.close()
            self._db = None

    # -- admission -----------------------------------------------------------

    def job_spec(self, queue: str, name: str, data: Any = None, **opts: Any) -> JobSpec:
        """Validate one job without writing it."""
        return build_job_spec(
            queue, name, data, opts, max_payload_bytes=self.config.max_payload_bytes
        )

    async def push(self, queue: str, name: str, data: Any = None, **opts: Any) -> str:
        """Admit one job; return its id (the live job's id for a known custom id)."""
        return (await admission.admit(self.ctx, [self.job_spec(queue, name, data, **opts)]))[0]

    async def push_bulk(self, queue: str, jobs: Sequence[Mapping[str, Any]]) -> list[str]:
        """Admit many jobs of one queue atomically: ``[{"name", "data", **opts}, ...]``.

        Options may also sit under an ``"opts"`` key.  One id per job, in order.
        """
        specs = bulk_specs(queue, jobs, max_payload_bytes=self.config.max_payload_bytes)
        return await admission.admit(self.ctx, specs)

    async def push_specs(
        self, specs: Sequence[JobSpec], *, now: datetime | None = None
    ) -> list[str]:
        """Admit validated specs (any queues) atomically; ``now`` judges unique
        keys' TTLs at that instant (tests move time with it; None in production)."""
        return await admission.admit(self.ctx, specs, now)

    async def push_flow(self, flow: Mapping[str, Any]) -> dict[str, Any]:
        """Admit a parent and its children (nested) atomically.

        ``flow`` is ``{"name", "queue", "data", "opts", "children": [flow, ...]}``;
        the parent runs after all its children complete and can read their
        results (:meth:`get_children_values`).  Returns the same tree with ids.
        """
        specs, tree = flows.flatten(flow, max_payload_bytes=self.config.max_payload_bytes)
        await admission.admit(self.ctx, specs)
        return tree

    async def get_children_values(self, parent_id: str) -> dict[str, Any]:
        return await reads.get_children_values(self.ctx, parent_id)

    async def get_children_failures(self, parent_id: str, *, ignored: bool) -> dict[str, str]:
        """Errors of the failed children, ``"<queue>:<id>" -> error``: the failures
        the parent ignores (``ignore_dependency_on_failure``) or the others."""
        return await reads.get_children_failures(self.ctx, parent_id, ignored=ignored)

    async def attach_child(self, child_id: str, parent_id: str) -> None:
        """Make ``parent_id`` the parent of an existing job (legacy child-first flows)."""
        await admission.attach_child(self.ctx, child_id, parent_id)

    # -- claims ----------------------------------------------------------------

    async def pull_batch(
        self,
        queue: str,
        count: int,
        *,
        owner: str | None = None,
        lock_ttl_ms: int | None = None,
        timeout_ms: int = 0,
        group: claim.GroupDefaults | None = None,
        now: datetime | None = None,
    ) -> claim.Claims:
        """Claim up to ``count`` jobs, long-polling up to ``timeout_ms`` for the first.

        ``group`` gives limits to job groups that have none of their own (PULL's
        ``group`` field); ``retry_after_ms`` on the result says when a full rate
        window reopens.  ``now`` judges due-ness at that instant instead of the
        database clock (tests move time with it; None in production)."""
        return await claim.pull_batch(
            self.ctx,
            queue,
            count,
            owner=owner or self.broker_id,
            lock_ttl_ms=lock_ttl_ms,
            timeout_ms=timeout_ms,
            group=group,
            now=now,
        )

    async def pull(
        self,
        queue: str,
        *,
        owner: str | None = None,
        lock_ttl_ms: int | None = None,
        timeout_ms: int = 0,
    ) -> ClaimedJob | None:
        jobs = await self.pull_batch(
            queue, 1, owner=owner, lock_ttl_ms=lock_ttl_ms, timeout_ms=timeout_ms
        )
        return jobs[0] if jobs else None

    # -- completion ------------------------------------------------------------

    async def ack(
        self, job_id: str, token: str, result: Any = None, *, remove_on_complete: Any = None
    ) -> None:
        """Complete a job; raise :class:`LeaseLost` (or a subclass) when the claim is stale.
        ``remove_on_complete`` (a boolean, a count or ``{age, count}``) overrides the
        job's own option."""
        [outcome] = await completion.ack_batch(
            self.ctx, [AckItem(job_id, token, result, remove_on_complete)]
        )
        _raise_for(outcome)

    async def ack_batch(
        self, items: Sequence[AckItem | tuple[str, str] | tuple[str, str, Any]]
    ) -> list[ItemOutcome]:
        """Complete many jobs in one statement; a stale item is rejected alone."""
        return await completion.ack_batch(
            self.ctx, [item if isinstance(item, AckItem) else AckItem(*item) for item in items]
        )

    async def fail(
        self,
        job_id: str,
        token: str,
        error: str = "",
        *,
        stacktrace: Sequence[str] | None = None,
        unrecoverable: bool = False,
    ) -> None:
        """Record a failed attempt: retry with backoff, or dead-letter when spent."""
        [outcome] = await completion.fail_batch(
            self.ctx, [FailItem(job_id, token, error, stacktrace, unrecoverable)]
        )
        _raise_for(outcome)

    async def fail_batch(self, items: Sequence[FailItem]) -> list[ItemOutcome]:
        return await completion.fail_batch(self.ctx, items)

    async def heartbeat(self, job_id: str, token: str, duration_ms: int | None = None) -> float:
        """Renew one lease; raise :class:`LeaseLost` when it is no longer ours."""
        [outcome] = await leases.extend_leases(
            self.ctx, [(job_id, token)], duration_ms or self.config.lease_ms
        )
        _raise_for(outcome)
        return 0.0

    async def extend_leases(
        self, items: Sequence[tuple[str, str]], duration_ms: int | Sequence[int] | None = None
    ) -> list[ItemOutcome]:
        """Renew many leases in one statement; one outcome per item."""
        return await leases.extend_leases(
            self.ctx, items, self.config.lease_ms if duration_ms is None else duration_ms
        )

    async def release(self, items: Sequence[tuple[str, str]]) -> list[ItemOutcome]:
        """Give claimed jobs back to waiting at once, without consuming an attempt."""
        return await leases.release_jobs(self.ctx, items)

    # -- reads -------------------------------------------------------------------

    async def get_job(self, job_id: str) -> Job | None:
        return await reads.get_job(self.ctx, job_id)

    async def get_state(self, job_id: str) -> str:
        return await reads.get_state(self.ctx, job_id)

    async def get_result(self, job_id: str) -> Any:
        return await reads.get_result(self.ctx, job_id)

    async def get_jobs_by_ids(self, job_ids: Sequence[str]) -> dict[str, Job]:
        return await reads.get_jobs_by_ids(self.ctx, job_ids)

    get_counts = forward(reads.get_counts)

    # -- events ------------------------------------------------------------------

    async def want_active_events(self, queue: str | None = None) -> None:
        """From the return on, every claim of ``queue`` (None: of every queue) that
        commits writes its ``active`` events, on every broker, until this broker's
        session ends (:mod:`pgqueue.manager.interest`)."""
        if self._interest is None:
            self._interest = EventInterest(self.db, self.namespace, self.broker_id)
        await self._interest.hold(queue)

    async def want_claim_tallies(self) -> None:
        """From the return on, every claim statement that commits and writes no
        ``active`` events writes one ``claimed`` tally row (its queue and count),
        until this broker's session ends (:mod:`pgqueue.manager.interest`)."""
        if self._interest is None:
            self._interest = EventInterest(self.db, self.namespace, self.broker_id)
        await self._interest.hold(TALLY)

    async def subscribe_events(
        self,
        queue: str | None = None,
        *,
        after: str | None = None,
        maxsize: int = 10_000,
        tokens: bool = True,
        exact: bool = True,
        prompt: bool = True,
        active: bool = True,
        tallies: bool = False,
    ) -> Subscription:
        """A subscription to the outbox: events from now on, or after a resume token.

        ``async for event in subscription: ...``; each event carries ``resume``,
        the token to pass as ``after`` to continue without gaps or duplicates.
        "From now on" means events committed after this call: those committed
        before it are left out even when this broker has not read them yet
        (``exact=False`` keeps them, for a consumer that wants the overlap).
        ``prompt=False``: the events may wait for the outbox reader's next poll
        (a cache; no read per NOTIFY hint on its account).  ``active``: the
        subscriber wants the claims' ``active`` events (written only while someone
        does: :meth:`want_active_events`); False for a consumer that reads none.
        ``tallies``: the subscription also gets the ``claimed`` tally rows (the
        claims' counts, :meth:`want_claim_tallies`), which no other sees.
        """
        token = subscription_start(queue, after)
        if active:
            await self.want_active_events(queue)
        if tallies:
            await self.want_claim_tallies()
        if self.outbox is None:
            self.outbox = OutboxReader(self.db, self.config, self.notifier)
            await self.outbox.start()
        skip = await self.outbox.now() if exact and token is None else None
        return self.outbox.subscribe(
            queue,
            after=token,
            maxsize=maxsize,
            tokens=tokens,
            skip=skip,
            prompt=prompt,
            tallies=tallies,
        )
