"""G8 with brokers dying: a scheduler every second, three ``pgqueue serve`` processes,
one killed with SIGKILL mid-run.  Each tick admits exactly one job and no tick is
missed (``skipMissedOnRestart: false``: a late tick is caught up, never dropped),
whoever leads the maintenance.  Tick times are read from the database.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from itertools import pairwise

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory
from tests.helpers import sql, sql_value

SETTINGS = ("--set", "cron_interval_ms=100", "--poll-interval-ms", "100")
NAME = "every-second"
QUEUE = "g8"


async def test_a_cron_every_second_fires_once_per_tick_while_a_broker_is_killed(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    alive = [brokers.start(name, *SETTINGS, http=False) for name in ("c1", "c2", "c3")]

    async def ticks() -> int:
        return int(
            await sql_value(
                db_dsn,
                "SELECT count(*) FROM pgqueue_scheduler_ticks"
                " WHERE namespace = $1 AND scheduler = $2",
                namespace,
                NAME,
            )
        )

    async def at_least(n: int) -> bool:
        return await ticks() >= n

    conn = await Connection.open("127.0.0.1", alive[2].tcp_port)
    try:
        await conn.call(
            "Cron",
            {
                "name": NAME,
                "queue": QUEUE,
                "data": {"n": 1},
                "repeatEvery": 1_000,
                "preventOverlap": False,
                "skipMissedOnRestart": False,
            },
        )
        await eventually(lambda: at_least(4), timeout=30, message="4 ticks")
        # SIGKILL the broker that admitted the latest tick: the likeliest to be mid-tick.
        latest = await sql_value(
            db_dsn,
            "SELECT broker_id FROM pgqueue_scheduler_ticks WHERE namespace = $1"
            " ORDER BY tick_at DESC LIMIT 1",
            namespace,
        )
        victim = next(b for b in alive if b.name == latest)
        await asyncio.to_thread(victim.kill)
        survivors = [b for b in alive if b is not victim]
        before = await ticks()
        await eventually(lambda: at_least(before + 5), timeout=40, message="5 ticks after")
        await conn.close()
        conn = await Connection.open("127.0.0.1", survivors[0].tcp_port)
        # Stop ticking (next run an hour away); the tick records stay.
        await conn.call("Cron", {"name": NAME, "queue": QUEUE, "repeatEvery": 3_600_000})
    finally:
        await conn.close()
    rows = await sql(
        db_dsn,
        "SELECT t.tick_at, t.job_id, t.broker_id, t.outcome, j.id AS job"
        " FROM pgqueue_scheduler_ticks t"
        " LEFT JOIN pgqueue_jobs j ON j.namespace = t.namespace AND j.id = t.job_id"
        " WHERE t.namespace = $1 AND t.scheduler = $2 ORDER BY t.tick_at",
        namespace,
        NAME,
    )
    stamps = [r["tick_at"] for r in rows]
    assert len(stamps) >= before + 5
    gaps = [later - earlier for earlier, later in pairwise(stamps)]
    assert all(g == timedelta(seconds=1) for g in gaps), f"ticks not one second apart: {gaps}"
    assert all(r["outcome"] == "admitted" and r["job"] == r["job_id"] for r in rows)
    jobs = await sql_value(
        db_dsn,
        "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND queue = $2",
        namespace,
        QUEUE,
    )
    assert jobs == len(rows), "one job per tick, no more"
    pushed = await sql_value(
        db_dsn,
        "SELECT count(*) FROM pgqueue_events WHERE namespace = $1 AND queue = $2"
        " AND type = 'pushed'",
        namespace,
        QUEUE,
    )
    assert pushed == len(rows), "each tick's job has its outbox event"
    brokers_seen = {r["broker_id"] for r in rows}
    assert len(brokers_seen) >= 2, f"ticks came from several brokers: {brokers_seen}"
    assert {r["broker_id"] for r in rows if r["tick_at"] > stamps[before]} <= {
        b.name for b in survivors
    }
