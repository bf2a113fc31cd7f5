"""A queue's stall config sets the leases of its claims (stallInterval, gracePeriod)."""

from __future__ import annotations

import pytest

from pgqueue.runtime import PostgresQueueManager
from tests.helpers import sql_value


async def _lease_ms(db_dsn: str, job_id: str) -> float:
    return float(
        await sql_value(
            db_dsn,
            "SELECT extract(epoch FROM lease_until - started_at) * 1000 FROM pgqueue_jobs"
            " WHERE id = $1",
            job_id,
        )
    )


async def test_stall_interval_is_the_lease_of_a_claim_that_names_none(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    await manager.set_stall_config("q", {"stallInterval": 7000, "gracePeriod": 0})
    job_id = await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1)
    assert await _lease_ms(db_dsn, job_id) == pytest.approx(7000, abs=1)


async def test_an_explicit_lock_ttl_wins_over_the_stall_interval(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    await manager.set_stall_config("q", {"stallInterval": 7000, "gracePeriod": 0})
    job_id = await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1, lock_ttl_ms=20_000)
    assert await _lease_ms(db_dsn, job_id) == pytest.approx(20_000, abs=1)


async def test_the_grace_period_lengthens_a_short_first_lease_but_not_past_the_timeout(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    await manager.set_stall_config("q", {"gracePeriod": 9000})
    first = await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1, lock_ttl_ms=1000)
    assert await _lease_ms(db_dsn, first) == pytest.approx(9000, abs=1)
    bounded = await manager.push("q", "n", 2, timeout=3000)
    await manager.pull_batch("q", 1, lock_ttl_ms=1000)
    assert await _lease_ms(db_dsn, bounded) == pytest.approx(3000, abs=1)


async def test_without_a_stall_config_the_brokers_lease_applies(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    job_id = await manager.push("plain", "n", 1)
    await manager.pull_batch("plain", 1)
    assert await _lease_ms(db_dsn, job_id) == pytest.approx(manager.config.lease_ms, abs=1)
