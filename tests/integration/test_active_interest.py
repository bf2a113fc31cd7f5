"""A claim writes its ``active`` events only while someone wants them (migration 0027).

Without a subscriber (of any broker) or a webhook of ``job.started``, a claim writes
no outbox row, and what reads counts and timelines still answers right; with one,
every ``active`` event arrives, whichever broker claims; a registration waits out the
claims that may have read the interest before it committed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from pgqueue.db.queries import Q
from pgqueue.manager.outbox import Event, Subscription
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.integration.webhooks_support import WebhookManager, webhook_manager


async def take(sub: Subscription, count: int, timeout: float = 10.0) -> list[Event]:
    async def collect() -> list[Event]:
        return [await sub.get() for _ in range(count)]

    return await asyncio.wait_for(collect(), timeout)


async def stored_types(dsn: str, namespace: str, job_id: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT type FROM pgqueue_events WHERE namespace = $1 AND job_id = $2 ORDER BY id",
            namespace,
            job_id,
        )
    finally:
        await conn.close()
    return [r["type"] for r in rows]


async def interest(dsn: str, namespace: str) -> list[tuple[str, str]]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT queue, broker_id FROM pgqueue_event_interest WHERE namespace = $1"
            " ORDER BY queue, broker_id",
            namespace,
        )
    finally:
        await conn.close()
    return [(r["queue"], r["broker_id"]) for r in rows]


async def test_without_interest_a_claim_writes_no_event_and_counts_stay_right(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    job_id = await manager.push("q", "n", {"a": 1})
    [claim] = await manager.pull_batch("q", 1)
    assert await stored_types(db_dsn, namespace, job_id) == ["pushed"]
    counts = await manager.get_counts("q")
    assert (counts.waiting, counts.active) == (0, 1)
    assert await manager.get_state(job_id) == "active"
    await manager.ack(claim.id, claim.token, {"r": 2})
    assert await stored_types(db_dsn, namespace, job_id) == ["pushed", "completed"]
    counts = await manager.get_counts("q")
    assert (counts.active, counts.completed) == (0, 1)


async def test_a_timeline_without_the_event_has_its_claims_from_the_job_row(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    job_id = await manager.push("q", "n", 1, attempts=2, backoff=0)
    [first] = await manager.pull_batch("q", 1)
    await manager.fail(first.id, first.token, "boom")
    [second] = await manager.pull_batch("q", 1)
    live = (await manager.job_inspect(job_id))["timeline"]
    assert [(e["type"], (e["payload"] or {}).get("attempt")) for e in live] == [
        ("pushed", None),
        ("active", 1),
        ("failed", None),
        ("active", 2),
    ]
    await manager.ack(second.id, second.token, "ok")
    done = (await manager.job_inspect(job_id))["timeline"]
    assert [e["type"] for e in done] == ["pushed", "active", "failed", "active", "completed"]
    row = await manager.get_job(job_id)
    assert row is not None and row.started_at is not None
    assert abs(done[3]["at"] - float(row.started_at)) < 0.01  # the event's own instant
    assert [e["at"] for e in done] == sorted(e["at"] for e in done)
    # The same life with the events written: the same entries.
    await manager.want_active_events("seen")
    seen_id = await manager.push("seen", "n", 1, attempts=2, backoff=0)
    [first] = await manager.pull_batch("seen", 1)
    await manager.fail(first.id, first.token, "boom")
    [second] = await manager.pull_batch("seen", 1)
    await manager.ack(second.id, second.token, "ok")
    kept = (await manager.job_inspect(seen_id))["timeline"]
    assert [(e["type"], (e["payload"] or {}).get("attempt")) for e in kept] == [
        (e["type"], (e["payload"] or {}).get("attempt")) for e in done
    ]
    assert await stored_types(db_dsn, namespace, seen_id) == [e["type"] for e in kept]


async def test_a_subscriber_on_another_broker_gets_every_claim(db_dsn: str, namespace: str) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="watcher") as watcher,
        start_manager(db_dsn, namespace, broker_id="worker") as worker,
    ):
        sub = await watcher.subscribe_events("q")
        ids = [await worker.push("q", "n", i) for i in range(5)]
        claimed = await worker.pull_batch("q", 5)
        events = await take(sub, 10)
        assert [e.job_id for e in events if e.type == "active"] == [c.id for c in claimed]
        assert {e.job_id for e in events if e.type == "pushed"} == set(ids)
        sub.close()


async def test_interest_is_per_queue_and_goes_with_the_session(db_dsn: str, namespace: str) -> None:
    async with start_manager(db_dsn, namespace, broker_id="worker") as worker:
        async with start_manager(db_dsn, namespace, broker_id="watcher") as watcher:
            sub = await watcher.subscribe_events("watched")
            watched = await worker.push("watched", "n", 1)
            other = await worker.push("other", "n", 1)
            await worker.pull_batch("watched", 1)
            await worker.pull_batch("other", 1)
            assert await stored_types(db_dsn, namespace, watched) == ["pushed", "active"]
            assert await stored_types(db_dsn, namespace, other) == ["pushed"]
            assert await interest(db_dsn, namespace) == [("watched", "watcher")]
            sub.close()
            # Held while the broker lives: a subscriber resuming from its token
            # still finds the claims made meanwhile.
            later = await worker.push("watched", "n", 2)
            await worker.pull_batch("watched", 1)
            assert await stored_types(db_dsn, namespace, later) == ["pushed", "active"]
        # The watcher's session ended: its interest with it.
        assert await interest(db_dsn, namespace) == []
        gone = await worker.push("watched", "n", 3)
        await worker.pull_batch("watched", 1)
        assert await stored_types(db_dsn, namespace, gone) == ["pushed"]


async def test_a_subscriber_of_every_queue_wants_every_queue(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    sub = await manager.subscribe_events(None)
    job_id = await manager.push("anything", "n", 1)
    await manager.pull_batch("anything", 1)
    events = await take(sub, 2)
    assert [(e.type, e.job_id) for e in events] == [("pushed", job_id), ("active", job_id)]
    sub.close()


async def test_a_webhook_of_job_started_is_an_interest(db_dsn: str, namespace: str) -> None:
    async with webhook_manager(db_dsn, namespace) as manager:
        await _webhook_interest(db_dsn, namespace, manager)


async def _webhook_interest(db_dsn: str, namespace: str, manager: WebhookManager) -> None:
    hook = await manager.add_webhook("http://127.0.0.1:9/hook", ["job.started"], queue="hooked")
    hooked = await manager.push("hooked", "n", 1)
    other = await manager.push("other", "n", 1)
    await manager.pull_batch("hooked", 1)
    await manager.pull_batch("other", 1)
    assert await stored_types(db_dsn, namespace, hooked) == ["pushed", "active"]
    assert await stored_types(db_dsn, namespace, other) == ["pushed"]
    assert await manager.set_webhook_enabled(hook.id, False)
    off = await manager.push("hooked", "n", 2)
    await manager.pull_batch("hooked", 1)
    assert await stored_types(db_dsn, namespace, off) == ["pushed"]
    completed_only = await manager.add_webhook("http://127.0.0.1:9/hook", ["job.completed"])
    assert completed_only.id
    more = await manager.push("other", "n", 2)
    await manager.pull_batch("other", 1)
    assert await stored_types(db_dsn, namespace, more) == ["pushed"]


async def _waiting_for_lock(conn: asyncpg.Connection, application: str) -> bool:
    """Whether a backend of ``application`` waits for a lock (polled: never a sleep)."""
    return bool(
        await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = $1 AND wait_event_type = 'Lock'",
            application,
        )
    )


async def test_a_registration_waits_out_the_claims_that_read_the_interest_before_it(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    """A claim whose snapshot predates the interest row writes no event; the
    subscription is not ready until that claim ended, so no claim committing
    after it is ready lacks its event."""
    early = await manager.push("q", "n", 1)
    late = await manager.push("q", "n", 2)
    claimer = await asyncpg.connect(db_dsn)
    watcher_conn = await asyncpg.connect(db_dsn)
    try:
        tx = claimer.transaction()
        await tx.start()
        # The claim statement, as a broker runs it, in a transaction left open: it
        # read the interest (none) and holds the table's lock until it ends.
        sql = Q.job_claim_batch.sql
        args: dict[str, Any] = {
            "namespace": namespace,
            "queue": "q",
            "count": 1,
            "owner": "w",
            "broker_id": manager.broker_id,
            "session_id": manager.ctx.session_id,
            "lease_ms": None,
            "default_lease_ms": 30_000,
            "now": None,
        }
        rows = await claimer.fetch(sql, *Q.job_claim_batch.arguments((), args))
        assert rows[0]["id"] == early
        async with start_manager(db_dsn, namespace, broker_id="watcher") as watcher:
            registering = asyncio.create_task(watcher.subscribe_events("q"))
            await eventually(lambda: _waiting_for_lock(watcher_conn, "pgqueue:watcher"))
            assert not registering.done()  # not subscribed while the old claim runs
            await tx.commit()
            sub = await asyncio.wait_for(registering, 10)
            [claim] = await manager.pull_batch("q", 1)
            assert claim.id == late
            [event] = await take(sub, 1)
            assert (event.type, event.job_id) == ("active", late)
            sub.close()
        assert await stored_types(db_dsn, namespace, early) == ["pushed"]
    finally:
        await claimer.close()
        await watcher_conn.close()


async def test_the_planned_claim_of_a_limited_queue_writes_them_only_when_wanted(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    await manager.set_concurrency("limited", 5)
    unseen = await manager.push("limited", "n", 1)
    [claim] = await manager.pull_batch("limited", 1)  # pgqueue_claim_planned
    assert claim.id == unseen
    assert await stored_types(db_dsn, namespace, unseen) == ["pushed"]
    await manager.want_active_events("limited")
    seen = await manager.push("limited", "n", 2)
    [claim] = await manager.pull_batch("limited", 1)
    assert claim.id == seen
    assert await stored_types(db_dsn, namespace, seen) == ["pushed", "active"]


async def test_a_subscriber_that_reads_no_claims_holds_no_interest(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    sub = await manager.subscribe_events("quiet", active=False)
    assert await interest(db_dsn, namespace) == []
    job_id = await manager.push("quiet", "n", 1)
    await manager.pull_batch("quiet", 1)
    [event] = await take(sub, 1)
    assert (event.type, event.job_id) == ("pushed", job_id)
    assert await stored_types(db_dsn, namespace, job_id) == ["pushed"]
    sub.close()


async def test_a_plain_reader_of_the_tables_never_holds_a_registration_up(
    db_dsn: str, namespace: str, manager: PostgresQueueManager
) -> None:
    """A pg_dump holds ACCESS SHARE on every table until it ends: the registration
    (a subscriber, a webhook of job.started) waits for claims only."""
    reader = await asyncpg.connect(db_dsn)
    try:
        tx = reader.transaction(isolation="repeatable_read")
        await tx.start()
        for table in ("pgqueue_event_interest", "pgqueue_webhooks", "pgqueue_claim_guard"):
            await reader.execute(f"LOCK TABLE {table} IN ACCESS SHARE MODE")
        sub = await asyncio.wait_for(manager.subscribe_events("q"), 10)
        job_id = await manager.push("q", "n", 1)
        await manager.pull_batch("q", 1)
        events = await take(sub, 2)
        assert [(e.type, e.job_id) for e in events] == [("pushed", job_id), ("active", job_id)]
        sub.close()
        await tx.rollback()
    finally:
        await reader.close()
