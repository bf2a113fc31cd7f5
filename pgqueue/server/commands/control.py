"""Job and queue control: cancel, update, re-prioritise, move, discard; pause, drain, clean.

Answers follow bunqueue's catalogue (§1.6 "Job and queue control"): most
commands answer a bare ``{ok: true}``; ``PromoteJobs``, ``Drain`` and
``RetryCompleted`` answer ``{count}``, ``IsPaused`` ``{paused}``, ``Clean``
``{count, ids}``, ``MoveToWaitingChildren`` ``D{moved}``,
``RemoveChildDependency`` ``{removed}``, ``GetDeduplicationJobId``
``D{jobId}`` (null when no live job holds the key),
``RemoveDeduplicationKey`` ``D{count}`` and ``RemoveJobDeduplicationKey``
``D{removed}``.  The engine's
errors carry bunqueue's strings (``Job not found or cannot be cancelled`` ...).

Moves of an active job need the worker's lock token.  A client that omits it
(the Python SDK's ``move_to_delayed``) is served with the token this broker
handed out for the job, as ACK is (:func:`held_token`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pgqueue.errors import InvalidState, JobNotFound, PgQueueError, ValidationError
from pgqueue.manager.arguments import DAY_MS
from pgqueue.manager.control.jobs import PRIORITY_LIMIT
from pgqueue.manager.control.probe import not_active
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.vocabulary.checks import MAX_EPOCH_MS

__all__ = ["forget_claim", "held_token", "missing_token_error"]

group = CommandGroup()
command = group.command

MAX_DELAY_MS = 365 * DAY_MS
MAX_GRACE_MS = 100 * 365 * DAY_MS
MAX_BULK = 10_000_000
DEFAULT_CLEAN_LIMIT = 1000
PENDING_STATES = ("waiting", "prioritized", "delayed")
CLEAN_ALIASES = {"wait": "waiting"}


def held_token(req: Request, job_id: str) -> str | None:
    """The lock token a token-less write of this client may use (see server/claims.py)."""
    return req.client.pulled.get(job_id) or req.broker.claims.token_for(
        job_id, req.client.client_id
    )


def forget_claim(req: Request, job_id: str) -> None:
    """The job left the claim this broker handed out: drop the token it kept."""
    req.client.pulled.pop(job_id, None)
    req.broker.claims.ended(job_id, None, by_client=True)


async def missing_token_error(req: Request, job_id: str) -> PgQueueError:
    """Why a move of an active job that came with no lock token cannot be made."""
    state = await req.manager.get_state(job_id)
    if state == "unknown":
        return JobNotFound(job_id)
    if state != "active":
        return not_active(state)
    return ValidationError(f"Lock token required for job {job_id}", field="token")


async def _with_held_token(
    req: Request, job_id: str, given: str | None, call: Callable[[str | None], Awaitable[Any]]
) -> Any:
    """Run ``call(token)``; if the engine wants a token for an active job and the
    client sent none, run it again with the token this broker handed out."""
    try:
        return await call(given)
    except ValidationError as exc:
        held = held_token(req, job_id) if given is None else None
        if exc.field != "token" or held is None:
            raise
    return await call(held)


# -- jobs ----------------------------------------------------------------------


@command("Cancel")
async def cancel(req: Request) -> None:
    await req.manager.remove(req.fields.job_id("id"))


@command("Update")
async def update(req: Request) -> None:
    job_id = req.fields.job_id("id")
    await req.manager.update_data(job_id, req.fields.json_value("data"))


@command("ChangePriority")
async def change_priority(req: Request) -> None:
    f = req.fields
    job_id = f.job_id("id")
    priority = f.int_("priority", minimum=-PRIORITY_LIMIT, maximum=PRIORITY_LIMIT)
    await req.manager.change_priority(job_id, priority, f.opt_bool("lifo"))


@command("Promote")
async def promote(req: Request) -> None:
    await req.manager.promote(req.fields.job_id("id"))


@command("PromoteJobs")
async def promote_jobs(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    count = f.opt_int("count", minimum=1, maximum=MAX_BULK)
    return {"count": await req.manager.promote_jobs(queue, count)}


@command("MoveToDelayed")
async def move_to_delayed(req: Request) -> None:
    # A pending job is delayed as it is (bunqueue does); an active one is the
    # worker's move, with its token (or the one this broker handed out).
    await _delay_with_token(req, req.manager.move_to_delayed)


@command("ChangeDelay")
async def change_delay(req: Request) -> None:
    await _delay_with_token(req, req.manager.change_delay)


async def _delay_with_token(
    req: Request, move: Callable[[str, int, str | None], Awaitable[None]]
) -> None:
    """``move(id, delay, token)``, with the given token or the one this broker holds."""
    f = req.fields
    job_id = f.job_id("id")
    delay = f.int_("delay", minimum=0, maximum=MAX_DELAY_MS)
    given = f.opt_str("token", max_len=256) or None

    async def call(token: str | None) -> None:
        await move(job_id, delay, token)

    await _with_held_token(req, job_id, given, call)
    forget_claim(req, job_id)


@command("MoveToWait")
async def move_to_wait(req: Request) -> None:
    """active → waiting (token), delayed → promoted, waiting → nothing to do,
    failed → redriven from the DLQ (one audited redrive of this job)."""
    f = req.fields
    job_id = f.job_id("id")
    given = f.opt_str("token", max_len=256) or None
    if given is None and await req.manager.get_state(job_id) == "failed":
        why = f.opt_str("why", max_len=4096)
        if not await req.manager.retry_job(job_id, actor=req.client.actor, why=why):
            raise InvalidState("Failed job not in DLQ", field="id")
        return

    async def call(token: str | None) -> None:
        await req.manager.move_to_wait(job_id, token)

    await _with_held_token(req, job_id, given, call)
    forget_claim(req, job_id)


@command("MoveToWaitingChildren")
async def move_to_waiting_children(req: Request) -> dict[str, Any]:
    f = req.fields
    job_id = f.job_id("id")
    token = f.opt_str("token", max_len=256) or held_token(req, job_id)
    if token is None:
        raise await missing_token_error(req, job_id)
    moved = await req.manager.move_to_waiting_children(job_id, token)
    if moved:
        forget_claim(req, job_id)
    return {"data": {"moved": moved}}


@command("Discard")
async def discard(req: Request) -> None:
    f = req.fields
    job_id = f.job_id("id")
    await req.manager.discard(job_id, f.opt_str("token", max_len=256) or None)
    forget_claim(req, job_id)


# -- flows and deduplication keys ----------------------------------------------


@command("RemoveChildDependency")
async def remove_child_dependency(req: Request) -> dict[str, Any]:
    return {"removed": await req.manager.remove_child_dependency(req.fields.job_id("id"))}


@command("RemoveUnprocessedChildren")
async def remove_unprocessed_children(req: Request) -> None:
    await req.manager.remove_unprocessed_children(req.fields.job_id("id"))


def _deduplication_key(req: Request) -> tuple[str, str]:
    """The queue and the ``deduplicationId`` a deduplication command names."""
    return req.fields.queue(), req.fields.job_id("deduplicationId")


@command("GetDeduplicationJobId")
async def get_deduplication_job_id(req: Request) -> dict[str, Any]:
    job_id = await req.manager.get_deduplication_job_id(*_deduplication_key(req))
    return {"data": {"jobId": job_id}}


@command("RemoveDeduplicationKey")
async def remove_deduplication_key(req: Request) -> dict[str, Any]:
    count = await req.manager.remove_deduplication_key(*_deduplication_key(req))
    return {"data": {"count": count}}


@command("RemoveJobDeduplicationKey")
async def remove_job_deduplication_key(req: Request) -> dict[str, Any]:
    job_id = req.fields.job_id("id")
    return {"data": {"removed": await req.manager.remove_job_deduplication_key(job_id)}}


@command("ClearLogs")
async def clear_logs(req: Request) -> None:
    f = req.fields
    job_id = f.job_id("id")
    keep = f.opt_int("keepLogs", minimum=0, maximum=1_000_000, default=0)
    await req.manager.clear_logs(job_id, keep)


# -- queues ----------------------------------------------------------------------


@command("Pause")
async def pause(req: Request) -> None:
    await req.manager.pause(req.fields.queue())


@command("Resume")
async def resume(req: Request) -> None:
    await req.manager.resume(req.fields.queue())


@command("IsPaused")
async def is_paused(req: Request) -> dict[str, Any]:
    return {"paused": await req.manager.is_paused(req.fields.queue())}


@command("Drain")
async def drain(req: Request) -> dict[str, Any]:
    """Remove the queue's waiting, prioritized and (unless ``delayed: false``) delayed jobs."""
    f = req.fields
    queue = f.queue()
    include_delayed = f.opt_bool("delayed", default=True)
    return {"count": await req.manager.drain(queue, include_delayed)}


@command("Obliterate")
async def obliterate(req: Request) -> None:
    """Remove everything of a queue; refused while jobs are active unless ``force``."""
    f = req.fields
    queue = f.queue()
    await req.manager.obliterate(queue, f.opt_bool("force", default=False))


@command("Clean")
async def clean(req: Request) -> dict[str, Any]:
    """Remove up to ``limit`` (default 1000; 0: none) jobs in ``state`` older than ``grace``.

    Without ``state`` (or with ``paused``), as in bunqueue, the queue's pending
    jobs are cleaned: waiting, then prioritized, then delayed.
    """
    f = req.fields
    queue = f.queue()
    grace = f.int_("grace", minimum=0, maximum=MAX_GRACE_MS)
    state = f.opt_str("state", max_len=64)
    limit = f.opt_int("limit", minimum=0, maximum=MAX_BULK, default=DEFAULT_CLEAN_LIMIT)
    states = (
        PENDING_STATES if state is None or state == "paused" else (CLEAN_ALIASES.get(state, state),)
    )
    ids: list[str] = []
    for name in states:
        if len(ids) >= limit:
            break
        _, cleaned = await req.manager.clean(queue, grace, name, limit - len(ids))
        ids.extend(cleaned)
    return {"count": len(ids), "ids": ids}


@command("RetryCompleted")
async def retry_completed(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    job_id = f.opt_job_id("id")
    count = f.opt_int("count", minimum=1, maximum=MAX_BULK)
    timestamp = f.opt_number("timestamp", minimum=0, maximum=MAX_EPOCH_MS)
    return {"count": await req.manager.retry_completed(queue, job_id, count, timestamp)}
