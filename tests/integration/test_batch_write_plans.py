"""The plans of the batch writes keyed by (namespace, id) arrays without planner
statistics (autovacuum off: ``pgqueue_jobs`` never analyzed, as in the peers'
harness or after a bulk load): each reads its own jobs by primary-key probes, not a
scan of the whole namespace joined to its input, in custom and in generic plans."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg
import pytest

from pgqueue.db.queries import Q, Query
from pgqueue.manager.write_rows import RequeueRow, column_arrays
from pgqueue.runtime import PostgresQueueManager
from tests.helpers import Plan, explain, planner, sql_value, walk

BATCH = 50
BACKLOG = 2_000
MODES = ["force_custom_plan", "force_generic_plan"]


def _reads_of_jobs(plan: Plan) -> int:
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


async def _claimed(manager: PostgresQueueManager, db_dsn: str) -> list[Any]:
    await manager.push_bulk("emails", [{"name": "job", "data": {"n": i}} for i in range(BACKLOG)])
    claims = await manager.pull_batch("emails", BATCH)
    assert len(claims) == BATCH
    stats = await sql_value(db_dsn, "SELECT reltuples FROM pg_class WHERE relname = 'pgqueue_jobs'")
    assert stats < 0, "the table must not have been analyzed for this test to mean anything"
    return claims


async def _plan(db_dsn: str, mode: str, query: Query, **params: Any) -> Plan:
    async with planner(db_dsn, mode) as conn:
        return await explain(conn, query, analyze=True, **params)


def _session(manager: PostgresQueueManager) -> dict[str, Any]:
    return {
        "namespace": manager.namespace,
        "broker_id": manager.broker_id,
        "session_id": str(manager.session.session_id),
    }


def _fence(token: str) -> int:
    return int(token.split(":", 1)[0])


@pytest.mark.parametrize("plan_cache_mode", MODES)
async def test_lease_renewals_read_only_their_own_jobs(
    manager: PostgresQueueManager, db_dsn: str, plan_cache_mode: str
) -> None:
    claims = await _claimed(manager, db_dsn)
    plan = await _plan(
        db_dsn,
        plan_cache_mode,
        Q.job_extend_leases,
        ids=[c.id for c in claims],
        tokens=[c.token for c in claims],
        durations_ms=[60_000] * BATCH,  # more than 3/4 of a default lease: written
        **_session(manager),
    )
    assert plan["Actual Rows"] == BATCH, json.dumps(plan, indent=1)
    # A probe per element and the update of each: 3 rows per job at most.
    assert _reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


@pytest.mark.parametrize("plan_cache_mode", MODES)
async def test_the_failure_lock_reads_only_its_own_jobs(
    manager: PostgresQueueManager, db_dsn: str, plan_cache_mode: str
) -> None:
    claims = await _claimed(manager, db_dsn)
    plan = await _plan(
        db_dsn,
        plan_cache_mode,
        Q.job_lock_for_failure,
        ids=[c.id for c in claims],
        tokens=[c.token for c in claims],
        **_session(manager),
    )
    assert plan["Actual Rows"] == BATCH, json.dumps(plan, indent=1)
    assert _reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


@pytest.mark.parametrize("plan_cache_mode", MODES)
async def test_requeues_read_only_their_own_jobs(
    manager: PostgresQueueManager, db_dsn: str, plan_cache_mode: str
) -> None:
    claims = await _claimed(manager, db_dsn)
    rows = [
        RequeueRow(
            id=c.id,
            fence=_fence(c.token),
            expected_state="active",
            event_type="retrying",
            event_payload={"jobId": c.id},
            delay_ms=1_000,
            attempts_inc=1,
            token=c.token,
        )
        for c in claims
    ]
    plan = await _plan(
        db_dsn,
        plan_cache_mode,
        Q.job_requeue_many,
        namespace=manager.namespace,
        **column_arrays(RequeueRow, rows),
    )
    assert plan["Actual Rows"] == BATCH, json.dumps(plan, indent=1)
    assert _reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


@pytest.mark.parametrize("plan_cache_mode", MODES)
async def test_the_outcome_probe_reads_only_its_own_jobs(
    manager: PostgresQueueManager, db_dsn: str, plan_cache_mode: str
) -> None:
    claims = await _claimed(manager, db_dsn)
    plan = await _plan(
        db_dsn,
        plan_cache_mode,
        Q.job_outcome_probe,
        ids=[c.id for c in claims],
        tokens=[c.token for c in claims],
        **_session(manager),
    )
    assert plan["Actual Rows"] == BATCH, json.dumps(plan, indent=1)
    assert _reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


async def test_a_requeue_waiting_on_a_renewal_applies_to_the_renewed_row(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    """The update finds its rows by the tids its snapshot saw; a row a concurrent
    transaction updated (a lease renewal) is followed to its new version, whose
    fence, token and lease are checked again: the requeue applies once the renewal
    commits (and a renewal that moved the fence would make it miss)."""
    await manager.push("emails", "job", {"n": 1})
    [claim] = await manager.pull_batch("emails", 1)
    row = RequeueRow(
        id=claim.id,
        fence=_fence(claim.token),
        expected_state="active",
        event_type="retrying",
        event_payload={"jobId": claim.id},
        delay_ms=60_000,
        attempts_inc=1,
        token=claim.token,
    )
    query = Q.job_requeue_many
    args = query.arguments((), {"namespace": manager.namespace, **column_arrays(RequeueRow, [row])})
    renewal = await asyncpg.connect(db_dsn)
    requeuer = await asyncpg.connect(db_dsn)
    try:
        tx = renewal.transaction()
        await tx.start()
        await renewal.execute(
            "UPDATE pgqueue_jobs SET lease_until = lease_until + interval '1 minute',"
            " last_heartbeat_at = now() WHERE namespace = $1 AND id = $2",
            manager.namespace,
            claim.id,
        )
        requeue = asyncio.ensure_future(requeuer.fetch(query.sql, *args))
        deadline = asyncio.get_running_loop().time() + 10
        while not await sql_value(
            db_dsn,
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'",
        ):
            assert asyncio.get_running_loop().time() < deadline, "the requeue never waited"
            assert not requeue.done(), requeue
            await asyncio.sleep(0.01)
        await tx.commit()
        rows = await requeue
    finally:
        await renewal.close()
        await requeuer.close()
    assert [r["id"] for r in rows] == [claim.id]
    assert await manager.get_state(claim.id) == "delayed"
