"""Moves of one job: to delayed, to waiting, to waiting-children (G3 on every token)."""

from __future__ import annotations

import pytest

from pgqueue.errors import BrokerFenced, InvalidState, JobNotFound, LeaseLost, ValidationError
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import events_of, expire_lease, sql, sql_value


async def _delay_left_ms(db_dsn: str, namespace: str, job_id: str) -> float:
    return float(
        await sql_value(
            db_dsn,
            "SELECT extract(epoch FROM run_at - statement_timestamp()) * 1000"
            " FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
            namespace,
            job_id,
        )
    )


async def test_move_to_delayed_puts_an_active_job_back_due_later_on_the_db_clock(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.want_active_events("q")  # the claims' events are written for it
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.move_to_delayed(job_id, 60_000, claim.token)
    assert await manager.get_state(job_id) == "delayed"
    assert 59_000 < await _delay_left_ms(db_dsn, namespace, job_id) <= 60_000
    job = await manager.get_job(job_id)
    assert job is not None and job.attempts == 0, "no attempt consumed"
    assert await events_of(db_dsn, namespace, job_id) == ["pushed", "active", "delayed"]


async def test_move_to_delayed_with_a_stale_token_is_rejected_and_changes_nothing(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        job_id = await a.push("q", "n", 1)
        [first] = await a.pull_batch("q", 1)
        await expire_lease(db_dsn, namespace, job_id)
        await b.reap()
        [second] = await b.pull_batch("q", 1)
        with pytest.raises(LeaseLost):
            await a.move_to_delayed(job_id, 1_000, first.token)
        assert await a.get_state(job_id) == "active"
        await b.ack(job_id, second.token, "second")
        assert await a.get_result(job_id) == "second"


async def test_move_to_delayed_after_the_lease_expired_is_rejected(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await expire_lease(db_dsn, namespace, job_id)
    with pytest.raises(LeaseLost):
        await manager.move_to_delayed(job_id, 1_000, claim.token)
    assert await manager.get_state(job_id) == "active"


async def test_move_to_delayed_of_a_job_that_is_not_active_names_its_state(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1, delay=60_000)
    with pytest.raises(InvalidState, match=r"^Job is not active \(current state: delayed\)$"):
        await manager.move_to_delayed(job_id, 1_000, "1:x")
    with pytest.raises(JobNotFound, match=r"^Job not found$"):
        await manager.move_to_delayed("nope", 1_000, "1:x")


async def test_move_to_delayed_without_a_token_delays_a_waiting_or_prioritized_job(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    waiting = await manager.push("q", "n", 1)
    prioritized = await manager.push("q", "n", 2, priority=3)
    for job_id in (waiting, prioritized):
        await manager.move_to_delayed(job_id, 60_000)
        assert await manager.get_state(job_id) == "delayed"
        assert 59_000 < await _delay_left_ms(db_dsn, namespace, job_id) <= 60_000
        assert (await events_of(db_dsn, namespace, job_id))[-1] == "delayed"
    assert await manager.pull_batch("q", 2) == []


async def test_move_to_delayed_without_a_token_refuses_an_active_or_finished_job(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    with pytest.raises(ValidationError, match=rf"^Lock token required for job {job_id}$"):
        await manager.move_to_delayed(job_id, 1_000)
    assert await manager.get_state(job_id) == "active"
    await manager.ack(job_id, claim.token, None)
    with pytest.raises(InvalidState, match=r"^Job is not active \(current state: completed\)$"):
        await manager.move_to_delayed(job_id, 1_000)
    with pytest.raises(JobNotFound, match=r"^Job not found$"):
        await manager.move_to_delayed("nope", 1_000)


async def test_move_to_delayed_through_a_fenced_broker_is_rejected(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(db_dsn, namespace, broker_id="a") as a:
        job_id = await a.push("q", "n", 1)
        [claim] = await a.pull_batch("q", 1)
        await sql(db_dsn, "DELETE FROM pgqueue_brokers WHERE namespace = $1", namespace)
        with pytest.raises(BrokerFenced):
            await a.move_to_delayed(job_id, 1_000, claim.token)
        assert await a.get_state(job_id) == "active"


async def test_move_to_delayed_refuses_a_negative_delay(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    with pytest.raises(ValidationError) as caught:
        await manager.move_to_delayed(job_id, -1, claim.token)
    assert caught.value.field == "delay"
    assert await manager.get_state(job_id) == "active"


async def test_change_delay_reschedules_a_pending_job(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    await manager.change_delay(job_id, 30_000)
    assert await manager.get_state(job_id) == "delayed"
    assert 29_000 < await _delay_left_ms(db_dsn, namespace, job_id) <= 30_000
    await manager.change_delay(job_id, 0)
    assert await manager.get_state(job_id) == "waiting"


async def test_change_delay_of_an_active_job_needs_its_token(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    with pytest.raises(ValidationError, match=f"^Lock token required for job {job_id}$"):
        await manager.change_delay(job_id, 5_000)
    await manager.change_delay(job_id, 5_000, claim.token)
    assert await manager.get_state(job_id) == "delayed"


async def test_change_delay_of_an_unknown_or_finished_job_is_refused(
    manager: PostgresQueueManager,
) -> None:
    with pytest.raises(JobNotFound, match=r"^Job not found or cannot change delay$"):
        await manager.change_delay("nope", 5)
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(job_id, claim.token)
    with pytest.raises(InvalidState, match=r"^Job not found or cannot change delay$"):
        await manager.change_delay(job_id, 5)


async def test_move_to_wait_gives_an_active_job_back_without_consuming_an_attempt(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.want_active_events("q")  # the claims' events are written for it
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.move_to_wait(job_id, claim.token)
    assert await manager.get_state(job_id) == "waiting"
    [again] = await manager.pull_batch("q", 1)
    assert again.id == job_id and again.attempts == 0 and again.fence == claim.fence + 1
    assert (await events_of(db_dsn, namespace, job_id))[-2] == "waiting"


async def test_move_to_wait_of_an_active_job_without_token_is_refused(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1)
    with pytest.raises(ValidationError, match="Lock token required"):
        await manager.move_to_wait(job_id)
    with pytest.raises(LeaseLost):
        await manager.move_to_wait(job_id, "1:stale")
    assert await manager.get_state(job_id) == "active"


async def test_move_to_wait_promotes_a_delayed_job_and_accepts_a_waiting_one(
    manager: PostgresQueueManager,
) -> None:
    delayed = await manager.push("q", "n", 1, delay=60_000)
    waiting = await manager.push("q", "n", 2)
    await manager.move_to_wait(delayed)
    await manager.move_to_wait(waiting)
    assert await manager.get_state(delayed) == "waiting"
    assert await manager.get_state(waiting) == "waiting"


async def test_move_to_wait_of_a_failed_job_points_to_the_dlq_redrive(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(job_id, claim.token, "boom")
    with pytest.raises(InvalidState, match="DLQ redrive"):
        await manager.move_to_wait(job_id)
    assert await manager.get_state(job_id) == "failed"


async def test_move_to_wait_of_a_completed_job_is_refused(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(job_id, claim.token)
    with pytest.raises(InvalidState, match=r"^Cannot move job from state 'completed' to waiting$"):
        await manager.move_to_wait(job_id)


async def test_move_to_waiting_children_parks_a_parent_that_has_an_open_child(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    parent = await manager.push("parents", "p", 1)
    [claim] = await manager.pull_batch("parents", 1)
    await manager.push("children", "c", 2, parent_id=parent)
    assert await manager.move_to_waiting_children(parent, claim.token) is True
    assert await manager.get_state(parent) == "waiting-children"
    assert (await events_of(db_dsn, namespace, parent))[-1] == "waiting-children"
    assert await manager.pull_batch("parents", 1) == []
    with pytest.raises(LeaseLost):
        await manager.ack(parent, claim.token)


async def test_a_parked_parent_runs_again_once_its_new_child_completes(
    manager: PostgresQueueManager,
) -> None:
    parent = await manager.push("parents", "p", 1)
    [claim] = await manager.pull_batch("parents", 1)
    child = await manager.push("children", "c", 2, parent_id=parent)
    assert await manager.move_to_waiting_children(parent, claim.token) is True
    [child_claim] = await manager.pull_batch("children", 1)
    await manager.ack(child, child_claim.token, "part")
    assert await manager.get_state(parent) == "waiting"
    [again] = await manager.pull_batch("parents", 1)
    assert again.id == parent


async def test_move_to_waiting_children_without_open_children_keeps_the_job_active(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    assert await manager.move_to_waiting_children(job_id, claim.token) is False
    assert await manager.get_state(job_id) == "active"
    await manager.ack(job_id, claim.token)


async def test_move_to_waiting_children_with_a_stale_token_is_rejected(
    manager: PostgresQueueManager,
) -> None:
    parent = await manager.push("parents", "p", 1)
    await manager.pull_batch("parents", 1)
    await manager.push("children", "c", 2, parent_id=parent)
    with pytest.raises(LeaseLost):
        await manager.move_to_waiting_children(parent, "1:stale")
    assert await manager.get_state(parent) == "active"
    waiting = await manager.push("q", "n", 1)
    with pytest.raises(InvalidState, match=r"^Job is not active"):
        await manager.move_to_waiting_children(waiting, "1:x")
