"""What a worker reports: job progress and log lines, its own registration and liveness.

``Progress`` answers ``{ok}`` (the job must be active: ``Job not found`` /
``Job is not active (current state: X)``); a ``message`` that is absent (the
TS worker sends ``undefined``) keeps the previous one.  Without a token it
acts only on a claim of this client (the claim book's rule, as for a
token-less ACK: :mod:`pgqueue.server.claims`), else ``Lock token required``.  ``AddLog`` answers
``D{added}``, ``Heartbeat`` ``D{ok: true}`` (``Worker not found``),
``RegisterWorker`` the worker (``D{workerId, name, queues, ...}``),
``UnregisterWorker`` ``D{removed: true}`` and ``ListWorkers`` ``D{workers,
stats}``.

Registrations belong to the connection that made them: the broker removes
them when it closes (bunqueue §1.3), so a client registers again after a
reconnect.
"""

from __future__ import annotations

from typing import Any

from pgqueue.errors import ValidationError
from pgqueue.manager.arguments import INT4_MAX
from pgqueue.manager.control.workers import WORKER_NOT_FOUND
from pgqueue.server.commands.control import held_token, missing_token_error
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request

group = CommandGroup()
command = group.command

MAX_WORKER_QUEUES = 1_000
MAX_COUNTER = 2**53 - 1
REGISTERED_FIELDS = (
    "workerId",
    "name",
    "queues",
    "concurrency",
    "hostname",
    "pid",
    "status",
    "registeredAt",
    "lastSeen",
    "activeJobs",
    "processedJobs",
    "failedJobs",
    "currentJob",
)


@command("Progress")
async def progress(req: Request) -> None:
    f = req.fields
    job_id = f.job_id("id")
    raw = f.get("progress")
    value = f.json_value("progress") if isinstance(raw, dict) else f.number("progress")
    message = f.opt_str("message", max_len=10_000)
    token = f.opt_str("token", max_len=256) or held_token(req, job_id)
    if token is None:
        raise await missing_token_error(req, job_id)
    await req.manager.update_progress(job_id, value, message, token)


@command("AddLog")
async def add_log(req: Request) -> dict[str, Any]:
    f = req.fields
    job_id = f.job_id("id")
    message = f.str_("message", max_len=10_000)
    level = f.opt_str("level", max_len=16, default="info")
    return {"data": {"added": await req.manager.add_log(job_id, message, level)}}


@command("Heartbeat")
async def heartbeat(req: Request) -> dict[str, Any]:
    """A worker is alive (``id`` is its worker id), with its own counters."""
    f = req.fields
    worker_id = f.job_id("id")
    active = f.opt_int("activeJobs", minimum=0, maximum=INT4_MAX)
    processed = f.opt_int("processed", minimum=0, maximum=MAX_COUNTER)
    failed = f.opt_int("failed", minimum=0, maximum=MAX_COUNTER)
    await req.manager.worker_heartbeat(worker_id, active, processed, failed)
    return {"data": {"ok": True}}


@command("RegisterWorker")
async def register_worker(req: Request) -> dict[str, Any]:
    f = req.fields
    name = f.job_name("name")
    queues = f.str_list("queues", max_items=MAX_WORKER_QUEUES, max_len=256)
    concurrency = f.opt_int("concurrency", minimum=1, maximum=100_000, default=1)
    worker_id = f.opt_job_id("workerId")
    hostname = f.opt_str("hostname", max_len=256)
    pid = f.opt_int("pid", minimum=0, maximum=2**31 - 1)
    f.opt_number("startedAt")  # the client's clock: checked, not used
    worker = await req.manager.register_worker(
        worker_id, name, queues, concurrency, hostname, pid, client_id=req.client.client_id
    )
    req.client.workers.add(worker["workerId"])
    return {"data": {key: worker[key] for key in REGISTERED_FIELDS}}


@command("UnregisterWorker")
async def unregister_worker(req: Request) -> dict[str, Any]:
    worker_id = req.fields.job_id("workerId")
    removed = await req.manager.unregister_worker(worker_id)
    req.client.workers.discard(worker_id)
    if not removed:
        raise ValidationError(WORKER_NOT_FOUND, field="workerId")
    return {"data": {"removed": True}}


@command("ListWorkers")
async def list_workers(req: Request) -> dict[str, Any]:
    workers, stats = await req.manager.list_workers()
    listed = [{"id": worker["workerId"], **worker} for worker in workers]
    return {"data": {"workers": listed, "stats": stats}}
