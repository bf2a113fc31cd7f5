#!/usr/bin/env python3
"""The official TypeScript client against pgqueue and against bunqueue itself.

Not a test.  For each run and each server, on a fresh database of the same
PostgreSQL server: start the servers (two pgqueue brokers, or two bunqueue
2.9.5 brokers in PostgreSQL mode), run the TS client's throughput scenario
(Queue.addBulk -> PUSHB in chunks, then one Worker with concurrency 50 ->
PULLB + ACKB), and record jobs/s of each phase.  Servers alternate within a
run; the medians go to docs/benchmarks.md (section ``bench_tcp_clients``).

    .venv/bin/python scripts/bench_tcp_clients.py --dsn postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.benchlib import (  # noqa: E402
    brokers,
    default_dsn,
    free_port,
    scratch_database,
    write_section,
)
from tests.acceptance.clients.runner import run_ts_scenario, start_reference_bunqueue  # noqa: E402

SECTION = "bench_tcp_clients"


@contextlib.contextmanager
def bunqueue_brokers(dsn: str) -> Iterator[list[int]]:
    ports = [free_port(), free_port()]
    servers = []
    try:
        for i, port in enumerate(ports):
            servers.append(
                start_reference_bunqueue(
                    dsn,
                    port,
                    free_port(),
                    f"bench-{i}",
                    "bench",
                    extra_env={"RATE_LIMIT_MAX_REQUESTS": "100000000"},
                )
            )
        yield ports
    finally:
        for server in servers:
            server.stop()


def one(server: str, server_dsn: str, jobs: int) -> dict[str, Any]:
    with scratch_database(server_dsn, "pgq_tcpbench", migrated=server == "pgqueue") as dsn:
        servers = brokers(dsn) if server == "pgqueue" else bunqueue_brokers(dsn)
        with servers as (a, b):
            result = run_ts_scenario(
                "throughput",
                {
                    "PGQ_TCP_PORT": str(a),
                    "PGQ_TCP_PORT2": str(b),
                    "PGQ_N": str(jobs),
                    "PGQ_TIMEOUT_MS": "900000",
                },
                timeout=1200,
            )
    return {
        "push": result["push"]["jobsPerSec"],
        "drain": result["drain"]["jobsPerSec"],
        "duplicates": result["duplicates"],
        "completed": result["completed"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"pgqueue": [], "bunqueue": []}
    for i in range(args.repeat):
        for server in ("pgqueue", "bunqueue") if i % 2 == 0 else ("bunqueue", "pgqueue"):
            result = one(server, args.dsn, args.jobs)
            runs[server].append(result)
            print(
                f"run {i + 1} {server}: push {result['push']:,} jobs/s, "
                f"drain {result['drain']:,} jobs/s, duplicates {result['duplicates']}",
                flush=True,
            )
    table = [
        "| server | PUSHB (addBulk) jobs/s | PULLB + ACKB (Worker) jobs/s | runs |",
        "|---|---|---|---|",
    ]
    medians = {}
    for server, results in runs.items():
        push = statistics.median(r["push"] for r in results)
        drain = statistics.median(r["drain"] for r in results)
        medians[server] = (push, drain)
        table.append(
            f"| {server} (2 brokers) | {push:,.0f} | {drain:,.0f} | "
            + "; ".join(f"{r['push']:,}/{r['drain']:,}" for r in results)
            + " |"
        )
    ratio_push = medians["pgqueue"][0] / max(medians["bunqueue"][0], 1)
    ratio_drain = medians["pgqueue"][1] / max(medians["bunqueue"][1], 1)
    print("\n".join(table))
    print(f"pgqueue / bunqueue: push x{ratio_push:.1f}, drain x{ratio_drain:.1f}")
    if not args.no_write:
        write_section(
            f"### Official TypeScript client over TCP (`scripts/bench_tcp_clients.py`)\n\n"
            f"npm `bunqueue` 2.9.5 client on Bun 1.4.5: `Queue.addBulk` of {args.jobs:,} jobs "
            f"in chunks of 1,000 (PUSHB), then one `Worker` (concurrency 50, batch 50: "
            f"PULLB + JobHeartbeatB + ACKB) on the second broker.  Each server gets two "
            f"brokers on a fresh database of the same PostgreSQL server, in the same run, "
            f"alternating; bunqueue 2.9.5 runs in PostgreSQL mode (its protocol rate limit "
            f"raised so it does not throttle).  Median of {args.repeat} runs.\n\n"
            + "\n".join(table)
            + f"\n\nRatio pgqueue / bunqueue: PUSHB x{ratio_push:.1f}, "
            f"PULLB + ACKB x{ratio_drain:.1f}.\n",
            SECTION,
        )


if __name__ == "__main__":
    main()
