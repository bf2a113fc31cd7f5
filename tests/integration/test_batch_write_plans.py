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
from tests.helpers import (
    Plan,
    claims_among_unanalyzed,
    explain,
    planner,
    reads_of_jobs,
    uncommitted_renewal,
    until_waiting_on_a_lock,
)

BATCH = 50
BACKLOG = 2_000
MODES = ["force_custom_plan", "force_generic_plan"]


async def _claimed(manager: PostgresQueueManager, db_dsn: str) -> list[Any]:
    return await claims_among_unanalyzed(manager, db_dsn, backlog=BACKLOG, batch=BATCH)


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
    assert reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


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
    assert reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


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
    assert reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


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
    assert reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


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
    requeuer = await asyncpg.connect(db_dsn)
    try:
        async with uncommitted_renewal(db_dsn, manager.namespace, claim.id) as renewal:
            requeue = asyncio.ensure_future(requeuer.fetch(query.sql, *args))
            await until_waiting_on_a_lock(db_dsn, requeue, "requeue")
            await renewal.commit()
            rows = await requeue
    finally:
        await requeuer.close()
    assert [r["id"] for r in rows] == [claim.id]
    assert await manager.get_state(claim.id) == "delayed"
