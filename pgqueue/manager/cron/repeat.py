"""The ``repeat`` job option: a repeatable job is a scheduler keyed by the job.

``PUSH {repeat: {pattern | every, tz?, limit?, startDate?, endDate?,
immediately?, count?, offset?, jobId?}}`` does, in the push's transaction:

1. create (or update) the scheduler ``repeat:<queue>:<name>:<key>`` (``key``:
   ``repeat.jobId``, else the job's ``jobId``, else the pattern or interval
   and zone; BullMQ's repeat key), whose job template is the pushed job:
   its data (the JSON text as sent) and every option it carries;
2. admit the pushed job as the scheduler's **first generation**, at its first
   tick (delayed until then; now with ``immediately``), recorded in the ticks
   table like every tick, and move the scheduler's next run past it.

The ticker admits the following generations at their ticks.  Unlike
bunqueue (which admits the successor when the previous one is acked), the
generations follow the clock, as BullMQ's do, and may overlap (``limit`` and
``endDate`` stop them; remove the scheduler to stop it early).  The job's own
``jobId`` names the series, not a job: each generation gets its own id.
A push of a series whose next tick a previous push already took gets that
tick's job (no second job for one tick).  A push whose series is already
spent (limit reached, end passed) is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from pgqueue.db.executor import Executor
from pgqueue.db.queries import Q
from pgqueue.errors import ValidationError
from pgqueue.ids import uuid7
from pgqueue.manager.context import EngineContext
from pgqueue.manager.cron.schedule import next_tick
from pgqueue.manager.cron.schedulers import upsert_spec_in
from pgqueue.manager.cron.spec import build_scheduler_spec
from pgqueue.manager.options import JobSpec

__all__ = ["REPEAT_KEYS", "check_repeat", "repeat_key", "schedule_repeats_in", "template_options"]

REPEAT_KEYS = frozenset(
    {
        "every",
        "pattern",
        "tz",
        "limit",
        "count",
        "startDate",
        "endDate",
        "immediately",
        "offset",
        "prevMillis",
        "jobId",
        "utc",
    }
)


def check_repeat(value: Any, label: str = "repeat") -> dict[str, Any]:
    """The repeat map's shape (its values are checked when the push runs)."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"{label} must be a map {{pattern | every, ...}}", field="repeat")
    unknown = sorted(set(value) - REPEAT_KEYS)
    if unknown:
        raise ValidationError(f"{label} has unknown keys: {', '.join(unknown)}", field="repeat")
    if value.get("pattern") is None and value.get("every") is None:
        raise ValidationError(f"{label} needs a pattern or every", field="repeat")
    return dict(value)


def repeat_key(spec: JobSpec, repeat: Mapping[str, Any]) -> str:
    """The scheduler name of a repeatable job (at most 256 characters)."""
    key = repeat.get("jobId") or spec.custom_id
    if key is None:
        timing = repeat.get("pattern") or f"every:{repeat.get('every')}"
        key = f"{timing}:{repeat.get('tz') or ''}"
    name = f"repeat:{spec.queue}:{spec.name}:{key}"
    if len(name) > 256:
        name = "repeat:" + hashlib.sha256(name.encode()).hexdigest()
    return name


def template_options(spec: JobSpec) -> dict[str, Any]:
    """The engine options that rebuild ``spec`` (its id and relations aside)."""
    options: dict[str, Any] = {
        "attempts": spec.max_attempts,
        "backoff": {
            "type": spec.backoff.type,
            "delay": spec.backoff.delay_ms,
            "maxDelay": spec.backoff.max_delay_ms,
        },
    }
    for key, value in (
        ("delay", spec.delay_ms or None),
        ("timeout", spec.timeout_ms),
        ("ttl", spec.ttl_ms),
        ("stall_timeout", spec.stall_timeout_ms),
        ("lifo", spec.lifo or None),
        ("remove_on_complete", spec.remove_on_complete or None),
        ("remove_on_fail", spec.remove_on_fail or None),
        ("group_id", spec.group_id),
    ):
        if value is not None:
            options[key] = value
    extras = json.loads(spec.opts_json)
    extras.pop("depends_on", None)
    extras.pop("children_ids", None)
    options.update(extras)
    return options


def _ms_between(later: datetime, earlier: datetime) -> int:
    return max(0, round((later - earlier).total_seconds() * 1000))


async def _first_generation_in(
    tx: Executor, ctx: EngineContext, spec: JobSpec, repeat: Mapping[str, Any]
) -> JobSpec:
    repeat = check_repeat(repeat)
    dedup = None
    if spec.unique_key is not None and spec.unique_ttl_ms is not None:
        dedup = {"ttl": spec.unique_ttl_ms}
    sched = build_scheduler_spec(
        repeat_key(spec, repeat),
        spec.queue,
        data_json=spec.data_json,
        job_name=spec.name,
        pattern=repeat.get("pattern"),
        every_ms=repeat.get("every"),
        timezone=repeat.get("tz"),
        immediately=bool(repeat.get("immediately") or False),
        limit=repeat.get("limit"),
        start_date=repeat.get("startDate"),
        end_date=repeat.get("endDate"),
        prevent_overlap=False,
        skip_missed_on_restart=True,
        priority=spec.priority,
        unique_key=spec.unique_key,
        dedup=dedup,
        job_options=template_options(spec),
        source="repeat",
        count=repeat.get("count"),
        max_payload_bytes=ctx.config.max_payload_bytes,
    )
    scheduler, now, _ = await upsert_spec_in(tx, ctx, sched)
    first = scheduler.next_run_at
    if first is None:
        raise ValidationError(
            "repeat has no run left (its limit is reached or its endDate passed)",
            field="repeat",
        )
    job_id = uuid7()
    claimed = await tx.fetch(
        Q.scheduler_ticks_claim,
        namespace=ctx.namespace,
        scheduler=scheduler.name,
        ticks=[first],
        job_ids=[job_id],
        outcome="admitted",
        broker_id=ctx.broker_id,
    )
    if not claimed:
        # A push of the same series already took this tick: the same job, not a second.
        existing = await tx.fetchval(
            Q.scheduler_tick_job, namespace=ctx.namespace, name=scheduler.name, first=first
        )
        if existing is not None:
            job_id = existing
    else:
        spent = scheduler.max_limit is not None and scheduler.executions + 1 >= scheduler.max_limit
        anchor = first if scheduler.pattern is None else None
        following = None if spent else next_tick(sched.timing, first, anchor)
        await tx.fetchrow(
            Q.scheduler_advance,
            namespace=ctx.namespace,
            name=scheduler.name,
            executions=1,
            last_run_at=first,
            next_run_at=following,
            expected_next_run_at=first,
        )
    return replace(
        spec,
        id=job_id,
        custom_id=None,
        delay_ms=spec.delay_ms + _ms_between(first, now),
        repeat=None,
    )


async def schedule_repeats_in(
    ctx: EngineContext, tx: Executor, specs: Sequence[JobSpec]
) -> list[JobSpec]:
    """``specs`` with each repeatable job turned into its first generation (its
    scheduler written on ``tx``); the others unchanged."""
    out = []
    for spec in specs:
        repeat = spec.repeat
        out.append(spec if repeat is None else await _first_generation_in(tx, ctx, spec, repeat))
    return out
