"""A batch whose jobs differ only in id and data takes job_insert_uniform (two arrays,
the event payload built once, one row back); it must write the rows and events the
general batch statement writes, for every option a uniform batch can carry."""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.db.executor import Row
from pgqueue.db.queries import Q, Query
from pgqueue.manager.admission import CHUNK_SIZE
from pgqueue.manager.options import PlainSpecs, plain_specs
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


@pytest.mark.parametrize("names", [["n", "n", "n"], ["n", "m", "n"]])
async def test_a_batch_read_from_its_columns_writes_what_its_specs_write(
    manager: PostgresQueueManager, db_dsn: str, namespace: str, names: list[str]
) -> None:
    # plain_specs' PlainSpecs: admission reads their columns, not a spec per job.
    datas: list[Any] = [{"text": "\u00e9\u2028", "n": 2.5, "big": 2**70}, 0, None]
    plain = plain_specs("columns", names, datas, max_payload_bytes=1 << 20)
    specs = plain_specs("specs", names, datas, max_payload_bytes=1 << 20)
    assert type(plain) is PlainSpecs and specs is not None
    by_columns = await manager.push_specs(plain)
    by_specs = await manager.push_specs(list(specs))
    query = f"SELECT {_COLUMNS} FROM pgqueue_jobs WHERE namespace = $1 AND id = $2"
    for one, two in zip(by_columns, by_specs, strict=True):
        [a] = await sql(db_dsn, query, namespace, one)
        [b] = await sql(db_dsn, query, namespace, two)
        assert dict(a) == dict(b)
        assert [tuple(r) for r in await sql(db_dsn, _EVENTS, namespace, one)] == [
            tuple(r) for r in await sql(db_dsn, _EVENTS, namespace, two)
        ]
    rows = await sql(
        db_dsn,
        "SELECT id, data::text FROM pgqueue_jobs WHERE namespace = $1 AND queue = 'columns'"
        " ORDER BY sort_key, id",
        namespace,
    )
    assert [r["id"] for r in rows] == by_columns
    assert [c.id for c in await manager.pull_batch("columns", 3)] == by_columns


async def test_a_batch_read_from_its_columns_past_one_statement_commits_whole(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    # More than admission.CHUNK_SIZE jobs: one transaction of several statements.
    count = CHUNK_SIZE + 7
    plain = plain_specs("long", ["n"] * count, list(range(count)), max_payload_bytes=1024)
    assert type(plain) is PlainSpecs
    ids = await manager.push_specs(plain)
    rows = await sql(
        db_dsn,
        "SELECT j.id, j.data::text, (SELECT count(*) FROM pgqueue_events e"
        " WHERE e.job_id = j.id AND e.type = 'pushed') AS events"
        " FROM pgqueue_jobs j WHERE j.namespace = $1 ORDER BY j.sort_key, j.id",
        namespace,
    )
    assert [r["id"] for r in rows] == ids and len(set(ids)) == count
    assert [r["data"] for r in rows] == [str(i) for i in range(count)]
    assert all(r["events"] == 1 for r in rows)
    query = "SELECT count(DISTINCT xid) AS n FROM pgqueue_events WHERE namespace = $1"
    [one] = await sql(db_dsn, query, namespace)
    assert one["n"] == 1  # one transaction
