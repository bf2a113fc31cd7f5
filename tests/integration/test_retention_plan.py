"""The outbox retention statements' plans: each 5,000-row batch reads the queue's
events a bounded number of times, whatever the backlog.

Found by the soak (docs/operations.md): the per-queue trim ran its "oldest event
kept" lookup (an OFFSET of ``retention_events_per_queue`` rows) once per candidate
row, so one batch over a 400,000-event queue took minutes (past the 30 s statement
timeout) and the outbox grew without bound.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from pgqueue.db.queries import Q
from tests.helpers import explain

EVENTS = 3_000


def scans_of_events(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of the plan that reads pgqueue_events, with how often it ran."""
    found = []
    if plan.get("Relation Name") == "pgqueue_events":
        found.append(plan)
    for child in plan.get("Plans", []):
        found += scans_of_events(child)
    return found


def is_delete_lookup(scan: dict[str, Any]) -> bool:
    """The delete's lookup of each doomed row by its key (namespace, xid, id) in the
    cursor index: one row per loop, once per row the batch chose."""
    return (
        scan.get("Index Name") == "pgqueue_events_cursor_idx"
        and "(xid = " in scan.get("Index Cond", "")
        and "(id = " in scan.get("Index Cond", "")
        and scan["Actual Rows"] <= 1
    )


async def seed(conn: asyncpg.Connection, namespace: str) -> None:
    # Events of finished transactions: xids below any horizon.
    await conn.execute(
        "INSERT INTO pgqueue_events (namespace, xid, queue, job_id, type, created_at)"
        " SELECT $1, g - 1000000, 'q', 'j' || g, 'completed',"
        "        statement_timestamp() - interval '1 hour' + g * interval '1 millisecond'"
        " FROM generate_series(1, $2::int) g",
        namespace,
        EVENTS,
    )
    await conn.execute("ANALYZE pgqueue_events")


async def test_trimming_a_queue_reads_its_events_once_per_batch_not_once_per_row(
    db_dsn: str, namespace: str
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        await seed(conn, namespace)
        plan = await explain(
            conn,
            Q.event_trim_queue_returning,
            analyze=True,
            namespace=namespace,
            queue="q",
            keep=1_000,
            limit=500,
            horizon=None,
        )
        assert plan["Actual Rows"] == 500  # a full batch went
        for scan in scans_of_events(plan):
            if is_delete_lookup(scan):
                continue
            assert scan["Actual Loops"] <= 1, (scan["Node Type"], scan.get("Index Name"))
    finally:
        await conn.close()


async def test_pruning_old_events_reads_them_once_per_batch_not_once_per_row(
    db_dsn: str, namespace: str
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        await seed(conn, namespace)
        plan = await explain(
            conn,
            Q.event_prune_old_returning,
            analyze=True,
            namespace=namespace,
            max_age_ms=60_000,
            window=500,
            horizon=None,
            now=None,
        )
        assert plan["Actual Rows"] == 1  # the window's figures: 500 scanned, 500 pruned
        for scan in scans_of_events(plan):
            if is_delete_lookup(scan):
                continue
            assert scan["Actual Loops"] <= 1, (scan["Node Type"], scan.get("Index Name"))
    finally:
        await conn.close()


async def test_pruning_old_events_does_not_read_the_recent_ones(
    db_dsn: str, namespace: str
) -> None:
    """Found by the soak: each batch of the age-based prune looked at every event
    younger than the retention (to find each queue's first one), so a pass cost
    O(recent events x batches) and the outbox's retention fell behind at scale."""
    conn = await asyncpg.connect(db_dsn)
    try:
        await seed(conn, namespace)
        recent = 20_000
        await conn.execute(
            "INSERT INTO pgqueue_events (namespace, xid, queue, job_id, type)"
            " SELECT $1, g - 900000, 'q', 'r' || g, 'completed'"
            " FROM generate_series(1, $2::int) g",
            namespace,
            recent,
        )
        await conn.execute("ANALYZE pgqueue_events")
        plan = await explain(
            conn,
            Q.event_prune_old_returning,
            analyze=True,
            namespace=namespace,
            max_age_ms=60_000,
            window=500,
            horizon=None,
            now=None,
        )
        read = sum(
            scan["Actual Rows"] * scan["Actual Loops"]
            for scan in scans_of_events(plan)
            if not is_delete_lookup(scan)
        )
        assert read <= 2 * 500, read  # the batch's window, not the recent events
    finally:
        await conn.close()


def scans_of(plan: dict[str, Any], table: str) -> list[dict[str, Any]]:
    """Every node of the plan that reads ``table``."""
    found = [plan] if plan.get("Relation Name") == table else []
    for child in plan.get("Plans", []):
        found += scans_of(child, table)
    return found


async def test_pruning_finished_jobs_does_not_read_the_recent_ones(
    db_dsn: str, namespace: str
) -> None:
    """Found by the soak: the finished-job prune found its batch by reading the
    namespace's finished jobs in no order, so once retention had recycled the
    heap each batch waded through the jobs still retained (most of them)."""
    conn = await asyncpg.connect(db_dsn)
    try:
        await conn.execute(
            "INSERT INTO pgqueue_finished (namespace, id, queue, name, state, created_at,"
            " finished_at)"
            " SELECT $1, 'f' || g, 'q', 'n', 'completed', statement_timestamp(),"
            "        statement_timestamp() - CASE WHEN g % 21 = 0 THEN interval '2 days'"
            "                                     ELSE interval '1 second' END"
            " FROM generate_series(1, 21000) g ORDER BY random()",
            namespace,
        )
        await conn.execute(
            "INSERT INTO pgqueue_queues (namespace, queue) VALUES ($1, 'q')", namespace
        )
        await conn.execute("ANALYZE pgqueue_finished")
        plan = await explain(
            conn,
            Q.finished_prune,
            analyze=True,
            namespace=namespace,
            completed_ms=86_400_000,
            failed_ms=86_400_000,
            limit=500,
            now=None,
        )
        assert plan["Actual Rows"] == 1
        assert scans_of(plan, "pgqueue_finished")  # it read the table
        read = sum(
            scan["Actual Rows"] * scan["Actual Loops"]
            for scan in scans_of(plan, "pgqueue_finished")
            if scan.get("Index Name") != "pgqueue_finished_pkey"
        )
        assert read <= 2 * 500, read  # the old ones, not the 20,000 retained
        row = await conn.fetchrow(
            Q.finished_prune.sql, namespace, 86_400_000, 86_400_000, 500, None
        )
        assert row["pruned"] == 500
    finally:
        await conn.close()
