"""The workers registry: registrations shared by every broker, liveness on the DB clock."""

from __future__ import annotations

import pytest

from pgqueue.errors import ValidationError
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import clock_ahead, clock_between, sql


async def test_register_worker_answers_in_bunqueue_shape(manager: PostgresQueueManager) -> None:
    worker = await manager.register_worker(
        "w1", "mailer", ["emails", "sms"], concurrency=4, hostname="h", pid=42, client_id="c1"
    )
    assert worker["workerId"] == "w1"
    assert (worker["name"], worker["queues"], worker["concurrency"]) == (
        "mailer",
        ["emails", "sms"],
        4,
    )
    assert (worker["hostname"], worker["pid"], worker["status"]) == ("h", 42, "active")
    assert (worker["activeJobs"], worker["processedJobs"], worker["failedJobs"]) == (0, 0, 0)
    assert worker["registeredAt"] == worker["lastSeen"]
    assert worker["brokerId"] == "broker-a"


async def test_register_worker_without_an_id_gets_a_new_one(
    manager: PostgresQueueManager,
) -> None:
    first = await manager.register_worker(None, "w", ["q"])
    second = await manager.register_worker(None, "w", ["q"])
    assert first["workerId"] != second["workerId"]


async def test_registering_again_updates_the_worker_and_keeps_its_counters(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        first = await a.register_worker("w1", "old", ["q"], client_id="c1")
        await a.worker_heartbeat("w1", processed=7)
        again = await b.register_worker("w1", "new", ["q", "r"], concurrency=2, client_id="c9")
        assert (again["name"], again["queues"], again["concurrency"]) == ("new", ["q", "r"], 2)
        assert again["processedJobs"] == 7
        assert again["registeredAt"] == first["registeredAt"]
        assert again["brokerId"] == "b"
        workers, stats = await a.list_workers()
        assert [w["workerId"] for w in workers] == ["w1"] and stats["total"] == 1


async def test_worker_heartbeat_records_counters_and_refreshes_liveness(
    manager: PostgresQueueManager,
) -> None:
    await manager.register_worker("w1", "w", ["q"], concurrency=3)
    [stale], _ = await manager.list_workers(now=clock_ahead(60_000))
    assert stale["active"] is False
    await manager.worker_heartbeat("w1", active_jobs=2, processed=10, failed=1)
    [fresh], stats = await manager.list_workers()
    assert fresh["active"] is True
    assert (fresh["activeJobs"], fresh["processedJobs"], fresh["failedJobs"]) == (2, 10, 1)
    assert stats == {
        "total": 1,
        "active": 1,
        "totalProcessed": 10,
        "totalFailed": 1,
        "activeJobs": 2,
        "concurrencySlots": 3,
    }


async def test_worker_heartbeat_of_an_unknown_worker_says_worker_not_found(
    manager: PostgresQueueManager,
) -> None:
    with pytest.raises(ValidationError, match=r"^Worker not found$"):
        await manager.worker_heartbeat("ghost")


async def test_list_workers_counts_only_recently_seen_workers_as_active(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.register_worker("gone", "w", ["q"], concurrency=5)
    await manager.worker_heartbeat("gone", processed=4)
    await manager.register_worker("alive", "w", ["q"], concurrency=2)
    seen = {
        row["worker_id"]: row["last_seen"]
        for row in await sql(
            db_dsn,
            "SELECT worker_id, last_seen FROM pgqueue_workers WHERE namespace = $1",
            namespace,
        )
    }
    # 30 s after the middle of the two sightings: "gone" was seen longer ago, "alive" not.
    now = clock_between(seen["gone"], seen["alive"], 30_000)
    workers, stats = await manager.list_workers(now=now)
    assert {w["workerId"]: w["active"] for w in workers} == {"alive": True, "gone": False}
    assert (stats["total"], stats["active"], stats["concurrencySlots"]) == (2, 1, 2)
    assert stats["totalProcessed"] == 4
    assert all(w["uptime"] >= 0 for w in workers)


async def test_unregister_worker_removes_it_once(manager: PostgresQueueManager) -> None:
    await manager.register_worker("w1", "w", ["q"])
    assert await manager.unregister_worker("w1") is True
    assert await manager.unregister_worker("w1") is False
    assert (await manager.list_workers())[0] == []


async def test_unregister_client_workers_removes_only_that_connections_workers_on_this_broker(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        await a.register_worker("w1", "w", ["q"], client_id="conn-1")
        await a.register_worker("w2", "w", ["q"], client_id="conn-1")
        await a.register_worker("w3", "w", ["q"], client_id="conn-2")
        await b.register_worker("w4", "w", ["q"], client_id="conn-1")
        assert await a.unregister_client_workers("conn-1") == 2
        workers, _ = await b.list_workers()
        assert sorted(w["workerId"] for w in workers) == ["w3", "w4"]


async def test_register_worker_validates_its_fields_and_writes_nothing(
    manager: PostgresQueueManager,
) -> None:
    cases = [
        (("w", "", ["q"]), "name"),
        (("w", "n", "q"), "queues"),
        (("w", "n", ["bad queue"]), "queues"),
        (("w", "n", ["q"], 0), "concurrency"),
        (("", "n", ["q"]), "workerId"),
    ]
    for args, field in cases:
        with pytest.raises(ValidationError) as caught:
            await manager.register_worker(*args)  # type: ignore[arg-type]
        assert caught.value.field == field, args
    assert (await manager.list_workers())[0] == []
