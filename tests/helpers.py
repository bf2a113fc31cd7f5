"""Test helpers that reach into the database directly (time travel, counts)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg

from pgqueue.testing import eventually

if TYPE_CHECKING:
    from pgqueue.db.queries import Query
    from pgqueue.runtime import PostgresQueueManager

Plan = dict[str, Any]


async def sql(dsn: str, query: str, *args: Any) -> list[asyncpg.Record]:
    """Run one statement on a fresh connection (outside any manager)."""
    conn = await asyncpg.connect(dsn)
    try:
        return list(await conn.fetch(query, *args))
    finally:
        await conn.close()


async def sql_value(dsn: str, query: str, *args: Any) -> Any:
    rows = await sql(dsn, query, *args)
    return rows[0][0] if rows else None


@asynccontextmanager
async def planner(dsn: str, plan_cache_mode: str = "auto") -> AsyncIterator[asyncpg.Connection]:
    """A connection whose planner is pinned to ``plan_cache_mode``
    (``force_custom_plan``: values known; ``force_generic_plan``: as a prepared
    statement plans after its fifth run)."""
    conn = await asyncpg.connect(dsn, server_settings={"plan_cache_mode": plan_cache_mode})
    try:
        yield conn
    finally:
        await conn.close()


async def explain(
    conn: asyncpg.Connection, query: Query, /, *, analyze: bool = False, **params: Any
) -> Plan:
    """The JSON plan of a shipped query, its parameters by name (as the engine
    passes them).  With ``analyze`` the statement runs (EXPLAIN ANALYZE) in a
    transaction that is rolled back."""
    args = query.arguments((), params)
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    transaction = conn.transaction()
    await transaction.start()
    try:
        text = await conn.fetchval(f"EXPLAIN ({options}) {query.sql}", *args)
    finally:
        await transaction.rollback()
    plan: Plan = json.loads(text)[0]["Plan"]
    return plan


def walk(node: Plan) -> Iterator[Plan]:
    """Every node of a plan, ``node`` first."""
    yield node
    for child in node.get("Plans", []):
        yield from walk(child)


async def expire_lease(dsn: str, namespace: str, job_id: str) -> None:
    """Move a lease's end into the past on the database clock (no waiting)."""
    await sql(
        dsn,
        "UPDATE pgqueue_jobs SET lease_until = clock_timestamp() - interval '1 millisecond'"
        " WHERE namespace = $1 AND id = $2 AND state = 'active'",
        namespace,
        job_id,
    )


def clock_ahead(ms: float) -> datetime:
    """An instant ``ms`` from now: the ``now`` a test hands to ``reap`` or
    ``retention_pass`` to move time (instead of rewriting rows)."""
    return datetime.now(UTC) + timedelta(milliseconds=ms)


def clock_between(earlier: datetime, later: datetime, plus_ms: float) -> datetime:
    """An instant ``plus_ms`` after the middle of ``earlier`` and ``later``: the
    ``now`` at which what happened at ``earlier`` is older than ``plus_ms`` and
    what happened at ``later`` is not (both read from the database)."""
    assert earlier < later, (earlier, later)
    return earlier + (later - earlier) / 2 + timedelta(milliseconds=plus_ms)


HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


async def live_jobs(dsn: str, namespace: str, queue: str) -> int:
    """Jobs of ``queue`` not finished yet (rows of pgqueue_jobs)."""
    return int(
        await sql_value(
            dsn,
            "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND queue = $2",
            namespace,
            queue,
        )
    )


async def count_rows(dsn: str, table: str, namespace: str) -> int:
    assert table.startswith("pgqueue_") and table.isidentifier()
    return int(
        await sql_value(dsn, f"SELECT count(*) FROM {table} WHERE namespace = $1", namespace)
    )


async def events_of(dsn: str, namespace: str, job_id: str | None = None) -> list[str]:
    """Event types of a namespace (or one job), in id order."""
    if job_id is None:
        rows = await sql(
            dsn, "SELECT type FROM pgqueue_events WHERE namespace = $1 ORDER BY id", namespace
        )
    else:
        rows = await sql(
            dsn,
            "SELECT type FROM pgqueue_events WHERE namespace = $1 AND job_id = $2 ORDER BY id",
            namespace,
            job_id,
        )
    return [row["type"] for row in rows]


def with_query(dsn: str, **params: object) -> str:
    """``dsn`` with query parameters added (it may already carry some, e.g. ?host=)."""
    extra = "&".join(f"{key}={value}" for key, value in params.items())
    return f"{dsn}{'&' if '?' in dsn else '?'}{extra}"


async def trim_until(
    manager: PostgresQueueManager, queue: str, keep: int, *, at_least: int = 1
) -> int:
    """``trim_events`` until at least ``at_least`` events went; returns how many.

    Trimming deletes only below the commit-safe horizon, which any transaction on
    the server (another test's broker, autovacuum) may hold back for a moment.
    """
    deleted = 0

    async def enough() -> bool:
        nonlocal deleted
        deleted += await manager.trim_events(queue, keep)
        return deleted >= at_least

    await eventually(enough, message=f"{at_least} events of {queue!r} trimmed")
    return deleted


def reads_of_jobs(plan: Plan) -> int:
    """Rows the plan's scans of ``pgqueue_jobs`` (and of its indexes) produced."""
    return sum(
        int(n["Actual Rows"]) * int(n["Actual Loops"])
        for n in walk(plan)
        if n["Node Type"].endswith("Scan")
        and (
            n.get("Relation Name") == "pgqueue_jobs"
            or n.get("Index Name", "").startswith("pgqueue_jobs_")
        )
    )


async def claims_among_unanalyzed(
    manager: PostgresQueueManager, dsn: str, *, backlog: int, batch: int
) -> list[Any]:
    """``batch`` claims among ``backlog`` pushed jobs of a ``pgqueue_jobs`` the planner
    has no statistics for (autovacuum off, never analyzed: the peers' harness).  The
    table's own autovacuum is switched off first: the server's would analyze it once
    the backlog's inserts pass its threshold (a CI run's did, mid-test)."""
    await sql(dsn, "ALTER TABLE pgqueue_jobs SET (autovacuum_enabled = false)")
    await manager.push_bulk("emails", [{"name": "job", "data": {"n": i}} for i in range(backlog)])
    claims = await manager.pull_batch("emails", batch)
    assert len(claims) == batch
    stats = await sql_value(dsn, "SELECT reltuples FROM pg_class WHERE relname = 'pgqueue_jobs'")
    assert stats < 0, "the table must not have been analyzed for this test to mean anything"
    return claims


@asynccontextmanager
async def uncommitted_renewal(
    dsn: str, namespace: str, job_id: str
) -> AsyncIterator[asyncpg.transaction.Transaction]:
    """A lease renewal of ``job_id`` (its row updated, not yet committed) in a
    transaction of its own; the caller commits it (or it rolls back on exit)."""
    conn = await asyncpg.connect(dsn)
    try:
        tx = conn.transaction()
        await tx.start()
        await conn.execute(
            "UPDATE pgqueue_jobs SET lease_until = lease_until + interval '1 minute',"
            " last_heartbeat_at = now() WHERE namespace = $1 AND id = $2",
            namespace,
            job_id,
        )
        yield tx
    finally:
        await conn.close()


async def until_waiting_on_a_lock(dsn: str, call: asyncio.Future[Any], what: str) -> None:
    """Poll until a backend of this database waits on a lock (``call`` blocked),
    failing when ``call`` ends first or after 10 s."""
    deadline = asyncio.get_running_loop().time() + 10
    while not await sql_value(
        dsn,
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'",
    ):
        assert asyncio.get_running_loop().time() < deadline, f"the {what} never waited"
        assert not call.done(), call
        await asyncio.sleep(0.01)
