"""The jobs vacuum's rule: when a VACUUM is due, who may run one, and how often."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import pytest

from pgqueue.config import Config
from pgqueue.db.queries import Q, Query
from pgqueue.errors import PgQueueError
from pgqueue.maintenance.jobs_vacuum import (
    DUTY_WAIT,
    JobsVacuum,
    vacuum_due,
    vacuum_jobs_once,
)
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.manager.context import EngineContext


@pytest.mark.parametrize(
    ("dead", "live", "due"),
    [
        (1_999, 0, False),  # below the minimum, however few live
        (2_000, 0, True),  # a drained table
        (5_000, 500, True),  # ten times more dead than live
        (5_000, 501, False),  # still busy
        (300_000, 1_000_000, False),  # a backlog: autovacuum's
    ],
)
def test_a_vacuum_is_due_once_the_table_has_drained(dead: int, live: int, due: bool) -> None:
    assert vacuum_due(dead, live, min_dead=2_000, dead_ratio=10) is due


class QueryCanceled(PgQueueError):
    pass


@dataclass
class FakeDb:
    """Answers the stats query; a VACUUM advances the clock by ``vacuum_s``."""

    dead: int = 5_000
    live: int = 0
    may_vacuum: bool = True
    fails: bool = False
    vacuum_s: float = 0.5
    now: list[float] = field(default_factory=lambda: [100.0])
    ran: list[str] = field(default_factory=list)

    async def fetchrow(self, query: Query, /, *args: Any, **params: Any) -> dict[str, Any]:
        assert query is Q.jobs_vacuum_stats
        return {"dead": self.dead, "live": self.live, "may_vacuum": self.may_vacuum}

    async def execute(self, query: Query, /, *args: Any, **params: Any) -> None:
        assert query is Q.jobs_vacuum
        self.ran.append(query.name)
        self.now[0] += self.vacuum_s
        if self.fails:
            raise QueryCanceled("canceling statement due to statement timeout")

    def clock(self) -> float:
        return self.now[0]


def _ctx(db: FakeDb, **settings: Any) -> EngineContext:
    config = Config(dsn="postgresql://localhost/x", **settings).validate()
    return cast(EngineContext, SimpleNamespace(db=db, config=config))


async def test_a_role_that_may_not_vacuum_the_table_never_tries() -> None:
    db = FakeDb(may_vacuum=False)
    report = await vacuum_jobs_once(_ctx(db), clock=db.clock)
    assert (report.dead, report.vacuumed) == (5_000, False)
    assert db.ran == []


async def test_no_vacuum_below_the_threshold_and_one_above() -> None:
    db = FakeDb(dead=10)
    assert not (await vacuum_jobs_once(_ctx(db), clock=db.clock)).vacuumed
    db.dead = 2_000
    report = await vacuum_jobs_once(_ctx(db), clock=db.clock)
    assert report.vacuumed and report.seconds == pytest.approx(0.5)
    assert db.ran == ["jobs_vacuum"]


def _service(db: FakeDb, **settings: Any) -> JobsVacuum:
    elector = cast(LeaderElector, SimpleNamespace(is_leader=asyncio.Event()))
    return JobsVacuum(_ctx(db, **settings), elector, clock=db.clock)


async def test_after_a_vacuum_the_next_waits_nine_times_its_duration() -> None:
    db = FakeDb(vacuum_s=0.5)
    service = _service(db)
    assert (await service.pass_once()).vacuumed
    ended = db.now[0]
    db.now[0] = ended + DUTY_WAIT * 0.5 - 0.01
    assert not (await service.pass_once()).vacuumed, "still within the rate limit"
    db.now[0] = ended + DUTY_WAIT * 0.5
    assert (await service.pass_once()).vacuumed
    assert service.vacuums == 2 and len(db.ran) == 2


async def test_vacuum_jobs_off_never_vacuums() -> None:
    db = FakeDb()
    service = _service(db, vacuum_jobs=False)
    assert not (await service.pass_once()).vacuumed
    assert db.ran == [] and service.vacuums == 0


async def test_a_vacuum_that_failed_is_rate_limited_by_the_time_it_took() -> None:
    db = FakeDb(vacuum_s=30.0, fails=True)
    service = _service(db)
    with pytest.raises(QueryCanceled):
        await service.pass_once()
    failed_at = db.now[0]
    db.fails = False
    db.now[0] = failed_at + DUTY_WAIT * 30.0 - 1
    assert not (await service.pass_once()).vacuumed, "no retry every interval"
    db.now[0] = failed_at + DUTY_WAIT * 30.0
    assert (await service.pass_once()).vacuumed
    assert len(db.ran) == 2
