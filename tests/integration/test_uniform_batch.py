"""A batch whose jobs differ only in id and data takes job_insert_uniform (two arrays,
the event payload built once, one row back); it must write the rows and events the
general batch statement writes, for every option a uniform batch can carry."""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.db.executor import Row
from pgqueue.db.queries import Q, Query
from pgqueue.runtime import PostgresQueueManager
from tests.helpers import sql
from tests.integration.test_queue_registry import _COLUMNS, _OPTIONS

_EVENTS = "SELECT type, payload::text FROM pgqueue_events WHERE namespace = $1 AND job_id = $2"


def _watch(manager: PostgresQueueManager, monkeypatch: pytest.MonkeyPatch) -> list[Query]:
    """The insert statements ``manager`` runs from now on."""
    seen: list[Query] = []
    fetch, fetchrow = manager.ctx.db.fetch, manager.ctx.db.fetchrow

    async def fetching(query: Query, /, *args: Any, **params: Any) -> list[Row]:
        seen.append(query)
        return await fetch(query, *args, **params)

    async def fetching_row(query: Query, /, *args: Any, **params: Any) -> Row | None:
        seen.append(query)
        return await fetchrow(query, *args, **params)

    monkeypatch.setattr(manager.ctx.db, "fetch", fetching)
    monkeypatch.setattr(manager.ctx.db, "fetchrow", fetching_row)
    return seen


@pytest.mark.parametrize("opts", _OPTIONS)
async def test_a_uniform_batch_writes_the_rows_and_events_of_a_mixed_batch(
    manager: PostgresQueueManager,
    db_dsn: str,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    opts: dict[str, Any],
) -> None:
    seen = _watch(manager, monkeypatch)
    data = {"text": "é\u2028", "n": [1, 2.5, None]}
    uniform = await manager.push_bulk(
        "uniform", [{"name": "n", "data": data, **opts}, {"name": "n", "data": 0, **opts}]
    )
    assert Q.job_insert_uniform in seen and Q.job_insert_fresh not in seen
    mixed = await manager.push_bulk(
        "mixed", [{"name": "n", "data": data, **opts}, {"name": "other", "data": 0}]
    )
    assert Q.job_insert_fresh in seen
    query = f"SELECT {_COLUMNS} FROM pgqueue_jobs WHERE namespace = $1 AND id = $2"
    [one] = await sql(db_dsn, query, namespace, uniform[0])
    [two] = await sql(db_dsn, query, namespace, mixed[0])
    assert dict(one) == dict(two), opts
    assert [tuple(r) for r in await sql(db_dsn, _EVENTS, namespace, uniform[0])] == [
        tuple(r) for r in await sql(db_dsn, _EVENTS, namespace, mixed[0])
    ]
    [second] = await sql(db_dsn, "SELECT data::text FROM pgqueue_jobs WHERE id = $1", uniform[1])
    assert second["data"] == "0"


async def test_a_uniform_batch_keeps_its_order_and_hints_its_events(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await manager.push_bulk("order", [{"name": "n", "data": i} for i in range(50)])
    rows = await sql(
        db_dsn,
        "SELECT j.id, j.data::text, e.id AS event FROM pgqueue_jobs j"
        " JOIN pgqueue_events e ON e.job_id = j.id AND e.type = 'pushed'"
        " WHERE j.namespace = $1 ORDER BY e.id",
        namespace,
    )
    assert [r["id"] for r in rows] == ids
    assert [r["data"] for r in rows] == [str(i) for i in range(50)]
    claims = await manager.pull_batch("order", 50)
    assert [c.id for c in claims] == ids


async def test_the_same_data_for_every_job_of_a_batch_is_stored_for_each(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await manager.push_bulk("same", [{"name": "n", "data": {"a": 1}}] * 3)
    rows = await sql(db_dsn, "SELECT data::text FROM pgqueue_jobs WHERE namespace = $1", namespace)
    assert len(set(ids)) == 3 and [r["data"] for r in rows] == ['{"a":1}'] * 3
