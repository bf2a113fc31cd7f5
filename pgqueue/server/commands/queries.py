"""Queries answered by PostgreSQL (read-your-writes): jobs, states, results, counts."""

from __future__ import annotations

from typing import Any

from pgqueue.errors import JobNotFound
from pgqueue.manager.reads import NO_RESULT
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.server.wire import job_to_wire

group = CommandGroup()
command = group.command


@command("GetJob")
async def get_job(req: Request) -> dict[str, Any]:
    job = await req.manager.get_job(req.fields.job_id("id"))
    if job is None:
        raise JobNotFound()
    return {"job": job_to_wire(job, with_state=True)}


@command("GetState")
async def get_state(req: Request) -> dict[str, Any]:
    job_id = req.fields.job_id("id")
    return {"id": job_id, "state": await req.manager.get_state(job_id)}


@command("GetResult")
async def get_result(req: Request) -> dict[str, Any]:
    job_id = req.fields.job_id("id")
    result = await req.manager.get_result(job_id)
    response: dict[str, Any] = {"id": job_id}
    if result is not NO_RESULT:
        response["result"] = result
    return response


@command("GetJobCounts")
async def get_job_counts(req: Request) -> dict[str, Any]:
    counts = await req.manager.get_counts(req.fields.queue())
    body: dict[str, Any] = counts.as_dict()
    body["paused"] = 0
    if counts.paused:
        body["paused"] = body["waiting"] + body["prioritized"]
        body["waiting"] = body["prioritized"] = 0
    return {"counts": body}


@command("GetChildrenValues")
async def get_children_values(req: Request) -> dict[str, Any]:
    values = await req.manager.get_children_values(req.fields.job_id("id"))
    return {"data": {"values": values}}
