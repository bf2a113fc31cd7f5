"""The route table of the HTTP API: bunqueue's REST routes, each one command.

Every command route goes through :func:`pgqueue.server.dispatch.dispatch`,
the same path as a TCP frame, so validation, error texts and engine calls are
shared.  The table also drives the OpenAPI document and the ``/docs`` page;
:data:`SYSTEM_ROUTES` lists the routes served by the HTTP layer itself
(health, metrics, event streams, the documents).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pgqueue.server.http.binding import Endpoint, Kind, Param
from pgqueue.vocabulary.job_options import wire_options

__all__ = ["ENDPOINTS", "JOB_OPTIONS", "SYSTEM_ROUTES", "SystemRoute", "unknown_job_field"]


def _p(name: str, kind: Kind, description: str = "", **kw: Any) -> Param:
    return Param(name, kind, description, **kw)


Q = "/queues/{queue}"
J = "/jobs/{id}"

TOKEN = _p("token", "string", "lock token returned by the pull")
IDS = _p("ids", "array", "job ids", required=True)
TOKENS = _p("tokens", "array", "lock tokens, aligned with ids")
TIMEOUT = _p("timeout", "integer", "long-poll wait in ms (0..60000)")
OWNER = _p("owner", "string", "worker name; the answer then carries the lock token(s)")
LOCK_TTL = _p("lockTtl", "integer", "lease length in ms")
LIMIT = _p("limit", "integer", "page size")
OFFSET = _p("offset", "integer", "rows to skip")
WHY = _p("why", "string", "reason stored in the DLQ audit (with the token's name)")

JOB_OPTIONS: tuple[Param, ...] = (
    _p("name", "string", 'job name (default: "default")'),
    _p("data", "any", "the job payload (any JSON value)"),
    *(
        _p(
            wire,
            option.json_type,
            option.description if wire == option.wire else f"alias of {option.wire}",
        )
        for option in wire_options()
        for wire in (option.wire or "", *option.wire_aliases)
    ),
)
"""The fields of a job input: its name, its data and every option a client may send
(declared in :mod:`pgqueue.vocabulary.job_options`)."""

_JOB_FIELDS = frozenset(p.name for p in JOB_OPTIONS) | {"queue"}
_BULK_ENTRY_FIELDS = (_JOB_FIELDS - {"queue"}) | {"customId"}
_JOB_BODIES = {"PUSH": None, "PUSHB": "jobs"}
"""The commands whose HTTP body holds job inputs: the body itself, or its list."""


def unknown_job_field(command: str, body: Mapping[str, Any]) -> str | None:
    """Why an HTTP job body is refused (a field no job input has), or None.

    A job body is typed by hand: an unknown field is a typo (``atempts``), refused
    as the SDK refuses it rather than ignored.  The TCP protocol stays lenient.
    """
    if command not in _JOB_BODIES:
        return None
    member = _JOB_BODIES[command]
    if member is None:
        return _unknown(body, _JOB_FIELDS, "")
    entries = body.get(member)
    if not isinstance(entries, list):
        return None  # refused by the command with the protocol's message
    for i, entry in enumerate(entries):
        if isinstance(entry, Mapping):
            problem = _unknown(entry, _BULK_ENTRY_FIELDS, f"{member}[{i}]: ")
            if problem is not None:
                return problem
    return None


def _unknown(job: Mapping[str, Any], allowed: frozenset[str], prefix: str) -> str | None:
    extra = sorted(str(key) for key in job if key not in allowed)
    return f"{prefix}unknown job option: {', '.join(extra)}" if extra else None


def _workers_of_queue(answer: dict[str, Any], path: Mapping[str, str]) -> dict[str, Any]:
    """``ListWorkers`` narrowed to the workers serving one queue."""
    data = answer.get("data")
    workers = data.get("workers", []) if isinstance(data, dict) else []
    queue = path["queue"]
    mine = [w for w in workers if isinstance(w, dict) and queue in (w.get("queues") or [])]
    return {"ok": True, "workers": mine}


def _unwrapped(answer: dict[str, Any], path: Mapping[str, str]) -> dict[str, Any]:
    """A ``D{...}`` answer as bunqueue's HTTP route serves it: ``{ok, ...}``."""
    data = answer.get("data")
    return {"ok": True, **data} if isinstance(data, dict) else answer


def _overview(answer: dict[str, Any], path: Mapping[str, str]) -> dict[str, Any]:
    """``DashboardOverview`` as ``GET /dashboard``: crons as ``{total, list, truncated}``."""
    body = _unwrapped(answer, path)
    crons = body.get("crons")
    if isinstance(crons, list):
        body["crons"] = {"total": len(crons), "list": crons[:100], "truncated": len(crons) > 100}
    return body


def _queues_summary(answer: dict[str, Any], path: Mapping[str, str]) -> list[dict[str, Any]]:
    """``GET /queues/summary``: a bare array of ``{name, paused, counts}``."""
    data = answer.get("data")
    queues = data.get("queues", []) if isinstance(data, dict) else []
    return [
        {
            "name": q["name"],
            "paused": q["paused"],
            "counts": {
                key: q.get(key, 0)
                for key in ("waiting", "prioritized", "active", "completed", "failed", "delayed")
            },
        }
        for q in queues
    ]


def _stats(answer: dict[str, Any], path: Mapping[str, str]) -> dict[str, Any]:
    """``GET /stats`` adds the process's memory (MB), as bunqueue's route."""
    from pgqueue.server.overview import memory_mb

    return {**answer, "memory": {**memory_mb(), "external": 0, "arrayBuffers": 0}}


# fmt: off
ENDPOINTS: tuple[Endpoint, ...] = (
    # -- jobs (fixed paths before /jobs/{id}) ---------------------------------------
    Endpoint("POST", "/jobs/ack-batch", "ACKB", "Acknowledge many jobs", "jobs",
             body=(IDS, TOKENS, _p("results", "array", "results, aligned with ids"),
                   _p("removeOnCompletes", "array", "per-job removeOnComplete"))),
    Endpoint("POST", "/jobs/extend-locks", "ExtendLocks", "Extend many leases", "jobs",
             body=(IDS, TOKENS, _p("durations", "array", "new lease lengths in ms",
                                   required=True))),
    Endpoint("POST", "/jobs/heartbeat-batch", "JobHeartbeatB", "Renew many leases", "jobs",
             body=(IDS, TOKENS)),
    Endpoint("GET", "/jobs/custom/{customId}", "GetJobByCustomId", "Get a job by custom id",
             "jobs"),
    Endpoint("GET", J, "GetJob", "Get a job (with state, result, failure)", "jobs"),
    Endpoint("DELETE", J, "Cancel", "Remove a job that is not running", "jobs"),
    Endpoint("POST", J + "/ack", "ACK", "Complete an active job", "jobs",
             body=(TOKEN, _p("result", "any", "the job's result"),
                   _p("removeOnComplete", "boolean", "drop the job once completed"))),
    Endpoint("POST", J + "/fail", "FAIL", "Fail an active job (retry or dead-letter)", "jobs",
             body=(TOKEN, _p("error", "string", "failure reason"),
                   _p("stack", "array", "stack trace lines"),
                   _p("unrecoverable", "boolean", "skip retries: dead-letter at once"))),
    Endpoint("POST", J + "/promote", "Promote", "Make a delayed job ready now", "jobs"),
    Endpoint("POST", J + "/discard", "Discard", "Fail a job for good (no retries)", "jobs",
             body=(TOKEN,)),
    Endpoint("GET", J + "/progress", "GetProgress", "Get a job's progress", "jobs"),
    Endpoint("POST", J + "/progress", "Progress", "Report progress of an active job", "jobs",
             body=(_p("progress", "number", "0..100", required=True),
                   _p("message", "string", "progress message"), TOKEN)),
    Endpoint("POST", J + "/heartbeat", "JobHeartbeat", "Renew a job's lease", "jobs",
             body=(TOKEN, _p("duration", "integer", "new lease length in ms"))),
    Endpoint("POST", J + "/wait", "WaitJob", "Wait until a job finishes", "jobs",
             body=(_p("timeout", "integer", "ms to wait (default 30000)"),)),
    Endpoint("POST", J + "/extend-lock", "ExtendLock", "Extend a job's lease", "jobs",
             body=(TOKEN, _p("duration", "integer", "new lease length in ms", required=True))),
    Endpoint("POST", J + "/move-to-wait", "MoveToWait", "Move a job back to waiting", "jobs",
             body=(TOKEN,)),
    Endpoint("POST", J + "/move-to-delayed", "MoveToDelayed", "Delay a waiting or active job",
             "jobs",
             body=(_p("delay", "integer", "ms from now", required=True), TOKEN)),
    Endpoint("GET", J + "/logs", "GetLogs", "Read a job's log lines", "jobs",
             query=(_p("start", "integer", "first line (inclusive)"),
                    _p("end", "integer", "last line (inclusive)"))),
    Endpoint("POST", J + "/logs", "AddLog", "Append a log line", "jobs",
             body=(_p("message", "string", "the line", required=True),
                   _p("level", "string", "info | warn | error"))),
    Endpoint("DELETE", J + "/logs", "ClearLogs", "Clear a job's log", "jobs",
             query=(_p("keepLogs", "integer", "newest lines to keep"),)),
    Endpoint("GET", J + "/children", "GetChildrenValues", "Results of a job's children",
             "jobs"),
    Endpoint("GET", J + "/state", "GetState", "Get a job's state", "jobs"),
    Endpoint("GET", J + "/inspect", "JobInspect",
             "Who holds a job's lease, and its state changes in the outbox", "jobs"),
    Endpoint("GET", J + "/result", "GetResult", "Get a job's result", "jobs"),
    Endpoint("PUT", J + "/data", "Update", "Replace a waiting job's data", "jobs",
             body=(_p("data", "any", "the new payload", required=True),)),
    Endpoint("PUT", J + "/priority", "ChangePriority", "Change a job's priority", "jobs",
             body=(_p("priority", "integer", "new priority", required=True),
                   _p("lifo", "boolean", "take before older jobs"))),
    Endpoint("PUT", J + "/delay", "ChangeDelay", "Change a delayed job's delay", "jobs",
             body=(_p("delay", "integer", "ms from now", required=True), TOKEN)),
    # -- queues -----------------------------------------------------------------------
    Endpoint("GET", "/queues", "ListQueues", "List queue names", "queues"),
    Endpoint("GET", "/queues/summary", "DashboardQueues", "Every queue with its counts "
             "(a bare array of {name, paused, counts})", "queues", shape=_queues_summary,
             answer_schema={"type": "array", "items": {"type": "object"}}),
    Endpoint("POST", Q + "/jobs", "PUSH", "Push a job", "queues",
             body=JOB_OPTIONS, open_body=True),
    Endpoint("GET", Q + "/jobs", "PULL", "Pull (claim) the next job", "queues",
             query=(TIMEOUT, OWNER, LOCK_TTL), fixed={"detach": True}),
    Endpoint("POST", Q + "/jobs/bulk", "PUSHB", "Push many jobs atomically", "queues",
             body=(_p("jobs", "array", "job inputs (as for a push; custom id in customId)",
                      required=True),)),
    Endpoint("POST", Q + "/jobs/pull-batch", "PULLB", "Pull (claim) up to count jobs",
             "queues",
             body=(_p("count", "integer", "1..1000", required=True), TIMEOUT, OWNER, LOCK_TTL),
             fixed={"detach": True}),
    Endpoint("GET", Q + "/jobs/list", "GetJobs", "List jobs by state", "queues",
             query=(_p("state", "array", "states (comma separated or repeated)",
                       aliases=("status", "states")),
                    LIMIT, OFFSET, _p("asc", "boolean", "oldest first (default true)"))),
    # -- bunqueue's dashboard aggregates ---------------------------------------------
    Endpoint("GET", "/dashboard", "DashboardOverview",
             "Counts, rates, latency, memory, workers and crons in one answer", "dashboard",
             shape=_overview),
    Endpoint("GET", "/dashboard/queues", "DashboardQueues", "Queues with their counts, paged",
             "dashboard", query=(_p("limit", "integer", "page size (1..500)"), OFFSET),
             shape=_unwrapped),
    Endpoint("GET", "/dashboard/queues/{queue}", "DashboardQueue",
             "One queue: counts, priorities, DLQ preview, first jobs by state", "dashboard",
             query=(_p("includeJobs", "boolean", "add the first jobs of each state"),
                    _p("jobsLimit", "integer", "jobs per state (default 10, at most 50)")),
             shape=_unwrapped),
    Endpoint("GET", Q + "/counts", "GetJobCounts", "Job counts by state", "queues"),
    Endpoint("GET", Q + "/count", "Count", "Number of pending jobs", "queues"),
    Endpoint("GET", Q + "/priority-counts", "GetCountsPerPriority",
             "Pending jobs by priority", "queues"),
    Endpoint("GET", Q + "/paused", "IsPaused", "Whether the queue is paused", "queues"),
    Endpoint("GET", Q + "/workers", "ListWorkers", "Workers serving this queue", "queues",
             shape=_workers_of_queue),
    Endpoint("POST", Q + "/pause", "Pause", "Pause the queue (on every broker)", "queues"),
    Endpoint("POST", Q + "/resume", "Resume", "Resume the queue", "queues"),
    Endpoint("POST", Q + "/drain", "Drain", "Remove waiting and delayed jobs", "queues"),
    Endpoint("POST", Q + "/obliterate", "Obliterate", "Remove the queue and its jobs",
             "queues", body=(_p("force", "boolean", "even with active jobs"),)),
    Endpoint("POST", Q + "/clean", "Clean", "Remove old jobs of a state", "queues",
             body=(_p("grace", "integer", "minimum age in ms"),
                   _p("state", "string", "completed | failed | waiting | delayed ..."),
                   _p("limit", "integer", "most jobs to remove"))),
    Endpoint("POST", Q + "/promote-jobs", "PromoteJobs", "Make delayed jobs ready now",
             "queues", body=(_p("count", "integer", "most jobs to promote"),)),
    Endpoint("POST", Q + "/retry-completed", "RetryCompleted", "Run completed jobs again",
             "queues",
             body=(_p("id", "string", "one job"), _p("count", "integer", "most jobs"),
                   _p("timestamp", "number", "only jobs completed before (ms)"))),
    # -- queue settings and DLQ ------------------------------------------------------------
    Endpoint("GET", Q + "/dlq", "Dlq", "Dead-lettered jobs", "dlq",
             query=(_p("count", "integer", "most entries"),
                    _p("limit", "integer", "page size", target="filter.limit"),
                    _p("offset", "integer", "entries to skip", target="filter.offset"),
                    _p("reason", "string", "only this reason", target="filter.reason"))),
    Endpoint("GET", Q + "/dlq/stats", "GetDlqStats", "Dead-letter statistics", "dlq",
             shape=_unwrapped),
    Endpoint("GET", Q + "/dlq/audit", "DlqAudit", "Audited DLQ operations, newest first",
             "dlq", query=(LIMIT,)),
    Endpoint("GET", "/dlq/audit", "DlqAudit", "Audited DLQ operations of every queue",
             "dlq", query=(LIMIT,)),
    Endpoint("POST", Q + "/dlq/retry", "RetryDlq", "Send dead-lettered jobs back to waiting",
             "dlq",
             body=(_p("jobId", "string", "one job"), _p("count", "integer", "most jobs"),
                   _p("filter", "object", "{reason, olderThan, newerThan, ...}"), WHY)),
    Endpoint("POST", Q + "/dlq/purge", "PurgeDlq", "Delete every dead-lettered job", "dlq",
             body=(WHY,)),
    Endpoint("DELETE", Q + "/dlq/{jobId}", "RemoveDlqJob", "Delete one dead-lettered job",
             "dlq", query=(WHY,)),
    Endpoint("GET", Q + "/dlq-config", "GetDlqConfig", "The queue's DLQ settings", "dlq"),
    Endpoint("PUT", Q + "/dlq-config", "SetDlqConfig", "Change the queue's DLQ settings", "dlq",
             body=(), config_body=True),
    Endpoint("GET", Q + "/stall-config", "GetStallConfig", "The queue's stall settings",
             "queues"),
    Endpoint("PUT", Q + "/stall-config", "SetStallConfig", "Change the queue's stall settings",
             "queues", body=(), config_body=True),
    Endpoint("PUT", Q + "/rate-limit", "RateLimit", "Set the queue's rate limit", "queues",
             body=(_p("limit", "integer", "jobs per window", required=True),
                   _p("duration", "integer", "window in ms"),
                   _p("ttl", "integer", "the limit expires after ms"))),
    Endpoint("DELETE", Q + "/rate-limit", "RateLimitClear", "Clear the rate limit", "queues"),
    Endpoint("PUT", Q + "/concurrency", "SetConcurrency", "Set the queue's concurrency limit",
             "queues", body=(_p("limit", "integer", "active jobs at most"),
                             _p("concurrency", "integer", "alias of limit", target="limit"))),
    Endpoint("DELETE", Q + "/concurrency", "ClearConcurrency", "Clear the concurrency limit",
             "queues"),
    Endpoint("GET", Q + "/limits", "GetQueueLimits",
             "The queue's rate and concurrency limits (GetQueueLimits)", "queues",
             query=(_p("maxJobs", "integer",
                       "rateLimitTtl is 0 while fewer claims were counted in the window"),)),
    # -- workers ---------------------------------------------------------------------------
    Endpoint("GET", "/workers", "ListWorkers", "Registered workers", "workers"),
    Endpoint("POST", "/workers", "RegisterWorker", "Register a worker", "workers",
             body=(_p("name", "string", "worker name", required=True),
                   _p("queues", "array", "queues it serves", required=True),
                   _p("concurrency", "integer", "parallel jobs"),
                   _p("workerId", "string", "keep this id"),
                   _p("hostname", "string", "host"), _p("pid", "integer", "process id"),
                   _p("startedAt", "number", "start time (ms)"))),
    Endpoint("DELETE", "/workers/{workerId}", "UnregisterWorker", "Unregister a worker",
             "workers"),
    Endpoint("POST", "/workers/{id}/heartbeat", "Heartbeat", "A worker's heartbeat", "workers",
             body=(_p("activeJobs", "integer", "jobs running now"),
                   _p("processed", "integer", "jobs completed"),
                   _p("failed", "integer", "jobs failed"))),
    # -- schedules and webhooks ----------------------------------------------------------------
    Endpoint("GET", "/crons", "CronList", "Cron schedules", "crons"),
    Endpoint("POST", "/crons", "Cron", "Create or replace a cron schedule", "crons",
             body=(_p("name", "string", "schedule name", required=True),
                   _p("queue", "string", "target queue", required=True),
                   _p("data", "any", "job payload"), _p("jobName", "string", "job name"),
                   _p("schedule", "string", "cron pattern"),
                   _p("repeatEvery", "integer", "interval in ms"),
                   _p("timezone", "string", "IANA zone"),
                   _p("immediately", "boolean", "fire a new schedule at once"),
                   _p("maxLimit", "integer", "stop after this many runs (<= 0: never)"),
                   _p("startDate", "number", "no tick before (ms since the epoch)"),
                   _p("endDate", "number", "no tick after (ms since the epoch)"),
                   _p("priority", "integer", "priority of the jobs it pushes"),
                   _p("uniqueKey", "string", "unique key of the jobs it pushes"),
                   _p("dedup", "object", "with uniqueKey: {ttl?, extend?, replace?}"),
                   _p("preventOverlap", "boolean",
                      "no new job while the last one is live (default true)"),
                   _p("skipMissedOnRestart", "boolean",
                      "missed ticks collapse into one (default true; false: caught up)"),
                   _p("skipIfNoWorker", "boolean", "no job when no worker serves the queue"),
                   _p("jobOptions", "object", "options of the jobs it pushes")),
             open_body=True),
    Endpoint("GET", "/crons/{name}", "CronGet", "One cron schedule", "crons"),
    Endpoint("DELETE", "/crons/{name}", "CronDelete", "Delete a cron schedule", "crons"),
    Endpoint("GET", "/webhooks", "ListWebhooks", "Webhooks", "webhooks"),
    Endpoint("POST", "/webhooks", "AddWebhook", "Add a webhook", "webhooks",
             body=(_p("url", "string", "target URL", required=True),
                   _p("events", "array", "job.pushed, job.completed, ...", required=True),
                   _p("queue", "string", "only this queue"),
                   _p("secret", "string", "HMAC signing secret"))),
    Endpoint("DELETE", "/webhooks/{webhookId}", "RemoveWebhook", "Remove a webhook",
             "webhooks"),
    Endpoint("GET", "/webhooks/{webhookId}/deliveries", "ListWebhookDeliveries",
             "Recent deliveries of a webhook", "webhooks",
             query=(_p("status", "string", "only deliveries in this status"), LIMIT)),
    Endpoint("PUT", "/webhooks/{id}/enabled", "SetWebhookEnabled", "Enable or disable",
             "webhooks", body=(_p("enabled", "boolean", "on or off", required=True),)),
    # -- monitoring ------------------------------------------------------------------------------
    Endpoint("GET", "/ping", "Ping", "Round trip", "monitoring"),
    Endpoint("GET", "/brokers", "ListBrokers",
             "Broker sessions: heartbeat, leader, draining", "monitoring"),
    Endpoint("GET", "/storage", "StorageStatus", "Storage status", "monitoring"),
    Endpoint("GET", "/stats", "Stats", "Server-wide job statistics", "monitoring",
             shape=_stats),
    Endpoint("GET", "/cluster", "ClusterOverview",
             "Brokers, workers and PostgreSQL health (xmin, dead tuples, sizes)", "monitoring"),
    Endpoint("GET", "/figures", "AlertFigures",
             "Per queue: oldest waiting / retrying job, DLQ by reason, saturation",
             "monitoring", query=(_p("queue", "string", "only this queue"),)),
)
# fmt: on


@dataclass(frozen=True, slots=True)
class SystemRoute:
    """A route the HTTP layer serves itself; ``auth`` says when it needs a token."""

    method: str
    path: str
    handler: str
    summary: str
    tag: str
    auth: Literal["tokens", "never"]
    media_type: str = "application/json"
    query: tuple[Param, ...] = ()


_AFTER = _p("after", "string", "resume token (also the Last-Event-ID header)")

# fmt: off
SYSTEM_ROUTES: tuple[SystemRoute, ...] = (
    SystemRoute("GET", "/events", "bunqueue_events",
                "bunqueue's event stream of every queue (SSE: job:*, queue:counts, "
                "stats:snapshot, health:status)", "events", "tokens", "text/event-stream",
                (_AFTER,)),
    SystemRoute("GET", "/events/queues/{queue}", "bunqueue_events",
                "bunqueue's event stream of one queue (SSE)", "events", "tokens",
                "text/event-stream", (_AFTER,)),
    SystemRoute("GET", "/queues/{queue}/events", "events",
                "pgqueue's resumable events of one queue (SSE)", "events", "tokens",
                "text/event-stream", (_AFTER,)),
    SystemRoute("GET", "/pgqueue/events/queues/{queue}", "events",
                "pgqueue's resumable events of one queue (SSE)", "events", "tokens",
                "text/event-stream", (_AFTER,)),
    SystemRoute("GET", "/pgqueue/events", "events",
                "pgqueue's resumable events of one queue, or of all (SSE)", "events",
                "tokens", "text/event-stream",
                (_p("queue", "string", "only this queue (default: every queue)"), _AFTER)),
    SystemRoute("GET", "/healthz", "live", "Liveness: the process serves", "health", "never"),
    SystemRoute("GET", "/live", "live", "Liveness (alias of /healthz)", "health", "never"),
    SystemRoute("GET", "/readyz", "ready",
                "Readiness: database, schema, session, services (none dead or restarting),"
                " not draining; warnings (listen, projection, xminHorizon) do not make it 503",
                "health", "never"),
    SystemRoute("GET", "/ready", "ready", "Readiness (alias of /readyz)", "health", "never"),
    SystemRoute("GET", "/health", "health",
                "Readiness with bunqueue's health fields (status, version, uptime, queues, "
                "connections, memory)", "health", "never"),
    SystemRoute("GET", "/metrics", "metrics", "Prometheus metrics", "monitoring", "tokens",
                "text/plain"),
    SystemRoute("GET", "/prometheus", "metrics", "Prometheus metrics (alias of /metrics)",
                "monitoring", "tokens", "text/plain"),
    SystemRoute("POST", "/gc", "gc",
                "Run Python's garbage collector (and malloc_trim): memory before and after",
                "monitoring", "tokens"),
    SystemRoute("GET", "/heapstats", "heapstats",
                "Objects by type, GC generations, tracemalloc, this broker's collections",
                "monitoring", "tokens"),
    SystemRoute("GET", "/openapi.json", "openapi", "This API as OpenAPI 3", "docs", "never"),
    SystemRoute("GET", "/docs", "docs", "This API as an HTML page", "docs", "never",
                "text/html"),
    SystemRoute("GET", "/ui", "ui", "The built-in dashboard (redirects to /ui/)", "dashboard",
                "never", "text/html"),
    SystemRoute("GET", "/ui/", "ui", "The built-in dashboard (sign-in with a token)",
                "dashboard", "never", "text/html"),
    SystemRoute("GET", "/ui/{path:path}", "ui_asset", "The dashboard's static files",
                "dashboard", "never", "text/javascript"),
)
# fmt: on
