"""The queue registry under the push path: a manager skips writing a queue's row once
its own push wrote it (pgqueue.manager.registry), and nothing is lost by that."""

from __future__ import annotations

from typing import Any

from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import DAY_MS, clock_ahead, sql, sql_value

_REGISTERED = "SELECT count(*) FROM pgqueue_queues WHERE namespace = $1 AND queue = $2"


async def test_a_job_pushed_after_another_broker_obliterated_its_queue_is_pruned_once_old(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        await a.push("q", "n", 1)
        assert await b.obliterate("q") == 1
        job_id = await a.push("q", "n", 2)  # a still knows q: its row is not written
        assert await sql_value(db_dsn, _REGISTERED, namespace, "q") == 0
        [claim] = await a.pull_batch("q", 1)
        await a.ack(job_id, claim.token)
        report = await b.retention_pass(now=clock_ahead(30 * DAY_MS))
        assert report.finished == 1
        assert await a.get_state(job_id) == "unknown"
        assert await sql_value(db_dsn, _REGISTERED, namespace, "q") == 1


async def test_a_push_after_its_own_managers_obliterate_registers_the_queue_again(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.push("q", "n", 1)
    await manager.obliterate("q")
    assert await sql_value(db_dsn, _REGISTERED, namespace, "q") == 0
    await manager.push("q", "n", 2)
    assert await sql_value(db_dsn, _REGISTERED, namespace, "q") == 1


_OPTIONS: list[dict[str, Any]] = [
    {},
    {"priority": 3, "lifo": True, "delay": 60_000, "attempts": 4, "timeout": 9_000},
    {"backoff": {"type": "exponential", "delay": 250}, "remove_on_complete": True},
    {"ttl": 120_000, "remove_on_fail": 5, "timestamp": 1_700_000_000_123, "group_id": "g"},
    {"stall_timeout": 7_000, "tags": ["a"], "keep_logs": 3, "stack_trace_limit": 2},
]
_COLUMNS = (
    "name, data::text, state, priority, lifo, lifo_seq IS NOT NULL AS sequenced,"
    " run_at - created_at > interval '30 s' AS delayed, max_attempts, backoff_type,"
    " backoff_ms, backoff_max_ms, timeout_ms, ttl_ms, expires_at IS NOT NULL AS expires,"
    " stall_timeout_ms, remove_on_complete, remove_on_fail, custom_id, unique_key,"
    " unique_expires_at, group_id, parent_id, parent_queue, pending_deps, has_dependents,"
    " opts::text, extract(epoch FROM created_at) < 1800000000 AS client_clock"
)


async def test_a_single_push_writes_the_row_and_event_a_batch_push_writes(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    """One job takes job_insert_one (scalars), a batch job_insert_fresh (arrays)."""
    for opts in _OPTIONS:
        data = {"text": "é\u2028", "n": [1, 2.5, None]}
        alone = await manager.push("single", "n", data, **opts)
        [batched, _] = await manager.push_bulk(
            "batch", [{"name": "n", "data": data, **opts}, {"name": "other", "data": 0}]
        )
        query = f"SELECT {_COLUMNS} FROM pgqueue_jobs WHERE namespace = $1 AND id = $2"
        [one] = await sql(db_dsn, query, namespace, alone)
        [two] = await sql(db_dsn, query, namespace, batched)
        assert dict(one) == dict(two), opts
        event = (
            "SELECT type, payload::text FROM pgqueue_events WHERE namespace = $1 AND job_id = $2"
        )
        assert [tuple(r) for r in await sql(db_dsn, event, namespace, alone)] == [
            tuple(r) for r in await sql(db_dsn, event, namespace, batched)
        ]
        assert await manager.get_job(alone) is not None
