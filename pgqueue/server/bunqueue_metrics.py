"""bunqueue's Prometheus names, served beside pgqueue's on ``/metrics``,
``/prometheus`` and the TCP ``Prometheus`` command.

Grafana boards and alerts written for bunqueue read these series
(bunqueue §4 "Prometheus"); pgqueue's own ``pgqueue_*`` series stay the
reference (docs/metrics.md).  What each holds here:

* ``bunqueue_jobs_{waiting,prioritized,delayed,active,dlq,completed}`` and per
  queue ``bunqueue_queue_jobs_{waiting,prioritized,delayed,active,dlq}{queue}``
  (the first :data:`MAX_QUEUES` queues by name; ``bunqueue_queue_metrics_
  exported`` / ``_omitted`` say how many): the namespace's counts, from
  PostgreSQL (``dlq`` counts DLQ entries);
* ``bunqueue_jobs_{pushed,pulled,completed,failed}_total``: the namespace's
  admissions, claims, completions and failed attempts that this broker saw in
  the outbox since it started (every broker counts the same events, so any
  broker's ``rate()`` is the cluster's);
* ``bunqueue_workers_*``, ``bunqueue_worker_active_jobs``,
  ``bunqueue_worker_concurrency_slots``: the registered workers' figures;
  ``bunqueue_cron_jobs_registered``, ``bunqueue_webhooks_{registered,enabled}``;
* ``bunqueue_connections{transport}``, ``bunqueue_uptime_seconds``,
  ``bunqueue_build_info{version,python_version}``,
  ``bunqueue_process_{heap_used,heap_total,resident_memory}_bytes``,
  ``bunqueue_storage_degraded`` (1 when the last read of these figures failed),
  ``bunqueue_storage_disk_full`` (0: PostgreSQL's disk is not the broker's);
* ``bunqueue_{push,pull,ack}_duration_seconds``: this broker's service-time
  histograms of PUSH/PUSHB, PULL/PULLB and ACK/ACKB.
"""

from __future__ import annotations

import asyncio
import logging
import platform
from typing import TYPE_CHECKING

from pgqueue._version import __version__
from pgqueue.errors import PgQueueError
from pgqueue.server import overview

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["MAX_QUEUES", "BunqueueMetrics"]

log = logging.getLogger("pgqueue.metrics")

MAX_QUEUES = 100
JOB_GAUGES = (
    ("waiting", "Number of jobs waiting in queue"),
    ("prioritized", "Number of prioritized jobs (priority > 0)"),
    ("delayed", "Number of delayed jobs"),
    ("active", "Number of jobs being processed"),
    ("dlq", "Number of jobs in dead letter queue"),
    ("completed", "Number of completed jobs"),
)
EVENT_COUNTERS = (
    ("pushed", "pushed", "Total jobs pushed"),
    ("pulled", "active", "Total jobs pulled"),
    ("completed", "completed", "Total jobs completed"),
    ("failed", "failed", "Total jobs failed"),
)
HISTOGRAMS = (("push", "PUSH/PUSHB"), ("pull", "PULL/PULLB"), ("ack", "ACK/ACKB"))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]

    def sample(self, name: str, value: float, labels: dict[str, str] | None = None) -> None:
        if labels:
            inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
            self.lines.append(f"{name}{{{inner}}} {_number(value)}")
        else:
            self.lines.append(f"{name} {_number(value)}")

    def one(self, name: str, kind: str, help_text: str, value: float) -> None:
        self.family(name, kind, help_text)
        self.sample(name, value)


class BunqueueMetrics:
    """The ``bunqueue_*`` series of one broker: read with :meth:`refresh`, written
    by :meth:`render` (text exposition, appended to the registry's)."""

    def __init__(self, broker: BrokerHost) -> None:
        self.broker = broker
        self._figures: list[overview.QueueFigures] = []
        self._workers: dict[str, int] = {}
        self._webhooks = (0, 0)
        self._crons = 0
        self._degraded = False

    async def refresh(self) -> None:
        """Read the database-backed figures (the caller bounds how often)."""
        broker = self.broker
        try:
            figures, (_, workers), (_, webhooks), crons = await asyncio.gather(
                overview.queue_figures(broker),
                broker.manager.list_workers(),
                broker.manager.list_webhooks(),
                overview.cron_count(broker),
            )
        except PgQueueError as exc:
            log.warning("bunqueue metrics: the database figures were not read: %s", exc)
            self._degraded = True
            return
        self._figures, self._workers, self._crons = figures, workers, crons
        self._webhooks = (webhooks.total, webhooks.enabled)
        self._degraded = False

    def _event_totals(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for family in self.broker.metrics.events.collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    kind = sample.labels.get("type", "")
                    totals[kind] = totals.get(kind, 0.0) + sample.value
        return totals

    def _connections(self) -> dict[str, float]:
        found = {"tcp": 0.0, "websocket": 0.0, "sse": 0.0}
        for family in self.broker.metrics.connections.collect():
            for sample in family.samples:
                found[sample.labels.get("transport", "")] = sample.value
        return found

    def render(self) -> bytes:
        out = _Lines()
        totals = overview.namespace_totals(self._figures)
        for key, help_text in JOB_GAUGES:
            out.one(f"bunqueue_jobs_{key}", "gauge", help_text, totals[key])
        events = self._event_totals()
        for key, event_type, help_text in EVENT_COUNTERS:
            out.one(f"bunqueue_jobs_{key}_total", "counter", help_text, events.get(event_type, 0))
        out.one(
            "bunqueue_uptime_seconds",
            "gauge",
            "Server uptime in seconds",
            int(overview.uptime_ms(self.broker) // 1000),
        )
        out.one(
            "bunqueue_cron_jobs_registered", "gauge", "Number of registered cron jobs", self._crons
        )
        w = self._workers
        for name, key, kind, help_text in (
            ("bunqueue_workers_registered", "total", "gauge", "Number of registered workers"),
            ("bunqueue_workers_active", "active", "gauge", "Number of active workers"),
            (
                "bunqueue_worker_active_jobs",
                "activeJobs",
                "gauge",
                "Number of jobs currently processed by workers",
            ),
            (
                "bunqueue_worker_concurrency_slots",
                "concurrencySlots",
                "gauge",
                "Configured worker concurrency capacity",
            ),
            (
                "bunqueue_workers_processed_total",
                "totalProcessed",
                "counter",
                "Total jobs processed by workers",
            ),
            (
                "bunqueue_workers_failed_total",
                "totalFailed",
                "counter",
                "Total jobs failed by workers",
            ),
        ):
            out.one(name, kind, help_text, w.get(key, 0))
        out.one(
            "bunqueue_webhooks_registered",
            "gauge",
            "Number of registered webhooks",
            self._webhooks[0],
        )
        out.one(
            "bunqueue_webhooks_enabled", "gauge", "Number of enabled webhooks", self._webhooks[1]
        )
        out.one(
            "bunqueue_storage_degraded",
            "gauge",
            "Whether persistent storage is degraded",
            int(self._degraded),
        )
        out.one(
            "bunqueue_storage_disk_full",
            "gauge",
            "Whether persistent storage reported a full disk",
            0,
        )
        memory = overview.memory_bytes()
        for name, key, help_text in (
            ("heap_used", "heapUsed", "Process heap bytes currently used"),
            ("heap_total", "heapTotal", "Total process heap bytes"),
            ("resident_memory", "rss", "Process resident memory size in bytes"),
        ):
            out.one(f"bunqueue_process_{name}_bytes", "gauge", help_text, memory[key])
        self._per_queue(out)
        out.family("bunqueue_build_info", "gauge", "Build and runtime identity")
        out.sample(
            "bunqueue_build_info",
            1,
            {"version": __version__, "python_version": platform.python_version()},
        )
        out.family(
            "bunqueue_connections", "gauge", "Current server connections by bounded transport"
        )
        for transport, value in self._connections().items():
            out.sample("bunqueue_connections", value, {"transport": transport})
        self._histograms(out)
        return ("\n".join(out.lines) + "\n").encode()

    def _per_queue(self, out: _Lines) -> None:
        shown = self._figures[:MAX_QUEUES]
        if shown:
            for key, help_text in JOB_GAUGES[:5]:
                name = f"bunqueue_queue_jobs_{key}"
                out.family(name, "gauge", help_text.replace("jobs", "jobs per queue", 1))
                for queue in shown:
                    value = queue.dlq if key == "dlq" else queue.counts.get(key, 0)
                    out.sample(name, value, {"queue": queue.name})
        out.one(
            "bunqueue_queue_metrics_exported",
            "gauge",
            "Queue names included in labelled Prometheus series",
            len(shown),
        )
        out.one(
            "bunqueue_queue_metrics_omitted",
            "gauge",
            "Queue names omitted by the Prometheus cardinality limit",
            len(self._figures) - len(shown),
        )

    def _histograms(self, out: _Lines) -> None:
        for name, commands in HISTOGRAMS:
            family = f"bunqueue_{name}_duration_seconds"
            total, count, buckets = overview.command_histogram(
                self.broker.metrics, overview.LATENCY_COMMANDS[name]
            )
            out.family(family, "histogram", f"Service time of {commands} on this broker")
            for bound, cumulative in buckets or [(float("inf"), 0.0)]:
                out.sample(f"{family}_bucket", cumulative, {"le": _number(bound)})
            out.sample(f"{family}_sum", total)
            out.sample(f"{family}_count", count)
