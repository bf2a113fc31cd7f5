"""Progress and logs of a job.

Progress is written only while the job is active (bunqueue's rule), with a
``progress`` outbox event that carries both shapes clients read:
``{"progress": p, "data": {"progress": p, "message": m}}``.  A worker passes
its lock token, which must hold the current lease (G3); an operator may
omit it.

Log lines belong to any known job.  A job's ``keep_logs`` option keeps only
that many newest lines (0: none); log writes are not state changes and
write no outbox event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pgqueue import jsontext
from pgqueue.db.queries import Q
from pgqueue.errors import JobNotFound, LeaseLost, ValidationError
from pgqueue.manager.arguments import check_int, check_text, check_token
from pgqueue.manager.context import EngineContext
from pgqueue.manager.control.probe import explain_miss
from pgqueue.manager.options import encode_json
from pgqueue.vocabulary.names import validate_job_id

__all__ = [
    "LOG_LEVELS",
    "MAX_LOG_MESSAGE",
    "MAX_PROGRESS_BYTES",
    "MAX_PROGRESS_MESSAGE",
    "add_log",
    "clear_logs",
    "encode_progress",
    "get_logs",
    "get_progress",
    "update_progress",
]

LOG_LEVELS = ("info", "warn", "error")
MAX_LOG_MESSAGE = 10_000
MAX_PROGRESS_MESSAGE = 10_000
MAX_PROGRESS_BYTES = 65_536
_POSITION_LIMIT = 1_000_000_000


def encode_progress(progress: Any) -> str:
    """JSON text of a progress value: a finite number or a JSON object."""
    if isinstance(progress, bool) or not isinstance(progress, int | float | Mapping):
        raise ValidationError("progress must be a number or an object", field="progress")
    if isinstance(progress, float) and not math.isfinite(progress):
        raise ValidationError("progress must be a finite number", field="progress")
    value = dict(progress) if isinstance(progress, Mapping) else progress
    return encode_json(value, label="progress", limit=MAX_PROGRESS_BYTES, what="Progress")


async def update_progress(
    ctx: EngineContext,
    job_id: str,
    progress: Any,
    message: str | None = None,
    token: str | None = None,
) -> None:
    """Record an active job's progress; ``message=None`` keeps the previous message."""
    validate_job_id(job_id, "id")
    text = encode_progress(progress)
    if message is not None:
        check_text(message, "message", MAX_PROGRESS_MESSAGE)
    if token is not None:
        check_token(token)
        ctx.session.check()
    row = await ctx.scoped.fetchrow(
        Q.job_update_progress,
        job_id=job_id,
        text=text,
        message=message,
        set_message=message is not None,
        token=token,
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
    )
    if row is None:
        await explain_miss(ctx, job_id, token)
        raise LeaseLost(job_id)  # pragma: no cover - the probe explains every miss


async def get_progress(ctx: EngineContext, job_id: str) -> tuple[Any, str | None]:
    """``(progress, message)`` of a known job (live or finished)."""
    validate_job_id(job_id, "id")
    row = await ctx.scoped.fetchrow(Q.job_progress_get, job_id=job_id)
    if row is None:
        raise JobNotFound(job_id)
    progress = None if row["progress"] is None else jsontext.loads(row["progress"])
    return progress, row["progress_message"]


async def add_log(ctx: EngineContext, job_id: str, message: str, level: str = "info") -> bool:
    """Append a log line; False when the job keeps no logs (``keep_logs=0``)."""
    validate_job_id(job_id, "id")
    check_text(message, "message", MAX_LOG_MESSAGE)
    if level not in LOG_LEVELS:
        raise ValidationError("level must be one of info, warn, error", field="level")
    row = await ctx.scoped.fetchrow(Q.job_log_add, job_id=job_id, level=level, message=message)
    if row is None:
        raise JobNotFound(job_id)
    return bool(row["added"])


async def get_logs(
    ctx: EngineContext, job_id: str, start: int = 0, end: int = -1
) -> tuple[list[dict[str, Any]], int]:
    """Log lines ``start..end`` (inclusive; negative counts from the end) and the total."""
    validate_job_id(job_id, "id")
    lo = check_int(start, "start", -_POSITION_LIMIT, _POSITION_LIMIT)
    hi = check_int(end, "end", -_POSITION_LIMIT, _POSITION_LIMIT)
    rows = await ctx.scoped.fetch(Q.job_log_page, job_id=job_id, lo=lo, hi=hi)
    total = int(rows[0]["total"]) if rows else 0
    logs = [
        {"timestamp": row["ts"], "level": row["level"], "message": row["message"]}
        for row in rows
        if row["ts"] is not None
    ]
    return logs, total


async def clear_logs(ctx: EngineContext, job_id: str, keep_logs: int = 0) -> int:
    """Delete a job's log lines except the newest ``keep_logs``; return how many went."""
    validate_job_id(job_id, "id")
    keep = check_int(keep_logs, "keepLogs", 0, 1_000_000)
    return int(await ctx.scoped.fetchval(Q.job_log_clear, job_id=job_id, keep=keep))
