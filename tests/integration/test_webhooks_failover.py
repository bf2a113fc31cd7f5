"""At least once across a crash: the delivering leader is killed (-9) mid-stream,
another broker takes over, and every event still reaches the receiver; a
duplicate only ever repeats a delivery id."""

from __future__ import annotations

import asyncio
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path

from pgqueue.testing import eventually
from tests.helpers import sql, sql_value
from tests.integration.webhooks_support import (
    Received,
    Receiver,
    delivery_service,
    webhook_manager,
)

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def leader_process(
    dsn: str, namespace: str, broker_id: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.integration.webhooks_leader",
        dsn,
        namespace,
        broker_id,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        assert line.strip() == b"ready", line
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def _leader(dsn: str, namespace: str) -> str | None:
    return await sql_value(  # type: ignore[no-any-return]
        dsn,
        "SELECT broker_id FROM pgqueue_leaders"
        " WHERE namespace = $1 AND name = 'maintenance' AND expires_at > clock_timestamp()",
        namespace,
    )


async def test_every_event_is_delivered_across_a_leader_kill_and_duplicates_share_a_delivery_id(
    db_dsn: str, namespace: str
) -> None:
    killed = asyncio.Event()
    stuck = asyncio.Event()

    def answer(request: Received) -> Awaitable[int] | int:
        if killed.is_set() or len(r.requests) <= 3:
            return 200
        stuck.set()
        return _after(killed, 200)  # held open until the leader is dead

    async with (
        Receiver(answer) as r,
        leader_process(db_dsn, namespace, "doomed") as doomed,
    ):
        await eventually(lambda: _is(db_dsn, namespace, "doomed"), timeout=15)
        async with (
            webhook_manager(
                db_dsn,
                namespace,
                broker_id="heir",
                run_maintenance=True,
                leader_ttl_ms=1_000,
                reaper_interval_ms=100,
            ) as heir,
            delivery_service(heir),
        ):
            assert heir.elector is not None and not heir.elector.is_leader.is_set()
            await heir.add_webhook(r.url, ["job.pushed"])
            before = await heir.push_bulk("q", [{"name": "n", "data": i} for i in range(10)])
            await eventually(stuck.is_set, timeout=15, message="the leader is mid-delivery")

            doomed.kill()  # kill -9: no resignation, leases and claims left behind
            await doomed.wait()
            killed.set()
            after = await heir.push_bulk("q", [{"name": "n", "data": i} for i in range(10)])
            await eventually(heir.elector.is_leader.is_set, timeout=15, message="takeover")

            expected = {("job.pushed", job_id) for job_id in before + after}

            async def all_delivered() -> bool:
                statuses = await sql(
                    db_dsn,
                    "SELECT status FROM pgqueue_webhook_deliveries WHERE namespace = $1",
                    namespace,
                )
                return len(statuses) == 20 and {s["status"] for s in statuses} == {"delivered"}

            await eventually(all_delivered, timeout=30, message="every delivery recorded")

    assert set(r.events()) == expected
    ids_of_event: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    events_of_id: dict[str, set[tuple[str, str | None]]] = defaultdict(set)
    for request in r.requests:
        key = (request.json["event"], request.json["jobId"])
        ids_of_event[key].add(request.delivery_id)
        events_of_id[request.delivery_id].add(key)
    assert all(len(ids) == 1 for ids in ids_of_event.values()), "one delivery id per event"
    assert all(len(keys) == 1 for keys in events_of_id.values())
    assert len(r.requests) > len(expected), "the killed leader's attempts were retried"


async def _is(dsn: str, namespace: str, broker_id: str) -> bool:
    return await _leader(dsn, namespace) == broker_id


async def _after(event: asyncio.Event, status: int) -> int:
    await event.wait()
    return status
