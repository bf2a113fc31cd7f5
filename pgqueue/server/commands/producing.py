"""Producing: PUSH, PUSHB, PUSHF, UpdateParent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pgqueue.errors import ValidationError
from pgqueue.manager.options import JobSpec, build_job_spec, plain_specs
from pgqueue.protocol import Fields
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.server.wire import WIRE_LABELS, job_input_from_wire, job_to_wire

group = CommandGroup()
command = group.command

MAX_BATCH_JOBS = 10_000
_PLAIN_KEYS = frozenset({"name", "data"})
"""The keys of a PUSHB entry without options."""


def _spec(
    req: Request, fields: Fields, queue: str, *, custom_id_key: str, prefix: str = ""
) -> JobSpec:
    name, data, opts = job_input_from_wire(fields, custom_id_key=custom_id_key)
    return build_job_spec(
        queue,
        name,
        data,
        opts,
        max_payload_bytes=req.manager.config.max_payload_bytes,
        labels=WIRE_LABELS,
        prefix=prefix,
        queue_checked=True,
        data_checked=True,  # job_input_from_wire: Fields.json_value
    )


@command("PUSH")
async def push(req: Request) -> dict[str, Any]:
    queue = req.fields.queue()
    spec = _spec(req, req.fields, queue, custom_id_key="jobId")
    return {"id": await req.broker.push(spec)}


@command("PUSHB")
async def push_batch(req: Request) -> dict[str, Any]:
    queue = req.fields.queue()
    specs = _plain_specs(req, queue, req.fields.message.get("jobs"))
    if specs is None:
        entries = req.fields.nested_list("jobs", max_items=MAX_BATCH_JOBS)
        specs = [
            _spec(req, entry, queue, custom_id_key="customId", prefix=f"jobs[{i}]: ")
            for i, entry in enumerate(entries)
        ]
    return {"ids": await req.manager.push_specs(specs)}


def _plain_specs(req: Request, queue: str, jobs: object) -> Sequence[JobSpec] | None:
    """The specs of PUSHB ``jobs`` when every entry is ``{name, data}`` with a string
    name (no options, no legacy envelope), validated for the whole batch at once
    (:func:`plain_specs`); None: some entry needs the per-entry reading, which then
    names its fault."""
    if (
        type(jobs) is not list
        or not 0 < len(jobs) <= MAX_BATCH_JOBS
        or not all(
            type(e) is dict and _PLAIN_KEYS.issuperset(e) and type(e.get("name")) is str
            for e in jobs
        )
    ):
        return None
    entries: Sequence[dict[str, Any]] = jobs
    return plain_specs(
        queue,
        [e["name"] for e in entries],
        [e.get("data") for e in entries],
        max_payload_bytes=req.manager.config.max_payload_bytes,
    )


@command("PUSHF")
async def push_flow(req: Request) -> dict[str, Any]:
    """An atomic flow graph with client-allocated ids (the TS FlowProducer)."""
    entries = req.fields.nested_list("jobs", max_items=MAX_BATCH_JOBS)
    specs: list[JobSpec] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        job_id = entry.job_id("id")
        if job_id in seen:
            raise ValidationError(f"jobs[{i}]: duplicate job id {job_id}", field="id")
        seen.add(job_id)
        queue = entry.queue()
        spec = _spec(
            req, entry.nested("input"), queue, custom_id_key="customId", prefix=f"jobs[{i}]: "
        )
        specs.append(replace(spec, id=job_id, custom_id=None))
    ids = await req.manager.push_specs(specs)
    jobs = await req.manager.get_jobs_by_ids(ids)
    return {"data": {"jobs": [job_to_wire(jobs[i]) for i in ids if i in jobs]}}


@command("UpdateParent")
async def update_parent(req: Request) -> dict[str, Any] | None:
    child = req.fields.job_id("childId")
    parent = req.fields.job_id("parentId")
    await req.manager.attach_child(child, parent)
    return None
