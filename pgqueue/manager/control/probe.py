"""Why a job control compare-and-set missed, as the error the caller sees.

Every control statement is a compare-and-set; when it changes nothing, one
probe reads the job's current place and state and :func:`explain_miss`
raises the matching error (bunqueue's wording where it has one).  Nothing
is written by a probe.
"""

from __future__ import annotations

from dataclasses import dataclass

from pgqueue.db.queries import Q
from pgqueue.db.records import record_from_row
from pgqueue.errors import BrokerFenced, InvalidState, JobNotFound, LeaseLost
from pgqueue.manager.context import EngineContext

__all__ = ["FINISHED_STATES", "Probe", "explain_miss", "fenced", "not_active", "probe"]

FINISHED_STATES = frozenset({"completed", "failed"})


@dataclass(frozen=True, slots=True)
class Probe:
    """A job's reported state, and whether a token holds its current lease."""

    state: str
    queue: str
    fence: int
    pending_deps: int
    lease_valid: bool
    session_live: bool


async def probe(ctx: EngineContext, job_id: str, token: str | None = None) -> Probe | None:
    row = await ctx.scoped.fetchrow(
        Q.job_control_probe,
        job_id=job_id,
        token=token,
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
    )
    if row is None:
        return None
    return record_from_row(Probe, row)


def not_active(state: str) -> InvalidState:
    return InvalidState(f"Job is not active (current state: {state})", field="id")


def fenced(ctx: EngineContext) -> BrokerFenced:
    """The error of a write that found this broker's session gone (now fenced)."""
    return ctx.session.fenced_error()


async def explain_miss(
    ctx: EngineContext, job_id: str, token: str | None, *, not_found: str = "Job not found"
) -> Probe:
    """Raise why an operation on an active job (by ``token``, if given) missed.

    Returns the probe when nothing explains the miss (the lease is valid and
    the job active): the caller decides (e.g. no dependencies left to wait for).
    """
    found = await probe(ctx, job_id, token)
    if found is None:
        raise JobNotFound(job_id, not_found)
    if token is not None:
        ctx.session.confirm_live(found.session_live)
    if found.state != "active":
        raise not_active(found.state)
    if token is not None and not found.lease_valid:
        raise LeaseLost(job_id)
    return found
