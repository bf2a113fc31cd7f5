"""The brokers of a namespace as ``pgqueue brokers`` shows them: live, stale,
draining, and which one holds the maintenance seat."""

from __future__ import annotations

from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import sql


async def test_every_session_is_listed_with_the_leader_and_its_liveness(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a", run_maintenance=True) as a,
        start_manager(db_dsn, namespace, broker_id="b", run_maintenance=False) as b,
    ):

        async def a_leads() -> bool:
            rows = {r["brokerId"]: r for r in await b.list_brokers()}
            return rows["a"]["leader"] and not rows["b"]["leader"]

        await eventually(a_leads, timeout=10)
        rows = {r["brokerId"]: r for r in await b.list_brokers()}
        assert set(rows) == {"a", "b"}
        assert rows["b"]["self"] and not rows["a"]["self"]
        assert all(r["live"] and not r["draining"] for r in rows.values())
        await sql(
            db_dsn,
            "UPDATE pgqueue_brokers SET heartbeat_at = clock_timestamp() - interval '1 hour'"
            " WHERE namespace = $1 AND broker_id = 'a'",
            namespace,
        )
        stale = {r["brokerId"]: r for r in await b.list_brokers()}
        assert not stale["a"]["live"] and stale["a"]["silentMs"] >= 3_600_000
        assert a.broker_id == "a"


async def test_a_draining_broker_is_shown_draining_to_the_others(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="leaving") as leaving,
        start_manager(db_dsn, namespace, broker_id="staying") as staying,
    ):
        await leaving.mark_draining()
        rows = {r["brokerId"]: r for r in await staying.list_brokers()}
        assert rows["leaving"]["draining"] and rows["leaving"]["drainingSince"] is not None
        assert not rows["staying"]["draining"]
