#!/usr/bin/env python3
"""Broker CPU per job over TCP: sequential ``Queue.add``, ``add_bulk`` and a ``Worker`` drain.

Not a test, and not timed: the CPU seconds (user + system, from /proc) the broker
processes used per job do not depend on how loaded the machine is (the wall clock does).
Two brokers (``pgqueue serve``) on a fresh database, the SDK over TCP to both, like
``scripts/bench/pgqueue_tcp_adapter.py``.  Prints one line per phase.

    .venv/bin/python scripts/bench_broker_cpu.py --jobs 2000
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue import Queue, Worker  # noqa: E402
from scripts.benchlib import brokers, default_dsn, scratch_database  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def _broker_pids(ports: list[int]) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [
        int(line.split()[0])
        for line in out.splitlines()
        if "pgqueue" in line and "serve" in line and any(f" {p}" in line for p in ports)
    ]


async def measure(url: str, pids: list[int], jobs: int) -> None:
    queue = Queue("cpu", connection=url)
    await queue.get_counts()

    async def phase(name: str, body) -> None:  # type: ignore[no-untyped-def]
        cpu, wall = _cpu(pids), time.perf_counter()
        count = await body()
        cpu, wall = _cpu(pids) - cpu, time.perf_counter() - wall
        print(
            f"{name}: {count:,} jobs, broker CPU {cpu / count * 1e6:,.0f} µs/job, "
            f"{count / wall:,.0f} jobs/s (wall, noisy)",
            flush=True,
        )

    async def single() -> int:
        for i in range(jobs):
            await queue.add("noop", {"i": i, "t": time.time()})
        return jobs

    async def bulk() -> int:
        payloads = [{"name": "noop", "data": {"i": i}} for i in range(10 * jobs)]
        for lo in range(0, len(payloads), 1000):
            await queue.add_bulk(payloads[lo : lo + 1000])
        return len(payloads)

    async def drain() -> int:
        total = 11 * jobs
        done = 0
        finished = asyncio.Event()

        async def process(job) -> None:  # type: ignore[no-untyped-def]
            nonlocal done
            done += 1
            if done >= total:
                finished.set()

        worker = Worker("cpu", process, connection=url, concurrency=50)
        await asyncio.wait_for(finished.wait(), 600)
        await worker.close()
        return total

    await phase("add (one awaited at a time)", single)
    await phase("add_bulk (chunks of 1,000)", bulk)
    await phase("Worker drain (concurrency 50)", drain)
    await queue.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--jobs", type=int, default=2000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with scratch_database(args.dsn, "pgq_cpu") as dsn, brokers(dsn, 2) as ports:
        url = "pgqueue://" + ",".join(f"127.0.0.1:{p}" for p in ports)
        asyncio.run(measure(url, _broker_pids(ports), args.jobs))


if __name__ == "__main__":
    main()
