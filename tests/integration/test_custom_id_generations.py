"""Custom ids across generations: a retained job keeps its id, races with its final
transaction, redrives beside a live job of the same id, the TTL on the database clock."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest

from pgqueue.errors import DuplicateJob
from pgqueue.maintenance.dlq_upkeep import dlq_upkeep_once
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.helpers import clock_ahead, events_of, sql, sql_value
from tests.integration.test_dlq import ACTOR, dead_letter

HOUR_MS = 3_600_000


async def _complete(m: PostgresQueueManager, queue: str, result: object) -> str:
    [claim] = await m.pull_batch(queue, 1)
    await m.ack(claim.id, claim.token, result)
    return claim.id


async def _live_copy(dsn: str, namespace: str, job_id: str, queue: str) -> None:
    """A live job holding ``job_id`` beside its dead letter (what the old race left)."""
    await sql(
        dsn,
        "INSERT INTO pgqueue_jobs (namespace, id, queue, name, data, state, run_at, created_at)"
        " VALUES ($1, $2, $3, 'other', '0', 'pending', now() + interval '1 day', now())",
        namespace,
        job_id,
        queue,
    )


async def _lock_waiters(dsn: str) -> int:
    return int(
        await sql_value(
            dsn,
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
    )


# -- issue 9 item 11 (a): a retained job keeps its custom id ---------------------------


async def test_repushing_the_custom_id_of_a_retained_completed_job_returns_that_job(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.want_active_events("q")  # the claims' events are written for it
    await manager.push("q", "a", 1, job_id="order-1")
    await _complete(manager, "q", {"sum": 3})
    assert await manager.push("q", "a", 2, job_id="order-1") == "order-1"
    assert await manager.get_state("order-1") == "completed"
    assert await manager.get_result("order-1") == {"sum": 3}
    assert await manager.pull_batch("q", 1) == [], "the job must not run a second time"
    assert await events_of(db_dsn, namespace, "order-1") == [
        "pushed",
        "active",
        "completed",
        "duplicated",
    ]


async def test_repushing_the_custom_id_of_a_dead_lettered_job_returns_it_and_keeps_the_entry(
    manager: PostgresQueueManager,
) -> None:
    [job_id] = await dead_letter(manager, "q", 1, job_id="order-2")
    assert await manager.push("q", "a", 2, job_id=job_id) == job_id
    assert await manager.get_state(job_id) == "failed"
    assert [e.job.id for e in await manager.list_dlq("q")] == [job_id]
    assert await manager.redrive("q", actor=ACTOR) == 1


async def test_a_custom_id_starts_a_new_generation_once_its_job_was_removed(
    manager: PostgresQueueManager,
) -> None:
    await manager.push("q", "a", 1, job_id="order-3", remove_on_complete=True)
    await _complete(manager, "q", "first")
    assert await manager.push("q", "a", 2, job_id="order-3") == "order-3"
    job = await manager.get_job("order-3")
    assert job is not None and (job.state, job.data) == ("waiting", 2)


async def test_a_removed_childs_result_outlives_a_repush_of_its_id_until_the_parent_ran(
    manager: PostgresQueueManager,
) -> None:
    """Item 6 (custom-id part): a result a waiting parent depends on is kept."""
    tree = await manager.push_flow(
        {
            "name": "report",
            "queue": "parents",
            "children": [
                {"name": "x", "queue": "kids", "data": 1, "opts": {"job_id": "kid-x"}},
                {"name": "y", "queue": "kids", "data": 2, "opts": {"delay": HOUR_MS}},
            ],
        }
    )
    parent = tree["id"]
    [claim] = await manager.pull_batch("kids", 1)
    assert claim.id == "kid-x"
    await manager.ack(claim.id, claim.token, "x-result", remove_on_complete=True)
    assert await manager.push("kids", "x", 99, job_id="kid-x") == "kid-x"
    await manager.promote(tree["children"][1]["id"])
    [other] = await manager.pull_batch("kids", 1)
    assert other.id == tree["children"][1]["id"], "the re-push admitted no second kid-x"
    await manager.ack(other.id, other.token, "y-result")
    values = await manager.get_children_values(parent)
    assert sorted(values.values()) == ["x-result", "y-result"]


# -- issue 9 item 8: the previous generation's final transaction, redrive beside a live id --


async def test_a_custom_id_pushed_during_its_jobs_final_transaction_gets_the_dead_letter(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = "race-1"
    await manager.push("q", "job", 1, job_id=job_id, attempts=1)
    [claim] = await manager.pull_batch("q", 1)
    blocker = await asyncpg.connect(db_dsn)
    try:
        holding = blocker.transaction()
        await holding.start()
        # An uncommitted entry of the same id holds the final transaction (its DLQ
        # insert waits on it) after it took the job row out of the live table.
        await blocker.execute(
            "INSERT INTO pgqueue_dlq (namespace, job_id, queue, reason, entered_at)"
            " VALUES ($1, $2, 'q', 'unknown', now())",
            namespace,
            job_id,
        )
        failing = asyncio.create_task(manager.fail(claim.id, claim.token, "boom"))
        await eventually(lambda: _lock_waiters(db_dsn), message="the failure waits")
        pushing = asyncio.create_task(manager.push("q", "job", 2, job_id=job_id))
        await eventually(
            lambda: _at_least(db_dsn, 2), message="the re-push waits for the final transaction"
        )
        await holding.rollback()
        await failing
        assert await pushing == job_id
    finally:
        await blocker.close()
    assert (
        await sql_value(db_dsn, "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1", namespace)
        == 0
    ), "the re-push must return the dead-lettered job, not admit a second one"
    assert await manager.get_state(job_id) == "failed"
    assert await manager.redrive("q", actor=ACTOR) == 1


async def _at_least(dsn: str, n: int) -> bool:
    return await _lock_waiters(dsn) >= n


async def test_a_queue_wide_redrive_skips_an_entry_whose_id_a_live_job_holds(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await dead_letter(manager, "q", 3)
    await _live_copy(db_dsn, namespace, ids[0], "q")
    assert await manager.redrive("q", actor=ACTOR) == 2
    assert [e.job.id for e in await manager.list_dlq("q")] == [ids[0]]
    assert {await manager.get_state(i) for i in ids[1:]} == {"waiting"}
    live = await sql(
        db_dsn, "SELECT name FROM pgqueue_jobs WHERE namespace = $1 AND id = $2", namespace, ids[0]
    )
    assert [row["name"] for row in live] == ["other"], "the live job is left alone"
    with pytest.raises(DuplicateJob, match="a live job holds its id"):
        await manager.retry_job(ids[0], actor=ACTOR)


async def test_dlq_auto_retry_skips_an_entry_whose_id_a_live_job_holds(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.set_dlq_config("q", {"autoRetry": True, "autoRetryInterval": 60_000})
    ids = await dead_letter(manager, "q", 3)
    await _live_copy(db_dsn, namespace, ids[0], "q")
    upkeep = await dlq_upkeep_once(manager.ctx, batch=2, now=clock_ahead(61_000))
    assert upkeep.auto_retried == 2
    assert [e.job.id for e in await manager.list_dlq("q")] == [ids[0]]


# -- issue 9 (also check): the TTL deadline is on the database clock ------------------------


async def test_a_client_timestamp_does_not_move_the_ttl_deadline(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    now_ms = int(time.time() * 1000)
    past = await manager.push("q", "a", 1, ttl=HOUR_MS, timestamp=now_ms - 2 * HOUR_MS)
    future = await manager.push("q", "b", 2, ttl=1000, timestamp=now_ms + 24 * HOUR_MS)
    rows = await sql(
        db_dsn,
        "SELECT id, expires_at - now() AS left FROM pgqueue_jobs WHERE namespace = $1",
        namespace,
    )
    left = {row["id"]: row["left"].total_seconds() for row in rows}
    assert 3000 < left[past] <= 3600, "a client clock behind must not expire the job"
    assert left[future] <= 1, "a client clock ahead must not stretch the TTL"
    [claim] = await manager.pull_batch("q", 1)
    assert claim.id == past
