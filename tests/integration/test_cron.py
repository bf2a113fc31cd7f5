"""Cron schedulers on real PostgreSQL: each tick admitted once, on the database clock (G8).

The ticker's clock is moved with ``cron_tick(now=...)`` instead of waiting.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest

from pgqueue.db.queries import Q
from pgqueue.errors import ValidationError
from pgqueue.runtime import PostgresQueueManager
from tests.conftest import start_manager
from tests.helpers import clock_ahead, sql, sql_value


async def _ticks(dsn: str, namespace: str, name: str) -> list[tuple[datetime, str | None, str]]:
    rows = await sql(
        dsn,
        "SELECT tick_at, job_id, outcome FROM pgqueue_scheduler_ticks"
        " WHERE namespace = $1 AND scheduler = $2 ORDER BY tick_at",
        namespace,
        name,
    )
    return [(r["tick_at"], r["job_id"], r["outcome"]) for r in rows]


async def _jobs(dsn: str, namespace: str, queue: str) -> int:
    return int(
        await sql_value(
            dsn,
            "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND queue = $2",
            namespace,
            queue,
        )
    )


async def test_a_scheduler_is_created_read_listed_and_removed(
    manager: PostgresQueueManager,
) -> None:
    made = await manager.upsert_scheduler(
        "nightly", "reports", pattern="0 3 * * *", timezone="Europe/Rome", data={"b": 1, "a": 2}
    )
    assert made.pattern == "0 3 * * *" and made.executions == 0
    assert made.next_run_at is not None
    local = made.next_run_at.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Rome"))
    assert (local.hour, local.minute) == (3, 0)
    got = await manager.get_scheduler("nightly")
    assert got is not None and got.data == {"b": 1, "a": 2}
    assert list(got.data) == ["b", "a"], "data comes back in the order sent"
    wire = got.as_wire()
    assert (
        wire["schedule"] == "0 3 * * *" and wire["nextRun"] == made.next_run_at.timestamp() * 1000
    )
    assert [s.name for s in await manager.list_schedulers()] == ["nightly"]
    assert await manager.list_schedulers("other") == []
    assert await manager.remove_scheduler("nightly") is True
    assert await manager.get_scheduler("nightly") is None
    assert await manager.remove_scheduler("nightly") is False


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pattern": "61 * * * *"}, "Invalid cron expression"),
        ({"pattern": "* * *"}, "5 fields"),
        ({"pattern": "* * * * *", "timezone": "Mars/Olympus"}, "Invalid timezone"),
        ({"every_ms": -5}, "repeatEvery"),
        ({"every_ms": 0}, "repeatEvery"),
        ({}, "either schedule or repeatEvery"),
        ({"every_ms": 1000, "job_options": {"attempts": 0}}, "maxAttempts"),
        ({"every_ms": 1000, "job_options": {"atempts": 3}}, "unknown job option"),
        ({"every_ms": 1000, "start_date": 2000, "end_date": 1000}, "endDate"),
    ],
)
async def test_bad_input_is_refused_and_changes_nothing(
    manager: PostgresQueueManager, db_dsn: str, namespace: str, fields: dict, message: str
) -> None:
    await manager.upsert_scheduler("keep", "q", every_ms=60_000, data={"v": 1})
    before = await manager.get_scheduler("keep")
    with pytest.raises(ValidationError, match=message):
        await manager.upsert_scheduler("keep", "q", **fields)
    assert await manager.get_scheduler("keep") == before
    count = await sql_value(
        db_dsn, "SELECT count(*) FROM pgqueue_schedulers WHERE namespace = $1", namespace
    )
    assert count == 1


async def test_each_tick_of_an_interval_is_admitted_once_with_its_options(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    made = await manager.upsert_scheduler(
        "beat",
        "cq",
        every_ms=1_000,
        data={"z": 1, "a": [1e20, 2]},
        job_name="ping",
        prevent_overlap=False,
        job_options={"attempts": 7, "timeout": 5_000, "remove_on_complete": True},
        priority=4,
    )
    assert made.next_run_at is not None
    assert (await manager.cron_tick()).admitted == 0, "nothing due yet"
    report = await manager.cron_tick(now=made.next_run_at + timedelta(milliseconds=10))
    assert report.admitted == 1
    again = await manager.cron_tick(now=made.next_run_at + timedelta(milliseconds=20))
    assert again.admitted == 0, "a tick is admitted once"
    [(tick, job_id, outcome)] = await _ticks(db_dsn, namespace, "beat")
    assert tick == made.next_run_at and outcome == "admitted"
    assert job_id is not None
    job = await manager.get_job(job_id)
    assert job is not None and job.name == "ping" and job.priority == 4
    assert job.max_attempts == 7 and job.timeout_ms == 5_000 and job.remove_on_complete
    data_text = await sql_value(
        db_dsn,
        "SELECT data::text FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
        namespace,
        job_id,
    )
    plain = await manager.push("cq", "ping", {"z": 1, "a": [1e20, 2]})
    plain_text = await sql_value(
        db_dsn,
        "SELECT data::text FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
        namespace,
        plain,
    )
    assert data_text == plain_text, "the tick's data is the text a push stores"
    after = await manager.get_scheduler("beat")
    assert after is not None and after.executions == 1
    assert after.next_run_at == made.next_run_at + timedelta(seconds=1)


async def test_missed_ticks_collapse_into_one_with_skip_missed_on_restart(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    made = await manager.upsert_scheduler("skip", "sq", every_ms=1_000, prevent_overlap=False)
    assert made.next_run_at is not None
    outage_end = made.next_run_at + timedelta(seconds=9, milliseconds=500)
    report = await manager.cron_tick(now=outage_end)
    assert report.admitted == 1 and report.dropped == 1
    [(tick, _, _)] = await _ticks(db_dsn, namespace, "skip")
    assert tick == made.next_run_at + timedelta(seconds=9), "the latest due tick fires"
    after = await manager.get_scheduler("skip")
    assert after is not None and after.next_run_at == made.next_run_at + timedelta(seconds=10)
    assert await _jobs(db_dsn, namespace, "sq") == 1


async def test_missed_ticks_are_caught_up_without_skip_missed_on_restart(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(db_dsn, namespace, broker_id="b", cron_catch_up_max=5) as manager:
        made = await manager.upsert_scheduler(
            "catch", "kq", every_ms=1_000, prevent_overlap=False, skip_missed_on_restart=False
        )
        assert made.next_run_at is not None
        first = made.next_run_at
        report = await manager.cron_tick(now=first + timedelta(seconds=3, milliseconds=1))
        assert report.admitted == 4
        ticks = [t for t, _, _ in await _ticks(db_dsn, namespace, "catch")]
        assert ticks == [first + timedelta(seconds=k) for k in range(4)]
        # A longer outage: only the newest cron_catch_up_max missed ticks come back.
        report = await manager.cron_tick(now=first + timedelta(seconds=20, milliseconds=1))
        assert report.admitted == 5 and report.dropped == 1
        ticks = [t for t, _, _ in await _ticks(db_dsn, namespace, "catch")]
        assert ticks[4:] == [first + timedelta(seconds=k) for k in range(16, 21)]
        assert await _jobs(db_dsn, namespace, "kq") == 9


async def test_prevent_overlap_admits_no_tick_job_while_the_last_one_is_live(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    made = await manager.upsert_scheduler("solo", "oq", every_ms=1_000)  # preventOverlap default
    assert made.next_run_at is not None and made.prevent_overlap
    first = made.next_run_at
    assert (await manager.cron_tick(now=first)).admitted == 1
    report = await manager.cron_tick(now=first + timedelta(seconds=1))
    assert report.admitted == 0 and report.overlapped == 1
    ticks = await _ticks(db_dsn, namespace, "solo")
    assert [o for _, _, o in ticks] == ["admitted", "overlap"]
    assert ticks[1][1] == ticks[0][1], "the overlapped tick names the live job"
    [claim] = await manager.pull_batch("oq", 1)
    await manager.ack(claim.id, claim.token)
    assert (await manager.cron_tick(now=first + timedelta(seconds=2))).admitted == 1
    after = await manager.get_scheduler("solo")
    assert after is not None and after.executions == 2, "an overlapped tick is no execution"


async def test_max_limit_stops_after_n_executions(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    made = await manager.upsert_scheduler(
        "thrice",
        "lq",
        every_ms=1_000,
        limit=3,
        prevent_overlap=False,
        skip_missed_on_restart=False,
    )
    assert made.next_run_at is not None
    report = await manager.cron_tick(now=made.next_run_at + timedelta(seconds=10))
    assert report.admitted == 3
    after = await manager.get_scheduler("thrice")
    assert after is not None and after.executions == 3 and after.next_run_at is None
    assert after.as_wire()["nextRun"] is None
    assert (await manager.cron_tick(now=clock_ahead(60_000))).admitted == 0
    assert await _jobs(db_dsn, namespace, "lq") == 3
    # Raising the limit wakes it up again, executions kept.
    again = await manager.upsert_scheduler("thrice", "lq", every_ms=1_000, limit=4)
    assert again.executions == 3 and again.next_run_at is not None


async def test_immediately_start_and_end_dates(manager: PostgresQueueManager) -> None:
    now_ms = (await manager.db.fetchval(Q.scheduler_clock)).timestamp() * 1000
    soon = await manager.upsert_scheduler("now", "iq", every_ms=60_000, immediately=True)
    assert soon.next_run_at is not None
    assert abs(soon.next_run_at.timestamp() * 1000 - now_ms) < 5_000
    assert (await manager.cron_tick()).admitted == 1, "immediately fires at once"
    start = now_ms + 3_600_000
    later = await manager.upsert_scheduler("later", "iq", every_ms=1_000, start_date=start)
    assert later.next_run_at is not None
    assert later.next_run_at.timestamp() * 1000 == pytest.approx(start, abs=1)
    ended = await manager.upsert_scheduler("ended", "iq", every_ms=1_000, end_date=now_ms - 1_000)
    assert ended.next_run_at is None, "a scheduler past its end is spent"
    short = await manager.upsert_scheduler(
        "short",
        "iq",
        every_ms=1_000,
        end_date=now_ms + 2_500,
        prevent_overlap=False,
        skip_missed_on_restart=False,
    )
    assert short.next_run_at is not None
    report = await manager.cron_tick(now=clock_ahead(60_000))
    assert report.admitted in (1, 2)  # the ticks before its end, not after
    done = await manager.get_scheduler("short")
    assert done is not None and done.next_run_at is None


async def test_two_brokers_ticking_at_once_admit_each_tick_once(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="t1") as one,
        start_manager(db_dsn, namespace, broker_id="t2") as two,
    ):
        for i in range(20):
            await one.upsert_scheduler(
                f"race-{i}",
                "rq",
                every_ms=1_000,
                prevent_overlap=False,
                skip_missed_on_restart=False,
            )
        at = clock_ahead(5_500)
        reports = await asyncio.gather(*(m.cron_tick(now=at) for m in (one, two, one, two)))
        admitted = sum(r.admitted for r in reports)
        ticks = await sql_value(
            db_dsn, "SELECT count(*) FROM pgqueue_scheduler_ticks WHERE namespace = $1", namespace
        )
        assert admitted == ticks >= 20 * 5, "each due tick of each scheduler, once"
        duplicates = await sql_value(
            db_dsn,
            "SELECT count(*) FROM (SELECT scheduler, tick_at FROM pgqueue_scheduler_ticks"
            " WHERE namespace = $1 GROUP BY 1, 2 HAVING count(*) > 1) d",
            namespace,
        )
        assert duplicates == 0
        assert await _jobs(db_dsn, namespace, "rq") == ticks
        assert (await one.cron_tick(now=at)).admitted == 0, "nothing left due at that instant"


async def test_a_repeatable_job_is_the_first_run_of_its_scheduler(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push(
        "rp", "report", {"k": 1}, repeat={"every": 2_000, "limit": 3}, attempts=5
    )
    [scheduler] = await manager.list_schedulers("rp")
    assert scheduler.source == "repeat" and scheduler.executions == 1
    assert scheduler.name.startswith("repeat:rp:report:")
    assert scheduler.job_options["attempts"] == 5
    [(first, tick_job, _)] = await _ticks(db_dsn, namespace, scheduler.name)
    assert tick_job == job_id
    job = await manager.get_job(job_id)
    assert job is not None and job.state == "delayed", "the first run waits for its tick"
    assert scheduler.next_run_at == first + timedelta(seconds=2)
    report = await manager.cron_tick(now=first + timedelta(seconds=10))
    assert report.admitted == 1  # skipMissed: one more run, then the limit
    done = await manager.get_scheduler(scheduler.name)
    assert done is not None and done.executions == 2
    with pytest.raises(ValidationError, match="cron expression"):
        await manager.push("rp", "bad", {}, repeat={"pattern": "nope"})
    assert len(await manager.list_schedulers("rp")) == 1, "a refused repeat writes nothing"


async def test_pushing_a_pattern_series_twice_admits_one_job_for_its_tick(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    first = await manager.push("rp2", "yearly", {"v": 1}, repeat={"pattern": "0 0 1 1 *"})
    second = await manager.push("rp2", "yearly", {"v": 2}, repeat={"pattern": "0 0 1 1 *"})
    assert second == first, "the tick's job, not a second one"
    assert await _jobs(db_dsn, namespace, "rp2") == 1
    [scheduler] = await manager.list_schedulers("rp2")
    assert scheduler.data == {"v": 2}, "the series takes the new template"
