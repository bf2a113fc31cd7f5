#!/usr/bin/env python3
"""Broker memory does not grow with the backlog: RSS before and after a million jobs.

Not a test.  Starts one broker (``pgqueue serve``) on a fresh database, records its
resident memory, admits ``--jobs`` waiting jobs through the engine in bulk, waits
until the broker's projection has applied every 'pushed' event (read from its
/metrics), then records the memory again and what the projection holds.

    .venv/bin/python scripts/measure_broker_memory.py --dsn postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import psutil
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue import Config, PostgresQueueManager  # noqa: E402
from pgqueue.db.schema import migrate  # noqa: E402
from pgqueue.embedded import dsn_for_database  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metric(text: str, name: str) -> float:
    match = re.search(rf"^{name} ([0-9.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        return str(answer.read().decode())


async def admit(dsn: str, jobs: int) -> float:
    manager = PostgresQueueManager(
        Config(dsn=dsn, namespace="memory", broker_id="loader", run_maintenance=False)
    )
    await manager.start()
    started = time.perf_counter()
    chunk = 10_000
    for lo in range(0, jobs, chunk):
        await manager.push_bulk(
            "backlog", [{"name": "n", "data": {"i": i}} for i in range(lo, min(jobs, lo + chunk))]
        )
    elapsed = time.perf_counter() - started
    await manager.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=os.environ.get(
        "PGQUEUE_BENCH_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--jobs", type=int, default=1_000_000)
    args = parser.parse_args()
    name = f"pgq_memory_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    dsn = dsn_for_database(args.dsn, name)
    migrate(dsn)
    http_port = free_port()
    broker = subprocess.Popen(
        [sys.executable, "-m", "pgqueue", "--log-level", "WARNING", "serve", "--dsn", dsn,
         "--namespace", "memory", "--broker-id", "measured", "--host", "127.0.0.1",
         "--tcp-port", str(free_port()), "--http-port", str(http_port)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        assert broker.stdout is not None
        for line in broker.stdout:
            if b"serving namespace" in line:
                break
        process = psutil.Process(broker.pid)
        before = process.memory_info().rss
        seconds = asyncio.run(admit(dsn, args.jobs))
        deadline = time.monotonic() + 1800
        while True:
            text = scrape(http_port)
            pushed = metric(text, r'pgqueue_jobs_pushed_total\{queue="backlog"\}')
            if pushed >= args.jobs or time.monotonic() > deadline:
                break
            time.sleep(2)  # the broker catching up with the outbox; polled with a deadline
        after = process.memory_info().rss
        entries = metric(text, "pgqueue_projection_entries")
        size = metric(text, "pgqueue_projection_bytes")
        print(f"jobs admitted: {args.jobs:,} in {seconds:.1f} s "
              f"({args.jobs / seconds:,.0f} jobs/s); events applied by the broker: {pushed:,.0f}")
        print(f"broker RSS before: {before / 2**20:.1f} MiB, after: {after / 2**20:.1f} MiB "
              f"(+{(after - before) / 2**20:.1f} MiB)")
        print(f"projection: {entries:,.0f} entries, {size / 2**20:.1f} MiB estimated "
              f"(cap 100,000 entries / 64 MiB)")
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(60)
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
