"""Retention: finished jobs, events and dead workers are pruned, live work never."""

from __future__ import annotations

from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing.waiting import eventually
from tests.conftest import start_manager
from tests.helpers import (
    DAY_MS,
    HOUR_MS,
    clock_ahead,
    clock_between,
    count_rows,
    sql,
    trim_until,
)


async def test_old_completed_jobs_and_their_logs_are_pruned_but_live_jobs_stay(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    done = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.add_log(done, "a line")
    await manager.ack(done, claim.token)
    live = await manager.push("q", "n", 2)
    report = await manager.retention_pass(now=clock_ahead(30 * DAY_MS))
    assert report.finished == 1
    assert await manager.get_state(done) == "unknown"
    assert await manager.get_state(live) == "waiting"
    assert await count_rows(db_dsn, "pgqueue_job_logs", namespace) == 0


async def test_finished_jobs_age_on_the_clock_the_pass_is_given(
    manager: PostgresQueueManager,
) -> None:
    """``now=None`` (production) is the database clock: a job finished just now stays."""
    done = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(done, claim.token)
    assert (await manager.retention_pass()).finished == 0
    assert (await manager.retention_pass(now=clock_ahead(HOUR_MS))).finished == 0
    assert (await manager.retention_pass(now=clock_ahead(2 * DAY_MS))).finished == 1


async def _finish_kids(m: PostgresQueueManager, n: int) -> list[str]:
    claims = await m.pull_batch("kids", n)
    for claim in claims:
        await m.ack(claim.id, claim.token, f"result of {claim.data}")
    return [claim.id for claim in claims]


async def test_old_results_of_children_are_kept_until_their_waiting_parent_has_finished(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    tree = await manager.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "children": [
                {"name": "a", "queue": "kids", "data": "a"},
                {"name": "b", "queue": "kids", "data": "b", "opts": {"remove_on_complete": True}},
                {"name": "c", "queue": "kids", "data": "c", "opts": {"delay": 3_600_000}},
            ],
        }
    )
    parent_id = tree["id"]
    [a, b, c] = [child["id"] for child in tree["children"]]
    assert sorted(await _finish_kids(manager, 2)) == sorted([a, b])
    assert (await manager.retention_pass(now=clock_ahead(30 * DAY_MS))).finished == 0, (
        "the parent still waits for them"
    )
    await manager.promote(c)
    assert await _finish_kids(manager, 1) == [c]
    [claim] = await manager.pull_batch("parents", 1)
    assert claim.id == parent_id
    assert await manager.get_children_values(parent_id) == {
        f"kids:{a}": "result of a",
        f"kids:{b}": "result of b",
        f"kids:{c}": "result of c",
    }
    await manager.ack(claim.id, claim.token, "all three")
    assert (await manager.retention_pass(now=clock_ahead(30 * DAY_MS))).finished == 4, (
        "once it finished, they all go"
    )


async def test_a_dead_lettered_parent_keeps_its_childrens_results_for_a_redrive(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    tree = await manager.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "children": [
                {"name": "a", "queue": "kids", "data": "a"},
                {
                    "name": "b",
                    "queue": "kids",
                    "data": "b",
                    "opts": {"attempts": 1, "fail_parent_on_failure": True, "delay": 3_600_000},
                },
            ],
        }
    )
    parent_id = tree["id"]
    [a, b] = [child["id"] for child in tree["children"]]
    assert await _finish_kids(manager, 1) == [a]
    await manager.promote(b)
    [claim] = await manager.pull_batch("kids", 1)
    await manager.fail(claim.id, claim.token, "b broke")
    assert await manager.get_state(parent_id) == "failed"
    await manager.retention_pass(now=clock_ahead(30 * DAY_MS))
    assert await manager.get_state(a) == "completed", "the parent can still be redriven"
    assert await manager.retry_job(b, actor="ops")
    assert await _finish_kids(manager, 1) == [b]
    assert await manager.retry_job(parent_id, actor="ops")
    [claim] = await manager.pull_batch("parents", 1)
    assert claim.id == parent_id
    assert await manager.get_children_values(parent_id) == {
        f"kids:{a}": "result of a",
        f"kids:{b}": "result of b",
    }


async def test_pruning_a_failed_job_a_dead_lettered_parent_depended_on_lets_it_be_redriven(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    dep = await manager.push("deps", "dep", 0, attempts=1, remove_on_fail=True)
    tree = await manager.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "opts": {"depends_on": [dep]},
            "children": [
                {
                    "name": "c",
                    "queue": "kids",
                    "data": "c",
                    "opts": {"attempts": 1, "fail_parent_on_failure": True},
                }
            ],
        }
    )
    parent_id, c = tree["id"], tree["children"][0]["id"]
    # The child fails first: once the parent is dead-lettered, no live job waits
    # for dep, so removeOnFail removes it (a live waiter would keep it in the DLQ).
    for queue in ("kids", "deps"):
        [claim] = await manager.pull_batch(queue, 1)
        await manager.fail(claim.id, claim.token, f"{queue} broke")
    assert await manager.get_state(parent_id) == "failed"
    assert (await manager.retention_pass(now=clock_ahead(30 * DAY_MS))).finished == 1, (
        "only dep: no DLQ entry, no parent"
    )
    assert await manager.retry_job(c, actor="ops")
    assert await _finish_kids(manager, 1) == [c]
    assert await manager.retry_job(parent_id, actor="ops")
    assert await manager.get_state(parent_id) == "waiting", "it waits for no pruned job"


async def test_dead_lettered_jobs_are_kept_while_their_dlq_entry_exists(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(claim.id, claim.token, "x")
    await manager.retention_pass(now=clock_ahead(30 * DAY_MS))
    assert await manager.get_state(job_id) == "failed"


async def test_old_events_are_pruned_and_each_queue_keeps_at_most_its_cap(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(
        db_dsn, namespace, broker_id="r", retention_events_per_queue=10
    ) as manager:
        await manager.push("old", "n", 1)
        await manager.push_bulk("keep", [{"name": "n", "data": i} for i in range(25)])
        rows = await sql(
            db_dsn,
            "SELECT queue, min(created_at) AS at FROM pgqueue_events"
            " WHERE namespace = $1 GROUP BY queue",
            namespace,
        )
        at = {row["queue"]: row["at"] for row in rows}
        # The clock at which the events of 'old' are past the retention, those of 'keep' not.
        now = clock_between(at["old"], at["keep"], manager.ctx.config.retention_events_ms)
        counts: dict[str, int] = {}

        async def pruned() -> bool:
            # A pass deletes only below the cluster's oldest xmin, which a transaction
            # of any database on the server may hold back for a moment: pass again.
            nonlocal counts
            await manager.retention_pass(now=now)
            rows = await sql(
                db_dsn,
                "SELECT queue, count(*) AS n FROM pgqueue_events"
                " WHERE namespace = $1 GROUP BY queue",
                namespace,
            )
            counts = {row["queue"]: row["n"] for row in rows}
            assert counts.get("keep", 0) >= 10, counts  # never below the cap
            return counts == {"keep": 10}

        await eventually(pruned, message="the old events pruned, 'keep' cut to its cap")
        assert counts == {"keep": 10}
        assert await trim_until(manager, "keep", 3, at_least=7) == 7


async def test_workers_not_seen_for_long_are_forgotten(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.register_worker("w-old", "w", ["q"])
    await manager.register_worker("w-new", "w", ["q"])
    rows = await sql(
        db_dsn, "SELECT worker_id, last_seen FROM pgqueue_workers WHERE namespace = $1", namespace
    )
    seen = {row["worker_id"]: row["last_seen"] for row in rows}
    # The clock at which w-old has not been seen for too long, w-new has.
    now = clock_between(seen["w-old"], seen["w-new"], manager.ctx.config.worker_stale_ms)
    report = await manager.retention_pass(now=now)
    assert report.workers == 1
    workers, _ = await manager.list_workers()
    assert [w["workerId"] if "workerId" in w else w["worker_id"] for w in workers] == ["w-new"]
