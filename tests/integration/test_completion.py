"""Completion: results, stale acks (G3), retries with backoff and the DLQ (G5)."""

from __future__ import annotations

import pytest

from pgqueue.errors import AlreadyFinalized, JobNotFound, LeaseLost
from pgqueue.manager.models import AckItem
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import clock_ahead, count_rows, events_of, expire_lease, sql, sql_value


async def test_ack_stores_the_result_and_moves_the_job_out_of_the_hot_table(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.want_active_events("q")  # the claims' events are written for it
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(claim.id, claim.token, {"sum": 3})
    assert await manager.get_state(job_id) == "completed"
    assert await manager.get_result(job_id) == {"sum": 3}
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0
    assert await events_of(db_dsn, namespace, job_id) == ["pushed", "active", "completed"]


async def test_second_ack_with_the_same_token_says_already_finalized(
    manager: PostgresQueueManager,
) -> None:
    await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(claim.id, claim.token)
    with pytest.raises(AlreadyFinalized):
        await manager.ack(claim.id, claim.token)


async def test_ack_of_an_unknown_job_says_not_found(manager: PostgresQueueManager) -> None:
    with pytest.raises(JobNotFound):
        await manager.ack("no-such-job", "1:x")


async def test_ack_with_a_wrong_or_malformed_token_is_rejected_and_changes_nothing(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    for token in ("1:not-the-token", "garbage", "", claim.token + "x"):
        with pytest.raises(LeaseLost):
            await manager.ack(job_id, token, "evil")
    assert await manager.get_state(job_id) == "active"
    await manager.ack(job_id, claim.token, "good")
    assert await manager.get_result(job_id) == "good"


async def test_stale_ack_after_lease_expiry_and_reclaim_is_rejected_and_second_owner_wins(
    db_dsn: str, namespace: str
) -> None:
    """G3: the first owner's lease expires, another broker re-claims; the first owner's
    late ack is refused and the second owner's result is the one stored."""
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        job_id = await a.push("q", "n", 1)
        [first] = await a.pull_batch("q", 1, owner="w-a")
        await expire_lease(db_dsn, namespace, job_id)
        report = await b.reap()
        assert report.stalled == 1
        [second] = await b.pull_batch("q", 1, owner="w-b")
        assert second.id == job_id and second.fence == first.fence + 1
        with pytest.raises(LeaseLost):
            await a.ack(job_id, first.token, "from the first owner")
        with pytest.raises(LeaseLost):
            await a.heartbeat(job_id, first.token)
        await b.ack(job_id, second.token, "from the second owner")
        assert await a.get_result(job_id) == "from the second owner"
        fence = await sql_value(db_dsn, "SELECT fence FROM pgqueue_finished WHERE id = $1", job_id)
        assert fence == second.fence


async def test_ack_after_the_lease_expired_is_rejected_even_before_the_reaper_runs(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await expire_lease(db_dsn, namespace, job_id)
    with pytest.raises(LeaseLost):
        await manager.ack(job_id, claim.token)
    assert await manager.get_state(job_id) == "active"


async def test_ack_batch_rejects_a_stale_item_alone(manager: PostgresQueueManager) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(3)])
    claims = await manager.pull_batch("q", 3)
    outcomes = await manager.ack_batch(
        [
            AckItem(claims[0].id, claims[0].token, "r0"),
            AckItem(claims[1].id, "1:wrong", "r1"),
            AckItem(claims[2].id, claims[2].token, "r2"),
        ]
    )
    assert [(o.applied, o.reason) for o in outcomes] == [
        (True, None),
        (False, "lease-lost"),
        (True, None),
    ]
    assert await manager.get_state(claims[1].id) == "active"
    assert await manager.get_result(claims[2].id) == "r2"


async def test_remove_on_complete_hides_the_job_but_keeps_its_completion(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1, remove_on_complete=True)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(claim.id, claim.token, 7)
    assert await manager.get_job(job_id) is None
    assert await manager.get_state(job_id) == "unknown"
    assert (await manager.get_counts("q")).completed == 0
    dependent = await manager.push("q", "after", None, depends_on=[job_id])
    assert await manager.get_state(dependent) == "waiting", "the completion proof resolves it"


async def test_failure_retries_with_exponential_backoff_on_the_database_clock(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    """G5: retry n is due at db_now + base * 2^(n-1)."""
    job_id = await manager.push(
        "q", "n", 1, attempts=4, backoff={"type": "exponential", "delay": 10_000}
    )
    now = None
    for attempt, expected_ms in ((1, 10_000), (2, 20_000), (3, 40_000)):
        [claim] = await manager.pull_batch("q", 1, now=now)
        await manager.fail(claim.id, claim.token, f"boom {attempt}", stacktrace=["l1", "l2"])
        row = (
            await sql(
                db_dsn,
                "SELECT state, attempts, extract(epoch FROM run_at - clock_timestamp()) * 1000"
                " AS due_in FROM pgqueue_jobs WHERE id = $1",
                job_id,
            )
        )[0]
        assert row["state"] == "pending" and row["attempts"] == attempt
        assert expected_ms - 2_000 < row["due_in"] <= expected_ms
        assert await manager.get_state(job_id) == "delayed"
        now = clock_ahead(expected_ms + 1_000)
    job = await manager.get_job(job_id)
    assert job is not None and job.error == "boom 3" and job.stacktrace == ["l1", "l2"]
    assert [entry["attempt"] for entry in job.attempt_log] == [1, 2, 3]


async def test_fixed_backoff_keeps_the_same_delay(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=3, backoff={"type": "fixed", "delay": 5000})
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(claim.id, claim.token, "x")
    due_in = await sql_value(
        db_dsn,
        "SELECT extract(epoch FROM run_at - clock_timestamp()) * 1000 FROM pgqueue_jobs"
        " WHERE id = $1",
        job_id,
    )
    assert 3000 < due_in <= 5000


async def test_job_is_dead_lettered_after_max_attempts_in_the_same_transaction(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.want_active_events("q")  # the claims' events are written for it
    job_id = await manager.push("q", "n", 1, attempts=2, backoff=0)
    for _ in range(2):
        [claim] = await manager.pull_batch("q", 1)
        await manager.fail(claim.id, claim.token, "still broken")
    assert await manager.get_state(job_id) == "failed"
    dlq = await sql(
        db_dsn, "SELECT reason, error, attempts FROM pgqueue_dlq WHERE job_id = $1", job_id
    )
    assert len(dlq) == 1 and dlq[0]["reason"] == "max_attempts_exceeded"
    assert dlq[0]["error"] == "still broken"
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0
    assert (await manager.get_counts("q")).failed == 1
    assert await events_of(db_dsn, namespace, job_id) == [
        "pushed",
        "active",
        "failed",
        "active",
        "failed",
        "dlq",
    ]


async def test_unrecoverable_failure_goes_straight_to_the_dlq(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=10)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(claim.id, claim.token, "bad input", unrecoverable=True)
    assert await manager.get_state(job_id) == "failed"
    reason = await sql_value(db_dsn, "SELECT reason FROM pgqueue_dlq WHERE job_id = $1", job_id)
    assert reason == "explicit_fail"


async def test_fail_with_a_stale_token_changes_nothing(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1)
    with pytest.raises(LeaseLost):
        await manager.fail(job_id, "1:stale", "x")
    job = await manager.get_job(job_id)
    assert job is not None and (job.state, job.attempts) == ("active", 0)


async def test_remove_on_fail_keeps_no_dlq_entry(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=1, remove_on_fail=True)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(claim.id, claim.token, "x")
    assert await manager.get_job(job_id) is None
    assert await count_rows(db_dsn, "pgqueue_dlq", namespace) == 0


async def _past_deadline(db_dsn: str, namespace: str, job_id: str) -> bool:
    return bool(
        await sql_value(
            db_dsn,
            "SELECT started_at + timeout_ms * interval '1 millisecond' < statement_timestamp()"
            " FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
            namespace,
            job_id,
        )
    )


async def test_the_holders_failure_after_the_timeout_is_a_timeout_and_a_late_ack_is_refused(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, timeout=200, attempts=1)
    [claim] = await manager.pull_batch("q", 1)
    await eventually(lambda: _past_deadline(db_dsn, namespace, job_id), message="deadline")
    with pytest.raises(LeaseLost):
        await manager.ack(job_id, claim.token, "too late")
    with pytest.raises(LeaseLost):
        await manager.fail(job_id, "1:not-the-token", "forged")
    await manager.fail(job_id, claim.token, "job timed out after 200 ms")
    assert await manager.get_state(job_id) == "failed"
    reason = await sql_value(
        db_dsn,
        "SELECT reason FROM pgqueue_dlq WHERE namespace = $1 AND job_id = $2",
        namespace,
        job_id,
    )
    assert reason == "timeout"


async def test_a_failure_after_an_ordinary_lease_expired_is_still_refused(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    await expire_lease(db_dsn, namespace, job_id)
    with pytest.raises(LeaseLost):
        await manager.fail(job_id, claim.token, "stale")
    assert await manager.get_state(job_id) == "active"
