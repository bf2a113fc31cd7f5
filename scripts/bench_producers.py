#!/usr/bin/env python3
"""Many concurrent producers, each awaiting one ``Queue.add`` at a time, against the
8-client pgbench INSERT rate of the same server (group commit).

Not a test.  Each run measures, on the same PostgreSQL server and one after the
other: pgbench with 8 clients inserting one row per transaction (the peers
harness's baseline), then ``--producers`` asyncio tasks in one process sharing one
SDK ``Queue``, each looping ``await queue.add(...)`` until ``--jobs`` jobs are in, over
TCP (two ``pgqueue serve`` brokers) and embedded.  Every job is committed when its
``add`` returns, so the rate counts only what group commit makes durable.  Medians
of the runs go to docs/benchmarks.md (section ``bench_producers``).

    .venv/bin/python scripts/bench_producers.py --producers 64 --jobs 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue import Queue  # noqa: E402
from scripts.benchlib import brokers, default_dsn, scratch_database, write_section  # noqa: E402

SECTION = "bench_producers"


def pgbench_tps(dsn: str, clients: int, seconds: int = 5) -> float:
    """pgbench's tps for a one-row INSERT per transaction, ``clients`` at once."""
    with scratch_database(dsn, "pgq_bench_pgbench", migrated=False) as target:
        parts = urlsplit(target)
        conn = [
            "-h",
            parts.hostname or "127.0.0.1",
            "-p",
            str(parts.port or 5432),
            "-U",
            parts.username or "postgres",
        ]
        name = parts.path.lstrip("/")
        subprocess.run(
            [
                "psql",
                "-qX",
                *conn,
                "-d",
                name,
                "-c",
                "CREATE TABLE t (id bigserial PRIMARY KEY, payload jsonb)",
            ],
            check=True,
        )
        with tempfile.NamedTemporaryFile("w", suffix=".sql") as script:
            script.write("INSERT INTO t (payload) VALUES ('{\"i\": 1}');\n")
            script.flush()
            out = subprocess.run(
                [
                    *("pgbench", "-n", *conn, "-c", str(clients), "-j", "2"),
                    *("-T", str(seconds), "-f", script.name, name),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
    found = re.search(r"^tps = ([0-9.]+)", out, re.M)
    if found is None:
        raise SystemExit(f"pgbench printed no tps:\n{out}")
    return float(found.group(1))


async def produce(connection: str, producers: int, jobs: int) -> float:
    """jobs/s of ``producers`` tasks adding ``jobs`` jobs in all, one awaited add each."""
    queue = Queue("bench", connection=connection)
    try:
        await queue.get_counts()  # connected before the clock starts
        left = jobs

        async def producer() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await queue.add("noop", {"i": left, "t": time.time()})

        started = time.perf_counter()
        await asyncio.gather(*(producer() for _ in range(producers)))
        elapsed = time.perf_counter() - started
        counts = await queue.get_counts()
        if counts.get("waiting", 0) != jobs:
            raise SystemExit(f"expected {jobs} waiting jobs, counted {counts}")
        return jobs / elapsed
    finally:
        await queue.close()


def one(dsn: str, transport: str, producers: int, jobs: int) -> float:
    with scratch_database(dsn, "pgq_bench_producers") as target:
        if transport == "embedded":
            return asyncio.run(produce(target, producers, jobs))
        with brokers(target, 2) as ports:
            url = "pgqueue://" + ",".join(f"127.0.0.1:{p}" for p in ports)
            return asyncio.run(produce(url, producers, jobs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--producers", type=int, default=64)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    runs: dict[str, list[float]] = {"pgbench 8 clients": [], "tcp": [], "embedded": []}
    for i in range(args.repeat):
        runs["pgbench 8 clients"].append(pgbench_tps(args.dsn, 8))
        for transport in ("tcp", "embedded") if i % 2 == 0 else ("embedded", "tcp"):
            runs[transport].append(one(args.dsn, transport, args.producers, args.jobs))
        print(
            f"run {i + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in runs.items()),
            flush=True,
        )
    baseline = statistics.median(runs["pgbench 8 clients"])
    table = ["| what | jobs/s (median) | x pgbench 8 clients | runs |", "|---|---|---|---|"]
    for what, values in runs.items():
        median = statistics.median(values)
        label = what if what.startswith("pgbench") else f"{args.producers} producers, {what}"
        table.append(
            f"| {label} | {median:,.0f} | x{median / baseline:.2f} | "
            + ", ".join(f"{v:,.0f}" for v in values)
            + " |"
        )
    print("\n".join(table))
    if not args.no_write:
        write_section(
            f"### Concurrent producers (`scripts/bench_producers.py`)\n\n"
            f"{args.producers} asyncio tasks in one process share one SDK `Queue`, each "
            f"awaiting one `add` at a time (a job is committed when its `add` returns), "
            f"{args.jobs:,} jobs per run, over TCP (two brokers) and embedded, on fresh "
            f"databases; against pgbench with 8 clients inserting one row per transaction "
            f"on the same server in the same run.  Median of {args.repeat} runs.\n\n"
            + "\n".join(table)
            + "\n",
            SECTION,
        )


if __name__ == "__main__":
    main()
