"""pgqueue's engine (PostgresQueueManager, in-process) as a peer of the benchmark.

For ../shared/bench/peers (BENCH_ADAPTER_DIRS=<repo>/scripts/bench).  Same durability
as the other peers: synchronous_commit on, logged tables.  Each worker task runs the
engine's own loop: one claim statement per batch (SKIP LOCKED, lease on the database
clock, fence bump, outbox event), the handler per job, one ack statement per batch
(compare-and-set on token and lease, move to the finished table, outbox event).
"""

from __future__ import annotations

import asyncio
import logging
from importlib import metadata

from pgqueue import PostgresQueueManager
from pgqueue.db.schema import migrate_async

NAME = "pgqueue_engine"
CONFIGS = {
    "default": {"procs": 1, "tasks": 4, "batch": 100},
    "2x10": {"procs": 2, "tasks": 10, "batch": 10},
}
PENDING_SQL = "SELECT count(*) FROM pgqueue_jobs"
DONE_SQL = "SELECT count(*) FROM pgqueue_finished WHERE state = 'completed'"
QUEUE = "bench"

logging.getLogger("pgqueue").setLevel(logging.WARNING)


def describe() -> dict[str, str]:
    return {
        "version": metadata.version("pgqueue"),
        "client": "PostgresQueueManager (asyncpg pool) in the worker process",
        "enqueue_single": "manager.push (one INSERT statement with its outbox event)",
        "enqueue_bulk": "manager.push_bulk (one multi-row INSERT ... FROM unnest)",
        "worker": "tasks x (pull_batch -> handler per job -> ack_batch), run_maintenance off",
    }


async def install(dsn: str) -> None:
    await migrate_async(dsn)


def _manager(dsn: str, pool: int) -> PostgresQueueManager:
    from pgqueue import Config

    return PostgresQueueManager(
        Config(
            dsn=dsn, namespace="bench", pool_min_size=1, pool_max_size=pool, run_maintenance=False
        )
    )


class Producer:
    def __init__(self, dsn: str) -> None:
        self.manager = _manager(dsn, 2)

    async def __aenter__(self) -> Producer:
        await self.manager.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.manager.close()

    async def enqueue(self, payload: dict[str, object]) -> None:
        await self.manager.push(QUEUE, "noop", payload)

    async def enqueue_many(self, payloads: list[dict[str, object]]) -> None:
        await self.manager.push_bulk(QUEUE, [{"name": "noop", "data": p} for p in payloads])


async def run_worker(dsn: str, config: dict, handler, stop: asyncio.Event) -> None:  # type: ignore[no-untyped-def]
    manager = _manager(dsn, config["tasks"] + 1)
    await manager.start()

    async def task() -> None:
        while not stop.is_set():
            # A long poll, as the SDK Worker's (poll_timeout 1 s): an idle task waits
            # on the hint instead of re-claiming every few ms.
            jobs = await manager.pull_batch(QUEUE, config["batch"], timeout_ms=1000)
            if not jobs:
                continue
            for job in jobs:
                handler(job.data)
            await manager.ack_batch([(job.id, job.token, None) for job in jobs])

    try:
        await asyncio.gather(*[task() for _ in range(config["tasks"])])
    finally:
        await manager.close()
