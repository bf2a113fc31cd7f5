"""A claim statement writes one ``claimed`` tally row instead of its jobs' ``active``
events while a broker counts the claims and nobody wants the events (migration 0029);
only a subscription that asks for tallies ever gets those rows."""

from __future__ import annotations

from typing import Any

from pgqueue.maintenance.webhook_delivery import fan_out_once
from pgqueue.manager.webhooks.policy import WEBHOOK_EVENTS
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import sql
from tests.integration.test_active_interest import take
from tests.integration.webhooks_support import FAST, webhook_manager


async def tallies(dsn: str, namespace: str) -> list[tuple[str, str, Any, str | None]]:
    rows = await sql(
        dsn,
        "SELECT queue, type, job_id, payload::text AS payload FROM pgqueue_events"
        " WHERE namespace = $1 AND type IN ('active', 'claimed') ORDER BY id",
        namespace,
    )
    return [(r["queue"], r["type"], r["job_id"], r["payload"]) for r in rows]


async def test_without_a_counting_broker_a_claim_writes_no_tally(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    for i in range(3):
        await manager.push("q", "n", i)
    assert len(await manager.pull_batch("q", 3)) == 3
    assert await tallies(db_dsn, namespace) == []


async def test_a_counting_broker_gets_one_tally_per_claim_statement(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="counter") as counter,
        start_manager(db_dsn, namespace, broker_id="worker") as worker,
    ):
        plain = await counter.subscribe_events(None, active=False)
        tallied = await counter.subscribe_events(None, active=False, tallies=True)
        for i in range(4):
            await worker.push("q", "n", i)
        assert len(await worker.pull_batch("q", 3)) == 3
        assert len(await worker.pull_batch("q", 3)) == 1
        assert await worker.pull_batch("q", 3) == []  # nothing claimed: no row
        assert await tallies(db_dsn, namespace) == [
            ("q", "claimed", None, '{"count" : 3}'),
            ("q", "claimed", None, '{"count" : 1}'),
        ]
        marker = await worker.push("q", "n", "last")
        seen = await take(plain, 5)
        assert [e.type for e in seen] == ["pushed"] * 5
        assert seen[-1].job_id == marker
        got = await take(tallied, 7)
        assert [(e.type, e.payload) for e in got if e.type == "claimed"] == [
            ("claimed", {"count": 3}),
            ("claimed", {"count": 1}),
        ]
        # A subscriber reading what it missed from the database skips them too.
        resumed = await counter.subscribe_events(None, after=seen[0].resume, active=False)
        again = await take(resumed, 4)
        assert [e.type for e in again] == ["pushed"] * 4
        assert again[-1].job_id == marker
        for sub in (plain, tallied, resumed):
            sub.close()


async def test_a_claim_whose_events_someone_wants_writes_them_and_no_tally(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="counter") as counter,
        start_manager(db_dsn, namespace, broker_id="worker") as worker,
    ):
        await counter.want_claim_tallies()
        await counter.want_active_events("seen")
        seen = await worker.push("seen", "n", 1)
        await worker.push("other", "n", 1)
        await worker.pull_batch("seen", 5)
        await worker.pull_batch("other", 5)
        assert await tallies(db_dsn, namespace) == [
            ("seen", "active", seen, '{"broker": "worker", "attempt": 1}'),
            ("other", "claimed", None, '{"count" : 1}'),
        ]


async def test_the_planned_claim_writes_the_tally_too(db_dsn: str, namespace: str) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="counter") as counter,
        start_manager(db_dsn, namespace, broker_id="worker") as worker,
    ):
        await counter.want_claim_tallies()
        await worker.set_concurrency("limited", 5)
        for i in range(3):
            await worker.push("limited", "n", i)
        assert len(await worker.pull_batch("limited", 2)) == 2  # pgqueue_claim_planned
        await counter.want_active_events("limited")
        assert len(await worker.pull_batch("limited", 2)) == 1
        rows = await tallies(db_dsn, namespace)
        assert [(r[1], r[3]) for r in rows] == [
            ("claimed", '{"count" : 2}'),
            ("active", '{"broker": "worker", "attempt": 1}'),
        ]


async def test_a_broker_serving_tallies_holds_the_tally_interest_only(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    await manager.want_active_events(None)
    await manager.want_claim_tallies()  # '' does not cover the count: held apart
    rows = await sql(
        db_dsn,
        "SELECT queue FROM pgqueue_event_interest WHERE namespace = $1 ORDER BY queue",
        namespace,
    )
    assert sorted(r["queue"] for r in rows) == ["", "*"]


async def test_no_webhook_gets_a_tally(db_dsn: str, namespace: str) -> None:
    async with webhook_manager(db_dsn, namespace) as m:
        every = [e for e in WEBHOOK_EVENTS if e != "job.started"]  # job.started: events
        hook = await m.add_webhook("http://127.0.0.1:9/hook", every)
        await m.want_claim_tallies()
        await m.push("q", "n", 1)
        assert len(await m.pull_batch("q", 5)) == 1
        assert [r[1] for r in await tallies(db_dsn, namespace)] == ["claimed"]
        report = await fan_out_once(m.ctx, FAST)
        assert (report.read, report.queued) == (2, 1)  # pushed and the tally: one delivery
        [delivery] = await m.list_deliveries(hook.id)
        assert delivery.event == "job.pushed"
