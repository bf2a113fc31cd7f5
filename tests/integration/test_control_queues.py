"""Queue control: pause across brokers (G7), drain, clean, obliterate, retry completed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pgqueue.errors import InvalidState, JobNotFound, ValidationError
from pgqueue.manager.control import queues
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import count_rows, events_of, sql, sql_value


async def _age(db_dsn: str, namespace: str, column: str, table: str, ms: int) -> None:
    """Move a timestamp column of every row of a namespace ``ms`` into the past."""
    assert column in ("created_at", "finished_at") and table in ("pgqueue_jobs", "pgqueue_finished")
    await sql(
        db_dsn,
        f"UPDATE {table} SET {column} = {column} - $2 * interval '1 millisecond'"
        " WHERE namespace = $1",
        namespace,
        ms,
    )


async def _complete(m: PostgresQueueManager, queue: str, n: int) -> list[str]:
    claims = await m.pull_batch(queue, n)
    for claim in claims:
        await m.ack(claim.id, claim.token, claim.data)
    return [claim.id for claim in claims]


async def _queue_events(db_dsn: str, namespace: str, queue: str) -> list[tuple[str, str]]:
    rows = await sql(
        db_dsn,
        "SELECT type, payload::text FROM pgqueue_events"
        " WHERE namespace = $1 AND queue = $2 AND job_id IS NULL ORDER BY id",
        namespace,
        queue,
    )
    return [(row["type"], row["payload"]) for row in rows]


async def test_a_paused_queue_yields_no_claims_on_any_broker_until_resumed(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        job_id = await a.push("q", "n", 1)
        await a.pause("q")
        assert await b.is_paused("q") is True
        assert await b.pull_batch("q", 10) == []
        assert await a.pull_batch("q", 10) == []
        await b.resume("q")
        assert await a.is_paused("q") is False
        [claim] = await a.pull_batch("q", 10)
        assert claim.id == job_id
        assert [t for t, _ in await _queue_events(db_dsn, namespace, "q")] == [
            "paused",
            "resumed",
        ]


async def test_resume_wakes_a_claim_long_polling_on_another_broker(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a", poll_interval_ms=5_000) as a,
        start_manager(db_dsn, namespace, broker_id="b", poll_interval_ms=5_000) as b,
    ):
        await a.pause("q")
        job_id = await a.push("q", "n", 1)
        loop = asyncio.get_running_loop()
        pull = asyncio.create_task(b.pull_batch("q", 1, timeout_ms=10_000))
        await eventually(lambda: b.notifier.waiter_count("q") == 1, message="claim waits")
        assert not pull.done()
        started = loop.time()
        await a.resume("q")
        [claim] = await pull
        assert claim.id == job_id
        assert loop.time() - started < 4.0, "woken by the NOTIFY hint, not the poll"


async def test_pause_leaves_other_queues_claimable(manager: PostgresQueueManager) -> None:
    await manager.push("q", "n", 1)
    other = await manager.push("other", "n", 2)
    await manager.pause("q")
    [claim] = await manager.pull_batch("other", 1)
    assert claim.id == other
    assert (await manager.get_counts("q")).paused is True


async def test_drain_deletes_waiting_and_delayed_jobs_but_not_active_ones(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    running = await manager.push("q", "n", 0)
    [claim] = await manager.pull_batch("q", 1)
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(3)])
    await manager.push("q", "n", "later", delay=60_000)
    await manager.push("q", "n", "urgent", priority=5)
    other = await manager.push("other", "n", "keep")
    assert await manager.drain("q") == 5
    counts = await manager.get_counts("q")
    assert (counts.waiting, counts.delayed, counts.prioritized, counts.active) == (0, 0, 0, 1)
    assert await manager.get_state(other) == "waiting"
    await manager.ack(running, claim.token)
    assert (await _queue_events(db_dsn, namespace, "q"))[-1] == ("drained", '{"count": 5}')
    assert (await events_of(db_dsn, namespace)).count("removed") == 5


async def test_drain_without_delayed_keeps_the_delayed_jobs(
    manager: PostgresQueueManager,
) -> None:
    await manager.push("q", "n", 1)
    delayed = await manager.push("q", "n", 2, delay=60_000)
    assert await manager.drain("q", include_delayed=False) == 1
    assert await manager.get_state(delayed) == "delayed"


async def test_drain_works_in_batches_and_leaves_other_namespaces_alone(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace + "x", broker_id="a") as other_ns,
    ):
        await a.push_bulk("q", [{"name": "n", "data": i} for i in range(2_500)])
        await other_ns.push("q", "n", 1)
        assert await a.drain("q") == 2_500
        assert await a.count("q") == 0
        assert await other_ns.count("q") == 1
        drained = [p for t, p in await _queue_events(db_dsn, namespace, "q") if t == "drained"]
        assert drained == ['{"count": 2500}']


async def test_drain_keeps_a_job_that_another_job_depends_on(
    manager: PostgresQueueManager,
) -> None:
    target = await manager.push("q", "first", 1)
    dependent = await manager.push("deps", "second", 2, depends_on=[target])
    assert await manager.drain("q") == 0
    assert await manager.get_state(target) == "waiting"
    assert await manager.get_state(dependent) == "waiting-children"


async def test_clean_removes_completed_jobs_older_than_the_grace(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(3)])
    old = await _complete(manager, "q", 3)
    await _age(db_dsn, namespace, "finished_at", "pgqueue_finished", 60_000)
    await manager.push("q", "n", "fresh")
    [fresh] = await _complete(manager, "q", 1)
    count, ids = await manager.clean("q", 30_000, "completed")
    assert (count, sorted(ids)) == (3, sorted(old))
    assert await manager.get_state(fresh) == "completed"
    assert (await _queue_events(db_dsn, namespace, "q"))[-1] == (
        "cleaned",
        '{"count": 3, "state": "completed"}',
    )


async def test_clean_keeps_completed_children_whose_parent_still_waits(
    manager: PostgresQueueManager,
) -> None:
    tree = await manager.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "children": [
                {"name": "a", "queue": "kids", "data": "a"},
                {"name": "b", "queue": "kids", "data": "b", "opts": {"delay": 3_600_000}},
            ],
        }
    )
    parent_id = tree["id"]
    [a, b] = [child["id"] for child in tree["children"]]
    await manager.push("kids", "loner", "x")
    done = await _complete(manager, "kids", 2)
    loner = next(job_id for job_id in done if job_id != a)
    assert await manager.clean("kids", 0, "completed") == (1, [loner])
    await manager.promote(b)
    assert await _complete(manager, "kids", 1) == [b]
    [claim] = await manager.pull_batch("parents", 1)
    assert await manager.get_children_values(parent_id) == {f"kids:{a}": "a", f"kids:{b}": "b"}
    await manager.ack(claim.id, claim.token, "done")
    assert sorted((await manager.clean("kids", 0, "completed"))[1]) == sorted([a, b])


async def test_clean_honours_the_limit(manager: PostgresQueueManager) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(5)])
    await _complete(manager, "q", 5)
    count, ids = await manager.clean("q", 0, "completed", limit=2)
    assert count == 2 and len(ids) == 2
    assert (await manager.get_counts("q")).completed == 3


async def test_clean_of_failed_jobs_removes_their_dlq_entries(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(job_id, claim.token, "boom")
    assert await manager.clean("q", 0, "failed") == (1, [job_id])
    assert await count_rows(db_dsn, "pgqueue_dlq", namespace) == 0


async def test_cleaning_a_failed_job_a_dead_lettered_parent_depended_on_lets_it_be_redriven(
    manager: PostgresQueueManager,
) -> None:
    dep = await manager.push("deps", "dep", 0, attempts=1)
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
    for queue in ("deps", "kids"):
        [claim] = await manager.pull_batch(queue, 1)
        await manager.fail(claim.id, claim.token, f"{queue} broke")
    assert await manager.get_state(parent_id) == "failed"
    assert await manager.clean("deps", 0, "failed") == (1, [dep])
    assert await manager.retry_job(c, actor="ops")
    assert await _complete(manager, "kids", 1) == [c]
    assert await manager.retry_job(parent_id, actor="ops")
    assert await manager.get_state(parent_id) == "waiting", "it waits for no cleaned job"


async def test_clean_of_waiting_jobs_uses_their_age(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    old = await manager.push("q", "n", 1)
    await _age(db_dsn, namespace, "created_at", "pgqueue_jobs", 60_000)
    young = await manager.push("q", "n", 2)
    delayed = await manager.push("q", "n", 3, delay=60_000)
    await _age(db_dsn, namespace, "created_at", "pgqueue_jobs", 0)
    assert await manager.clean("q", 30_000, "wait") == (1, [old])
    assert await manager.get_state(young) == "waiting"
    assert await manager.get_state(delayed) == "delayed"


async def test_clean_refuses_active_and_unknown_states(manager: PostgresQueueManager) -> None:
    for state in ("active", "paused", "nope"):
        with pytest.raises(ValidationError) as caught:
            await manager.clean("q", 0, state)
        assert caught.value.field == "state"
    with pytest.raises(ValidationError, match="grace must be at least 0"):
        await manager.clean("q", -1)


async def test_obliterate_is_refused_while_jobs_are_active_and_changes_nothing(
    manager: PostgresQueueManager,
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(2)])
    await manager.pull_batch("q", 1)
    with pytest.raises(InvalidState, match=r"^Cannot obliterate queue with active jobs"):
        await manager.obliterate("q")
    counts = await manager.get_counts("q")
    assert (counts.waiting, counts.active, counts.paused) == (1, 1, False)


async def test_obliterate_deletes_everything_of_the_queue_and_nothing_else(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as m,
        start_manager(db_dsn, namespace + "x", broker_id="a") as other_ns,
    ):
        done = await m.push("q", "n", 1)
        await _complete(m, "q", 1)
        dead = await m.push("q", "n", 2, attempts=1)
        [claim] = await m.pull_batch("q", 1)
        await m.fail(dead, claim.token, "boom")
        waiting = await m.push("q", "n", 3)
        child = await m.push("q", "n", 4, depends_on=[waiting])
        active = await m.push("q", "n", 5)
        [running] = await m.pull_batch("q", 1)
        await m.add_log(waiting, "log line")
        keep = await m.push("other", "n", 6)
        await other_ns.push("q", "n", 7)
        assert await m.obliterate("q", force=True) == 5
        for job_id in (done, dead, waiting, child, active):
            assert await m.get_state(job_id) == "unknown"
        for table in ("pgqueue_dlq", "pgqueue_job_logs", "pgqueue_dependencies"):
            assert await count_rows(db_dsn, table, namespace) == 0, table
        assert await m.get_state(keep) == "waiting"
        assert await other_ns.count("q") == 1
        assert "q" not in await m.list_queues()
        with pytest.raises(JobNotFound):
            await m.ack(running.id, running.token)
        obliterated = await sql_value(
            db_dsn,
            "SELECT payload::text FROM pgqueue_events"
            " WHERE namespace = $1 AND type = 'obliterated'",
            namespace,
        )
        assert obliterated == '{"count": 5}'


async def test_a_forced_obliterate_pages_through_idle_and_active_jobs(
    db_dsn: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A page takes the idle jobs first (listing index), then fills up with active ones
    # (active index): with pages of 2, pages mix both and one holds active jobs only.
    monkeypatch.setattr(queues, "BATCH_SIZE", 2)
    async with start_manager(db_dsn, namespace, broker_id="a") as m:
        await m.push_bulk("q", [{"name": "n", "data": i} for i in range(6)])
        running = await m.pull_batch("q", 3)
        assert await m.obliterate("q", force=True) == 6
        assert await m.count("q") == 0
        assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0
        with pytest.raises(JobNotFound):
            await m.ack(running[0].id, running[0].token)


async def _flow_with_child_in(m: PostgresQueueManager, queue: str, **child_opts: Any) -> list[str]:
    """A parent in ``parents`` with one child in ``queue``; returns [parent, child]."""
    tree = await m.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "children": [{"name": "child", "queue": queue, "data": 1, "opts": child_opts}],
        }
    )
    return [tree["id"], tree["children"][0]["id"]]


async def test_obliterate_dead_letters_the_dependents_it_strands_in_other_queues(
    manager: PostgresQueueManager,
) -> None:
    [parent_of_dead, dead_child] = await _flow_with_child_in(manager, "doomed", attempts=1)
    [claim] = await manager.pull_batch("doomed", 1)
    assert claim.id == dead_child
    await manager.fail(claim.id, claim.token, "child broke")
    assert await manager.get_state(parent_of_dead) == "waiting-children"
    [waiting_parent, _] = await _flow_with_child_in(manager, "doomed")
    target = await manager.push("doomed", "target", 2)
    dependent = await manager.push("other", "dependent", 3, depends_on=[target])

    assert await manager.obliterate("doomed") == 3
    for job_id in (waiting_parent, dependent, parent_of_dead):
        assert await manager.get_state(job_id) == "failed", job_id
    entries = await manager.list_dlq("parents") + await manager.list_dlq("other")
    assert sorted(e.job.id for e in entries) == sorted([waiting_parent, dependent, parent_of_dead])
    assert {e.reason for e in entries} == {"dependency_failed"}
    assert all("obliterated" in (e.error or "") for e in entries)


async def test_obliterate_releases_the_dependents_whose_failure_policy_lets_them_go_on(
    manager: PostgresQueueManager,
) -> None:
    tree = await manager.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "children": [
                {
                    "name": "lost",
                    "queue": "doomed",
                    "opts": {"ignore_dependency_on_failure": True},
                },
                {"name": "kept", "queue": "kids", "data": "k"},
            ],
        }
    )
    [continued, _] = await _flow_with_child_in(manager, "doomed", continue_parent_on_failure=True)
    assert await manager.obliterate("doomed") == 2
    assert await manager.get_state(continued) == "waiting"
    assert await manager.get_state(tree["id"]) == "waiting-children", "it still waits for kids"
    [claim] = await manager.pull_batch("kids", 1)
    await manager.ack(claim.id, claim.token, "k")
    assert await manager.get_state(tree["id"]) == "waiting"


async def test_retry_completed_runs_completed_jobs_again_as_new_generations(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(3)])
    ids = await _complete(manager, "q", 3)
    assert await manager.retry_completed("q", count=2) == 2
    assert (await manager.get_counts("q")).completed == 1
    again = await manager.pull_batch("q", 5)
    assert {c.id for c in again} == set(ids[:2])
    assert all(c.attempts == 0 for c in again)
    assert "retried" in await events_of(db_dsn, namespace, ids[0])


async def test_retry_completed_by_id_and_by_finish_time(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(2)])
    first, second = await _complete(manager, "q", 2)
    assert await manager.retry_completed("q", job_id=second) == 1
    assert await manager.get_state(second) == "waiting"
    assert await manager.retry_completed("q", timestamp_ms=0) == 0
    now_ms = float(await sql_value(db_dsn, "SELECT extract(epoch FROM now()) * 1000 + 1000"))
    assert await manager.retry_completed("q", timestamp_ms=now_ms) == 1
    assert await manager.get_state(first) == "waiting"
