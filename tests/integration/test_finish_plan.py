"""The ACK statement's plan: the id range of the events it wrote (its hint) is
read once per statement, not once per finished job (a nested loop that
re-aggregated the events for each row of the final join cost ~20 % of the
statement for a batch of 50), with custom and with generic plans."""

from __future__ import annotations

import asyncio
import json

import pytest

from pgqueue.db.queries import Q
from pgqueue.manager.completion import completion_rows
from pgqueue.manager.models import AckItem
from pgqueue.manager.write_rows import FinishRow, column_arrays
from pgqueue.runtime import PostgresQueueManager
from tests.helpers import (
    claims_among_unanalyzed,
    explain,
    planner,
    reads_of_jobs,
    uncommitted_renewal,
    until_waiting_on_a_lock,
    walk,
)

BATCH = 50


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
async def test_the_ack_statement_reads_its_events_range_once(
    manager: PostgresQueueManager, db_dsn: str, plan_cache_mode: str
) -> None:
    await manager.push_bulk("emails", [{"name": "job", "data": {"n": i}} for i in range(BATCH)])
    claims = await manager.pull_batch("emails", BATCH)
    assert len(claims) == BATCH
    items = [AckItem(job.id, job.token) for job in claims]
    rows = completion_rows(manager.ctx, items)
    async with planner(db_dsn, plan_cache_mode) as conn:
        plan = await explain(
            conn,
            Q.job_finish_many,
            analyze=True,
            namespace=manager.namespace,
            broker_id=manager.broker_id,
            session_id=str(manager.session.session_id),
            skip_with_dependents=True,
            **column_arrays(FinishRow, rows),
        )
    assert plan["Actual Rows"] == BATCH, json.dumps(plan, indent=1)
    reads = [n for n in walk(plan) if n.get("CTE Name") == "events"]
    assert reads and all(n["Actual Loops"] == 1 for n in reads), json.dumps(plan, indent=1)


@pytest.mark.parametrize("plan_cache_mode", ["force_custom_plan", "force_generic_plan"])
async def test_the_ack_statement_reads_only_its_own_jobs_without_statistics(
    manager: PostgresQueueManager, db_dsn: str, plan_cache_mode: str
) -> None:
    """The harness runs with autovacuum off: ``pgqueue_jobs`` is never analyzed, the
    planner believes a namespace holds a few rows, and the delete hash-joined a scan of
    the whole namespace (2,050 rows here) into every ACK of 50."""
    claims = await claims_among_unanalyzed(manager, db_dsn, backlog=2_000, batch=BATCH)
    rows = completion_rows(manager.ctx, [AckItem(job.id, job.token) for job in claims])
    async with planner(db_dsn, plan_cache_mode) as conn:
        plan = await explain(
            conn,
            Q.job_finish_many,
            analyze=True,
            namespace=manager.namespace,
            broker_id=manager.broker_id,
            session_id=str(manager.session.session_id),
            skip_with_dependents=True,
            **column_arrays(FinishRow, rows),
        )
    assert plan["Actual Rows"] == BATCH, json.dumps(plan, indent=1)
    # Two probes per element and the delete of each: 3 rows per job, not the namespace's.
    assert reads_of_jobs(plan) <= 3 * BATCH, json.dumps(plan, indent=1)


async def test_an_ack_waiting_on_a_renewal_applies_to_the_renewed_row(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    """The delete finds its rows by the tids its snapshot saw; a row a concurrent
    transaction updated (a lease renewal) is followed to its new version, whose
    fence, token and lease are checked again: the ACK applies once the renewal commits."""
    await manager.push("emails", "job", {"n": 1})
    [claim] = await manager.pull_batch("emails", 1)
    async with uncommitted_renewal(db_dsn, manager.namespace, claim.id) as renewal:
        ack = asyncio.ensure_future(manager.ack_batch([(claim.id, claim.token, {"ok": 1})]))
        await until_waiting_on_a_lock(db_dsn, ack, "ACK")
        await renewal.commit()
        [outcome] = await ack
    assert outcome.applied, outcome
    assert await manager.get_state(claim.id) == "completed"
    assert await manager.get_result(claim.id) == {"ok": 1}
