"""The leader vacuums the jobs table when it holds enough dead tuples, and only then."""

from __future__ import annotations

from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import sql_value

FAST = {"run_maintenance": True, "vacuum_interval_ms": 20, "leader_ttl_ms": 2_000}


async def _churn(m: PostgresQueueManager, n: int = 5) -> None:
    """Push, claim and ack ``n`` jobs: two dead versions each in pgqueue_jobs."""
    for i in range(n):
        await m.push("churn", "n", i)
    claims = await m.pull_batch("churn", n)
    await m.ack_batch([(c.id, c.token, None) for c in claims])


async def _vacuum_count(dsn: str) -> int:
    return int(
        await sql_value(
            dsn, "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'pgqueue_jobs'"
        )
    )


async def test_the_leader_vacuums_the_jobs_table_once_it_holds_enough_dead_tuples(
    db_dsn: str, namespace: str
) -> None:
    before = await _vacuum_count(db_dsn)
    async with start_manager(
        db_dsn, namespace, vacuum_min_dead=1, vacuum_dead_ratio=1, **FAST
    ) as m:
        assert m.jobs_vacuum is not None

        async def vacuumed() -> bool:
            assert m.jobs_vacuum is not None
            if m.jobs_vacuum.vacuums:
                return True
            await _churn(m)  # dead tuples the statistics hear of (at most once a second)
            return False

        await eventually(vacuumed, timeout=30, interval=0.05, message="a vacuum")
    assert await _vacuum_count(db_dsn) > before


async def test_no_vacuum_while_the_dead_tuples_stay_below_the_threshold(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(db_dsn, namespace, vacuum_min_dead=10**9, **FAST) as m:
        assert m.jobs_vacuum is not None
        await _churn(m)
        first = m.jobs_vacuum.passes
        await eventually(
            lambda: m.jobs_vacuum is not None and m.jobs_vacuum.passes >= first + 3,
            message="three passes",
        )
        assert m.jobs_vacuum.vacuums == 0
        assert not m.jobs_vacuum.last_report.vacuumed


async def test_only_the_leader_vacuums(db_dsn: str, namespace: str) -> None:
    settings = {**FAST, "vacuum_min_dead": 1, "vacuum_dead_ratio": 1}
    async with (
        start_manager(db_dsn, namespace, broker_id="v1", **settings) as a,
        start_manager(db_dsn, namespace, broker_id="v2", **settings) as b,
    ):

        def leader() -> PostgresQueueManager | None:
            leading = [m for m in (a, b) if m.elector and m.elector.is_leader.is_set()]
            return leading[0] if len(leading) == 1 else None

        await eventually(leader, message="one leader")
        follower = b if leader() is a else a
        assert follower.jobs_vacuum is not None
        assert follower.jobs_vacuum.passes == 0, "a follower waits for the seat"
