"""Broker sessions and leases: takeover, fencing, graceful release (G3, G6)."""

from __future__ import annotations

import pytest

from pgqueue.errors import BrokerFenced, BrokerIdInUse, LeaseLost
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import expire_lease, sql, sql_value


async def _make_stale(dsn: str, namespace: str, broker_id: str) -> None:
    await sql(
        dsn,
        "UPDATE pgqueue_brokers SET heartbeat_at = clock_timestamp() - interval '1 hour'"
        " WHERE namespace = $1 AND broker_id = $2",
        namespace,
        broker_id,
    )


async def test_a_live_broker_id_cannot_be_taken_twice(db_dsn: str, namespace: str) -> None:
    async with start_manager(db_dsn, namespace, broker_id="dup"):
        with pytest.raises(BrokerIdInUse, match='broker id "dup" is already active'):
            async with start_manager(db_dsn, namespace, broker_id="dup"):
                pass


async def test_a_stale_broker_id_is_taken_over_and_the_old_session_is_fenced(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(db_dsn, namespace, broker_id="x") as old:
        job_id = await old.push("q", "n", 1)
        [claim] = await old.pull_batch("q", 1)
        await _make_stale(db_dsn, namespace, "x")
        async with start_manager(db_dsn, namespace, broker_id="x") as new:
            assert new.session.session_id != old.session.session_id
            await old.push("q", "n", 2)
            with pytest.raises(BrokerFenced):
                await old.pull_batch("q", 1)
            assert old.session.fenced.is_set()
            with pytest.raises(BrokerFenced):
                await old.extend_leases([(job_id, claim.token)], 30_000)
            with pytest.raises(BrokerFenced):
                await old.ack(job_id, claim.token)
            assert await new.get_state(job_id) == "active", "a fenced broker changed nothing"
            [fresh] = await new.pull_batch("q", 1)
            assert fresh.data == 2


async def test_heartbeat_notices_a_takeover(db_dsn: str, namespace: str) -> None:
    async with start_manager(db_dsn, namespace, broker_id="hb") as old:
        await _make_stale(db_dsn, namespace, "hb")
        async with start_manager(db_dsn, namespace, broker_id="hb"):
            await old.session.heartbeat()
            assert old.session.fenced.is_set()


async def test_a_job_pulled_through_one_broker_can_be_acked_through_another(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        job_id = await a.push("q", "n", 1)
        [claim] = await a.pull_batch("q", 1)
        await b.heartbeat(job_id, claim.token, 60_000)
        await b.ack(job_id, claim.token, "via b")
        assert await a.get_result(job_id) == "via b"


async def test_graceful_close_releases_the_brokers_leases_at_once(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(db_dsn, namespace, broker_id="other") as other:
        async with start_manager(db_dsn, namespace, broker_id="leaving") as leaving:
            ids = await leaving.push_bulk("q", [{"name": "n", "data": i} for i in range(3)])
            await leaving.pull_batch("q", 3)
        states = {await other.get_state(job_id) for job_id in ids}
        assert states == {"waiting"}
        assert (
            await sql_value(
                db_dsn,
                "SELECT count(*) FROM pgqueue_brokers WHERE namespace=$1 AND broker_id=$2",
                namespace,
                "leaving",
            )
            == 0
        )
        claims = await other.pull_batch("q", 3)
        assert sorted(c.id for c in claims) == sorted(ids)
        assert all(c.attempts == 0 for c in claims), "a release consumes no attempt"


async def test_heartbeat_extends_the_lease_and_stale_heartbeats_are_rejected(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1, lock_ttl_ms=1000)
    outcomes = await manager.extend_leases([(job_id, claim.token), ("nope", "1:x")], 120_000)
    assert [o.applied for o in outcomes] == [True, False]
    remaining = await sql_value(
        db_dsn,
        "SELECT extract(epoch FROM lease_until - clock_timestamp()) FROM pgqueue_jobs"
        " WHERE id = $1",
        job_id,
    )
    assert 100 < remaining <= 120
    await expire_lease(db_dsn, namespace, job_id)
    with pytest.raises(LeaseLost):
        await manager.heartbeat(job_id, claim.token)


async def test_lease_never_extends_past_the_job_timeout(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    job_id = await manager.push("q", "n", 1, timeout=2000)
    [claim] = await manager.pull_batch("q", 1, lock_ttl_ms=30_000)
    await manager.heartbeat(job_id, claim.token, 60_000)
    span = await sql_value(
        db_dsn,
        "SELECT extract(epoch FROM lease_until - started_at) * 1000 FROM pgqueue_jobs"
        " WHERE id = $1",
        job_id,
    )
    assert span == pytest.approx(2000, abs=1)


async def test_release_gives_a_job_back_without_consuming_an_attempt(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1)
    [outcome] = await manager.release([(job_id, claim.token)])
    assert outcome.applied
    [again] = await manager.pull_batch("q", 1)
    assert again.id == job_id and again.attempts == 0 and again.fence == claim.fence + 1


async def test_a_heartbeat_on_a_fresh_lease_counts_without_rewriting_the_row(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    [claim] = await manager.pull_batch("q", 1, lock_ttl_ms=60_000)
    before = await sql_value(db_dsn, "SELECT xmin::text FROM pgqueue_jobs WHERE id = $1", job_id)
    [outcome] = await manager.extend_leases([(job_id, claim.token)], 60_000)
    assert outcome.applied
    after = await sql_value(db_dsn, "SELECT xmin::text FROM pgqueue_jobs WHERE id = $1", job_id)
    assert after == before, "no new row version: an ack in flight is not made to wait"
    [stale] = await manager.extend_leases([(job_id, "1:wrong")], 60_000)
    assert not stale.applied
