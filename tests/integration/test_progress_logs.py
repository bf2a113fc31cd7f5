"""Progress of active jobs (G3 with a token) and job logs."""

from __future__ import annotations

import orjson
import pytest

from pgqueue.errors import InvalidState, JobNotFound, LeaseLost, ValidationError
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import expire_lease, sql


async def test_update_progress_stores_it_and_writes_a_progress_event_in_both_shapes(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.update_progress(job_id, 40, "reading", token=claim.token)
    assert await manager.get_progress(job_id) == (40, "reading")
    [row] = await sql(
        db_dsn,
        "SELECT payload::text FROM pgqueue_events"
        " WHERE namespace = $1 AND job_id = $2 AND type = 'progress'",
        namespace,
        job_id,
    )
    assert orjson.loads(row["payload"]) == {
        "progress": 40,
        "data": {"progress": 40, "message": "reading"},
    }


async def test_update_progress_without_a_message_keeps_the_previous_one(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.update_progress(job_id, 10, "step one")
    await manager.update_progress(job_id, {"done": 2, "of": 3})
    assert await manager.get_progress(job_id) == ({"done": 2, "of": 3}, "step one")
    await manager.ack(job_id, claim.token)
    assert await manager.get_progress(job_id) == ({"done": 2, "of": 3}, "step one")


async def test_update_progress_of_a_job_that_is_not_active_names_its_state(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    with pytest.raises(InvalidState, match=r"^Job is not active \(current state: waiting\)$"):
        await manager.update_progress(job_id, 5)
    with pytest.raises(JobNotFound, match=r"^Job not found$"):
        await manager.update_progress("nope", 5)


async def test_update_progress_with_a_stale_token_is_rejected_and_changes_nothing(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        job_id = await a.push("q", "n", 1)
        [first] = await a.pull_batch("q", 1)
        await expire_lease(db_dsn, namespace, job_id)
        with pytest.raises(LeaseLost):
            await a.update_progress(job_id, 50, "late", token=first.token)
        await b.reap()
        [second] = await b.pull_batch("q", 1)
        with pytest.raises(LeaseLost):
            await a.update_progress(job_id, 60, token=first.token)
        await b.update_progress(job_id, 70, token=second.token)
        assert await a.get_progress(job_id) == (70, None)


async def test_update_progress_refuses_values_that_are_not_numbers_or_objects(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1)
    for bad in (True, "50%", float("nan"), [1, 2], None):
        with pytest.raises(ValidationError) as caught:
            await manager.update_progress(job_id, bad)
        assert caught.value.field == "progress"
    assert await manager.get_progress(job_id) == (None, None)


async def test_logs_are_listed_oldest_first_with_redis_style_ranges(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    for i in range(5):
        assert await manager.add_log(job_id, f"line {i}", "warn" if i == 2 else "info")
    logs, total = await manager.get_logs(job_id)
    assert total == 5
    assert [entry["message"] for entry in logs] == [f"line {i}" for i in range(5)]
    assert logs[2]["level"] == "warn"
    assert isinstance(logs[0]["timestamp"], float)
    assert [e["message"] for e in (await manager.get_logs(job_id, 1, 2))[0]] == [
        "line 1",
        "line 2",
    ]
    assert [e["message"] for e in (await manager.get_logs(job_id, -2, -1))[0]] == [
        "line 3",
        "line 4",
    ]
    assert await manager.get_logs(job_id, 7, 9) == ([], 5)


async def test_add_log_respects_the_jobs_keep_logs_option(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1, keep_logs=2)
    for i in range(4):
        await manager.add_log(job_id, f"line {i}")
    logs, total = await manager.get_logs(job_id)
    assert (total, [e["message"] for e in logs]) == (2, ["line 2", "line 3"])
    silent = await manager.push("q", "n", 2, keep_logs=0)
    assert await manager.add_log(silent, "dropped") is False
    assert await manager.get_logs(silent) == ([], 0)


async def test_add_log_checks_the_job_level_and_length(manager: PostgresQueueManager) -> None:
    with pytest.raises(JobNotFound):
        await manager.add_log("nope", "x")
    job_id = await manager.push("q", "n", 1)
    with pytest.raises(ValidationError) as caught:
        await manager.add_log(job_id, "x", "debug")
    assert caught.value.field == "level"
    with pytest.raises(ValidationError, match="message too long"):
        await manager.add_log(job_id, "x" * 10_001)
    assert await manager.get_logs(job_id) == ([], 0)


async def test_clear_logs_keeps_only_the_newest_lines_asked_for(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    other = await manager.push("q", "n", 2)
    for i in range(4):
        await manager.add_log(job_id, f"line {i}")
    await manager.add_log(other, "other")
    assert await manager.clear_logs(job_id, keep_logs=1) == 3
    assert [e["message"] for e in (await manager.get_logs(job_id))[0]] == ["line 3"]
    assert await manager.clear_logs(job_id) == 1
    assert await manager.get_logs(job_id) == ([], 0)
    assert (await manager.get_logs(other))[1] == 1
