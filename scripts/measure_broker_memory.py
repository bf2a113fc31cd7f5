#!/usr/bin/env python3
"""Broker memory does not grow with the backlog: RSS as a million jobs pile up.

Not a test.  Starts one broker (``pgqueue serve``) on a fresh database, records its
resident memory, then admits ``--jobs`` waiting jobs through the engine in bulk.  At
each checkpoint it waits until the broker's projection has applied every 'pushed'
event so far (read from its /metrics) and records RSS and what the projection holds.
Prints the table and rewrites the ``broker_memory`` section of docs/benchmarks.md.

    .venv/bin/python scripts/measure_broker_memory.py --dsn postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue import Config, PostgresQueueManager  # noqa: E402
from pgqueue.manager.projection import BYTES_DEFAULT, ENTRIES_DEFAULT  # noqa: E402
from scripts.benchlib import (  # noqa: E402
    default_dsn,
    free_port,
    scratch_database,
    start_broker,
    write_section,
)

NAMESPACE = "memory"
CHUNK = 10_000


def metric(text: str, name: str) -> float:
    match = re.search(rf"^{name} ([0-9.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        return str(answer.read().decode())


def caught_up(http_port: int, pushed: int) -> str:
    """The broker's /metrics once its projection applied ``pushed`` 'pushed' events."""
    deadline = time.monotonic() + 1800
    while True:
        text = scrape(http_port)
        seen = metric(text, r'pgqueue_jobs_pushed_total\{queue="backlog"\}')
        if seen >= pushed:
            return text
        if time.monotonic() > deadline:
            raise SystemExit(f"broker applied {seen:,.0f} of {pushed:,} events in 30 min")
        time.sleep(1)  # the broker catching up with the outbox; polled with a deadline


async def admit(manager: PostgresQueueManager, lo: int, hi: int) -> None:
    for start in range(lo, hi, CHUNK):
        end = min(hi, start + CHUNK)
        await manager.push_bulk(
            "backlog", [{"name": "n", "data": {"i": i}} for i in range(start, end)]
        )


async def measure(
    dsn: str, http_port: int, pid: int, checkpoints: list[int]
) -> list[dict[str, float]]:
    process = psutil.Process(pid)
    manager = PostgresQueueManager(
        Config(dsn=dsn, namespace=NAMESPACE, broker_id="loader", run_maintenance=False)
    )
    await manager.start()
    rows = [{"jobs": 0, "rss": process.memory_info().rss, "entries": 0, "bytes": 0, "seconds": 0}]
    admitted = 0
    try:
        for target in checkpoints:
            started = time.perf_counter()
            await admit(manager, admitted, target)
            seconds = time.perf_counter() - started
            admitted = target
            text = await asyncio.to_thread(caught_up, http_port, admitted)
            rows.append(
                {
                    "jobs": admitted,
                    "rss": process.memory_info().rss,
                    "entries": metric(text, "pgqueue_projection_entries"),
                    "bytes": metric(text, "pgqueue_projection_bytes"),
                    "seconds": seconds,
                }
            )
            print(
                f"{admitted:>9,} waiting: broker RSS {rows[-1]['rss'] / 2**20:6.1f} MiB, "
                f"projection {rows[-1]['entries']:,.0f} entries / "
                f"{rows[-1]['bytes'] / 2**20:.1f} MiB",
                flush=True,
            )
    finally:
        await manager.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    checkpoints = sorted({n for n in (10_000, 50_000, 100_000, 250_000, 500_000) if n < args.jobs})
    checkpoints.append(args.jobs)
    with scratch_database(args.dsn, "pgq_memory") as dsn:
        http_port = free_port()
        broker = start_broker(
            dsn,
            broker_id="measured",
            tcp_port=free_port(),
            namespace=NAMESPACE,
            http_port=http_port,
        )
        try:
            rows = asyncio.run(measure(dsn, http_port, broker.pid, checkpoints))
        finally:
            broker.terminate()
            broker.wait(60)
    base = rows[0]["rss"]
    table = [
        "| waiting jobs | broker RSS (MiB) | growth since start (MiB) | projection entries "
        "| projection size (MiB, estimated) |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        table.append(
            f"| {row['jobs']:,} | {row['rss'] / 2**20:.1f} | {(row['rss'] - base) / 2**20:+.1f} "
            f"| {row['entries']:,.0f} | {row['bytes'] / 2**20:.1f} |"
        )
    print("\n".join(table))
    if not args.no_write:
        write_section(
            "### Broker memory against the backlog (`scripts/measure_broker_memory.py`)\n\n"
            f"One broker (`pgqueue serve`, default projection cap {ENTRIES_DEFAULT:,} entries / "
            f"{BYTES_DEFAULT // 2**20} MiB) "
            f"watches its namespace while {args.jobs:,} waiting jobs are admitted through the "
            f"engine in bulk (chunks of {CHUNK:,}).  At each checkpoint the script waits until "
            f"the broker has applied every `pushed` event from the outbox, then reads the "
            f"broker's resident memory.  Memory rises while the projection fills to its cap "
            f"and then stays flat: the backlog lives in PostgreSQL, not in the broker "
            f"(claims against the backlog, and base against new: section `backlog`).\n\n"
            + "\n".join(table)
            + "\n",
            "broker_memory",
        )


if __name__ == "__main__":
    main()
