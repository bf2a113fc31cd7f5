"""Retention: finished jobs, events and dead workers are pruned, live work never."""

from __future__ import annotations

from pgqueue.manager import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import count_rows, sql


async def _age(dsn: str, table: str, column: str, namespace: str) -> None:
    assert table.startswith("pgqueue_") and column.isidentifier()
    await sql(
        dsn,
        f"UPDATE {table} SET {column} = {column} - interval '30 days' WHERE namespace = $1",
        namespace,
    )


async def test_old_completed_jobs_and_their_logs_are_pruned_but_live_jobs_stay(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    done = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.add_log(done, "a line")
    await manager.ack(done, claim.token)
    live = await manager.push("q", "n", 2)
    await _age(db_dsn, "pgqueue_finished", "finished_at", namespace)
    report = await manager.retention_pass()
    assert report.finished == 1
    assert await manager.get_state(done) == "unknown"
    assert await manager.get_state(live) == "waiting"
    assert await count_rows(db_dsn, "pgqueue_job_logs", namespace) == 0


async def test_dead_lettered_jobs_are_kept_while_their_dlq_entry_exists(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(claim.id, claim.token, "x")
    await _age(db_dsn, "pgqueue_finished", "finished_at", namespace)
    await manager.retention_pass()
    assert await manager.get_state(job_id) == "failed"


async def test_old_events_are_pruned_and_each_queue_keeps_at_most_its_cap(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(
        db_dsn, namespace, broker_id="r", retention_events_per_queue=10
    ) as manager:
        await manager.push_bulk("keep", [{"name": "n", "data": i} for i in range(25)])
        await manager.push("old", "n", 1)
        await sql(
            db_dsn,
            "UPDATE pgqueue_events SET created_at = created_at - interval '30 days'"
            " WHERE namespace = $1 AND queue = 'old'",
            namespace,
        )
        await manager.retention_pass()
        rows = await sql(
            db_dsn,
            "SELECT queue, count(*) AS n FROM pgqueue_events WHERE namespace = $1 GROUP BY queue",
            namespace,
        )
        assert {row["queue"]: row["n"] for row in rows} == {"keep": 10}
        assert await manager.trim_events("keep", 3) == 7


async def test_workers_not_seen_for_long_are_forgotten(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.register_worker("w-old", "w", ["q"])
    await manager.register_worker("w-new", "w", ["q"])
    await sql(
        db_dsn,
        "UPDATE pgqueue_workers SET last_seen = last_seen - interval '1 hour'"
        " WHERE namespace = $1 AND worker_id = 'w-old'",
        namespace,
    )
    report = await manager.retention_pass()
    assert report.workers == 1
    workers, _ = await manager.list_workers()
    assert [w["workerId"] if "workerId" in w else w["worker_id"] for w in workers] == ["w-new"]
