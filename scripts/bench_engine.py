#!/usr/bin/env python3
"""Engine benchmark: bulk push N jobs, then drain them with concurrent consumers.

Not a test.  Each consumer runs the engine's own loop (pull_batch -> ack_batch) on its
own PostgresQueueManager (its own broker session), like brokers sharing one database.
Prints jobs/s per phase (median of --repeat runs, each on a fresh database) and
rewrites the "Engine" section of docs/benchmarks.md.

    .venv/bin/python scripts/bench_engine.py --dsn postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue import Config, PostgresQueueManager  # noqa: E402
from scripts.benchlib import default_dsn, scratch_database, write_section  # noqa: E402


def manager(dsn: str, broker: str, pool: int) -> PostgresQueueManager:
    return PostgresQueueManager(
        Config(
            dsn=dsn,
            namespace="bench",
            broker_id=broker,
            pool_min_size=1,
            pool_max_size=pool,
            run_maintenance=False,
        )
    )


async def one_run(dsn: str, jobs: int, chunk: int, consumers: int, batch: int) -> dict[str, float]:
    producer = manager(dsn, "producer", 2)
    await producer.start()
    payloads = [{"name": "noop", "data": {"i": i, "t": time.time()}} for i in range(jobs)]
    started = time.perf_counter()
    for lo in range(0, jobs, chunk):
        await producer.push_bulk("bench", payloads[lo : lo + chunk])
    push_s = time.perf_counter() - started
    await producer.close()

    managers = [manager(dsn, f"consumer-{i}", 3) for i in range(consumers)]
    for m in managers:
        await m.start()
    done = 0

    async def consume(m: PostgresQueueManager) -> None:
        nonlocal done
        while True:
            claimed = await m.pull_batch("bench", batch)
            if not claimed:
                return
            outcomes = await m.ack_batch([(j.id, j.token, None) for j in claimed])
            done += sum(o.applied for o in outcomes)

    started = time.perf_counter()
    await asyncio.gather(*(consume(m) for m in managers))
    drain_s = time.perf_counter() - started
    for m in managers:
        await m.close()
    if done != jobs:
        raise SystemExit(f"drained {done} of {jobs} jobs")
    return {"push": jobs / push_s, "drain": jobs / drain_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=5_000)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    runs = []
    for i in range(args.repeat):
        with scratch_database(args.dsn) as dsn:
            result = asyncio.run(one_run(dsn, args.jobs, args.chunk, args.consumers, args.batch))
        runs.append(result)
        print(
            f"run {i + 1}: push {result['push']:,.0f} jobs/s, drain {result['drain']:,.0f} jobs/s"
        )
    push = statistics.median(r["push"] for r in runs)
    drain = statistics.median(r["drain"] for r in runs)
    print(f"median of {len(runs)}: push {push:,.0f} jobs/s, drain {drain:,.0f} jobs/s")
    push_runs = ", ".join(f"{r['push']:,.0f}" for r in runs)
    drain_runs = ", ".join(f"{r['drain']:,.0f}" for r in runs)
    if not args.no_write:
        with psycopg.connect(args.dsn) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        write_section(
            f"### Engine alone (`scripts/bench_engine.py`)\n\n"
            f"{args.jobs:,} jobs pushed with `push_bulk` in chunks of {args.chunk:,}, then "
            f"drained by {args.consumers} managers (each its own broker session) looping "
            f"`pull_batch({args.batch})` -> `ack_batch`; PostgreSQL {version} on this machine "
            f"(2 cores, shared with the benchmark process), fsync and synchronous_commit on; "
            f"median of {len(runs)} runs, each on a fresh database.\n\n"
            f"| phase | jobs/s (median) | runs |\n|---|---|---|\n"
            f"| bulk push | {push:,.0f} | {push_runs} |\n"
            f"| drain (claim + ack) | {drain:,.0f} | {drain_runs} |\n",
            "bench_engine",
        )


if __name__ == "__main__":
    main()
