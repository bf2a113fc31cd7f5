"""Moves of one job between states: to delayed, to waiting, to waiting-children.

A move of an *active* job is made by the worker holding its lease: a
compare-and-set on (id, active, fence, lock token, unexpired lease) through
a live broker session (G3).  A stale token changes nothing and gets
:class:`LeaseLost`; a job that is not active gets ``Job is not active
(current state: X)``.  None of these moves consumes an attempt.
"""

from __future__ import annotations

import orjson

from pgqueue.db.queries import Q
from pgqueue.errors import InvalidState, JobNotFound, LeaseLost, ValidationError
from pgqueue.manager.arguments import DAY_MS, check_int, check_token
from pgqueue.manager.completion import parse_fence
from pgqueue.manager.context import EngineContext
from pgqueue.manager.control.probe import Probe, explain_miss, not_active, probe
from pgqueue.vocabulary.names import validate_job_id

__all__ = [
    "CHANGE_DELAY_ERROR",
    "change_delay",
    "move_to_delayed",
    "move_to_wait",
    "move_to_waiting_children",
]

CHANGE_DELAY_ERROR = "Job not found or cannot change delay"
MAX_DELAY_MS = 365 * DAY_MS


def _token_required(job_id: str) -> ValidationError:
    return ValidationError(f"Lock token required for job {job_id}", field="token")


async def _leased_move(
    ctx: EngineContext,
    job_id: str,
    token: str,
    event: str,
    payload: dict[str, object],
    *,
    delay_ms: int = 0,
    to_children: bool = False,
) -> Probe | None:
    """Run ``job_leased_move``: None when the job moved.  A miss raises its reason
    (:func:`explain_miss`), or returns the probe when nothing explains it."""
    fence = parse_fence(token)
    if fence is None:  # a malformed token
        return await explain_miss(ctx, job_id, token)
    row = await ctx.scoped.fetchrow(
        Q.job_leased_move,
        job_id=job_id,
        token=token,
        fence=fence,
        delay_ms=delay_ms,
        to_children=to_children,
        event_type=event,
        event_payload=orjson.dumps(payload).decode(),
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
    )
    return None if row is not None else await explain_miss(ctx, job_id, token)


async def _delay_pending(ctx: EngineContext, job_id: str, delay: int) -> bool:
    """Make a pending job due ``delay`` ms from now; False when it is not pending."""
    ctx.session.check()
    return await ctx.scoped.fetchrow(Q.job_change_delay, job_id=job_id, delay=delay) is not None


async def move_to_delayed(
    ctx: EngineContext, job_id: str, delay_ms: int, token: str | None = None
) -> None:
    """Make ``job_id`` due ``delay_ms`` from now (database clock).

    With ``token`` the worker holding the active job puts it back; without,
    a pending job (waiting, prioritized or delayed) is delayed, as bunqueue
    does; an active job then needs its token.
    """
    validate_job_id(job_id, "id")
    delay = check_int(delay_ms, "delay", 0, MAX_DELAY_MS)
    if token is None:
        if await _delay_pending(ctx, job_id, delay):
            return
        await explain_miss(ctx, job_id, None)  # not found, or not active
        raise _token_required(job_id)  # active: the worker's move
    check_token(token)
    ctx.session.check()
    event = "delayed" if delay > 0 else "waiting"
    payload: dict[str, object] = {"delay": delay, "prev": "active"}
    if await _leased_move(ctx, job_id, token, event, payload, delay_ms=delay) is not None:
        raise LeaseLost(job_id)


async def change_delay(
    ctx: EngineContext, job_id: str, delay_ms: int, token: str | None = None
) -> None:
    """Run a pending job ``delay_ms`` from now; with ``token``, move an active job to delayed."""
    validate_job_id(job_id, "id")
    delay = check_int(delay_ms, "delay", 0, MAX_DELAY_MS)
    if token is not None:
        await move_to_delayed(ctx, job_id, delay, token)
        return
    if await _delay_pending(ctx, job_id, delay):
        return
    found = await probe(ctx, job_id)
    if found is None:
        raise JobNotFound(job_id, CHANGE_DELAY_ERROR)
    if found.state == "active":
        raise _token_required(job_id)
    raise InvalidState(CHANGE_DELAY_ERROR, field="id")


async def move_to_wait(ctx: EngineContext, job_id: str, token: str | None = None) -> None:
    """Make a job waiting now.

    active → waiting needs the lock token; delayed → promoted; waiting and
    prioritized → nothing to do; a failed job is redriven from the DLQ
    instead (``retry_dlq``); anything else is refused.
    """
    validate_job_id(job_id, "id")
    if token is not None:
        check_token(token)
    ctx.session.check()
    state = "unknown"
    for _ in range(3):
        found = await probe(ctx, job_id, token)
        if found is None:
            raise JobNotFound(job_id)
        state = found.state
        if state == "active":
            if token is None:
                raise _token_required(job_id)
            if await _leased_move(ctx, job_id, token, "waiting", {"prev": "active"}) is not None:
                raise LeaseLost(job_id)
            return
        if token is not None:
            raise not_active(state)
        if state in ("waiting", "prioritized"):
            return
        if state == "delayed":
            if await ctx.scoped.fetchrow(Q.job_promote, job_id=job_id) is not None:
                return
            continue  # it changed meanwhile: look again
        if state == "failed":
            raise InvalidState(
                f"Job {job_id} is failed: move it back to waiting with the DLQ redrive "
                "(RetryDlq / retry_dlq)",
                field="id",
            )
        break
    raise InvalidState(f"Cannot move job from state '{state}' to waiting", field="id")


async def move_to_waiting_children(ctx: EngineContext, job_id: str, token: str) -> bool:
    """The worker holding ``job_id`` parks it until its unresolved dependencies complete.

    Returns False (the job stays active) when nothing is left to wait for.
    """
    validate_job_id(job_id, "id")
    check_token(token)
    ctx.session.check()
    found = await _leased_move(
        ctx, job_id, token, "waiting-children", {"prev": "active"}, to_children=True
    )
    if found is None:
        return True
    if found.pending_deps > 0:  # pragma: no cover - a valid lease with dependencies moves
        raise LeaseLost(job_id)
    return False
