"""Webhooks through ``pgqueue serve`` brokers (real processes): delivered by the
leader, and still delivered after the leader is killed with -9.

These need the engine to run the delivery service and Config to have
``webhook_allow_private`` (``--set webhook_allow_private=true`` lets the brokers
reach the receiver on 127.0.0.1); they are skipped until then."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable

import pytest

from pgqueue.client.connection import Connection
from pgqueue.config import Config
from pgqueue.manager.webhooks.ops import WebhookOps
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.helpers import sql, sql_value
from tests.integration.webhooks_support import Received, Receiver

pytestmark = pytest.mark.skipif(
    not issubclass(PostgresQueueManager, WebhookOps)
    or "webhook_allow_private" not in Config.__dataclass_fields__,
    reason="webhook delivery is not wired into the engine yet",
)

SETTINGS = ("--set", "webhook_allow_private=true", "--set", "leader_ttl_ms=2000")


async def _leader(dsn: str, namespace: str) -> str | None:
    return await sql_value(  # type: ignore[no-any-return]
        dsn,
        "SELECT broker_id FROM pgqueue_leaders"
        " WHERE namespace = $1 AND name = 'maintenance' AND expires_at > clock_timestamp()",
        namespace,
    )


async def test_a_serve_broker_delivers_webhooks_registered_on_another(
    brokers: BrokerFactory,
) -> None:
    a, b = brokers.start("a", *SETTINGS, http=False), brokers.start("b", *SETTINGS, http=False)
    async with Receiver() as r:
        ca = await Connection.open("127.0.0.1", a.tcp_port)
        cb = await Connection.open("127.0.0.1", b.tcp_port)
        try:
            await ca.call("AddWebhook", {"url": r.url, "events": ["job.pushed"], "secret": "k"})
            pushed = await cb.call("PUSH", {"queue": "q", "name": "n", "data": 1})
            await eventually(lambda: len(r.requests) == 1, timeout=20)
            assert r.events() == [("job.pushed", pushed["id"])]
        finally:
            await ca.close()
            await cb.close()


@pytest.mark.slow
async def test_webhooks_survive_a_kill_9_of_the_leading_broker(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    """The default delivery lease is 30 s: the dead leader's claims come back after it."""
    killed = asyncio.Event()

    def answer(request: Received) -> Awaitable[int] | int:
        if killed.is_set() or len(r.requests) <= 2:
            return 200
        return _after(killed, 200)

    started = [brokers.start(name, *SETTINGS, http=False) for name in ("a", "b")]
    async with Receiver(answer) as r:
        leader_id = await eventually(lambda: _leader(db_dsn, namespace), timeout=20)
        by_name: dict[str, BrokerProcess] = {p.name: p for p in started}
        survivor = next(p for p in started if p.name != leader_id)
        c = await Connection.open("127.0.0.1", survivor.tcp_port)
        try:
            await c.call("AddWebhook", {"url": r.url, "events": ["job.pushed"]})
            jobs = [{"name": "n", "data": i} for i in range(10)]
            before = (await c.call("PUSHB", {"queue": "q", "jobs": jobs}))["ids"]
            await eventually(lambda: len(r.requests) > 3, timeout=20)
            by_name[str(leader_id)].kill()
            killed.set()
            after = (await c.call("PUSHB", {"queue": "q", "jobs": jobs}))["ids"]
            expected = {("job.pushed", job_id) for job_id in before + after}

            async def all_delivered() -> bool:
                rows = await sql(
                    db_dsn,
                    "SELECT status FROM pgqueue_webhook_deliveries WHERE namespace = $1",
                    namespace,
                )
                return len(rows) == len(expected) and {x["status"] for x in rows} == {"delivered"}

            await eventually(all_delivered, timeout=90, interval=0.2)
        finally:
            await c.close()
    assert set(r.events()) == expected
    ids: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for request in r.requests:
        ids[(request.json["event"], request.json["jobId"])].add(request.delivery_id)
    assert all(len(delivery_ids) == 1 for delivery_ids in ids.values())


async def _after(event: asyncio.Event, status: int) -> int:
    await event.wait()
    return status
