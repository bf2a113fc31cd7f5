"""Admission: push, bulk push, custom ids and unique keys, bad input."""

from __future__ import annotations

import asyncio
import re

import pytest

from pgqueue.errors import DependencyNotFound, ValidationError
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import clock_ahead, count_rows, events_of, sql, sql_value

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


async def test_push_returns_a_uuid7_and_the_job_is_waiting(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("emails", "welcome", {"to": "a@example.com"})
    assert UUID7.match(job_id)
    job = await manager.get_job(job_id)
    assert job is not None
    assert (job.queue, job.name, job.data, job.state) == (
        "emails",
        "welcome",
        {"to": "a@example.com"},
        "waiting",
    )
    assert job.attempts == 0 and job.max_attempts == 3


async def test_push_writes_its_outbox_event_in_the_same_transaction(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("emails", "welcome", None)
    assert await events_of(db_dsn, namespace, job_id) == ["pushed"]


async def test_bulk_push_keeps_input_order_and_writes_one_event_per_job(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await manager.push_bulk("bulk", [{"name": "n", "data": i} for i in range(300)])
    assert len(set(ids)) == 300
    assert ids == sorted(ids), "UUIDv7 ids of one batch increase in input order"
    datas = [(await manager.get_job(job_id)).data for job_id in ids[:5]]  # type: ignore[union-attr]
    assert datas == [0, 1, 2, 3, 4]
    assert await count_rows(db_dsn, "pgqueue_events", namespace) == 300


async def test_bulk_push_is_all_or_nothing_on_bad_input(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    jobs = [{"name": "ok", "data": 1}, {"name": "bad", "data": {"x": float("nan")}}]
    with pytest.raises(ValidationError, match=r"jobs\[1\]"):
        await manager.push_bulk("bulk", jobs)
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0
    assert await count_rows(db_dsn, "pgqueue_events", namespace) == 0


async def test_bulk_push_is_all_or_nothing_when_a_dependency_is_missing(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    jobs = [{"name": "a", "data": 1}, {"name": "b", "data": 2, "depends_on": ["no-such-job"]}]
    with pytest.raises(DependencyNotFound, match="Dependency job not found: no-such-job"):
        await manager.push_bulk("bulk", jobs)
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0


async def test_repushing_a_custom_id_returns_the_live_job(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    first = await manager.push("q", "a", {"v": 1}, job_id="order-42")
    second = await manager.push("q", "a", {"v": 2}, job_id="order-42")
    assert first == second == "order-42"
    job = await manager.get_job("order-42")
    assert job is not None and job.data == {"v": 1}
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 1
    assert await events_of(db_dsn, namespace, "order-42") == ["pushed", "duplicated"]


async def test_custom_id_inside_one_batch_makes_one_job(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await manager.push_bulk(
        "q", [{"name": "a", "data": i, "job_id": "same"} for i in range(3)]
    )
    assert ids == ["same", "same", "same"]
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 1


async def test_custom_id_of_a_removed_finished_job_starts_a_new_generation(
    manager: PostgresQueueManager,
) -> None:
    await manager.push("q", "a", 1, job_id="gen")
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(claim.id, claim.token, "first")
    assert await manager.get_state("gen") == "completed"
    assert await manager.push("q", "a", 2, job_id="gen") == "gen"
    assert await manager.get_state("gen") == "completed", "retained: the push returns it"
    await manager.remove("gen")
    assert await manager.push("q", "a", 2, job_id="gen") == "gen"
    job = await manager.get_job("gen")
    assert job is not None and (job.state, job.data) == ("waiting", 2)


async def test_concurrent_custom_id_pushes_through_two_managers_make_one_job(
    db_dsn: str, namespace: str
) -> None:
    """G4: the same custom id pushed at once to two brokers admits exactly one job."""
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        for round_no in range(40):
            custom = f"race-{round_no}"
            results = await asyncio.gather(
                *[m.push("race", "j", {"by": i}, job_id=custom) for i, m in enumerate([a, b] * 3)]
            )
            assert set(results) == {custom}
        rows = await sql(
            db_dsn,
            "SELECT id, count(*) FROM pgqueue_jobs WHERE namespace = $1 GROUP BY id",
            namespace,
        )
        assert len(rows) == 40 and all(row["count"] == 1 for row in rows)
        pushed = await sql_value(
            db_dsn,
            "SELECT count(*) FROM pgqueue_events WHERE namespace = $1 AND type = 'pushed'",
            namespace,
        )
        assert pushed == 40


async def test_unique_key_rejects_a_second_live_job_and_returns_the_owner(
    manager: PostgresQueueManager,
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="user-7")
    other = await manager.push("q", "a", 2, unique_key="user-7")
    assert other == owner
    [claim] = await manager.pull_batch("q", 5)
    await manager.ack(claim.id, claim.token)
    third = await manager.push("q", "a", 3, unique_key="user-7")
    assert third != owner, "the key is free again once its owner finished"


async def test_unique_key_replace_swaps_a_pending_owner(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k")
    new = await manager.push("q", "a", 2, unique_key="k", dedup={"replace": True})
    assert new != owner
    assert await manager.get_state(owner) == "unknown"
    job = await manager.get_job(new)
    assert job is not None and job.data == 2
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 1


async def test_unique_key_extend_refreshes_the_owner_ttl(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k", dedup={"ttl": 1000, "extend": True})
    before = await sql_value(
        db_dsn,
        "SELECT unique_expires_at FROM pgqueue_jobs WHERE namespace=$1 AND id=$2",
        namespace,
        owner,
    )
    again = await manager.push("q", "a", 2, unique_key="k", dedup={"ttl": 60000, "extend": True})
    after = await sql_value(
        db_dsn,
        "SELECT unique_expires_at FROM pgqueue_jobs WHERE namespace=$1 AND id=$2",
        namespace,
        owner,
    )
    assert again == owner and after > before


async def test_expired_unique_key_no_longer_blocks(manager: PostgresQueueManager) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k", dedup={"ttl": 60000})
    later = clock_ahead(60_001)
    spec = manager.job_spec("q", "a", 2, unique_key="k")
    assert (await manager.push_specs([spec], now=later))[0] != owner


@pytest.mark.parametrize(
    ("queue", "name", "data", "opts", "field"),
    [
        ("", "n", 1, {}, "queue"),
        ("x" * 257, "n", 1, {}, "queue"),
        ("bad queue", "n", 1, {}, "queue"),
        ("bad\x00queue", "n", 1, {}, "queue"),
        ("q", "", 1, {}, "name"),
        ("q", "line\nbreak", 1, {}, "name"),
        ("q", "n", {"x": object()}, {}, "data"),
        ("q", "n", float("inf"), {}, "data"),
        ("q", "n", "nul\x00char", {}, "data"),
        ("q", "n", 1, {"delay": -1}, "delay"),
        ("q", "n", 1, {"attempts": 0}, "attempts"),
        ("q", "n", 1, {"attempts": "3"}, "attempts"),
        ("q", "n", 1, {"priority": 1.5}, "priority"),
        ("q", "n", 1, {"backoff": {"type": "linear", "delay": 10}}, "backoff"),
        ("q", "n", 1, {"lifo": "true"}, "lifo"),
        ("q", "n", 1, {"job_id": ["a"]}, "job_id"),
        ("q", "n", 1, {"job_id": {"a": 1}}, "job_id"),
        ("q", "n", 1, {"no_such_option": 1}, "no_such_option"),
    ],
)
async def test_bad_input_gets_an_error_naming_the_field_and_writes_nothing(
    manager: PostgresQueueManager,
    db_dsn: str,
    namespace: str,
    queue: str,
    name: str,
    data: object,
    opts: dict[str, object],
    field: str,
) -> None:
    with pytest.raises(ValidationError) as info:
        await manager.push(queue, name, data, **opts)
    assert info.value.field == field
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0
    assert await count_rows(db_dsn, "pgqueue_events", namespace) == 0


async def test_oversized_payload_is_refused_with_the_configured_limit(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(db_dsn, namespace, max_payload_bytes=2048) as m:
        with pytest.raises(ValidationError, match="too large") as info:
            await m.push("q", "n", {"blob": "x" * 4096})
        assert info.value.field == "data"
        assert await m.push("q", "n", {"blob": "x" * 1000})
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 1
