"""Cron commands (bunqueue §1.6): Cron (create or replace), CronGet, CronList, CronDelete.

Schedulers live in PostgreSQL and every broker ticks them (G8: each tick
fires once, see :mod:`pgqueue.maintenance.cron_ticker`).  The answers have
bunqueue's shape, ``{cron: {name, jobName, queue, schedule, repeatEvery,
nextRun, executions, maxLimit, timezone, priority, ...}}``, with pgqueue's
extra fields after them.  Departure: ``CronGet`` of an unknown name answers
``{ok: true, cron: null}`` (bunqueue: ``Cron job not found``; the official
clients read both as "none").  ``CronDelete`` of an unknown name keeps
bunqueue's ``Cron job not found``.
"""

from __future__ import annotations

from typing import Any

from pgqueue.errors import JobNotFound
from pgqueue.manager.cron.schedulers import MAX_LISTED_SCHEDULERS
from pgqueue.protocol import Fields
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.server.wire import job_options_from_wire

group = CommandGroup()
command = group.command

CRON_NOT_FOUND = "Cron job not found"


def _name(fields: Fields) -> str:
    return fields.str_("name", max_len=256, non_empty=True)


def _job_input(fields: Fields) -> tuple[str, Any]:
    """(job name, data): ``jobName``, else bunqueue's legacy envelope (a string
    ``name`` inside a map ``data``, moved out of it), else ``default``."""
    data = fields.json_value("data") if fields.has("data") else None
    job_name = fields.opt_job_name("jobName")
    if job_name is None:
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"]:
            data = dict(data)
            job_name = data.pop("name")
        else:
            job_name = "default"
    return job_name, data


def _dedup(fields: Fields) -> dict[str, Any] | None:
    sub = fields.opt_nested("dedup")
    if sub is None:
        return None
    out: dict[str, Any] = {}
    ttl = sub.opt_number("ttl", minimum=1)
    if ttl is not None:
        out["ttl"] = int(ttl)
    for key in ("extend", "replace"):
        flag = sub.opt_bool(key)
        if flag is not None:
            out[key] = flag
    return out or None


@command("Cron")
async def cron(req: Request) -> dict[str, Any]:
    fields = req.fields
    name = _name(fields)
    queue = fields.queue()
    job_name, data = _job_input(fields)
    options = fields.opt_nested("jobOptions")
    every = fields.opt_number("repeatEvery")
    limit = fields.opt_number("maxLimit")
    scheduler = await req.manager.upsert_scheduler(
        name,
        queue,
        job_name=job_name,
        data=data,
        pattern=fields.opt_str("schedule", max_len=256),
        every_ms=None if every is None else every,  # type: ignore[arg-type]
        timezone=fields.opt_str("timezone", max_len=64),
        immediately=fields.opt_bool("immediately", default=False),
        limit=None if limit is None else limit,  # type: ignore[arg-type]
        start_date=fields.get("startDate"),
        end_date=fields.get("endDate"),
        prevent_overlap=fields.opt_bool("preventOverlap", default=True),
        skip_missed_on_restart=fields.opt_bool("skipMissedOnRestart", default=True),
        skip_if_no_worker=fields.opt_bool("skipIfNoWorker", default=False),
        priority=fields.opt_int("priority", default=0),
        unique_key=fields.opt_str("uniqueKey", max_len=256, non_empty=True),
        dedup=_dedup(fields),
        job_options=None
        if options is None
        else job_options_from_wire(options, custom_id_key="jobId"),
    )
    return {"cron": scheduler.as_wire()}


@command("CronGet")
async def cron_get(req: Request) -> dict[str, Any]:
    scheduler = await req.manager.get_scheduler(_name(req.fields))
    return {"cron": None if scheduler is None else scheduler.as_wire()}


@command("CronList")
async def cron_list(req: Request) -> dict[str, Any]:
    """``{queue?, limit?}`` (pgqueue's filters) -> ``{crons: [...]}`` by name."""
    fields = req.fields
    queue = fields.queue() if fields.has("queue") else None
    limit = fields.opt_int(
        "limit", minimum=1, maximum=MAX_LISTED_SCHEDULERS, default=MAX_LISTED_SCHEDULERS
    )
    schedulers = await req.manager.list_schedulers(queue, limit=limit)
    return {"crons": [s.as_wire() for s in schedulers]}


@command("CronDelete")
async def cron_delete(req: Request) -> dict[str, Any] | None:
    if not await req.manager.remove_scheduler(_name(req.fields)):
        raise JobNotFound(None, CRON_NOT_FOUND)
    return None
