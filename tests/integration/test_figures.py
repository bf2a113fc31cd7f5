"""The figures an operator alerts on (``alert_figures``), against a real database:
each figure follows the jobs, workers and limits it describes, and the limits
are read only when the schema has their columns."""

from __future__ import annotations

from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import sql


def _of(figures: list[dict[str, object]], queue: str) -> dict[str, object]:
    [row] = [f for f in figures if f["queue"] == queue]
    return row


async def test_an_idle_queue_has_no_waiting_job_and_no_limit(
    manager: PostgresQueueManager,
) -> None:
    await manager.push("idle", "n", 1, delay=3_600_000)  # delayed: not waiting
    row = _of(await manager.alert_figures(), "idle")
    assert row["oldestWaitingMs"] is None and row["oldestWaitingId"] is None
    assert row["oldestRetryMs"] is None
    assert row["active"] == 0
    assert row["dlq"] == {} and row["dlqTotal"] == 0
    assert row["concurrencyLimit"] is None and row["rateLimit"] is None
    assert row["rateLimited"] is None and row["rateThrottled"] == 0
    assert (row["workers"], row["workerSlots"], row["workerSlotsBusy"]) == (0, 0, 0)


async def test_the_oldest_waiting_job_is_the_first_admitted_due_job_with_its_age(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    first = await manager.push("q", "n", 1)
    await manager.push("q", "n", 2)
    await manager.push("q", "n", 3, priority=5)
    # The first job has waited a minute (its admission moved back on the database).
    await sql(
        db_dsn,
        "UPDATE pgqueue_jobs SET created_at = created_at - interval '60 s', "
        "run_at = run_at - interval '60 s' WHERE namespace = $1 AND id = $2",
        namespace,
        first,
    )
    row = _of(await manager.alert_figures(["q"]), "q")
    assert row["oldestWaitingId"] == first
    assert 60_000 <= float(row["oldestWaitingMs"]) < 120_000  # type: ignore[arg-type]


async def test_the_oldest_retry_is_aged_from_its_first_attempt(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("r", "n", 1, max_attempts=5, backoff=60_000)
    [claim] = await manager.pull_batch("r", 1)
    await manager.fail(claim.id, claim.token, "flaky")
    row = _of(await manager.alert_figures(["r"]), "r")
    assert row["oldestRetryId"] == job_id
    assert row["oldestRetryAttempts"] == 1
    assert float(row["oldestRetryMs"]) >= 0  # type: ignore[arg-type]
    assert row["oldestWaitingId"] is None  # in backoff: not due, so not waiting


async def test_dlq_size_is_split_by_reason_and_active_jobs_count(
    manager: PostgresQueueManager,
) -> None:
    for _ in range(2):
        await manager.push("d", "n", 1, max_attempts=1)
    await manager.push("d", "n", 2)
    claims = await manager.pull_batch("d", 3)
    dead = [c for c in claims if c.id != claims[-1].id][:2]
    await manager.fail(dead[0].id, dead[0].token, "boom")
    await manager.fail(dead[1].id, dead[1].token, "gone", unrecoverable=True)
    row = _of(await manager.alert_figures(["d"]), "d")
    assert row["dlqTotal"] == 2
    assert sum(row["dlq"].values()) == 2  # type: ignore[attr-defined]
    assert row["active"] == 1


async def test_worker_slots_busy_against_registered(manager: PostgresQueueManager) -> None:
    a = await manager.register_worker(None, "a", ["w", "other"], 4)
    await manager.register_worker(None, "b", ["w"], 2)
    await manager.worker_heartbeat(a["workerId"], 3)
    row = _of(await manager.alert_figures(["w"]), "w")
    assert (row["workers"], row["workerSlots"], row["workerSlotsBusy"]) == (2, 6, 3)


async def test_limits_are_read_when_the_schema_has_their_columns(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    """The limits migration adds the columns; the figures read them through to_jsonb,
    so the same statement serves a schema with and without them."""
    await manager.push("lim", "n", 1)
    await manager.pause("lim")
    await sql(
        db_dsn,
        "ALTER TABLE pgqueue_queues ADD COLUMN IF NOT EXISTS concurrency_limit integer, "
        "ADD COLUMN IF NOT EXISTS rate_limit integer, "
        "ADD COLUMN IF NOT EXISTS rate_duration_ms integer, "
        "ADD COLUMN IF NOT EXISTS rate_window_started_at timestamptz, "
        "ADD COLUMN IF NOT EXISTS rate_count integer NOT NULL DEFAULT 0",
    )
    await sql(
        db_dsn,
        "UPDATE pgqueue_queues SET concurrency_limit = 7, rate_limit = 2, "
        "rate_duration_ms = 60000, rate_window_started_at = clock_timestamp(), rate_count = 2 "
        "WHERE namespace = $1 AND queue = 'lim'",
        namespace,
    )
    row = _of(await manager.alert_figures(["lim"]), "lim")
    assert row["paused"] is True
    assert row["concurrencyLimit"] == 7
    assert row["rateLimit"] == 2 and row["rateWindowClaims"] == 2
    assert row["rateLimited"] is True


async def test_claims_held_back_by_the_rate_limit_are_counted_across_the_brokers(
    db_dsn: str, namespace: str
) -> None:
    """The throttle figure is a count, not a flag: every claim a full rate window held
    back, on this broker (its own count, fresh) and on every other live broker (the
    count its last status report carried)."""
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        await a.push_bulk("rl", [{"name": "n", "data": i} for i in range(5)])
        await a.set_rate_limit("rl", 1, 60_000)
        assert len(await a.pull_batch("rl", 5)) == 1
        for _ in range(3):
            assert await a.pull_batch("rl", 5) == []
        assert await b.pull_batch("rl", 5) == []
        assert _of(await a.alert_figures(["rl"]), "rl")["rateThrottled"] == 3
        assert _of(await b.alert_figures(["rl"]), "rl")["rateThrottled"] == 1
        await a.report_status({})
        assert _of(await b.alert_figures(["rl"]), "rl")["rateThrottled"] == 4
        assert await a.rate_throttled() == {"rl": 3}
