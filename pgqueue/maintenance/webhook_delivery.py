"""Webhook delivery on the leader: outbox -> deliveries -> POSTs, at least once.

1. **Fan-out.**  Read the outbox after the namespace's webhook cursor with
   the reader of :mod:`pgqueue.manager.outbox` (the cursor is its resume
   token, a snapshot position, durable in ``pgqueue_webhook_cursor``), one
   batch per transaction: lock the cursor, read the batch, insert one
   delivery per (matching enabled webhook, event) and move the cursor past
   the batch, then commit.  A crash before the commit loses nothing (the next
   leader reads the batch again), and the unique (webhook, event) key means
   nothing is ever queued twice.  A long transaction anywhere (a forgotten
   prepared transaction) holds nothing back: it only stays in the position's
   running list, and its events are fanned out when it commits.
2. **Delivery.**  Claim due deliveries with ``FOR UPDATE SKIP LOCKED``; each
   claim counts an attempt and takes a lease on the database clock.  POST
   outside any transaction (:mod:`~pgqueue.maintenance.webhook_sender`), then
   record the outcome as a compare-and-set on the claim's lease token:
   delivered, a retry after ``base * 2^(attempt-1)`` (capped), or failed once
   ``max_attempts`` are spent (or at once when the address is refused).
   Every attempt of a delivery sends the same body and the same
   ``X-Webhook-Delivery`` id, so receivers de-duplicate on it.  A leader that
   dies mid-POST leaves its rows claimed; they are due again when their lease
   ends, and the next leader retries them (at least once, never lost).
3. **Upkeep.**  Deliveries whose last attempt was interrupted with no attempt
   left become failed; finished deliveries older than the retention are pruned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pgqueue.config import Config
from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q
from pgqueue.db.records import record_from_row
from pgqueue.db.retry import in_transaction
from pgqueue.errors import ConfigError, PgQueueError
from pgqueue.ids import uuid7
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.webhook_sender import Attempt, AttemptResult, WebhookSender
from pgqueue.manager.context import EngineContext
from pgqueue.manager.outbox import Batch, Event, ResumeToken, read_batch
from pgqueue.manager.webhooks.ops import allow_private_of
from pgqueue.manager.webhooks.policy import backoff_ms, build_body, outbox_types_and_events
from pgqueue.service import Service
from pgqueue.ssrf import AddressGuard

__all__ = [
    "Claim",
    "DeliveryReport",
    "DeliverySettings",
    "WebhookDelivery",
    "claim_due",
    "decide",
    "deliver_once",
    "fan_out_once",
    "record_results",
    "upkeep_once",
]

log = logging.getLogger("pgqueue.webhooks")

DAY_MS = 86_400_000
IDLE_CURSOR_MOVE_S = 10.0
UPKEEP_EVERY_S = 60.0
MIN_PASS_GAP_S = 0.02


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    """How the leader delivers.  ``lease_ms`` must outlast ``timeout_ms``."""

    timeout_ms: int = 10_000
    max_attempts: int = 10
    retry_base_ms: int = 1_000
    retry_max_ms: int = 600_000
    lease_ms: int = 30_000
    retention_ms: int = 7 * DAY_MS
    fanout_batch: int = 500
    max_in_flight: int = 32
    interval_ms: int | None = None  # None: the manager's poll_interval_ms

    def __post_init__(self) -> None:
        for name in ("timeout_ms", "max_attempts", "retry_base_ms", "fanout_batch"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1")
        if self.max_in_flight < 1:
            raise ConfigError("max_in_flight must be at least 1")
        if self.retry_max_ms < self.retry_base_ms:
            raise ConfigError("retry_max_ms must be at least retry_base_ms")
        if self.lease_ms <= self.timeout_ms:
            raise ConfigError("lease_ms must be longer than timeout_ms")
        if self.interval_ms is not None and self.interval_ms < 5:
            raise ConfigError("interval_ms must be at least 5")


@dataclass(frozen=True, slots=True)
class Claim:
    """One claimed delivery attempt."""

    id: str
    webhook_id: str
    event: str
    body: str
    attempt: int
    max_attempts: int
    lease_token: str
    event_at: float
    url: str
    secret: str | None

    @classmethod
    def from_row(cls, row: Row) -> Claim:
        return record_from_row(cls, row, attempt=row["attempts"])

    def attempt_of(self) -> Attempt:
        return Attempt(
            self.id, self.url, self.event, self.body, self.secret, self.attempt, self.event_at
        )


@dataclass(slots=True)
class DeliveryReport:
    """What a pass did."""

    read: int = 0
    queued: int = 0
    delivered: int = 0
    retried: int = 0
    failed: int = 0
    pruned: int = 0


def decide(claim: Claim, result: AttemptResult, settings: DeliverySettings) -> tuple[str, int]:
    """``(outcome, retry delay ms)`` of one attempt: delivered, retry or failed."""
    if result.delivered:
        return "delivered", 0
    if not result.retryable or claim.attempt >= claim.max_attempts:
        return "failed", 0
    delay = backoff_ms(claim.attempt, base_ms=settings.retry_base_ms, max_ms=settings.retry_max_ms)
    return "retry", delay


# -- fan-out -------------------------------------------------------------------


_DELIVERY_COLUMNS = (
    "ids",
    "webhook_ids",
    "event_ids",
    "events",
    "queues",
    "job_ids",
    "bodies",
    "times_ms",
)


def _deliveries(events: dict[int, Event], rows: list[Row]) -> tuple[list[Any], ...]:
    """The aligned columns of ``webhook_delivery_queue`` for the matched events."""
    columns: tuple[list[Any], ...] = ([], [], [], [], [], [], [], [])
    for row in rows:
        event = events[row["id"]]
        for webhook_id in row["webhook_ids"]:
            delivery_id = uuid7()
            body = build_body(
                row["event"],
                delivery_id=delivery_id,
                event_id=event.id,
                timestamp_ms=event.timestamp,
                job_id=event.job_id,
                queue=event.queue,
                payload=event.payload,
            )
            values = (
                delivery_id,
                webhook_id,
                event.id,
                row["event"],
                event.queue,
                event.job_id,
                body,
                event.timestamp,
            )
            for column, value in zip(columns, values, strict=True):
                column.append(value)
    return columns


async def _queue(tx: Executor, namespace: str, batch: Batch, max_attempts: int) -> int:
    """Queue one delivery per (wanting enabled webhook, event) of ``batch``."""
    events = {e.id: e for e in batch.events if e.type != "gap"}
    if not events:
        return 0
    types, names = outbox_types_and_events()
    listed = list(events.values())
    rows = await tx.fetch(
        Q.webhook_fanout_match,
        namespace=namespace,
        event_ids=[e.id for e in listed],
        xids=[e.xid for e in listed],
        queues=[e.queue for e in listed],
        types=[e.type for e in listed],
        map_types=types,
        map_events=names,
    )
    columns = _deliveries(events, rows)
    if not columns[0]:
        return 0
    arrays = dict(zip(_DELIVERY_COLUMNS, columns, strict=True))
    queued = await tx.fetchval(
        Q.webhook_delivery_queue, namespace=namespace, max_attempts=max_attempts, **arrays
    )
    return int(queued)


async def _fan_out_batch(ctx: EngineContext, settings: DeliverySettings) -> tuple[int, int, bool]:
    """One batch of the outbox after the durable position, queued and passed in
    one transaction.  Returns (events read, deliveries queued, whether the
    read is done); (0, 0, True) also when no webhook is enabled."""
    namespace = ctx.namespace
    config = replace(ctx.config, event_batch=settings.fanout_batch)
    position = await ctx.db.fetchval(Q.webhook_cursor_get, namespace=namespace)
    if position is not None:  # a look without the lock: is there anything new?
        peek = await read_batch(ctx.db, config, ResumeToken.parse(position), None)
        if peek.done and not peek.events:
            return 0, 0, True
    return await in_transaction(
        ctx.db, lambda tx: _fan_out_batch_in(tx, config, settings.max_attempts)
    )


async def _fan_out_batch_in(
    tx: Executor, config: Config, max_attempts: int
) -> tuple[int, int, bool]:
    """The batch of :func:`_fan_out_batch` under the cursor's lock."""
    namespace = config.namespace
    await tx.execute(Q.webhook_cursor_ensure, namespace=namespace)
    locked = await tx.fetchval(Q.webhook_cursor_lock, namespace=namespace)
    if not await tx.fetchval(Q.webhook_enabled_any, namespace=namespace):
        await tx.execute(Q.webhook_cursor_jump, namespace=namespace)
        return 0, 0, True
    batch = await read_batch(tx, config, ResumeToken.parse(locked), None)
    if batch.done and not batch.events:
        return 0, 0, True
    queued = await _queue(tx, namespace, batch, max_attempts)
    end = batch.end
    await tx.execute(
        Q.webhook_cursor_advance, namespace=namespace, end=str(end), xmin=end.seen.xmin
    )
    return len(batch.events), queued, batch.done


async def fan_out_once(
    ctx: EngineContext, settings: DeliverySettings, report: DeliveryReport | None = None
) -> DeliveryReport:
    """Fan out every outbox event committed since the durable position, batch
    by batch: whatever transaction holds the xmin horizon back, it only stays
    in the position's running list (see :mod:`pgqueue.manager.outbox`)."""
    report = report or DeliveryReport()
    while True:
        read, queued, done = await _fan_out_batch(ctx, settings)
        report.read += read
        report.queued += queued
        if done:
            return report


# -- delivery ---------------------------------------------------------------------


async def claim_due(
    ctx: EngineContext, settings: DeliverySettings, limit: int, now: datetime | None = None
) -> list[Claim]:
    """Claim up to ``limit`` deliveries due at ``now`` (``None``: the database
    clock; a test passes a later instant to move time)."""
    rows = await ctx.db.fetch(
        Q.webhook_delivery_claim,
        namespace=ctx.namespace,
        limit=limit,
        lease_ms=settings.lease_ms,
        now=now,
    )
    return [Claim.from_row(row) for row in rows]


async def record_results(
    ctx: EngineContext,
    results: list[tuple[Claim, AttemptResult]],
    settings: DeliverySettings,
    report: DeliveryReport | None = None,
) -> int:
    """Record attempts (a stale claim's result changes nothing); how many were recorded."""
    if not results:
        return 0
    names = ("ids", "lease_tokens", "outcomes", "status_codes", "errors", "delays_ms")
    arrays: dict[str, list[Any]] = {name: [] for name in names}
    outcomes: dict[str, str] = {}
    for claim, result in results:
        outcome, delay = decide(claim, result, settings)
        outcomes[claim.id] = outcome
        values = (claim.id, claim.lease_token, outcome, result.status_code, result.error, delay)
        for name, value in zip(names, values, strict=True):
            arrays[name].append(value)
    rows = await in_transaction(
        ctx.db, lambda tx: tx.fetch(Q.webhook_delivery_record, namespace=ctx.namespace, **arrays)
    )
    if report is not None:
        for row in rows:
            outcome = outcomes[row["id"]]
            if outcome == "delivered":
                report.delivered += 1
            elif outcome == "retry":
                report.retried += 1
            else:
                report.failed += 1
    return len(rows)


async def deliver_once(
    ctx: EngineContext,
    sender: WebhookSender,
    settings: DeliverySettings,
    now: datetime | None = None,
) -> DeliveryReport:
    """Claim what is due (at ``now``, see :func:`claim_due`), POST it all,
    record the outcomes (until nothing is due)."""
    report = DeliveryReport()
    while True:
        claims = await claim_due(ctx, settings, settings.max_in_flight, now)
        if not claims:
            return report
        results = await asyncio.gather(*(sender.send(c.attempt_of()) for c in claims))
        await record_results(ctx, list(zip(claims, results, strict=True)), settings, report)


async def upkeep_once(
    ctx: EngineContext, settings: DeliverySettings, now: datetime | None = None
) -> int:
    """Fail interrupted deliveries with no attempt left; prune the log.  Returns
    pruned.  ``now``: the instant leases and ages are judged at (``None``: the
    database clock; a test passes a later instant to move time)."""
    await ctx.db.fetchval(Q.webhook_delivery_fail_spent, namespace=ctx.namespace, now=now)
    pruned = 0
    while True:
        batch = await ctx.db.fetchval(
            Q.webhook_delivery_prune,
            namespace=ctx.namespace,
            retention_ms=settings.retention_ms,
            limit=1000,
            now=now,
        )
        pruned += int(batch)
        if batch < 1000:
            return pruned


# -- the service --------------------------------------------------------------------


@dataclass(eq=False)
class _InFlight:
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    finished: list[tuple[Claim, AttemptResult]] = field(default_factory=list)


class WebhookDelivery(Service):
    """Fans out and delivers while this broker leads (see the module docstring).

    Attempts run concurrently (at most ``max_in_flight``); their outcomes are
    recorded in one statement per pass, also after leadership moved on (the
    lease token decides whether a result still counts).
    """

    name = "webhook-delivery"

    def __init__(
        self,
        ctx: EngineContext,
        elector: LeaderElector,
        *,
        settings: DeliverySettings | None = None,
        guard: AddressGuard | None = None,
    ) -> None:
        super().__init__()
        self._ctx = ctx
        self._elector = elector
        self.settings = settings or DeliverySettings()
        self._guard = guard or AddressGuard(allow_private=allow_private_of(ctx.config))
        interval = self.settings.interval_ms or ctx.config.poll_interval_ms
        self._interval = interval / 1000
        self._wake = asyncio.Event()
        self._flight = _InFlight()
        self._next_idle_move = 0.0
        self._next_upkeep = 0.0
        self._active = True  # whether the last pass found an enabled webhook
        self.report = DeliveryReport()
        self.passes = 0
        self.passed = asyncio.Event()

    def _hint(self, first: int, last: int) -> None:
        # With no enabled webhook (the last pass's answer) a hint has nothing to
        # deliver: the interval's pass notices a new webhook, and the events wait in
        # the outbox.  Every push and ack hints, so this saves a query per hint.
        if self._active:
            self._wake.set()

    async def run(self) -> None:
        self._ctx.notifier.on_events(self._hint)
        self._ctx.notifier.on_resync(self._wake.set)
        sender = WebhookSender(
            self._guard,
            timeout_ms=self.settings.timeout_ms,
            max_connections=self.settings.max_in_flight,
        )
        self.started.set()
        try:
            while True:
                try:
                    await self._record_finished()
                    if self._elector.is_leader.is_set():
                        await self._lead_once(sender)
                    else:
                        self._ctx.notifier.want("webhooks", False)
                except PgQueueError as exc:
                    log.warning("webhook delivery pass failed: %s", exc)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._interval):
                        await self._wake.wait()
                self._wake.clear()
                await asyncio.sleep(MIN_PASS_GAP_S)  # NOTIFY storms: one pass per gap
        finally:
            await self._shutdown(sender)

    async def _lead_once(self, sender: WebhookSender) -> None:
        """One leader pass.  With no enabled webhook it only moves the cursor
        to the horizon now and then (nothing to read, nothing to claim)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        active = bool(
            await self._ctx.db.fetchval(Q.webhook_enabled_any, namespace=self._ctx.namespace)
        )
        self._active = active
        # Only a leader with webhooks delivers: it needs the other brokers' hints.
        self._ctx.notifier.want("webhooks", active)
        if active or now >= self._next_idle_move:
            await fan_out_once(self._ctx, self.settings, self.report)
            self._next_idle_move = now + IDLE_CURSOR_MOVE_S
        if now >= self._next_upkeep:
            self.report.pruned += await upkeep_once(self._ctx, self.settings)
            self._next_upkeep = now + UPKEEP_EVERY_S
        if active:
            await self._start_attempts(sender)
        self.passes += 1
        self.passed.set()

    async def _start_attempts(self, sender: WebhookSender) -> None:
        while (free := self.settings.max_in_flight - len(self._flight.tasks)) > 0:
            claims = await claim_due(self._ctx, self.settings, free)
            for claim in claims:
                self._flight.tasks[claim.id] = asyncio.create_task(
                    self._attempt(sender, claim), name=f"pgqueue:webhook:{claim.id}"
                )
            if len(claims) < free:
                return

    async def _attempt(self, sender: WebhookSender, claim: Claim) -> None:
        try:
            result = await sender.send(claim.attempt_of())
        except Exception as exc:  # a bug must not strand the claim until its lease ends
            log.exception("webhook delivery %s failed unexpectedly", claim.id)
            result = AttemptResult(False, error=f"internal error: {type(exc).__name__}")
        self._flight.finished.append((claim, result))
        self._flight.tasks.pop(claim.id, None)
        self._wake.set()

    async def _record_finished(self) -> None:
        finished, self._flight.finished = self._flight.finished, []
        try:
            await record_results(self._ctx, finished, self.settings, self.report)
        except BaseException:
            self._flight.finished[:0] = finished
            raise

    async def _shutdown(self, sender: WebhookSender) -> None:
        """Stop: attempts in flight are abandoned (their leases end and the next
        leader retries them); finished ones are recorded if the database answers."""
        tasks = list(self._flight.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._flight.tasks.clear()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._record_finished(), 5)
        await sender.aclose()
