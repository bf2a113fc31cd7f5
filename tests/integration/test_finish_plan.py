"""The ACK statement's plan: the id range of the events it wrote (its hint) is
read once per statement, not once per finished job (a nested loop that
re-aggregated the events for each row of the final join cost ~20 % of the
statement for a batch of 50), with custom and with generic plans."""

from __future__ import annotations

import json

import pytest

from pgqueue.db.queries import Q
from pgqueue.manager.completion import completion_rows
from pgqueue.manager.models import AckItem
from pgqueue.manager.write_rows import FinishRow, column_arrays
from pgqueue.runtime import PostgresQueueManager
from tests.helpers import explain, planner, walk

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
