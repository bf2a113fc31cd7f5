"""G7 through two broker processes: global concurrency and rate limits, group
fairness, pause, concurrency and rate, sampled from the database, not the workers.

Workers are real protocol clients on real sockets, half on each broker; every
claim goes through the broker's claim, every limit is read in SQL.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance import command_support as support
from tests.acceptance.command_support import Pair, assert_refused, new_queue
from tests.helpers import sql, sql_value

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]


# First in the module: later tests leave pulled jobs that their closing connections give back.
@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"cmd": "RateLimit", "queue": "q"}, "limit is required"),
        ({"cmd": "RateLimit", "queue": "q", "limit": 0}, "limit must be at least 1"),
        ({"cmd": "RateLimit", "queue": "q", "limit": "5"}, "limit must be a number"),
        (
            {"cmd": "RateLimit", "queue": "q", "limit": 5, "duration": 0},
            "duration must be at least 1",
        ),
        ({"cmd": "RateLimit", "queue": "q", "limit": 5, "ttl": -1}, "ttl must be at least 1"),
        ({"cmd": "SetConcurrency", "queue": "q", "limit": 1.5}, "limit must be an integer"),
        (
            {"cmd": "SetConcurrency", "queue": "bad queue!", "limit": 1},
            "Queue name contains invalid characters",
        ),
        ({"cmd": "GetQueueLimits", "queue": "q", "maxJobs": 0}, "maxJobs must be at least 1"),
        ({"cmd": "SetGroupConcurrency", "queue": "q", "concurrency": 1}, "groupId is required"),
        (
            {"cmd": "SetGroupConcurrency", "queue": "q", "groupId": 5, "concurrency": 1},
            "groupId must be a string",
        ),
        (
            {"cmd": "SetGroupConcurrency", "queue": "q", "groupId": "", "concurrency": 1},
            "groupId must be a non-empty string",
        ),
        (
            {"cmd": "SetGroupConcurrency", "queue": "q", "groupId": "g", "concurrency": 0},
            "concurrency must be at least 1",
        ),
        (
            {"cmd": "SetGroupRateLimit", "queue": "q", "groupId": "g", "max": 1},
            "duration is required",
        ),
        (
            {"cmd": "SetGroupRateLimit", "queue": "q", "groupId": "g", "max": 0, "duration": 5},
            "max must be at least 1",
        ),
        (
            {"cmd": "RateLimitGroup", "queue": "q", "groupId": "g", "duration": 0},
            "duration must be at least 1",
        ),
        (
            {"cmd": "PauseGroup", "queue": "q", "groupId": "g" * 300},
            "groupId must be at most 256 characters long",
        ),
        ({"cmd": "ResumeGroup", "queue": "q"}, "groupId is required"),
        ({"cmd": "IsGroupPaused", "groupId": "g"}, "Queue name is required"),
        (
            {"cmd": "GetGroupRateLimitTtl", "queue": "q", "groupId": "g", "maxJobs": -1},
            "maxJobs must be at least 1",
        ),
        (
            {"cmd": "PULL", "queue": "q", "group": {"limit": {"max": 1}}},
            "group.limit.duration is required",
        ),
        (
            {"cmd": "PULL", "queue": "q", "group": {"concurrency": 0}},
            "group.concurrency must be at least 1",
        ),
    ],
)
async def test_bad_limit_and_group_commands_are_refused_and_change_nothing(
    pair: Pair, clients: Clients, message: dict[str, Any], error: str
) -> None:
    await assert_refused(pair, clients, message, error)


@contextlib.asynccontextmanager
async def connections(pair: Pair, per_broker: int) -> AsyncIterator[list[Connection]]:
    opened = []
    try:
        for _ in range(per_broker):
            for broker in (pair.a, pair.b):
                opened.append(await Connection.open("127.0.0.1", broker.tcp_port))
        yield opened
    finally:
        for conn in opened:
            await conn.close()


async def push_many(conn: Connection, queue: str, n: int, **options: Any) -> list[str]:
    ids: list[str] = []
    for lo in range(0, n, 1000):
        jobs = [{"name": "n", "data": i, **options} for i in range(lo, min(n, lo + 1000))]
        ids += (await conn.call("PUSHB", {"queue": queue, "jobs": jobs}))["ids"]
    return ids


async def active_count(pair: Pair, queue: str, group: str | None = None) -> int:
    return int(
        await sql_value(
            pair.dsn,
            "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND queue = $2"
            " AND state = 'active' AND ($3::text IS NULL OR group_id = $3::text)",
            pair.namespace,
            queue,
            group,
        )
    )


async def finished(pair: Pair, queue: str) -> int:
    return int(
        await sql_value(
            pair.dsn,
            "SELECT (SELECT count(*) FROM pgqueue_finished WHERE namespace = $1 AND queue = $2)"
            " + (SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND queue = $2"
            "    AND state = 'completed')",
            pair.namespace,
            queue,
        )
    )


class Samples:
    """How many samples of the active rows were taken; a worker waits for the next one."""

    def __init__(self) -> None:
        self.taken = 0
        self._over = False
        self._changed = asyncio.Condition()

    async def count(self) -> None:
        async with self._changed:
            self.taken += 1
            self._changed.notify_all()

    async def one_after(self, seen: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self._over or self.taken > seen)

    async def end(self) -> None:
        """No more samples: no worker waits for one (the sampler is done or failed)."""
        async with self._changed:
            self._over = True
            self._changed.notify_all()


async def work(
    conn: Connection, queue: str, stop: asyncio.Event, hold: float, samples: Samples
) -> int:
    """A worker: pull, hold the job ``hold`` seconds (the work) and until a sample of
    the active rows was taken after the claim, ack; until ``stop``.  Waiting for a
    sample ties the work to the sampler's pace, whatever the load: every sample
    releases at most the limit's count of jobs, so the run takes enough samples."""
    done = 0
    while not stop.is_set():
        reply = await conn.call("PULL", {"queue": queue, "owner": "w", "timeout": 200})
        if reply["job"] is None:
            continue
        seen = samples.taken
        await asyncio.sleep(hold)
        await samples.one_after(seen)
        await conn.call("ACK", {"id": reply["job"]["id"], "token": reply["token"]})
        done += 1
    return done


async def sample_max_active(
    pair: Pair, queue: str, total: int, samples: Samples, group: str | None = None
) -> int:
    """Count the active rows again and again until ``total`` jobs finished: the
    highest count seen (``samples.taken``: how many samples)."""
    highest = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120
    while await finished(pair, queue) < total:
        assert loop.time() < deadline, "the workers did not finish in time"
        highest = max(highest, await active_count(pair, queue, group))
        await samples.count()
    return highest


async def test_a_concurrency_limit_of_5_holds_while_8_workers_on_two_brokers_pull(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    queue = new_queue("conc")
    await b.call("SetConcurrency", {"queue": queue, "limit": 5})
    await push_many(a, queue, 120)
    stop, samples = asyncio.Event(), Samples()
    async with connections(pair, 4) as workers:
        tasks = [asyncio.create_task(work(conn, queue, stop, 0.02, samples)) for conn in workers]
        try:
            highest = await sample_max_active(pair, queue, 120, samples)
        finally:
            stop.set()
            await samples.end()
            done = await asyncio.gather(*tasks)
    assert sum(done) == 120
    assert samples.taken > 20, "too few samples to judge"
    assert highest <= 5, f"{highest} jobs were active at once under a limit of 5"
    assert highest >= 3, "the limit was never approached: the test proves nothing"
    limits = (await a.call("GetQueueLimits", {"queue": queue}))["data"]["limits"]
    assert limits == {
        "rateLimit": None,
        "rateLimitTtl": 0,
        "concurrencyLimit": 5,
        "maxed": False,
    }


def fixed_windows(times: list[datetime], window: timedelta) -> list[int]:
    """Claims per rate window as the limiter opens them: a window starts at the
    first claim after the previous one closed."""
    counts: list[int] = []
    start: datetime | None = None
    for t in sorted(times):
        if start is None or t >= start + window:
            start = t
            counts.append(0)
        counts[-1] += 1
    return counts


async def test_a_rate_limit_of_n_per_second_holds_over_two_brokers(
    pair: Pair, clients: Clients
) -> None:
    a, _ = clients
    queue = new_queue("rate")
    n = 8
    await a.call("RateLimit", {"queue": queue, "limit": n, "duration": 1000})
    await push_many(a, queue, 40)

    async def claimer(conn: Connection) -> int:
        got = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 3.5
        while loop.time() < deadline:
            reply = await conn.call(
                "PULLB",
                {"queue": queue, "count": 3, "owner": "w", "timeout": 300, "detach": True},
            )
            got += len(reply["jobs"])
        return got

    async with connections(pair, 2) as workers:
        claimed = sum(await asyncio.gather(*(claimer(conn) for conn in workers)))
    rows = await sql(
        pair.dsn,
        "SELECT started_at FROM pgqueue_jobs WHERE namespace = $1 AND queue = $2"
        " AND state = 'active'",
        pair.namespace,
        queue,
    )
    windows = fixed_windows([row["started_at"] for row in rows], timedelta(seconds=1))
    assert len(rows) == claimed
    assert max(windows) <= n, f"claims per window: {windows}"
    assert len(windows) >= 3 and claimed >= 2 * n, f"the limiter starved: {windows}"


async def test_a_rate_limited_pull_says_when_the_window_reopens(clients: Clients) -> None:
    a, b = clients
    queue = new_queue("ttl")
    await a.call("RateLimit", {"queue": queue, "limit": 1, "duration": 60_000})
    await push_many(a, queue, 3)
    first = await b.call("PULLB", {"queue": queue, "count": 5, "owner": "w"})
    assert len(first["jobs"]) == 1
    held = await a.call("PULL", {"queue": queue, "owner": "w"})
    assert held["job"] is None
    assert 50_000 < held["rateLimitTtl"] <= 60_000
    limits = (await b.call("GetQueueLimits", {"queue": queue}))["data"]["limits"]
    assert limits["rateLimit"] == {"max": 1, "duration": 60_000}
    assert 50_000 < limits["rateLimitTtl"] <= 60_000
    await b.call("RateLimitClear", {"queue": queue})
    assert len((await a.call("PULLB", {"queue": queue, "count": 5}))["jobs"]) == 2


async def test_claims_held_back_by_a_rate_limit_are_counted_per_broker_and_summed(
    clients: Clients,
) -> None:
    """The throttle figure counts: each broker exports its own held-back claims as a
    counter, and AlertFigures adds the other live brokers' reported counts."""
    a, b = clients
    queue = new_queue("throttle")
    await a.call("RateLimit", {"queue": queue, "limit": 1, "duration": 60_000})
    await push_many(a, queue, 3)
    assert len((await a.call("PULLB", {"queue": queue, "count": 5, "owner": "w"}))["jobs"]) == 1
    for _ in range(2):
        assert (await a.call("PULL", {"queue": queue, "owner": "w"}))["job"] is None
    assert (await b.call("PULL", {"queue": queue, "owner": "w"}))["job"] is None
    text = (await a.call("Prometheus"))["data"]["metrics"]
    assert f'pgqueue_queue_rate_throttled_total{{queue="{queue}"}} 2.0' in text
    own = (await b.call("AlertFigures", {"queue": queue}))["queues"]
    assert [f["rateThrottled"] for f in own] == [1]

    async def summed() -> bool:
        figures = (await b.call("AlertFigures", {"queue": queue}))["queues"]
        return [f["rateThrottled"] for f in figures] == [3]

    # a's count reaches b with a's next status report (every session heartbeat).
    await eventually(summed, timeout=30, message="b adds a's reported throttle count")


async def test_a_small_group_is_served_within_one_round_of_a_huge_one(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue("fair")
    await push_many(a, queue, 5_000, groupId="big")
    small = await push_many(b, queue, 3, groupId="small")
    order: list[str] = []
    for i in range(6):
        conn = (a, b)[i % 2]
        reply = await conn.call("PULL", {"queue": queue, "owner": "w"})
        order.append(reply["job"]["id"])
    assert set(small) <= set(order), "a small group waited behind a big one"
    assert [order.index(job_id) for job_id in small] == sorted(
        order.index(job_id) for job_id in small
    )
    counts = await a.call("GetGroupJobsCount", {"queue": queue, "groupId": "big"})
    assert counts["data"] == {"count": 4_997}


async def test_group_concurrency_holds_across_brokers(pair: Pair, clients: Clients) -> None:
    a, b = clients
    queue = new_queue("gconc")
    await a.call("SetGroupConcurrency", {"queue": queue, "groupId": "t1", "concurrency": 2})
    await push_many(b, queue, 40, groupId="t1")
    stop, samples = asyncio.Event(), Samples()
    async with connections(pair, 3) as workers:
        tasks = [asyncio.create_task(work(conn, queue, stop, 0.02, samples)) for conn in workers]
        try:
            highest = await sample_max_active(pair, queue, 40, samples, "t1")
        finally:
            stop.set()
            await samples.end()
            await asyncio.gather(*tasks)
    assert samples.taken > 10
    assert highest <= 2, f"{highest} jobs of group t1 were active at once under a limit of 2"


async def test_a_paused_group_is_skipped_everywhere_and_resumes(clients: Clients) -> None:
    a, b = clients
    queue = new_queue("gpause")
    [held] = await push_many(a, queue, 1, groupId="held")
    [other] = await push_many(a, queue, 1, groupId="other")
    assert (await b.call("PauseGroup", {"queue": queue, "groupId": "held"}))["data"] == {
        "changed": True
    }
    assert (await a.call("IsGroupPaused", {"queue": queue, "groupId": "held"}))["data"] == {
        "paused": True
    }
    first = await a.call("PULLB", {"queue": queue, "count": 5})
    assert [job["id"] for job in first["jobs"]] == [other]
    assert (await b.call("PULLB", {"queue": queue, "count": 5}))["jobs"] == []
    assert (await a.call("ResumeGroup", {"queue": queue, "groupId": "held"}))["data"] == {
        "changed": True
    }
    assert (await a.call("ResumeGroup", {"queue": queue, "groupId": "held"}))["data"] == {
        "changed": False
    }
    last = await b.call("PULLB", {"queue": queue, "count": 5})
    assert [job["id"] for job in last["jobs"]] == [held]


async def test_group_rate_limits_and_deadlines_hold_across_brokers(clients: Clients) -> None:
    a, b = clients
    queue = new_queue("grate")
    await push_many(a, queue, 10, groupId="g")
    await a.call(
        "SetGroupRateLimit", {"queue": queue, "groupId": "g", "max": 3, "duration": 60_000}
    )
    assert (await b.call("GetGroupRateLimit", {"queue": queue, "groupId": "g"}))["data"] == {
        "limit": {"max": 3, "duration": 60_000}
    }
    got = len((await a.call("PULLB", {"queue": queue, "count": 2}))["jobs"])
    got += len((await b.call("PULLB", {"queue": queue, "count": 5}))["jobs"])
    assert got == 3
    held = await a.call("PULLB", {"queue": queue, "count": 5})
    assert held["jobs"] == [] and 50_000 < held["rateLimitTtl"] <= 60_000
    ttl = (await b.call("GetGroupRateLimitTtl", {"queue": queue, "groupId": "g"}))["data"]
    assert 50_000 < ttl["ttl"] <= 60_000
    removed = await b.call("RemoveGroupRateLimit", {"queue": queue, "groupId": "g"})
    assert removed["data"] == {"removed": 1}
    await b.call("RateLimitGroup", {"queue": queue, "groupId": "g", "duration": 60_000})
    assert (await a.call("PULLB", {"queue": queue, "count": 5}))["jobs"] == []
    active = await a.call("GetGroupActiveCount", {"queue": queue, "groupId": "g"})
    assert active["data"] == {"count": 3}
    assert (await a.call("GetGroupsJobsCount", {"queue": queue}))["data"] == {"count": 7}


async def test_pull_group_defaults_cap_every_group(pair: Pair, clients: Clients) -> None:
    a, b = clients
    queue = new_queue("gdef")
    await push_many(a, queue, 5, groupId="x")
    await push_many(a, queue, 5, groupId="y")
    group = {"concurrency": 1}
    first = await a.call("PULLB", {"queue": queue, "count": 10, "group": group})
    second = await b.call("PULLB", {"queue": queue, "count": 10, "group": group})
    assert sorted(job["groupId"] for job in first["jobs"]) == ["x", "y"]
    assert second["jobs"] == []
    assert await active_count(pair, queue) == 2
