"""The planned claim's plans (a limited queue, a grouped queue): every statement of
``pgqueue_claim_planned`` reads pgqueue_jobs through an index, never a scan of the
backlog.

The function's statements are planned inside PL/pgSQL, so EXPLAIN of the call
shows only a Function Scan; ``auto_explain`` with ``log_nested_statements``
reports each inner plan to the client (as NOTICEs), in a transaction that is
rolled back.  The backlog: 20k grouped jobs in 40 groups (one holding half of
them) and 5k ungrouped jobs on a queue with a concurrency limit.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import asyncpg
import pytest

from pgqueue.config import Config
from pgqueue.db.queries import Q
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import MANAGER_DEFAULTS
from tests.helpers import Plan, explain, walk

NAMESPACE = "plan-limited"


@dataclass(frozen=True)
class Backlog:
    dsn: str
    broker_id: str
    session_id: str


async def _seed(dsn: str) -> Backlog:
    settings = {**MANAGER_DEFAULTS, "pool_max_size": 4}
    manager = PostgresQueueManager(
        Config(dsn=dsn, namespace=NAMESPACE, broker_id="plan-broker", **settings)
    )
    await manager.start()
    try:
        for chunk in range(20):
            await manager.push_bulk(
                "grouped",
                [
                    {
                        "name": "job",
                        "data": i,
                        "group_id": "whale" if chunk < 10 else f"g{i % 39}",
                        "priority": i % 3,
                    }
                    for i in range(1000)
                ],
            )
        for _ in range(5):
            await manager.push_bulk("limited", [{"name": "job", "data": i} for i in range(1000)])
        await manager.set_concurrency("limited", 500)
        await manager.set_group_concurrency("grouped", "whale", 50)
        await manager.set_group_rate_limit("grouped", "g1", 5, 60_000)
        assert len(await manager.pull_batch("grouped", 200)) == 200
        assert len(await manager.pull_batch("limited", 200)) == 200
        backlog = Backlog(dsn, manager.broker_id, str(manager.session.session_id))
    finally:
        await manager.close(release_leases=False)
    conn = await asyncpg.connect(dsn)
    try:
        for table in ("pgqueue_jobs", "pgqueue_queues", "pgqueue_groups", "pgqueue_brokers"):
            await conn.execute(f"ANALYZE {table}")
    finally:
        await conn.close()
    return backlog


@pytest.fixture(scope="module")
def backlog(db_dsn: str) -> Backlog:
    return asyncio.run(_seed(db_dsn))


async def inner_plans(backlog: Backlog, queue: str, **group: int) -> list[Plan]:
    """The plans of every statement the planned claim ran (rolled back)."""
    conn = await asyncpg.connect(backlog.dsn)
    notices: list[str] = []
    conn.add_log_listener(lambda _conn, message: notices.append(message.message))
    try:
        await conn.execute("LOAD 'auto_explain'")
        for setting in (
            "auto_explain.log_min_duration = 0",
            "auto_explain.log_nested_statements = on",
            "auto_explain.log_format = json",
            "auto_explain.log_level = notice",
        ):
            await conn.execute(f"SET {setting}")
        tx = conn.transaction()
        await tx.start()
        try:
            # the seeding broker has stopped: its session comes back for this claim only
            await conn.execute(
                "INSERT INTO pgqueue_brokers (namespace, broker_id, session_id, started_at,"
                " heartbeat_at) VALUES ($1, $2, $3::uuid, now(), now())"
                " ON CONFLICT DO NOTHING",
                NAMESPACE,
                backlog.broker_id,
                backlog.session_id,
            )
            args = Q.job_claim_planned.arguments(
                (),
                dict(
                    namespace=NAMESPACE,
                    queue=queue,
                    count=100,
                    owner="w",
                    broker_id=backlog.broker_id,
                    session_id=backlog.session_id,
                    lease_ms=30_000,
                    default_lease_ms=30_000,
                    group_concurrency=group.get("concurrency"),
                    group_max=group.get("max"),
                    group_duration_ms=group.get("duration"),
                ),
            )
            rows = await conn.fetch(Q.job_claim_planned.sql, *args)
            assert any(row["id"] is not None for row in rows)
        finally:
            await tx.rollback()
    finally:
        await conn.close()
    plans = []
    for text in notices:
        start = text.find("{")
        if "Plan" in text and start >= 0:
            plans.append(json.loads(text[start:])["Plan"])
    return plans


def job_reads(plans: list[Plan]) -> list[str]:
    return [
        f"{n['Node Type']} {n.get('Index Name', '')}".strip()
        for plan in plans
        for n in walk(plan)
        if n.get("Relation Name") == "pgqueue_jobs" and n["Node Type"].endswith("Scan")
    ]


@pytest.mark.parametrize(
    ("queue", "group", "expected"),
    [
        ("limited", {}, "pgqueue_jobs_claim_idx"),
        ("grouped", {}, "pgqueue_jobs_group_claim_idx"),
        (
            "grouped",
            {"concurrency": 3, "max": 10, "duration": 1000},
            "pgqueue_jobs_group_claim_idx",
        ),
    ],
)
async def test_the_planned_claim_reads_the_backlog_only_through_indexes(
    backlog: Backlog, queue: str, group: dict[str, int], expected: str
) -> None:
    plans = await inner_plans(backlog, queue, **group)
    reads = job_reads(plans)
    assert reads, "auto_explain reported no plan"
    scans = [read for read in reads if not read.startswith(("Index", "Bitmap"))]
    assert scans == [], f"pgqueue_jobs read without an index: {reads}"
    assert any(expected in read for read in reads), reads


@pytest.mark.parametrize("queue", ["grouped", "limited"])
async def test_the_plain_claim_of_a_grouped_or_limited_queue_only_probes_an_index(
    backlog: Backlog, queue: str
) -> None:
    """The plain claim learns that the queue needs the plan (plan_needed) without
    reading the backlog: the group probe is one descent of the group index."""
    conn = await asyncpg.connect(backlog.dsn)
    try:
        plan = await explain(
            conn,
            Q.job_claim_batch,
            namespace=NAMESPACE,
            queue=queue,
            count=100,
            owner="w",
            broker_id=backlog.broker_id,
            session_id=backlog.session_id,
            lease_ms=30_000,
            default_lease_ms=30_000,
            now=None,
        )
    finally:
        await conn.close()
    reads = job_reads([plan])
    assert [read for read in reads if not read.startswith("Index")] == [], reads
