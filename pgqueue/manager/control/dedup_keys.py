"""Deduplication keys (``uniqueKey``): who holds one, and freeing it early.

A live job holds its queue's key until it finishes or the key's TTL passes
(``dedup.ttl``, on the database clock).  Freeing a key leaves its owner where
it is (waiting, delayed or running) and lets the next push with that key be
admitted as a new job.
"""

from __future__ import annotations

from datetime import datetime

from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext
from pgqueue.vocabulary.names import validate_job_id, validate_queue_name

__all__ = ["deduplication_job_id", "remove_deduplication_key", "remove_job_deduplication_key"]


async def deduplication_job_id(
    ctx: EngineContext, queue: str, key: str, now: datetime | None = None
) -> str | None:
    """The id of the job holding ``key`` in ``queue`` at ``now`` (None: the
    database clock; tests move time with it); None when nobody does."""
    validate_queue_name(queue)
    validate_job_id(key, "deduplicationId")
    row = await ctx.scoped.fetchrow(Q.job_unique_key_owner, queue=queue, key=key, now=now)
    return None if row is None else str(row["id"])


async def remove_deduplication_key(ctx: EngineContext, queue: str, key: str) -> int:
    """Free ``key`` in ``queue``; returns 1 when a live job held it, else 0."""
    validate_queue_name(queue)
    validate_job_id(key, "deduplicationId")
    ctx.session.check()
    rows = await ctx.scoped.fetch(Q.job_unique_key_clear, queue=queue, key=key)
    return len(rows)


async def remove_job_deduplication_key(ctx: EngineContext, job_id: str) -> bool:
    """Free the key that live job ``job_id`` holds; False when it holds none."""
    validate_job_id(job_id, "id")
    ctx.session.check()
    return await ctx.scoped.fetchrow(Q.job_unique_key_clear_by_id, job_id=job_id) is not None
