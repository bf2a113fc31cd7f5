"""Global limits and job groups in the claim (G7), on one engine: the SQL decides.

Concurrency over several brokers is in tests/acceptance/test_limits_two_brokers.py;
the claim plans in tests/integration/test_claim_plan.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from pgqueue.errors import ValidationError
from pgqueue.manager.claim import GroupDefaults
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import sql, sql_value


async def _push_group(m: PostgresQueueManager, queue: str, group: str, n: int) -> list[str]:
    return await m.push_bulk(queue, [{"name": "n", "data": i, "group_id": group} for i in range(n)])


async def test_a_concurrency_limit_caps_active_jobs_until_one_finishes(
    manager: PostgresQueueManager,
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(10)])
    await manager.set_concurrency("q", 3)
    first = await manager.pull_batch("q", 10)
    assert len(first) == 3
    assert await manager.pull_batch("q", 10) == []
    assert (await manager.get_queue_limits("q")).as_dict() == {
        "rateLimit": None,
        "rateLimitTtl": 0,
        "concurrencyLimit": 3,
        "maxed": True,
    }
    await manager.ack(first[0].id, first[0].token)
    assert len(await manager.pull_batch("q", 10)) == 1
    await manager.clear_concurrency("q")
    assert len(await manager.pull_batch("q", 10)) == 6


async def test_a_rate_limit_admits_n_per_window_and_says_when_it_reopens(
    manager: PostgresQueueManager,
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(10)])
    await manager.set_rate_limit("q", 4, 60_000)
    assert len(await manager.pull_batch("q", 3)) == 3
    assert len(await manager.pull_batch("q", 3)) == 1
    held = await manager.pull_batch("q", 3)
    assert held == [] and held.retry_after_ms is not None
    assert 50_000 < held.retry_after_ms <= 60_000
    limits = (await manager.get_queue_limits("q")).as_dict()
    assert limits["rateLimit"] == {"max": 4, "duration": 60_000}
    assert 50_000 < limits["rateLimitTtl"] <= 60_000
    await manager.clear_rate_limit("q")
    assert len(await manager.pull_batch("q", 10)) == 6


async def test_a_rate_limit_with_ttl_lifts_itself(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(5)])
    await manager.set_rate_limit("q", 1, 60_000, ttl_ms=60_000)
    assert len(await manager.pull_batch("q", 5)) == 1
    assert await manager.pull_batch("q", 5) == []
    await sql(
        db_dsn,
        "UPDATE pgqueue_queues SET rate_expires_at = clock_timestamp() - interval '1 s'"
        " WHERE namespace = $1",
        namespace,
    )
    assert (await manager.get_queue_limits("q")).rate_limit is None
    assert len(await manager.pull_batch("q", 5)) == 4


async def test_a_held_claim_retries_when_the_rate_limit_expires_before_its_window(
    manager: PostgresQueueManager,
) -> None:
    """The limit's expiry lifts it before the window ends: the retry says the expiry
    (migration 0025; it said the window's end)."""
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(3)])
    await manager.set_rate_limit("q", 1, 600_000, ttl_ms=60_000)
    assert len(await manager.pull_batch("q", 3)) == 1
    held = await manager.pull_batch("q", 3)
    assert held == [] and held.retry_after_ms is not None
    assert 50_000 < held.retry_after_ms <= 60_000


async def test_long_poll_waits_for_the_rate_window_instead_of_returning_early(
    manager: PostgresQueueManager,
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(3)])
    await manager.set_rate_limit("q", 1, 300)
    assert len(await manager.pull_batch("q", 1)) == 1
    got = await manager.pull_batch("q", 1, timeout_ms=5_000)
    assert len(got) == 1  # the next window opened within the poll


async def test_groups_are_served_round_robin_whatever_their_backlog(
    manager: PostgresQueueManager,
) -> None:
    big = await _push_group(manager, "q", "big", 2_000)
    small = await _push_group(manager, "q", "small", 3)
    first = await manager.pull_batch("q", 4)
    assert sorted(c.id for c in first) == sorted([*big[:2], *small[:2]])
    second = [c.id for c in await manager.pull_batch("q", 1)]
    third = [c.id for c in await manager.pull_batch("q", 1)]
    assert {*second, *third} == {small[2], big[2]}


async def test_ungrouped_jobs_come_before_grouped_ones(manager: PostgresQueueManager) -> None:
    await _push_group(manager, "q", "g", 3)
    plain = await manager.push("q", "n", 1)
    assert [c.id for c in await manager.pull_batch("q", 1)] == [plain]


async def test_group_concurrency_and_pause_hold_a_group_back(
    manager: PostgresQueueManager,
) -> None:
    a = await _push_group(manager, "q", "a", 5)
    b = await _push_group(manager, "q", "b", 5)
    await manager.set_group_concurrency("q", "a", 1)
    claimed = [c.id for c in await manager.pull_batch("q", 10)]
    assert sorted(claimed) == sorted([a[0], *b])
    assert await manager.get_group_active_count("q", "a") == 1
    assert await manager.get_group_concurrency("q", "a") == 1
    assert await manager.remove_group_concurrency("q", "a") == 1
    assert await manager.remove_group_concurrency("q", "a") == 0
    assert await manager.pause_group("q", "a") is True
    assert await manager.pause_group("q", "a") is False
    assert await manager.is_group_paused("q", "a") is True
    assert await manager.pull_batch("q", 10) == []
    assert await manager.resume_group("q", "a") is True
    assert len(await manager.pull_batch("q", 10)) == 4


async def test_a_group_held_back_by_no_clock_reports_no_retry_time(
    manager: PostgresQueueManager,
) -> None:
    """A group at its concurrency limit, a paused group and a group whose jobs are all
    delayed reopen at no known time: the claim says no retry (migration 0025; it said
    1 ms, and a long poll re-claimed every millisecond), so its caller waits for an
    event of the queue.  A group's rate window beside them still says when it reopens."""
    await _push_group(manager, "q", "a", 3)
    await _push_group(manager, "q", "p", 3)
    await manager.push_bulk("q", [{"name": "n", "data": 0, "group_id": "d", "delay": 3_600_000}])
    await manager.set_group_concurrency("q", "a", 1)
    await manager.pause_group("q", "p")
    assert len(await manager.pull_batch("q", 10)) == 1
    held = await manager.pull_batch("q", 10)
    assert held == [] and held.retry_after_ms is None
    assert "q" not in manager.ctx.rate_throttled
    await _push_group(manager, "q", "r", 3)
    await manager.set_group_rate_limit("q", "r", 1, 60_000)
    assert len(await manager.pull_batch("q", 10)) == 1
    held = await manager.pull_batch("q", 10)
    assert held == [] and held.retry_after_ms is not None
    assert 50_000 < held.retry_after_ms <= 60_000


async def test_group_rate_limit_and_manual_deadline(manager: PostgresQueueManager) -> None:
    await _push_group(manager, "q", "a", 5)
    await manager.set_group_rate_limit("q", "a", 2, 60_000)
    assert await manager.get_group_rate_limit("q", "a") == (2, 60_000)
    assert len(await manager.pull_batch("q", 5)) == 2
    held = await manager.pull_batch("q", 5)
    assert held == [] and held.retry_after_ms is not None
    assert 50_000 < await manager.get_group_rate_limit_ttl("q", "a") <= 60_000
    assert await manager.get_group_rate_limit_ttl("q", "a", 3) == 0
    assert await manager.remove_group_rate_limit("q", "a") == 1
    assert await manager.get_group_rate_limit_ttl("q", "a") == -2
    await manager.rate_limit_group("q", "a", 60_000)
    assert 50_000 < await manager.get_group_rate_limit_ttl("q", "a") <= 60_000
    assert await manager.pull_batch("q", 5) == []
    assert await manager.get_group_jobs_count("q", "a") == 3
    assert await manager.get_groups_jobs_count("q") == 3


async def test_pull_group_defaults_apply_to_groups_without_their_own_limits(
    manager: PostgresQueueManager,
) -> None:
    await _push_group(manager, "q", "a", 5)
    await _push_group(manager, "q", "b", 5)
    await manager.set_group_concurrency("q", "b", 3)
    defaults = GroupDefaults(concurrency=1)
    claimed = await manager.pull_batch("q", 10, group=defaults)
    groups = sorted(c.job.group_id or "" for c in claimed)
    assert groups == ["a", "b", "b", "b"]
    rate = GroupDefaults(max=1, duration_ms=60_000)
    await manager.remove_group_concurrency("q", "b")
    more = await manager.pull_batch("q", 10, group=rate)
    assert sorted(c.job.group_id or "" for c in more) == ["a", "b"]
    assert await manager.pull_batch("q", 10, group=rate) == []


async def test_limits_hold_across_two_engines_on_one_database(db_dsn: str, namespace: str) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="lim-a") as a,
        start_manager(db_dsn, namespace, broker_id="lim-b") as b,
    ):
        await a.push_bulk("q", [{"name": "n", "data": i} for i in range(10)])
        await a.set_concurrency("q", 4)
        assert len(await a.pull_batch("q", 3)) == 3
        assert len(await b.pull_batch("q", 3)) == 1
        active = await sql_value(
            db_dsn,
            "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND state = 'active'",
            namespace,
        )
        assert active == 4


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.set_concurrency("q", 0), "limit"),
        (lambda m: m.set_concurrency("q", 1.5), "limit"),
        (lambda m: m.set_rate_limit("q", -1), "limit"),
        (lambda m: m.set_rate_limit("q", 1, 0), "duration"),
        (lambda m: m.set_rate_limit("q", 1, 1000, 0), "ttl"),
        (lambda m: m.set_concurrency("bad queue", 1), "Queue name"),
        (lambda m: m.set_group_concurrency("q", "", 1), "groupId"),
        (lambda m: m.set_group_concurrency("q", "a", 0), "concurrency"),
        (lambda m: m.set_group_rate_limit("q", "a", 0, 10), "max"),
        (lambda m: m.set_group_rate_limit("q", "a", 1, 0), "duration"),
        (lambda m: m.rate_limit_group("q", "a", 0), "duration"),
        (lambda m: m.pause_group("q", 7), "groupId"),
        (lambda m: m.pull_batch("q", 1, group=GroupDefaults(max=1)), "group"),
    ],
)
async def test_bad_limit_input_is_refused_and_changes_nothing(
    manager: PostgresQueueManager,
    db_dsn: str,
    namespace: str,
    call: Callable[[PostgresQueueManager], Awaitable[object]],
    message: str,
) -> None:
    with pytest.raises(ValidationError) as caught:
        await call(manager)
    assert message in str(caught.value)
    for table in ("pgqueue_queues", "pgqueue_groups"):
        count = await sql_value(
            db_dsn, f"SELECT count(*) FROM {table} WHERE namespace = $1", namespace
        )
        assert count == 0, table
