"""The cron count of Stats and the dashboard: read from the cron table when there is one."""

from __future__ import annotations

import asyncpg

from pgqueue.db.queries import Q


async def count(conn: asyncpg.Connection, namespace: str) -> int:
    """As :func:`pgqueue.server.overview.cron_count` reads it."""
    if not await conn.fetchval(Q.cron_table_exists.sql):
        return 0
    return int(await conn.fetchval(Q.cron_count.sql, namespace) or 0)


async def test_the_cron_count_is_zero_without_a_cron_table_and_counts_its_rows(
    db_dsn: str, namespace: str
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        # A schema of its own stands for a cron table (whatever the migrations hold).
        await conn.execute("CREATE SCHEMA IF NOT EXISTS cron_probe")
        await conn.execute("SET search_path = cron_probe")
        assert await count(conn, namespace) == 0
        await conn.execute("CREATE TABLE cron_probe.pgqueue_schedulers (namespace text, name text)")
        await conn.execute(
            "INSERT INTO cron_probe.pgqueue_schedulers VALUES ($1, 'a'), ($1, 'b'), ('other', 'c')",
            namespace,
        )
        assert await count(conn, namespace) == 2
        assert await count(conn, "it's quoted") == 0
    finally:
        await conn.execute("DROP SCHEMA IF EXISTS cron_probe CASCADE")
        await conn.close()
