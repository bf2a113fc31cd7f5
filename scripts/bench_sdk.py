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
import contextlib
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue.client import Job, Queue, Worker  # noqa: E402
from pgqueue.db.schema import migrate  # noqa: E402
from pgqueue.embedded import dsn_for_database  # noqa: E402

SECTION_START = "<!-- bench_sdk:start -->"
SECTION_END = "<!-- bench_sdk:end -->"
NAMESPACE = "bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def brokers(dsn: str, count: int = 2) -> Iterator[str]:
    """``count`` broker processes on ``dsn``; yields their pgqueue:// connection string."""
    processes: list[subprocess.Popen[bytes]] = []
    addresses = []
    try:
        for i in range(count):
            port = free_port()
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pgqueue",
                    "--log-level",
                    "WARNING",
                    "serve",
                    "--dsn",
                    dsn,
                    "--namespace",
                    NAMESPACE,
                    "--broker-id",
                    f"bench-{i}",
                    "--host",
                    "127.0.0.1",
                    "--tcp-port",
                    str(port),
                    "--no-http",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            processes.append(process)
            assert process.stdout is not None
            for line in process.stdout:
                if b"serving namespace" in line:
                    break
            else:
                raise SystemExit(f"broker {i} did not start")
            addresses.append(f"127.0.0.1:{port}")
        yield "pgqueue://" + ",".join(addresses)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


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


def fresh_database(server_dsn: str) -> tuple[str, str]:
    name = f"pgq_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    dsn = dsn_for_database(server_dsn, name)
    migrate(dsn)
    return name, dsn


def drop_database(server_dsn: str, name: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


def measure(transport: str, server_dsn: str, jobs: int, concurrency: int) -> dict[str, float]:
    name, dsn = fresh_database(server_dsn)
    try:
        if transport == "embedded":
            return asyncio.run(one_run(f"{dsn}?namespace={NAMESPACE}", jobs, concurrency))
        with brokers(dsn) as connection:
            return asyncio.run(one_run(connection, jobs, concurrency))
    finally:
        drop_database(server_dsn, name)


def write_section(text: str) -> None:
    path = ROOT / "docs" / "benchmarks.md"
    current = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{SECTION_START}\n{text.rstrip()}\n{SECTION_END}"
    if SECTION_START in current:
        head, rest = current.split(SECTION_START, 1)
        tail = rest.split(SECTION_END, 1)[1]
        current = head + block + tail
    else:
        current = current.rstrip() + "\n\n" + block + "\n"
    path.write_text(current)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--dsn",
        default=os.environ.get(
            "PGQUEUE_BENCH_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
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
            + "\n"
        )


if __name__ == "__main__":
    main()
