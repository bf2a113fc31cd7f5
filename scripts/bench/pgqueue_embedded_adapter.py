"""pgqueue's Python SDK in embedded mode (``postgresql://``) as a peer of the benchmark.

For ../shared/bench/peers (BENCH_ADAPTER_DIRS=<repo>/scripts/bench).  Producers use
``Queue.add`` / ``Queue.add_bulk``; workers are ``pgqueue.Worker`` (batch pulls sized
to free slots, ack batching, lease heartbeats), the engine running in the worker
process.  Same durability as the other peers (synchronous_commit on, logged tables).
"""

from __future__ import annotations

import asyncio
import logging
from importlib import metadata
from typing import Any

from pgqueue import Queue, Worker
from pgqueue.db.schema import migrate_async

NAME = "pgqueue_embedded"
CONFIGS = {
    "default": {"procs": 1, "concurrency": 50},
    "2x10": {"procs": 2, "concurrency": 10},
}
PENDING_SQL = "SELECT count(*) FROM pgqueue_jobs"
DONE_SQL = "SELECT count(*) FROM pgqueue_finished WHERE state = 'completed'"
QUEUE = "bench"

logging.getLogger("pgqueue").setLevel(logging.WARNING)


def describe() -> dict[str, str]:
    return {
        "version": metadata.version("pgqueue"),
        "client": "pgqueue SDK, embedded transport (engine in the process)",
        "enqueue_single": "await Queue.add(name, data)",
        "enqueue_bulk": "await Queue.add_bulk([...]) (one multi-row INSERT)",
        "worker": "pgqueue.Worker(concurrency=C): batch pulls, ack batching, heartbeats",
    }


async def install(dsn: str) -> None:
    await migrate_async(dsn)


class Producer:
    def __init__(self, dsn: str) -> None:
        self.queue = Queue(QUEUE, connection=dsn)

    async def __aenter__(self) -> Producer:
        await self.queue.get_counts()  # connects
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.queue.close()

    async def enqueue(self, payload: dict[str, Any]) -> None:
        await self.queue.add("noop", payload)

    async def enqueue_many(self, payloads: list[dict[str, Any]]) -> None:
        await self.queue.add_bulk([{"name": "noop", "data": p} for p in payloads])


async def run_worker(dsn: str, config: dict, handler, stop: asyncio.Event) -> None:  # type: ignore[no-untyped-def]
    async def process(job: Any) -> None:
        handler(job.data)

    worker = Worker(QUEUE, process, connection=dsn, concurrency=config["concurrency"])
    try:
        await stop.wait()
    finally:
        await worker.close()
