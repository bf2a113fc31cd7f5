#!/usr/bin/env python3
"""SDK benchmark: ``Queue.add_bulk`` N jobs, then drain them with one ``Worker``.

Not a test.  For each transport (embedded; TCP through two brokers started
with ``python -m pgqueue serve``), each run on a fresh database: add N jobs
with one ``add_bulk`` call, then start one Worker (concurrency 50, a no-op
handler) and time until every job was completed (acked).  Prints jobs/s per
phase (median of --repeat runs) and rewrites the "SDK" section of
docs/benchmarks.md.

    .venv/bin/python scripts/bench_sdk.py --dsn postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue.client import Job, Queue, Worker  # noqa: E402
from scripts.benchlib import brokers, default_dsn, scratch_database, write_section  # noqa: E402

NAMESPACE = "bench"


async def one_run(connection: str, jobs: int, concurrency: int) -> dict[str, float]:
    queue = Queue("bench", connection)
    payloads = [{"name": "noop", "data": {"i": i}} for i in range(jobs)]
    started = time.perf_counter()
    added = await queue.add_bulk(payloads)
    add_s = time.perf_counter() - started
    assert len(added) == jobs

    done = 0
    finished = asyncio.Event()

    async def noop(job: Job) -> None:
        return None

    def completed(job: Job, result: Any) -> None:
        nonlocal done
        done += 1
        if done == jobs:
            finished.set()

    started = time.perf_counter()
    worker = Worker("bench", noop, connection, concurrency=concurrency, poll_timeout=0.5)
    worker.on("completed", completed)
    await asyncio.wait_for(finished.wait(), 600)
    drain_s = time.perf_counter() - started
    await worker.close()
    counts = await queue.get_counts()
    await queue.close()
    if counts["completed"] != jobs:
        raise SystemExit(f"completed {counts['completed']} of {jobs} jobs")
    return {"add": jobs / add_s, "drain": jobs / drain_s}


def measure(transport: str, server_dsn: str, jobs: int, concurrency: int) -> dict[str, float]:
    with scratch_database(server_dsn) as dsn:
        if transport == "embedded":
            return asyncio.run(one_run(f"{dsn}?namespace={NAMESPACE}", jobs, concurrency))
        with brokers(dsn, namespace=NAMESPACE) as ports:
            connection = "pgqueue://" + ",".join(f"127.0.0.1:{port}" for port in ports)
            return asyncio.run(one_run(connection, jobs, concurrency))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--transport", choices=["embedded", "tcp", "both"], default="both")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    transports = ["embedded", "tcp"] if args.transport == "both" else [args.transport]
    results: dict[str, list[dict[str, float]]] = {}
    for transport in transports:
        for i in range(args.repeat):
            result = measure(transport, args.dsn, args.jobs, args.concurrency)
            results.setdefault(transport, []).append(result)
            print(
                f"{transport} run {i + 1}: add_bulk {result['add']:,.0f} jobs/s, "
                f"drain {result['drain']:,.0f} jobs/s",
                flush=True,
            )
    rows = []
    for transport, runs in results.items():
        for phase, label in (("add", "add_bulk"), ("drain", "drain (1 Worker)")):
            median = statistics.median(r[phase] for r in runs)
            every = ", ".join(f"{r[phase]:,.0f}" for r in runs)
            print(f"{transport} {label}: median {median:,.0f} jobs/s")
            rows.append(f"| {transport} | {label} | {median:,.0f} | {every} |")
    if not args.no_write:
        with psycopg.connect(args.dsn) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        write_section(
            f"### SDK end to end (`scripts/bench_sdk.py`)\n\n"
            f"`Queue.add_bulk` of {args.jobs:,} jobs in one call (sent as atomic batches of "
            f"10,000, the protocol's limit), then one `Worker` "
            f"(concurrency {args.concurrency}, a no-op async handler, acks batched by up to "
            f"50 / 50 ms) drains them, timed from its creation until the last completion. "
            f"Embedded: the engine in the benchmark process. TCP: two brokers "
            f"(`python -m pgqueue serve`) on the same database, the client's pool spread over "
            f"both. PostgreSQL {version} on this machine (2 cores, shared with the brokers and "
            f"the benchmark process), fsync and synchronous_commit on; median of "
            f"{args.repeat} runs, each on a fresh database.\n\n"
            f"| transport | phase | jobs/s (median) | runs |\n|---|---|---|---|\n"
            + "\n".join(rows)
            + "\n",
            "bench_sdk",
        )


if __name__ == "__main__":
    main()
