"""Prometheus metrics of one broker (a registry of its own, exported on /metrics).

Counters and histograms move as the broker serves commands and as outbox
events arrive; gauges that need the database (queue counts, sessions, vacuum
health, the xmin horizon) are read in :meth:`BrokerMetrics.refresh`, called by
the /metrics handler and the ``Prometheus`` command before rendering, and
cached for ``refresh_ms`` so that scrapes cannot overload PostgreSQL.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pgqueue.db.queries import Q
from pgqueue.manager.outbox import TALLY_TYPE, Event
from pgqueue.server.bunqueue_metrics import BunqueueMetrics
from pgqueue.server.rates import RateMeter
from pgqueue.service import Service

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["BrokerMetrics"]

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
REFRESH_MS_DEFAULT = 2_000


class ServiceCollector:
    """Restarts and liveness of the broker's supervised services, read at scrape time."""

    def __init__(self, broker: BrokerHost) -> None:
        self._broker = broker

    def describe(self) -> Iterator[Metric]:
        return self._families([])

    def collect(self) -> Iterator[Metric]:
        return self._families(self._broker.services())

    @staticmethod
    def _families(services: list[Service]) -> Iterator[Metric]:
        restarts = CounterMetricFamily(
            "pgqueue_service_restarts",
            "Restarts of a long-lived service after it failed",
            labels=["service"],
        )
        up = GaugeMetricFamily(
            "pgqueue_service_up",
            "1 while a long-lived service runs (0: dead or waiting to restart)",
            labels=["service"],
        )
        for service in services:
            restarts.add_metric([service.name], service.restarts)
            up.add_metric([service.name], 1 if service.state == "running" else 0)
        yield restarts
        yield up


class BrokerMetrics:
    """Every metric of the broker; see docs/metrics.md for the list."""

    def __init__(self, broker: BrokerHost | None = None, *, refresh_ms: int = REFRESH_MS_DEFAULT):
        self.broker = broker
        self.refresh_ms = refresh_ms
        self._children: dict[tuple[Any, ...], Any] = {}
        self._refreshed_at = 0.0
        # Namespace-wide admissions and claims per second, from the outbox (Stats).
        self.push_rate = RateMeter()
        self.pull_rate = RateMeter()
        self.complete_rate = RateMeter()  # completions and failed attempts (the dashboard)
        self.fail_rate = RateMeter()
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.commands = Counter(
            "pgqueue_commands_total",
            "Commands served, by name and outcome",
            ["command", "outcome"],
            registry=r,
        )
        self.command_seconds = Histogram(
            "pgqueue_command_duration_seconds",
            "Time to serve a command",
            ["command"],
            registry=r,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30),
        )
        self.events = Counter(
            "pgqueue_events_total",
            "Outbox events of the namespace seen by this broker (pushed, completed, failed, "
            "dlq, ...) since it started",
            ["queue", "type"],
            registry=r,
        )
        self.pushed = Counter(
            "pgqueue_jobs_pushed_total", "Jobs admitted (namespace-wide)", ["queue"], registry=r
        )
        self.completed = Counter(
            "pgqueue_jobs_completed_total", "Jobs completed", ["queue"], registry=r
        )
        self.failed = Counter(
            "pgqueue_jobs_failed_total",
            "Failed attempts (retried or terminal)",
            ["queue"],
            registry=r,
        )
        self.dead_lettered = Counter(
            "pgqueue_jobs_dead_lettered_total",
            "Jobs moved to the dead-letter queue",
            ["queue"],
            registry=r,
        )
        self.lease_expiries = Counter(
            "pgqueue_lease_expiries_total",
            "Leases that expired (stalls and timeouts)",
            ["queue"],
            registry=r,
        )
        self.stale_acks = Counter(
            "pgqueue_stale_acks_rejected_total",
            "Acks and failures refused because their claim was no longer current",
            registry=r,
        )
        self.tcp_limit_hits = Counter(
            "pgqueue_tcp_limit_hits",
            "TCP limits reached: frame_size, slow_frame, slow_reader, connections_per_address "
            "(the connection closed or refused), inflight (reading paused)",
            ["limit"],
            registry=r,
        )
        self.group_commit_waiting = Gauge(
            "pgqueue_group_commit_waiting",
            "Single operations waiting for the next group-commit batch",
            ["operation"],
            registry=r,
        )
        if broker is not None:
            for operation, coalescer in (
                ("push", broker.pushes),
                ("ack", broker.acks),
                ("fail", broker.fails),
            ):
                gauge = self.group_commit_waiting.labels(operation)
                gauge.set_function(functools.partial(getattr, coalescer, "waiting"))
        self.pickup = Histogram(
            "pgqueue_pickup_latency_seconds",
            "From due (run_at) to claimed, database clock",
            ["queue"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.processing = Histogram(
            "pgqueue_processing_seconds",
            "From claim to completion, database clock",
            ["queue"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.jobs = Gauge(
            "pgqueue_jobs",
            "Jobs by queue and state (cached counts)",
            ["queue", "state"],
            registry=r,
        )
        self.sessions = Gauge(
            "pgqueue_broker_sessions", "Broker sessions of the namespace", ["status"], registry=r
        )
        self.leader = Gauge("pgqueue_leader", "1 when this broker runs the maintenance", registry=r)
        self.projection_entries = Gauge(
            "pgqueue_projection_entries", "Job summaries cached", registry=r
        )
        self.projection_bytes = Gauge(
            "pgqueue_projection_bytes", "Estimated bytes of the cached summaries", registry=r
        )
        self.projection_hit_ratio = Gauge(
            "pgqueue_projection_hit_ratio", "Cache hits / lookups since start", registry=r
        )
        self.projection_staleness = Gauge(
            "pgqueue_projection_staleness_seconds",
            "Age of the last applied event (how far behind the cache may be)",
            registry=r,
        )
        self.outbox_lag = Gauge(
            "pgqueue_outbox_lag_transactions",
            "Transactions between the newest and the oldest running one (holds the "
            "commit-safe cursor back)",
            registry=r,
        )
        self.dead_tuples = Gauge(
            "pgqueue_table_dead_tuples", "Dead tuples per table", ["table"], registry=r
        )
        self.live_tuples = Gauge(
            "pgqueue_table_live_tuples", "Live tuples per table", ["table"], registry=r
        )
        self.xmin_age = Gauge(
            "pgqueue_oldest_xmin_age_transactions",
            "Age of the oldest transaction, snapshot, slot or prepared transaction",
            registry=r,
        )
        self.xmin_holder = Gauge(
            "pgqueue_xmin_holder_age_transactions",
            "What holds the xmin horizon back (pid / slot / gid, with its query)",
            ["kind", "holder", "application", "state", "query"],
            registry=r,
        )
        self.connections = Gauge(
            "pgqueue_connections",
            "Client connections open on this broker, by transport (tcp, websocket, sse)",
            ["transport"],
            registry=r,
        )
        if broker is not None:
            tcp = broker.tcp
            self.connections.labels("tcp").set_function(lambda: len(tcp.connections))
        self.table_bytes = Gauge(
            "pgqueue_table_bytes", "On-disk size per table, indexes included", ["table"], registry=r
        )
        # -- the figures an operator alerts on (manager/control/figures.py) --
        self.oldest_waiting = Gauge(
            "pgqueue_queue_oldest_waiting_seconds",
            "How long the oldest waiting job has waited since it became due (0: none waits)",
            ["queue"],
            registry=r,
        )
        self.oldest_retry = Gauge(
            "pgqueue_queue_oldest_retry_seconds",
            "Age of the oldest job in retry, since its first attempt began (0: none)",
            ["queue"],
            registry=r,
        )
        self.dlq_entries = Gauge(
            "pgqueue_dlq_entries",
            "Dead-lettered jobs by queue and reason",
            ["queue", "reason"],
            registry=r,
        )
        self.active_jobs = Gauge(
            "pgqueue_queue_active_jobs",
            "Active jobs of the queue (every broker)",
            ["queue"],
            registry=r,
        )
        self.concurrency_limit = Gauge(
            "pgqueue_queue_concurrency_limit",
            "The queue's concurrency limit (absent: no limit)",
            ["queue"],
            registry=r,
        )
        self.worker_slots = Gauge(
            "pgqueue_worker_slots",
            "Concurrency slots of the live workers registered for the queue",
            ["queue"],
            registry=r,
        )
        self.worker_slots_busy = Gauge(
            "pgqueue_worker_slots_busy",
            "Slots busy (active jobs of their last heartbeat) of those workers",
            ["queue"],
            registry=r,
        )
        self.rate_limit = Gauge(
            "pgqueue_queue_rate_limit",
            "The queue's rate limit, jobs per window (absent: no limit)",
            ["queue"],
            registry=r,
        )
        self.rate_limited = Gauge(
            "pgqueue_queue_rate_limited",
            "1 while the queue's rate window is full (claims wait), 0 otherwise",
            ["queue"],
            registry=r,
        )
        self.rate_throttled = Counter(
            "pgqueue_queue_rate_throttled",
            "Claims a full rate window held back on this broker (sum over brokers)",
            ["queue"],
            registry=r,
        )
        self._throttled_seen: dict[str, int] = {}
        self.queue_paused = Gauge(
            "pgqueue_queue_paused", "1 while the queue is paused", ["queue"], registry=r
        )
        self.up = Gauge("pgqueue_up", "1 while the broker serves", registry=r)
        self.up.set(1)
        if broker is not None:
            r.register(ServiceCollector(broker))
        # bunqueue's metric names, beside these (Grafana boards built for bunqueue).
        self.bunqueue = BunqueueMetrics(broker) if broker is not None else None

    # -- moved by the broker -----------------------------------------------------

    def observe_command(self, command: str, seconds: float, ok: bool) -> None:
        self._child(self.commands, command, "ok" if ok else "error").inc()
        self._child(self.command_seconds, command).observe(seconds)

    def observe_pull(self, queue: str, jobs: list[dict[str, Any]]) -> None:
        pickup = self._child(self.pickup, queue)  # once per frame, not per job
        for job in jobs:
            started, due = job.get("startedAt"), job.get("runAt")
            if isinstance(started, float) and isinstance(due, float):
                pickup.observe(max(0.0, (started - due) / 1000))

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once (``labels`` validates and locks:
        a measurable share of a broker's CPU when every event passes here)."""
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe_event(self, event: Event) -> None:
        self.observe_events([event])

    def observe_events(self, events: list[Event]) -> None:
        """Count a run of outbox events: one increment per series, not per event."""
        counts: dict[tuple[str, str], int] = {}
        expiries: dict[str, int] = {}
        durations: dict[str, list[float]] = {}  # per queue, in order: one child lookup each
        for event in events:
            queue, kind = event.queue, event.type
            if kind == TALLY_TYPE:  # a claim statement's count, instead of its events
                key = (queue, "active")
                counts[key] = counts.get(key, 0) + _tally(event)
                continue
            key = (queue, kind)
            counts[key] = counts.get(key, 0) + 1
            if kind == "completed":
                duration = event.payload.get("duration")
                if isinstance(duration, int | float):
                    durations.setdefault(queue, []).append(duration / 1000)
            elif kind == "failed" and event.payload.get("reason") == "timeout":
                expiries[queue] = expiries.get(queue, 0) + 1
        for queue, seconds in durations.items():
            observe = self._child(self.processing, queue).observe
            for value in seconds:
                observe(value)
        for (queue, kind), n in counts.items():
            self._child(self.events, queue, kind).inc(n)
            if kind == "pushed":
                self._child(self.pushed, queue).inc(n)
                self.push_rate.mark(n)
            elif kind == "active":
                self.pull_rate.mark(n)
            elif kind == "completed":
                self._child(self.completed, queue).inc(n)
                self.complete_rate.mark(n)
            elif kind == "failed":
                self._child(self.failed, queue).inc(n)
                self.fail_rate.mark(n)
            elif kind == "dlq":
                self._child(self.dead_lettered, queue).inc(n)
            elif kind == "stalled":
                expiries[queue] = expiries.get(queue, 0) + n
        for queue, n in expiries.items():
            self._child(self.lease_expiries, queue).inc(n)

    # -- read from the database at scrape time ----------------------------------------

    async def refresh(self) -> None:
        """Update the database-backed gauges (at most once per ``refresh_ms``)."""
        broker = self.broker
        if broker is None:
            return
        if broker.projection is not None:  # in memory: always current
            stats = broker.projection.stats
            self.projection_entries.set(stats.entries)
            self.projection_bytes.set(stats.bytes)
            self.projection_hit_ratio.set(stats.hit_rate)
            staleness = broker.projection.staleness_ms()
            self.projection_staleness.set((staleness or 0) / 1000)
        now = time.monotonic()
        if now - self._refreshed_at < self.refresh_ms / 1000:
            return
        self._refreshed_at = now
        manager = broker.manager
        db = manager.db
        if broker.projection is not None:
            self.jobs.clear()
            for queue, counts in (await broker.projection.all_counts()).items():
                for state, n in counts.items():
                    self.jobs.labels(queue, state).set(n)
        elector = manager.elector
        self.leader.set(1 if elector is not None and elector.is_leader.is_set() else 0)
        sessions = await db.fetch(
            Q.session_list,
            namespace=manager.namespace,
            session_stale_ms=manager.config.session_stale_ms,
        )
        live = sum(1 for s in sessions if s["live"])
        self.sessions.labels("live").set(live)
        self.sessions.labels("stale").set(len(sessions) - live)
        for row in await db.fetch(Q.table_health):
            self.dead_tuples.labels(row["table_name"]).set(row["dead"])
            self.live_tuples.labels(row["table_name"]).set(row["live"])
        holders = await db.fetch(Q.xmin_holders, limit=5)
        self.xmin_holder.clear()
        oldest = 0
        for row in holders:
            age = int(row["xid_age"] or 0)
            oldest = max(oldest, age)
            self.xmin_holder.labels(
                row["kind"],
                row["holder"] or "",
                row["application"] or "",
                row["state"] or "",
                (row["query"] or "")[:120],
            ).set(age)
        self.xmin_age.set(oldest)
        self.outbox_lag.set(oldest)
        if self.bunqueue is not None:
            await self.bunqueue.refresh()
        for row in await db.fetch(Q.table_sizes):
            self.table_bytes.labels(row["table_name"]).set(row["bytes"])
        self.set_figures(await manager.alert_figures())
        self.set_throttled(await manager.rate_throttled())

    def set_throttled(self, counts: dict[str, int]) -> None:
        """Move each queue's throttle counter up to this broker's count."""
        for queue, count in counts.items():
            seen = self._throttled_seen.get(queue, 0)
            if count > seen:
                self.rate_throttled.labels(queue).inc(count - seen)
                self._throttled_seen[queue] = count

    def set_figures(self, figures: list[dict[str, Any]]) -> None:
        """The per-queue alert gauges from ``AlertFigures`` rows (a queue gone drops out)."""
        gauges = (
            self.oldest_waiting,
            self.oldest_retry,
            self.dlq_entries,
            self.active_jobs,
            self.concurrency_limit,
            self.worker_slots,
            self.worker_slots_busy,
            self.rate_limit,
            self.rate_limited,
            self.queue_paused,
        )
        for gauge in gauges:
            gauge.clear()
        for f in figures:
            q = f["queue"]
            self.oldest_waiting.labels(q).set((f["oldestWaitingMs"] or 0) / 1000)
            self.oldest_retry.labels(q).set((f["oldestRetryMs"] or 0) / 1000)
            for reason, n in f["dlq"].items():
                self.dlq_entries.labels(q, reason).set(n)
            self.active_jobs.labels(q).set(f["active"])
            if f["concurrencyLimit"] is not None:
                self.concurrency_limit.labels(q).set(f["concurrencyLimit"])
            self.worker_slots.labels(q).set(f["workerSlots"])
            self.worker_slots_busy.labels(q).set(f["workerSlotsBusy"])
            if f["rateLimit"] is not None:
                self.rate_limit.labels(q).set(f["rateLimit"])
                self.rate_limited.labels(q).set(1 if f["rateLimited"] else 0)
            self.queue_paused.labels(q).set(1 if f["paused"] else 0)

    def render(self) -> bytes:
        """The Prometheus text exposition (pgqueue's series, then bunqueue's names)."""
        text = generate_latest(self.registry)
        return text + self.bunqueue.render() if self.bunqueue is not None else text


def _tally(event: Event) -> int:
    """The number of claims a ``claimed`` row counts."""
    count = event.payload.get("count")
    return count if isinstance(count, int) and not isinstance(count, bool) else 0
