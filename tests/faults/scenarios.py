"""Scenarios shared by the fault tests and their negative controls."""

from __future__ import annotations

import asyncio
import time

from pgqueue.client.connection import Connection
from pgqueue.errors import RemoteError
from pgqueue.testing import eventually
from tests.faults.harness import FaultRun

WORK_MS = 2_500


async def stale_worker(run: FaultRun, queue: str, jobs: int = 4) -> None:
    """A worker paused (SIGSTOP) past its lease, resumed after another took its jobs.

    w1 claims ``jobs`` jobs (lease 1 s) and is stopped; their leases expire, the
    reaper requeues them and w2 claims them; w1 is resumed while w2 still works,
    so its late acks reach the broker while the job is held by w2's claim.
    """
    run.start_broker("b1")
    run.start_producer("p1", queue, work_ms=WORK_MS, pause=0, limit=jobs)
    await run.producers_done()
    run.start_worker("w1", queue, concurrency=jobs, lock_ms=1_000)
    await eventually(lambda: len(run.executions("w1")) >= jobs, timeout=30, message="w1 runs")
    run.stop("w1")
    stopped = time.monotonic()
    run.start_worker("w2", queue, concurrency=jobs, lock_ms=10_000)
    await eventually(
        lambda: len(run.executions("w2")) >= jobs, timeout=30, message="w2 took the jobs over"
    )
    # The fault's duration: w1 stays paused at least as long as its handlers'
    # work, so when it resumes their sleeps are over and the acks go out at
    # once, while w2 still works.
    await asyncio.sleep(max(0.0, WORK_MS / 1000 + 0.1 - (time.monotonic() - stopped)))
    run.resume("w1")


async def steady(run: FaultRun, queue: str, jobs: int = 40) -> None:
    """One broker, a subscriber, a worker, ``jobs`` jobs pushed and worked."""
    run.start_broker("b1")
    await run.start_subscriber("s1", queue)
    run.start_worker("w1", queue, concurrency=8, lock_ms=5_000)
    run.start_producer("p1", queue, work_ms=5, pause=0.005, limit=jobs)
    await run.producers_done()


async def intruder_ack(run: FaultRun, queue: str) -> str | None:
    """A job held by w1 (its pull got the token) is acked token-less by another
    connection; returns the broker's error, or None when the ack was accepted."""
    run.start_broker("b1")
    run.start_producer("p1", queue, work_ms=WORK_MS, pause=0, limit=1)
    await run.producers_done()
    run.start_worker("w1", queue, concurrency=1, lock_ms=10_000)
    await eventually(lambda: run.executions("w1"), timeout=30, message="w1 runs the job")
    job_id = run.executions("w1")[0]["job_id"]
    broker = run.brokers["b1"]
    intruder = await Connection.open("127.0.0.1", broker.tcp_port)
    try:
        await intruder.call("ACK", {"id": job_id, "result": {"exec": "intruder"}})
    except RemoteError as exc:
        return exc.message
    finally:
        await intruder.close()
    return None
