"""The alert figures' plans: every read of pgqueue_jobs goes through an index
(the listing index, in admission order, stopping at the first row; the active
index for the active count), with custom and with generic plans; the lease holder
and the timeline read one job by key.

The backlog: ~6k jobs in three queues, some delayed, some in retry, some active,
admitted through the manager; then ANALYZE, then EXPLAIN.
"""

from __future__ import annotations

import asyncio
import json
import re

import asyncpg
import pytest

from pgqueue.config import Config
from pgqueue.db.queries import Q
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import MANAGER_DEFAULTS
from tests.helpers import Plan, explain, planner, walk

NAMESPACE = "figplan"
QUEUES = ("emails", "sms", "reports")


async def _seed(dsn: str) -> str:
    settings = {**MANAGER_DEFAULTS, "pool_max_size": 4}
    manager = PostgresQueueManager(
        Config(dsn=dsn, namespace=NAMESPACE, broker_id="plan-broker", **settings)
    )
    await manager.start()
    try:
        for queue in QUEUES:
            for chunk in range(2):
                await manager.push_bulk(
                    queue,
                    [
                        {
                            "name": "job",
                            "data": {"n": i},
                            "priority": (i % 3) * 5,
                            "attempts": 5,
                            **({"delay": 3_600_000} if i % 10 == 0 else {}),
                        }
                        for i in range(chunk * 1000, chunk * 1000 + 1000)
                    ],
                )
            claims = await manager.pull_batch(queue, 60)
            for claim in claims[:30]:
                await manager.fail(claim.id, claim.token, "flaky")  # in retry
        some_job = claims[-1].id
    finally:
        await manager.close(release_leases=False)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("ANALYZE pgqueue_jobs")
        await conn.execute("ANALYZE pgqueue_queues")
        await conn.execute("ANALYZE pgqueue_events")
    finally:
        await conn.close()
    return some_job


@pytest.fixture(scope="module")
def some_job(db_dsn: str) -> str:
    return asyncio.run(_seed(db_dsn))


def reads_of(plan: Plan, table: str) -> list[str]:
    """How ``table`` is read: ``"Index Scan pgqueue_jobs_x"``, ``"Seq Scan"``, ..."""
    return [
        f"{n['Node Type']} {n.get('Index Name', '')}".strip()
        for n in walk(plan)
        if (n.get("Relation Name") == table and n["Node Type"].endswith("Scan"))
        or (n["Node Type"] == "Bitmap Index Scan" and n.get("Index Name", "").startswith(table))
    ]


MODES = ["force_custom_plan", "force_generic_plan"]
# The listing index (no active job, migration 0024) and the active jobs' index.
INDEXES = re.compile(r"pgqueue_jobs_(listing|active)_idx")


@pytest.mark.parametrize("mode", MODES)
async def test_the_queue_figures_read_the_listing_and_active_indexes_only(
    db_dsn: str, some_job: str, mode: str
) -> None:
    async with planner(db_dsn, mode) as conn:
        plan = await explain(conn, Q.queue_alert_figures, namespace=NAMESPACE, queues=list(QUEUES))
    reads = reads_of(plan, "pgqueue_jobs")
    assert reads, json.dumps(plan, indent=1)
    assert all(INDEXES.search(r) for r in reads), (reads, json.dumps(plan, indent=1))
    assert any("pgqueue_jobs_active_idx" in r for r in reads), reads  # the active count
    sorts = [n["Sort Key"] for n in walk(plan) if n["Node Type"] == "Sort"]
    assert not [key for key in sorts if "created_at" in str(key)], "jobs sorted, not read in order"


@pytest.mark.parametrize("mode", MODES)
async def test_the_lease_holder_and_timeline_read_one_job_by_key(
    db_dsn: str, some_job: str, mode: str
) -> None:
    async with planner(db_dsn, mode) as conn:
        lease = await explain(conn, Q.job_lease_holder, namespace=NAMESPACE, job_id=some_job)
        timeline = await explain(
            conn, Q.job_timeline, namespace=NAMESPACE, job_id=some_job, limit=500
        )
    assert [r for r in reads_of(lease, "pgqueue_jobs") if r.startswith("Seq")] == []
    reads = reads_of(timeline, "pgqueue_events")
    assert reads and all("pgqueue_events_job_idx" in r for r in reads), reads


async def test_the_plan_check_rejects_figures_without_the_listing_index(
    db_dsn: str, some_job: str
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        tx = conn.transaction()
        await tx.start()
        try:
            await conn.execute("DROP INDEX pgqueue_jobs_listing_idx")
            plan = await explain(
                conn, Q.queue_alert_figures, namespace=NAMESPACE, queues=list(QUEUES)
            )
        finally:
            await tx.rollback()
    finally:
        await conn.close()
    reads = reads_of(plan, "pgqueue_jobs")
    assert not all(INDEXES.search(r) for r in reads)
