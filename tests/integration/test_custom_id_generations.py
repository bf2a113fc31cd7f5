"""Custom ids across generations: a retained job keeps its id, races with its final
transaction, redrives beside a live job of the same id, the TTL on the database clock."""

from __future__ import annotations

from pgqueue.manager import PostgresQueueManager
from tests.helpers import events_of, sql, sql_value
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
