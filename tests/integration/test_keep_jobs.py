"""removeOnComplete / removeOnFail as a count or {age, count}: BullMQ's "keep jobs".

``true`` removes at once and ``false`` keeps; a count keeps the newest n finished
jobs of the queue, ``{age}`` those finished less than age seconds ago.  Retention
applies it set-based (one statement per batch); what it hides stays a completion
proof for dependents, as with ``true``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.errors import ValidationError
from pgqueue.manager.completion import FailItem
from pgqueue.runtime import PostgresQueueManager
from tests.helpers import clock_ahead, sql_value


async def _finish_all(
    m: PostgresQueueManager, queue: str, n: int, *, fail: bool = False
) -> list[str]:
    """Run the ``n`` jobs of ``queue`` one at a time (oldest first): ids in finishing order."""
    done = []
    for _ in range(n):
        [claim] = await m.pull_batch(queue, 1)
        if fail:
            await m.fail_batch([FailItem(claim.id, claim.token, "broke")])
        else:
            await m.ack(claim.id, claim.token, claim.data)
        done.append(claim.id)
    return done


async def _visible(m: PostgresQueueManager, ids: list[str]) -> list[str]:
    return [job_id for job_id in ids if await m.get_job(job_id) is not None]


async def test_a_count_keeps_the_newest_completed_jobs_of_the_queue(
    manager: PostgresQueueManager,
) -> None:
    await manager.push_bulk(
        "q", [{"name": "n", "data": i, "remove_on_complete": 2} for i in range(5)]
    )
    done = await _finish_all(manager, "q", 5)
    assert (await manager.get_counts("q")).completed == 5, "applied by retention, not at once"
    report = await manager.retention_pass()
    assert report.hidden == 3
    assert await _visible(manager, done) == done[-2:]
    assert (await manager.get_counts("q")).completed == 2


async def test_a_hidden_job_still_resolves_its_dependents(manager: PostgresQueueManager) -> None:
    first = await manager.push("q", "n", 1, remove_on_complete=1)
    await manager.push("q", "n", 2, remove_on_complete=1)
    await _finish_all(manager, "q", 2)
    await manager.retention_pass()
    assert await manager.get_job(first) is None
    later = await manager.push("other", "n", 3, depends_on=[first])
    assert await manager.get_state(later) == "waiting"


async def test_a_count_of_zero_removes_at_once(manager: PostgresQueueManager) -> None:
    job = await manager.push("q", "n", 1, remove_on_complete=0)
    await _finish_all(manager, "q", 1)
    assert await manager.get_job(job) is None


async def test_an_age_keeps_the_jobs_finished_less_than_that_long_ago(
    manager: PostgresQueueManager,
) -> None:
    ids = await manager.push_bulk(
        "q", [{"name": "n", "data": i, "remove_on_complete": {"age": 60}} for i in range(2)]
    )
    await _finish_all(manager, "q", 2)
    assert (await manager.retention_pass()).hidden == 0
    assert (await manager.retention_pass(now=clock_ahead(61_000))).hidden == 2
    assert await _visible(manager, ids) == []


async def test_age_and_count_together_apply_both(manager: PostgresQueueManager) -> None:
    keep = {"age": 3600, "count": 3}
    await manager.push_bulk(
        "q", [{"name": "n", "data": i, "remove_on_complete": keep} for i in range(4)]
    )
    done = await _finish_all(manager, "q", 4)
    await manager.retention_pass()
    assert await _visible(manager, done) == done[-3:]
    await manager.retention_pass(now=clock_ahead(3_601_000))
    assert await _visible(manager, done) == []


async def test_every_completed_job_of_the_queue_counts_towards_the_count(
    manager: PostgresQueueManager,
) -> None:
    """BullMQ trims the queue's completed set: jobs without the option count too,
    but only jobs that asked for the trim are hidden."""
    plain = await manager.push("q", "n", 0)
    counted = await manager.push("q", "n", 1, remove_on_complete=1)
    await manager.push("q", "n", 2)
    await _finish_all(manager, "q", 3)
    await manager.retention_pass()
    assert await manager.get_job(counted) is None
    assert await manager.get_job(plain) is not None


async def test_remove_on_fail_with_a_count_keeps_the_newest_failures_and_their_dlq_entries(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.push_bulk(
        "q", [{"name": "n", "data": i, "attempts": 1, "remove_on_fail": 1} for i in range(3)]
    )
    done = await _finish_all(manager, "q", 3, fail=True)
    await manager.retention_pass()
    assert await _visible(manager, done) == done[-1:]
    entries = await sql_value(
        db_dsn, "SELECT count(*) FROM pgqueue_dlq WHERE namespace = $1", namespace
    )
    assert entries == 1


async def test_an_acks_count_overrides_the_jobs_own_option(manager: PostgresQueueManager) -> None:
    ids = await manager.push_bulk(
        "q", [{"name": "n", "data": i, "remove_on_complete": True} for i in range(3)]
    )
    for _ in ids:
        [claim] = await manager.pull_batch("q", 1)
        await manager.ack(claim.id, claim.token, None, remove_on_complete=2)
    await manager.retention_pass()
    assert await _visible(manager, ids) == ids[-2:]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "remove_on_complete must be"),
        (1.5, "remove_on_complete must be"),
        ({"age": -5}, "remove_on_complete age"),
        ({"count": "3"}, "remove_on_complete count"),
        ({"keep": 3}, "unknown keys: keep"),
        ("yes", "must be a boolean, a count or {age, count}"),
    ],
)
async def test_bad_removal_values_are_refused(
    manager: PostgresQueueManager, value: Any, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        await manager.push("q", "n", 1, remove_on_complete=value)
    assert sum((await manager.get_counts("q")).as_dict().values()) == 0
