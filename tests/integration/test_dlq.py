"""DLQ management: entries, stats by reason, audited redrive / purge / remove, settings."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from pgqueue.db.queries import Q
from pgqueue.errors import InvalidState, LeaseLost, ValidationError
from pgqueue.manager.completion import FailItem
from pgqueue.manager.dlq.policy import DEFAULT_DLQ_CONFIG, DLQ_REASONS
from pgqueue.manager.dlq.reads import DEFAULT_DLQ_CONFIG_JSON
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import HOUR_MS, clock_ahead, count_rows, events_of, sql, sql_value

ACTOR = "ops-token"


async def dead_letter(
    m: PostgresQueueManager, queue: str, n: int = 1, *, error: str = "boom", **opts: Any
) -> list[str]:
    """Push ``n`` jobs with one attempt each and fail them all: ``n`` DLQ entries."""
    ids = await m.push_bulk(
        queue, [{"name": "job", "data": i, "attempts": 1, **opts} for i in range(n)]
    )
    claims = await m.pull_batch(queue, n)
    assert sorted(c.id for c in claims) == sorted(ids)
    outcomes = await m.fail_batch([FailItem(c.id, c.token, error) for c in claims])
    assert all(o.applied for o in outcomes)
    return ids


async def age_entries(dsn: str, namespace: str, job_ids: list[str], ms: int) -> None:
    """Move DLQ entries (and their last auto-retry) ``ms`` into the past."""
    await sql(
        dsn,
        "UPDATE pgqueue_dlq SET entered_at = entered_at - $3 * interval '1 millisecond',"
        " last_retry_at = last_retry_at - $3 * interval '1 millisecond'"
        " WHERE namespace = $1 AND job_id = ANY($2::text[])",
        namespace,
        job_ids,
        ms,
    )


async def dead_lettered_child(m: PostgresQueueManager, **child_opts: Any) -> tuple[str, str]:
    """A flow whose only child (queue ``kids``) is dead-lettered while its parent
    (queue ``parents``) waits for it.  Returns (parent id, child id)."""
    tree = await m.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "data": 0,
            "children": [
                {"name": "child", "queue": "kids", "data": 1, "opts": {"attempts": 1, **child_opts}}
            ],
        }
    )
    parent_id, child_id = tree["id"], tree["children"][0]["id"]
    [claim] = await m.pull_batch("kids", 1)
    assert claim.id == child_id
    await m.fail(claim.id, claim.token, "child broke")
    return parent_id, child_id


async def redrive_and_complete(m: PostgresQueueManager, job_id: str, result: Any = "fixed") -> None:
    """Redrive a dead-lettered job and complete it."""
    assert await m.retry_job(job_id, actor=ACTOR)
    [claim] = await m.pull_batch("kids", 1)
    assert claim.id == job_id
    await m.ack(claim.id, claim.token, result)


async def audit_events(dsn: str, namespace: str) -> list[dict[str, Any]]:
    rows = await sql(
        dsn,
        "SELECT payload FROM pgqueue_events WHERE namespace = $1 AND type = 'dlq_audit'"
        " ORDER BY id",
        namespace,
    )
    return [orjson.loads(row["payload"]) for row in rows]


async def test_an_entry_carries_its_job_reason_and_full_attempt_history(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", {"x": 1}, attempts=2, backoff=0)
    for error in ("first", "second"):
        [claim] = await manager.pull_batch("q", 1)
        await manager.fail(claim.id, claim.token, error)
    [entry] = await manager.list_dlq("q")
    assert entry.job.id == job_id and entry.job.state == "failed"
    assert entry.job.data == {"x": 1} and entry.job.attempts == 2
    assert (entry.reason, entry.error) == ("max_attempts_exceeded", "second")
    assert [a["attempt"] for a in entry.attempts] == [1, 2]
    assert [a["error"] for a in entry.attempts] == ["first", "second"]
    assert entry.attempts[-1]["reason"] == "max_attempts_exceeded"
    assert set(entry.attempts[0]) == {
        "attempt",
        "startedAt",
        "failedAt",
        "reason",
        "error",
        "duration",
    }
    assert entry.retry_count == 0 and entry.last_retry_at is None
    assert entry.next_retry_at is None, "auto-retry is off by default"
    max_age = DEFAULT_DLQ_CONFIG["maxAge"]
    assert max_age is not None and entry.expires_at == pytest.approx(entry.entered_at + max_age)
    assert entry.as_dict()["expiresAt"] == entry.expires_at


async def test_listing_pages_in_entry_order_and_filters_by_reason_and_time(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await dead_letter(manager, "q", 5)
    # Entries i entered i minutes ago (distinct times, oldest = the last id).
    for i, job_id in enumerate(ids):
        await age_entries(db_dsn, namespace, [job_id], (i + 1) * 60_000)
    oldest_first = list(reversed(ids))
    assert [e.job.id for e in await manager.list_dlq("q")] == oldest_first
    assert [e.job.id for e in await manager.list_dlq("q", limit=2, offset=1)] == oldest_first[1:3]
    await sql(
        db_dsn,
        "UPDATE pgqueue_dlq SET reason = 'timeout' WHERE namespace = $1 AND job_id = $2",
        namespace,
        ids[1],
    )
    assert [e.job.id for e in await manager.list_dlq("q", reason="timeout")] == [ids[1]]
    middle = (await manager.list_dlq("q", limit=1, offset=2))[0].entered_at
    assert [e.job.id for e in await manager.list_dlq("q", older_than_ms=middle)] == oldest_first[:3]
    assert [e.job.id for e in await manager.list_dlq("q", newer_than_ms=middle)] == oldest_first[2:]
    assert await manager.list_dlq("other") == []


async def test_stats_count_every_reason_of_jobs_dead_lettered_through_the_engine(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    # explicit_fail: an unrecoverable failure.
    await manager.push("q", "unrecoverable", 1, attempts=5)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(claim.id, claim.token, "bad input", unrecoverable=True)
    # max_attempts_exceeded, twice.
    await dead_letter(manager, "q", 2)
    # stalled: the lease expires and maxStalls is 0.
    await manager.set_stall_config("q", {"maxStalls": 0})
    await manager.push("q", "stalls", 1)
    await manager.pull_batch("q", 1)
    assert (await manager.reap(now=clock_ahead(HOUR_MS))).dead_lettered == 1
    # timeout: the job ran past its processing timeout.
    await manager.push("q", "slow", 1, timeout=1000, attempts=1)
    await manager.pull_batch("q", 1)
    # ttl_expired: still pending when its TTL passed.
    await manager.push("q", "late", 1, ttl=60_000)
    report = await manager.reap(now=clock_ahead(HOUR_MS))  # past the timeout, lease and TTL
    assert (report.dead_lettered, report.ttl_expired) == (1, 1)
    await dead_letter(manager, "elsewhere", 1)

    stats = await manager.dlq_stats("q")
    assert stats.by_reason == {
        **dict.fromkeys(DLQ_REASONS, 0),
        "explicit_fail": 1,
        "max_attempts_exceeded": 2,
        "stalled": 1,
        "timeout": 1,
        "ttl_expired": 1,
    }
    assert stats.total == 6 and stats.by_queue == {"q": 6}
    assert (stats.pending_retry, stats.expired) == (0, 0)
    assert stats.oldest_entry is not None and stats.newest_entry is not None
    assert stats.oldest_entry <= stats.newest_entry
    assert stats.as_dict()["byReason"]["worker_lost"] == 0
    everything = await manager.dlq_stats()
    assert everything.total == 7 and everything.by_queue == {"q": 6, "elsewhere": 1}
    empty = await manager.dlq_stats("nothing-here")
    assert empty.total == 0 and empty.by_queue == {"nothing-here": 0}
    assert empty.oldest_entry is None


async def test_redriving_one_job_is_audited_with_who_when_which_and_why(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    [job_id, other] = await dead_letter(manager, "q", 2)
    before = await sql_value(db_dsn, "SELECT clock_timestamp()")
    moved = await manager.redrive("q", job_id=job_id, actor=ACTOR, why="the API is back")
    after = await sql_value(db_dsn, "SELECT clock_timestamp()")
    assert moved == 1
    assert await manager.get_state(job_id) == "waiting"
    assert [e.job.id for e in await manager.list_dlq("q")] == [other]
    [record] = await manager.dlq_audit("q")
    assert (record.actor, record.action, record.queue) == (ACTOR, "redrive", "q")
    assert (record.job_ids, record.count, record.reason) == ([job_id], 1, "the API is back")
    assert record.filter == {"jobIds": [job_id]}
    assert before.timestamp() * 1000 <= record.at <= after.timestamp() * 1000
    assert (await events_of(db_dsn, namespace, job_id))[-1] == "redriven"
    payload = await sql_value(
        db_dsn,
        "SELECT payload FROM pgqueue_events WHERE namespace = $1 AND job_id = $2"
        " AND type = 'redriven'",
        namespace,
        job_id,
    )
    assert orjson.loads(payload) == {
        "prev": "failed",
        "state": "pending",
        "action": "redrive",
        "actor": ACTOR,
        "auditId": record.id,
    }
    [event] = await audit_events(db_dsn, namespace)
    assert (event["id"], event["action"], event["actor"]) == (record.id, "redrive", ACTOR)
    assert (event["jobIds"], event["count"], event["reason"]) == ([job_id], 1, "the API is back")


async def test_redrive_by_reason_moves_only_matching_entries_in_one_audited_operation(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    spent = await dead_letter(manager, "q", 3)
    bad = []
    for _ in range(2):
        bad.append(await manager.push("q", "bad", 1, attempts=5))
        [claim] = await manager.pull_batch("q", 1)
        await manager.fail(claim.id, claim.token, "bad input", unrecoverable=True)
    moved = await manager.redrive("q", reason="explicit_fail", actor=ACTOR)
    assert moved == 2
    assert sorted(e.job.id for e in await manager.list_dlq("q")) == sorted(spent)
    assert [await manager.get_state(job_id) for job_id in bad] == ["waiting", "waiting"]
    [record] = await manager.dlq_audit()
    assert record.count == 2 and sorted(record.job_ids) == sorted(bad)
    assert record.filter == {"reason": "explicit_fail"}
    assert len(await audit_events(db_dsn, namespace)) == 1
    types = [t for t in await events_of(db_dsn, namespace) if t in ("redriven", "dlq_audit")]
    assert sorted(types) == ["dlq_audit", "redriven", "redriven"]


async def test_redrive_without_a_selection_moves_the_whole_queue_and_only_that_queue(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    mine = await dead_letter(manager, "q", 4)
    theirs = await dead_letter(manager, "other", 2)
    assert await manager.redrive("q", actor=ACTOR) == 4
    assert await manager.list_dlq("q") == []
    assert sorted(e.job.id for e in await manager.list_dlq("other")) == sorted(theirs)
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 4
    counts = await manager.get_counts("q")
    assert (counts.waiting, counts.failed) == (4, 0)
    assert sorted(c.id for c in await manager.pull_batch("q", 10)) == sorted(mine)


async def test_redrive_with_a_limit_takes_the_oldest_entries_first(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await dead_letter(manager, "q", 4)
    for i, job_id in enumerate(ids):
        await age_entries(db_dsn, namespace, [job_id], (i + 1) * 1000)
    assert await manager.redrive("q", limit=2, actor=ACTOR) == 2
    assert sorted(e.job.id for e in await manager.list_dlq("q")) == sorted(ids[:2])


async def test_a_redriven_job_runs_again_from_its_first_attempt_and_completes(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 7, attempts=2, backoff=0)
    tokens = []
    for _ in range(2):
        [claim] = await manager.pull_batch("q", 1)
        tokens.append(claim.token)
        await manager.fail(claim.id, claim.token, "down")
    assert await manager.retry_job(job_id, actor=ACTOR) is True
    [claim] = await manager.pull_batch("q", 1)
    assert claim.id == job_id and claim.attempts == 0 and claim.fence == 3
    with pytest.raises(LeaseLost):
        await manager.ack(job_id, tokens[-1], "from a dead claim")
    await manager.ack(claim.id, claim.token, "done")
    assert await manager.get_state(job_id) == "completed"
    assert await manager.get_result(job_id) == "done"
    job = await manager.get_job(job_id)
    assert job is not None and len(job.attempt_log) == 2, "the attempt history is kept"
    assert await count_rows(db_dsn, "pgqueue_dlq", namespace) == 0


async def test_concurrent_redrives_from_two_brokers_move_each_job_once(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a") as a,
        start_manager(db_dsn, namespace, broker_id="b") as b,
    ):
        for _ in range(10):
            [job_id] = await dead_letter(a, "one", 1)
            results = await asyncio.gather(
                a.retry_job(job_id, actor="a"),
                b.retry_job(job_id, actor="b"),
                a.redrive("one", job_id=job_id, actor="a"),
                b.redrive("one", actor="b"),
            )
            assert sum(int(r) for r in results) == 1, results
            [claim] = await a.pull_batch("one", 5)
            await a.ack(claim.id, claim.token)
        ids = await dead_letter(a, "many", 40)
        counts = await asyncio.gather(
            a.redrive("many", actor="a"),
            b.redrive("many", actor="b"),
            a.redrive("many", limit=7, actor="a"),
            b.redrive("many", reason="max_attempts_exceeded", actor="b"),
        )
        assert sum(counts) == 40, counts
        live = await sql(
            db_dsn,
            "SELECT id FROM pgqueue_jobs WHERE namespace = $1 AND queue = 'many'",
            namespace,
        )
        assert sorted(row["id"] for row in live) == sorted(ids)
        redriven = await sql(
            db_dsn,
            "SELECT job_id FROM pgqueue_events WHERE namespace = $1 AND type = 'redriven'"
            " AND queue = 'many'",
            namespace,
        )
        assert sorted(row["job_id"] for row in redriven) == sorted(ids)
        moved = [r.job_ids for r in await a.dlq_audit("many")]
        assert sorted(j for ids_ in moved for j in ids_) == sorted(ids)


async def test_redrive_clears_a_unique_key_that_another_live_job_now_holds(
    manager: PostgresQueueManager,
) -> None:
    [first] = await dead_letter(manager, "q", 1, unique_key="order-42")
    second = await manager.push("q", "job", 2, unique_key="order-42")
    assert second != first, "the dead-lettered job no longer holds the key"
    assert await manager.redrive("q", job_id=first, actor=ACTOR) == 1
    job = await manager.get_job(first)
    assert job is not None and job.state == "waiting" and job.unique_key is None
    owner = await manager.get_job(second)
    assert owner is not None and owner.unique_key == "order-42"


async def test_a_redriven_ttl_expired_job_gets_a_fresh_ttl_window(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "late", 1, ttl=60_000)
    assert (await manager.reap(now=clock_ahead(HOUR_MS))).ttl_expired == 1
    assert await manager.redrive("q", reason="ttl_expired", actor=ACTOR) == 1
    assert (await manager.reap()).ttl_expired == 0
    [claim] = await manager.pull_batch("q", 1)
    assert claim.id == job_id


async def test_a_redriven_flow_child_still_releases_its_parent(
    manager: PostgresQueueManager,
) -> None:
    tree = await manager.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "data": 0,
            "children": [{"name": "child", "queue": "kids", "data": 1, "opts": {"attempts": 1}}],
        }
    )
    parent_id, child_id = tree["id"], tree["children"][0]["id"]
    [claim] = await manager.pull_batch("kids", 1)
    await manager.fail(claim.id, claim.token, "child broke")
    assert await manager.get_state(parent_id) == "waiting-children"
    assert await manager.retry_job(child_id, actor=ACTOR)
    [claim] = await manager.pull_batch("kids", 1)
    await manager.ack(claim.id, claim.token, "fixed")
    assert await manager.get_state(parent_id) == "waiting"
    assert await manager.get_children_values(parent_id) != {}


async def test_purge_deletes_entries_and_their_failed_jobs_and_is_audited(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await dead_letter(manager, "q", 3)
    keep = await dead_letter(manager, "other", 1)
    assert await manager.purge_dlq("q", actor=ACTOR, why="known bad batch") == 3
    assert await manager.list_dlq("q") == []
    assert [await manager.get_job(job_id) for job_id in ids] == [None, None, None]
    assert await manager.get_state(keep[0]) == "failed"
    [record] = await manager.dlq_audit("q")
    assert (record.action, record.actor, record.reason, record.count) == (
        "purge",
        ACTOR,
        "known bad batch",
        3,
    )
    assert sorted(record.job_ids) == sorted(ids)
    assert (await events_of(db_dsn, namespace, ids[0]))[-1] == "removed"
    assert [e["action"] for e in await audit_events(db_dsn, namespace)] == ["purge"]
    assert await manager.purge_dlq("q", actor=ACTOR) == 0
    assert [r.count for r in await manager.dlq_audit("q")] == [0, 3], "audited even when empty"


async def test_purge_by_reason_keeps_the_other_entries(manager: PostgresQueueManager) -> None:
    spent = await dead_letter(manager, "q", 2)
    await manager.push("q", "bad", 1, attempts=5)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(claim.id, claim.token, "bad input", unrecoverable=True)
    assert await manager.purge_dlq("q", reason="explicit_fail", actor=ACTOR) == 1
    assert sorted(e.job.id for e in await manager.list_dlq("q")) == sorted(spent)


async def test_removing_one_entry_is_audited_and_says_whether_it_was_there(
    manager: PostgresQueueManager,
) -> None:
    [gone, kept] = await dead_letter(manager, "q", 2)
    assert await manager.remove_dlq_job("q", gone, actor=ACTOR, why="duplicate") is True
    assert await manager.get_job(gone) is None
    assert [e.job.id for e in await manager.list_dlq("q")] == [kept]
    assert await manager.remove_dlq_job("q", gone, actor=ACTOR) is False
    assert await manager.remove_dlq_job("other-queue", kept, actor=ACTOR) is False
    assert await manager.get_state(kept) == "failed"
    records = await manager.dlq_audit("q")
    assert [(r.action, r.job_ids, r.count) for r in records] == [
        ("remove", [], 0),
        ("remove", [gone], 1),
    ]
    assert records[1].reason == "duplicate"


async def test_purge_keeps_a_dead_lettered_child_that_a_live_parent_waits_for(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    parent_id, child_id = await dead_lettered_child(manager)
    [other] = await dead_letter(manager, "kids", 1)
    assert await manager.purge_dlq("kids", actor=ACTOR) == 1
    assert [e.job.id for e in await manager.list_dlq("kids")] == [child_id]
    [record] = await manager.dlq_audit("kids")
    assert record.job_ids == [other]
    assert await manager.get_state(parent_id) == "waiting-children"
    await redrive_and_complete(manager, child_id)
    assert await manager.get_state(parent_id) == "waiting"
    assert await manager.get_children_values(parent_id) == {f"kids:{child_id}": "fixed"}


async def test_removing_the_entry_of_a_child_a_live_parent_waits_for_is_refused(
    manager: PostgresQueueManager,
) -> None:
    parent_id, child_id = await dead_lettered_child(manager)
    with pytest.raises(InvalidState, match=rf"1 live job\(s\) depend on job {child_id}"):
        await manager.remove_dlq_job("kids", child_id, actor=ACTOR)
    assert [e.job.id for e in await manager.list_dlq("kids")] == [child_id]
    assert await manager.dlq_audit("kids") == [], "a refused removal writes nothing"
    await redrive_and_complete(manager, child_id)
    assert await manager.get_state(parent_id) == "waiting"


async def test_deleting_a_child_whose_parent_is_dead_lettered_too_lets_the_parent_be_redriven(
    manager: PostgresQueueManager,
) -> None:
    parent_id, child_id = await dead_lettered_child(manager, fail_parent_on_failure=True)
    assert await manager.get_state(parent_id) == "failed"
    assert await manager.remove_dlq_job("kids", child_id, actor=ACTOR) is True
    assert await manager.retry_job(parent_id, actor=ACTOR)
    assert await manager.get_state(parent_id) == "waiting", "it waits for no deleted child"


async def test_removing_a_failed_child_whose_parent_is_dead_lettered_lets_the_parent_be_redriven(
    manager: PostgresQueueManager,
) -> None:
    parent_id, child_id = await dead_lettered_child(manager, fail_parent_on_failure=True)
    assert await manager.get_state(parent_id) == "failed"
    await manager.remove(child_id)
    assert await manager.get_state(child_id) == "unknown"
    assert await manager.retry_job(parent_id, actor=ACTOR)
    assert await manager.get_state(parent_id) == "waiting", "it waits for no removed child"


async def test_retry_job_says_false_for_a_job_that_is_not_dead_lettered(
    manager: PostgresQueueManager,
) -> None:
    live = await manager.push("q", "n", 1)
    assert await manager.retry_job(live, actor=ACTOR) is False
    assert await manager.retry_job("no-such-job", actor=ACTOR) is False
    assert await manager.get_state(live) == "waiting"


async def test_dlq_config_has_defaults_takes_patches_and_names_the_bad_field(
    manager: PostgresQueueManager,
) -> None:
    assert await manager.get_dlq_config("q") == DEFAULT_DLQ_CONFIG
    changed = await manager.set_dlq_config("q", {"autoRetry": True, "maxAutoRetries": 5})
    assert changed == {**DEFAULT_DLQ_CONFIG, "autoRetry": True, "maxAutoRetries": 5}
    again = await manager.set_dlq_config("q", {"max_age": None, "autoRetryInterval": 60_000.0})
    assert again == {**changed, "maxAge": None, "autoRetryInterval": 60_000}
    assert await manager.get_dlq_config("q") == again
    bad: list[tuple[dict[str, Any], str]] = [
        ({"maxAutoRetries": -1}, "maxAutoRetries"),
        ({"autoRetry": "yes"}, "autoRetry"),
        ({"autoRetryInterval": 0}, "autoRetryInterval"),
        ({"autoRetryInterval": 1.5}, "autoRetryInterval"),
        ({"maxEntries": None}, "maxEntries"),
        ({"maxAge": float("inf")}, "maxAge"),
        ({"maxEntries": True}, "maxEntries"),
        ({"retries": 3}, "retries"),
    ]
    for patch, field in bad:
        with pytest.raises(ValidationError) as caught:
            await manager.set_dlq_config("q", {"maxEntries": 5, **patch})
        assert caught.value.field == field, patch
        assert field in caught.value.message
    assert await manager.get_dlq_config("q") == again, "a refused patch writes nothing"
    with pytest.raises(ValidationError) as caught:
        await manager.set_dlq_config("bad queue!", {})
    assert caught.value.field == "queue"


async def test_stall_config_has_defaults_takes_patches_and_drives_the_reaper(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    assert await manager.get_stall_config("q") == {
        "enabled": True,
        "stallInterval": 30_000,
        "maxStalls": 3,
        "gracePeriod": 5_000,
    }
    for patch, field in (
        ({"maxStalls": -1}, "maxStalls"),
        ({"enabled": 1}, "enabled"),
        ({"gracePeriod": "5s"}, "gracePeriod"),
        ({"stallInterval": 0}, "stallInterval"),
    ):
        with pytest.raises(ValidationError) as caught:
            await manager.set_stall_config("q", patch)
        assert caught.value.field == field
    config = await manager.set_stall_config("q", {"maxStalls": 1, "grace_period": 0})
    assert config == {"enabled": True, "stallInterval": 30_000, "maxStalls": 1, "gracePeriod": 0}
    job_id = await manager.push("q", "n", 1)
    for expected in ("waiting", "failed"):
        await manager.pull_batch("q", 1)
        await manager.reap(now=clock_ahead(HOUR_MS))
        assert await manager.get_state(job_id) == expected
    [entry] = await manager.list_dlq("q")
    assert entry.reason == "stalled"
    await manager.set_stall_config("q", {"enabled": False, "maxStalls": 0})
    other = await manager.push("q", "n", 2)
    await manager.pull_batch("q", 1)
    await manager.reap(now=clock_ahead(HOUR_MS))
    assert await manager.get_state(other) == "waiting", "stall detection off: only requeued"


async def test_bad_selections_and_actors_are_refused_before_anything_is_written(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await dead_letter(manager, "q", 1)
    refused: list[tuple[dict[str, Any], str]] = [
        ({"actor": ""}, "actor"),
        ({"actor": ACTOR, "reason": "bored"}, "reason"),
        ({"actor": ACTOR, "limit": 0}, "limit"),
        ({"actor": ACTOR, "older_than_ms": "yesterday"}, "olderThan"),
        ({"actor": ACTOR, "retriable": "yes"}, "retriable"),
        ({"actor": ACTOR, "job_ids": "one-id"}, "jobIds"),
        ({"actor": ACTOR, "job_id": ""}, "jobId"),
        ({"actor": ACTOR, "why": "x" * 5000}, "why"),
    ]
    for kwargs, field in refused:
        with pytest.raises(ValidationError) as caught:
            await manager.redrive("q", **kwargs)
        assert caught.value.field == field, kwargs
    with pytest.raises(ValidationError):
        await manager.list_dlq("q", limit=100_000)
    with pytest.raises(ValidationError):
        await manager.list_dlq("q", offset=-1)
    with pytest.raises(ValidationError):
        await manager.purge_dlq("q", actor=ACTOR, reason="nope")
    assert await count_rows(db_dsn, "pgqueue_dlq", namespace) == 1
    assert await count_rows(db_dsn, "pgqueue_dlq_audit", namespace) == 0


async def test_listing_reads_the_dlq_indexes_in_entry_order(db_dsn: str, namespace: str) -> None:
    await sql(
        db_dsn,
        "INSERT INTO pgqueue_finished (namespace, id, queue, name, data, state, created_at,"
        " finished_at) SELECT $1, 'j' || g, 'q' || (g % 10), 'n', '1', 'failed', now(), now()"
        " FROM generate_series(1, 5000) g",
        namespace,
    )
    await sql(
        db_dsn,
        "INSERT INTO pgqueue_dlq (namespace, job_id, queue, reason, entered_at)"
        " SELECT $1, 'j' || g, 'q' || (g % 10), CASE WHEN g % 2 = 0 THEN 'timeout'"
        " ELSE 'stalled' END, now() - g * interval '1 s' FROM generate_series(1, 5000) g",
        namespace,
    )
    await sql(db_dsn, "ANALYZE pgqueue_dlq")
    await sql(db_dsn, "ANALYZE pgqueue_finished")

    async def plan(reason: str | None) -> str:
        rows = await sql(
            db_dsn,
            "EXPLAIN " + Q.dlq_list.sql,
            namespace,
            "q3",
            None,
            reason,
            None,
            None,
            None,
            None,
            50,
            DEFAULT_DLQ_CONFIG_JSON,
            0,
            None,
        )
        return "\n".join(row[0] for row in rows)

    every = await plan(None)
    assert "Index Scan using pgqueue_dlq_queue_idx" in every and "Sort" not in every, every
    by_reason = await plan("timeout")
    assert "pgqueue_dlq_reason_idx" in by_reason, by_reason
    assert "Seq Scan on pgqueue_dlq" not in every + by_reason
