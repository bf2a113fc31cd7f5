"""The leader's DLQ upkeep: auto-retry with an exponential interval, maxAge, maxEntries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pgqueue.maintenance.dlq_upkeep import UPKEEP_ACTOR, DlqUpkeep, dlq_upkeep_once
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import DAY_MS, clock_ahead, count_rows, events_of, sql, sql_value
from tests.integration.test_dlq import (
    age_entries,
    dead_letter,
    dead_lettered_child,
    redrive_and_complete,
)

MINUTE = 60_000


def at_ms(ms: float) -> datetime:
    """The instant ``ms`` (ms since the epoch): the ``now`` an upkeep pass is given."""
    return datetime.fromtimestamp(ms / 1000, UTC)


async def _fail_again(m: PostgresQueueManager, queue: str, job_id: str) -> None:
    [claim] = await m.pull_batch(queue, 1)
    assert claim.id == job_id
    await m.fail(claim.id, claim.token, "still down")


async def test_upkeep_auto_retries_on_an_exponential_interval_until_max_auto_retries(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.set_dlq_config(
        "q", {"autoRetry": True, "autoRetryInterval": MINUTE, "maxAutoRetries": 3}
    )
    [job_id] = await dead_letter(manager, "q", 1)
    [entry] = await manager.list_dlq("q")
    assert entry.next_retry_at == pytest.approx(entry.entered_at + MINUTE)
    assert (await dlq_upkeep_once(manager.ctx)).auto_retried == 0, "not due yet"

    # Retry n+1 is due interval * 2^(n-1) after retry n: 1, 1, 2 minutes.
    for retry, wait in ((1, MINUTE), (2, MINUTE), (3, 2 * MINUTE)):
        since = entry.last_retry_at or entry.entered_at
        early = await dlq_upkeep_once(manager.ctx, now=at_ms(since + wait - 1000))
        assert early.auto_retried == 0, f"retry {retry} early"
        due = await dlq_upkeep_once(manager.ctx, now=at_ms(since + wait))
        assert due.auto_retried == 1, f"retry {retry}"
        assert await manager.get_state(job_id) == "waiting"
        await _fail_again(manager, "q", job_id)
        [entry] = await manager.list_dlq("q")
        assert entry.retry_count == retry, "the chain survives the new failure"
        assert entry.last_retry_at is not None

    assert entry.next_retry_at is None, "maxAutoRetries spent"
    assert (await manager.dlq_stats("q")).pending_retry == 0
    assert (await dlq_upkeep_once(manager.ctx, now=clock_ahead(100 * MINUTE))).auto_retried == 0
    assert len(entry.attempts) == 4, "every attempt of the chain is in the history"
    records = await manager.dlq_audit("q")
    assert [(r.action, r.actor, r.job_ids) for r in records] == [
        ("auto_retry", UPKEEP_ACTOR, [job_id])
    ] * 3
    # A manual redrive starts a fresh chain.
    assert await manager.redrive("q", actor="ops") == 1
    await _fail_again(manager, "q", job_id)
    [entry] = await manager.list_dlq("q")
    assert entry.retry_count == 0 and entry.next_retry_at is not None


async def test_upkeep_leaves_entries_alone_while_auto_retry_is_off(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await dead_letter(manager, "q", 2)
    assert (await dlq_upkeep_once(manager.ctx, now=clock_ahead(DAY_MS))).total == 0
    assert len(await manager.list_dlq("q")) == 2
    assert await manager.dlq_audit() == []


async def test_an_auto_retried_job_that_succeeds_leaves_the_dlq_for_good(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.set_dlq_config("q", {"autoRetry": True, "autoRetryInterval": MINUTE})
    [job_id] = await dead_letter(manager, "q", 1)
    # The reads judge due-ness on the database clock: the entry entered a minute ago.
    await age_entries(db_dsn, namespace, [job_id], MINUTE)
    assert [e.job.id for e in await manager.list_dlq("q", retriable=True)] == [job_id]
    assert (await dlq_upkeep_once(manager.ctx)).auto_retried == 1
    assert (await events_of(db_dsn, namespace, job_id))[-1] == "redriven"
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(claim.id, claim.token, "ok")
    assert await manager.get_state(job_id) == "completed"
    assert await count_rows(db_dsn, "pgqueue_dlq", namespace) == 0


async def test_upkeep_drops_entries_older_than_max_age_and_audits_it(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.set_dlq_config("q", {"maxAge": 10 * MINUTE})
    [old, young] = await dead_letter(manager, "q", 2)
    await age_entries(db_dsn, namespace, [old], 11 * MINUTE)
    [entry] = await manager.list_dlq("q", expired=True)
    assert entry.job.id == old and entry.expires_at is not None
    assert (await manager.dlq_stats("q")).expired == 1
    report = await dlq_upkeep_once(manager.ctx)
    assert (report.expired, report.trimmed, report.auto_retried) == (1, 0, 0)
    assert [e.job.id for e in await manager.list_dlq("q")] == [young]
    assert await manager.get_job(old) is None
    [record] = await manager.dlq_audit("q")
    assert (record.action, record.actor, record.job_ids, record.reason) == (
        "expire",
        UPKEEP_ACTOR,
        [old],
        "maxAge",
    )
    assert (await events_of(db_dsn, namespace, old))[-1] == "removed"
    await manager.set_dlq_config("q", {"maxAge": None})
    later = clock_ahead(1000 * DAY_MS)
    assert (await dlq_upkeep_once(manager.ctx, now=later)).expired == 0, "maxAge null: never"
    [entry] = await manager.list_dlq("q")
    assert entry.expires_at is None


async def test_upkeep_trims_the_oldest_entries_beyond_max_entries(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await dead_letter(manager, "q", 5)
    for i, job_id in enumerate(ids):
        await age_entries(db_dsn, namespace, [job_id], (5 - i) * 1000)  # ids[0] oldest
    await dead_letter(manager, "other", 3)
    await manager.set_dlq_config("q", {"maxEntries": 2})
    report = await dlq_upkeep_once(manager.ctx, batch=2)
    assert report.trimmed == 3
    assert sorted(e.job.id for e in await manager.list_dlq("q")) == sorted(ids[3:])
    assert len(await manager.list_dlq("other")) == 3, "other queues keep their defaults"
    records = await manager.dlq_audit("q")
    assert {r.reason for r in records} == {"maxEntries"}
    assert sorted(j for r in records for j in r.job_ids) == sorted(ids[:3])
    assert (await dlq_upkeep_once(manager.ctx)).total == 0


async def test_max_entries_trimming_keeps_a_dead_lettered_child_that_a_live_parent_waits_for(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    parent_id, child_id = await dead_lettered_child(manager)
    await age_entries(db_dsn, namespace, [child_id], MINUTE)  # the oldest entry
    others = await dead_letter(manager, "kids", 2)
    await manager.set_dlq_config("kids", {"maxEntries": 1})
    report = await dlq_upkeep_once(manager.ctx)
    assert report.trimmed == 2, "the oldest entries nobody waits for go"
    assert [e.job.id for e in await manager.list_dlq("kids")] == [child_id]
    assert sorted(j for r in await manager.dlq_audit("kids") for j in r.job_ids) == sorted(others)
    assert (await dlq_upkeep_once(manager.ctx)).total == 0
    assert await manager.get_state(parent_id) == "waiting-children"
    await redrive_and_complete(manager, child_id)
    assert await manager.get_state(parent_id) == "waiting"


async def test_max_age_expiry_keeps_a_dead_lettered_child_that_a_live_parent_waits_for(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.set_dlq_config("kids", {"maxAge": 10 * MINUTE})
    parent_id, child_id = await dead_lettered_child(manager)
    [other] = await dead_letter(manager, "kids", 1)
    report = await dlq_upkeep_once(manager.ctx, now=clock_ahead(11 * MINUTE))
    assert report.expired == 1
    assert [e.job.id for e in await manager.list_dlq("kids")] == [child_id]
    assert await manager.get_job(other) is None
    assert (await dlq_upkeep_once(manager.ctx, now=clock_ahead(11 * MINUTE))).total == 0
    assert await manager.get_state(parent_id) == "waiting-children"
    await redrive_and_complete(manager, child_id)
    assert await manager.get_state(parent_id) == "waiting"
    # Once nobody waits for it, an expired entry goes like any other.
    [claim] = await manager.pull_batch("parents", 1)
    await manager.ack(claim.id, claim.token, "done")
    parent2, _ = await dead_lettered_child(manager)
    await manager.remove(parent2)
    assert (await dlq_upkeep_once(manager.ctx, now=clock_ahead(11 * MINUTE))).expired == 1
    assert await manager.list_dlq("kids") == []


async def test_the_leaders_dlq_upkeep_service_retries_on_its_own(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(
        db_dsn,
        namespace,
        broker_id="leader",
        run_maintenance=True,
        leader_ttl_ms=1000,
        reaper_interval_ms=100,
    ) as m:
        assert m.elector is not None
        await m.set_dlq_config("q", {"autoRetry": True, "autoRetryInterval": MINUTE})
        [job_id] = await dead_letter(m, "q", 1)
        await age_entries(db_dsn, namespace, [job_id], MINUTE)
        upkeep = DlqUpkeep(m.ctx, m.elector, interval_ms=50)
        await upkeep.start()
        try:
            await eventually(lambda: upkeep.passes > 0 and upkeep.last_report.total == 0)
            state = await sql_value(
                db_dsn, "SELECT state FROM pgqueue_jobs WHERE namespace = $1", namespace
            )
            assert state == "pending"
            assert upkeep.failure is None
        finally:
            await upkeep.stop()
        rows = await sql(
            db_dsn,
            "SELECT action FROM pgqueue_dlq_audit WHERE namespace = $1",
            namespace,
        )
        assert [row["action"] for row in rows] == ["auto_retry"]
