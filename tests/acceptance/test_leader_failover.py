"""G6 with the maintenance leader as the victim: two ``pgqueue serve`` processes,
the leader is killed with -9 while a worker on it holds a lease.

Lease recovery must not wait for the leader seat (``leader_ttl_ms``, 15 s by
default) to change hands: every broker sweeps expired leases.
"""

from __future__ import annotations

import asyncio

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory
from tests.helpers import sql_value

LEASE_MS = 2_000
REAPER_INTERVAL_MS = 500
MARGIN_S = 2.0  # scheduling slack on a busy 2-core machine; far below the 15 s leader seat
SETTINGS = ("--set", f"reaper_interval_ms={REAPER_INTERVAL_MS}", "--poll-interval-ms", "100")


async def _leader(dsn: str, namespace: str) -> str | None:
    return await sql_value(  # type: ignore[no-any-return]
        dsn,
        "SELECT broker_id FROM pgqueue_leaders"
        " WHERE namespace = $1 AND name = 'maintenance' AND expires_at > clock_timestamp()",
        namespace,
    )


async def test_a_killed_leaders_leases_come_back_within_lease_plus_reaper_interval(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    leader = brokers.start("lead-a", *SETTINGS, http=False)
    assert await eventually(lambda: _leader(db_dsn, namespace), timeout=20) == "lead-a"
    survivor = brokers.start("lead-b", *SETTINGS, http=False)
    on_leader = await Connection.open("127.0.0.1", leader.tcp_port)
    on_survivor = await Connection.open("127.0.0.1", survivor.tcp_port)
    try:
        pushed = await on_survivor.call("PUSH", {"queue": "g6", "name": "n", "data": 1})
        pulled = await on_leader.call(
            "PULL", {"queue": "g6", "owner": "w1", "lockTtl": LEASE_MS, "detach": True}
        )
        assert pulled["job"]["id"] == pushed["id"]
        loop = asyncio.get_running_loop()
        claimed_at = loop.time()
        await asyncio.to_thread(leader.kill)
        assert await _leader(db_dsn, namespace) == "lead-a", "the dead leader still holds the seat"

        async def reclaimed() -> bool:
            reply = await on_survivor.call("PULL", {"queue": "g6", "owner": "w2", "timeout": 0})
            return reply["job"] is not None and reply["job"]["id"] == pushed["id"]

        bound = LEASE_MS / 1000 + REAPER_INTERVAL_MS / 1000 + MARGIN_S
        await eventually(reclaimed, timeout=30, interval=0.05, message="job re-claimable")
        elapsed = loop.time() - claimed_at
        assert elapsed <= bound, f"re-claimable after {elapsed:.1f} s, bound {bound:.1f} s"
    finally:
        await on_leader.close()
        await on_survivor.close()
