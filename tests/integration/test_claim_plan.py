"""The claim's plan: it reads the partial claim index in claim order and locks
only the rows it returns (no sort of the whole backlog), with custom and with
generic plans (asyncpg's prepared statements go generic after five runs).

The backlog is ~20k pending jobs in four queues and four priorities, some
delayed and some LIFO, admitted through the manager; a few hundred are
claimed so that the lease index has rows too.  Then ANALYZE, then EXPLAIN.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from pgqueue.config import Config
from pgqueue.db.queries import Q
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import MANAGER_DEFAULTS
from tests.helpers import Plan, explain, planner, walk

NAMESPACE = "plan"
QUEUES = ("emails", "sms", "reports", "thumbs")
PER_QUEUE = 5_000
CLAIMED = 300


@dataclass(frozen=True)
class Backlog:
    """What the seeding left behind: where, and the session that claimed."""

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
        for queue in QUEUES:
            for chunk in range(PER_QUEUE // 1000):
                await manager.push_bulk(
                    queue,
                    [
                        {
                            "name": "job",
                            "data": {"n": chunk * 1000 + i},
                            "priority": (i % 4) * 5,
                            **({"delay": 3_600_000} if i % 10 == 0 else {}),
                            **({"lifo": True} if i % 7 == 0 else {}),
                        }
                        for i in range(1000)
                    ],
                )
        assert len(await manager.pull_batch("emails", CLAIMED)) == CLAIMED
        backlog = Backlog(dsn, manager.broker_id, str(manager.session.session_id))
    finally:
        await manager.close(release_leases=False)  # keep the claimed jobs active
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("ANALYZE pgqueue_jobs")
        await conn.execute("ANALYZE pgqueue_brokers")
        await conn.execute("ANALYZE pgqueue_queues")
    finally:
        await conn.close()
    return backlog


@pytest.fixture(scope="module")
def backlog(db_dsn: str) -> Backlog:
    return asyncio.run(_seed(db_dsn))


def claim_args(backlog: Backlog, now: datetime | None = None) -> dict[str, Any]:
    return dict(
        namespace=NAMESPACE,
        queue="emails",
        count=100,
        owner="worker-1",
        broker_id=backlog.broker_id,
        session_id=backlog.session_id,
        lease_ms=30_000,
        default_lease_ms=30_000,
        now=now,
    )


def scans_of_jobs(node: Plan) -> list[str]:
    """How each scan under ``node`` reads pgqueue_jobs: ``"Index Scan pgqueue_jobs_x"``."""
    return [
        f"{n['Node Type']} {n.get('Index Name', '')}".strip()
        for n in walk(node)
        if n.get("Relation Name") == "pgqueue_jobs" and n["Node Type"].endswith("Scan")
    ]


def jobs_locking(plan: Plan) -> list[Plan]:
    """The LockRows nodes over pgqueue_jobs (the claim guard's, over an empty table
    of its own, migration 0027, is not one)."""
    return [n for n in walk(plan) if n["Node Type"] == "LockRows" and scans_of_jobs(n)]


def claim_plan_problems(plan: Plan) -> list[str]:
    """Why a plan of ``job_claim_batch`` is not the canonical one (empty: it is)."""
    problems = []
    lock_rows = jobs_locking(plan)
    if len(lock_rows) != 1:
        return [f"expected one LockRows node over pgqueue_jobs, found {len(lock_rows)}"]
    [locking] = lock_rows
    reads = scans_of_jobs(locking)
    if reads != ["Index Scan pgqueue_jobs_claim_idx"]:
        problems.append(f"the locking subplan reads pgqueue_jobs by {reads}")
    sorts = [n["Node Type"] for n in walk(locking) if "Sort" in n["Node Type"]]
    if sorts:
        problems.append(f"the rows are sorted before they are locked ({sorts})")
    full = [scan for scan in scans_of_jobs(plan) if not scan.startswith("Index")]
    if full:
        problems.append(f"pgqueue_jobs is scanned without an index: {full}")
    return problems


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
async def test_the_claim_reads_the_claim_index_in_order_and_locks_under_the_limit(
    backlog: Backlog, plan_cache_mode: str
) -> None:
    async with planner(backlog.dsn, plan_cache_mode) as conn:
        plan = await explain(conn, Q.job_claim_batch, **claim_args(backlog))
    assert claim_plan_problems(plan) == [], json.dumps(plan, indent=1)
    [locking] = jobs_locking(plan)
    [limit] = [n for n in walk(plan) if n["Node Type"] == "Limit" and locking in n["Plans"]]
    assert limit["Plans"][-1] is locking, "LIMIT sits directly above the lock"


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
async def test_the_claim_keeps_the_claim_index_under_a_moved_clock(
    backlog: Backlog, plan_cache_mode: str
) -> None:
    """The injected clock (``coalesce(:now, statement_timestamp())``) does not change the plan."""
    later = datetime.now(UTC) + timedelta(hours=1)
    async with planner(backlog.dsn, plan_cache_mode) as conn:
        plan = await explain(conn, Q.job_claim_batch, **claim_args(backlog, now=later))
    assert claim_plan_problems(plan) == [], json.dumps(plan, indent=1)


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
async def test_the_lease_functions_are_inlined_into_the_claim(
    backlog: Backlog, plan_cache_mode: str
) -> None:
    """pgqueue_lease_token / pgqueue_lease_until (migration 0018) are one-expression
    SQL functions: the plan computes their expressions, it calls no function."""
    args = Q.job_claim_batch.arguments((), claim_args(backlog))
    async with planner(backlog.dsn, plan_cache_mode) as conn:
        rows = await conn.fetch("EXPLAIN (VERBOSE) " + Q.job_claim_batch.sql, *args)
    text = "\n".join(row[0] for row in rows)
    assert "md5(" in text, text
    assert "pgqueue_lease_" not in text, text


async def test_the_plan_check_rejects_a_claim_without_its_index(backlog: Backlog) -> None:
    async with planner(backlog.dsn) as conn:
        tx = conn.transaction()
        await tx.start()
        try:
            await conn.execute("DROP INDEX pgqueue_jobs_claim_idx")
            plan = await explain(conn, Q.job_claim_batch, **claim_args(backlog))
        finally:
            await tx.rollback()
    assert claim_plan_problems(plan) != []


async def test_the_lease_expiry_scan_uses_the_lease_index(backlog: Backlog) -> None:
    async with planner(backlog.dsn) as conn:
        plan = await explain(
            conn, Q.job_lock_expired_leases, namespace=NAMESPACE, limit=500, now=None
        )
    assert scans_of_jobs(plan) == ["Index Scan pgqueue_jobs_active_idx"], json.dumps(plan, indent=1)
    assert any(n["Node Type"] == "LockRows" for n in walk(plan))


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
async def test_the_lease_expiry_scan_keeps_the_lease_index_under_a_moved_clock(
    backlog: Backlog, plan_cache_mode: str
) -> None:
    """The injected clock (``coalesce($3, statement_timestamp())``) does not change the plan."""
    later = datetime.now(UTC) + timedelta(hours=1)
    async with planner(backlog.dsn, plan_cache_mode) as conn:
        plan = await explain(
            conn, Q.job_lock_expired_leases, namespace=NAMESPACE, limit=500, now=later
        )
    assert scans_of_jobs(plan) == ["Index Scan pgqueue_jobs_active_idx"], json.dumps(plan, indent=1)


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
async def test_the_claim_passes_over_delayed_jobs_inside_the_claim_index(
    backlog: Backlog, plan_cache_mode: str
) -> None:
    """Delayed jobs of a higher priority sort ahead of due ones in the claim index:
    the claim bounds the index's sort_key by "now", so they are rejected from the
    index entry, without a visit to their heap rows (scripts/bench_backlog.py,
    queue ``scheduled``)."""
    async with planner(backlog.dsn, plan_cache_mode) as conn:
        plan = await explain(conn, Q.job_claim_batch, **claim_args(backlog))
    [scan] = [n for n in walk(plan) if n.get("Index Name") == "pgqueue_jobs_claim_idx"]
    assert "sort_key <=" in scan["Index Cond"], json.dumps(scan, indent=1)
