#!/usr/bin/env python3
"""Scaling curve: push and drain throughput through 1, 2 and 3 brokers, where the
limit sits, and what each job costs PostgreSQL.

Not a test.  For each broker count it starts ``scripts/cluster.py``'s topology on a
fresh database (same per-broker settings: ``--pool-size``, two producer and two
consumer connections per broker), pushes N jobs (PUSHB of ``--chunk``) and drains
them (PULLB of ``--batch`` -> ACKB), the clients talking straight to the brokers.
Each phase records wall time, CPU seconds of the brokers, of PostgreSQL (postmaster
and backends) and of this client, commits (pg_stat_database) and WAL bytes
(pg_current_wal_lsn).  A last run on one broker splits the drain into claim only
and ack only and reads pg_stat_statements (loaded by the embedded server this
script starts) for statements per job of push, claim and ack.

Writes docs/images/scaling.json and the marked sections of docs/scaling.md.

    .venv/bin/python scripts/bench_scaling.py --jobs 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue.client.tcp import TcpTransport  # noqa: E402
from pgqueue.client.transport import AckRequest, JobInput  # noqa: E402
from pgqueue.embedded import EmbeddedPostgres  # noqa: E402
from scripts.benchlib import scratch_database  # noqa: E402
from scripts.cluster import Cluster  # noqa: E402
from scripts.haproxy_config import HealthCheck  # noqa: E402
from scripts.probes import cpu_seconds, postgres_pids, total_cpu  # noqa: E402
from scripts.soak import write_section  # noqa: E402

QUEUE = "scaling"
SCALING_DOC = ROOT / "docs" / "scaling.md"
IMAGES = ROOT / "docs" / "images"
PAYLOAD = {"pad": "x" * 200}


@dataclass
class Snapshot:
    at: float
    broker_cpu: float
    pg_cpu: float
    client_cpu: float
    commits: int
    wal_lsn: int
    statements: int | None

    @classmethod
    def take(cls, dsn: str, broker_pids: list[int]) -> Snapshot:
        with psycopg.connect(dsn, autocommit=True) as conn:
            commits, lsn = conn.execute(
                "SELECT xact_commit, pg_current_wal_lsn() - '0/0'::pg_lsn"
                " FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()  # type: ignore[misc]
            statements = None
            with contextlib.suppress(psycopg.Error):
                statements = conn.execute(
                    "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
                    " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                ).fetchone()[0]  # type: ignore[index]
        return cls(
            at=time.monotonic(),
            broker_cpu=total_cpu(broker_pids),
            pg_cpu=total_cpu(postgres_pids(dsn)),
            client_cpu=cpu_seconds(os.getpid()),
            commits=int(commits),
            wal_lsn=int(lsn),
            statements=None if statements is None else int(statements),
        )


def phase(before: Snapshot, after: Snapshot, jobs: int) -> dict[str, Any]:
    wall = after.at - before.at
    out: dict[str, Any] = {
        "jobs": jobs,
        "seconds": round(wall, 3),
        "jobs_per_s": round(jobs / wall),
        "broker_cores": round((after.broker_cpu - before.broker_cpu) / wall, 2),
        "postgres_cores": round((after.pg_cpu - before.pg_cpu) / wall, 2),
        "client_cores": round((after.client_cpu - before.client_cpu) / wall, 2),
        "commits_per_s": round((after.commits - before.commits) / wall),
        "commits_per_job": round((after.commits - before.commits) / jobs, 4),
        "wal_bytes_per_job": round((after.wal_lsn - before.wal_lsn) / jobs),
        "broker_cpu_us_per_job": round((after.broker_cpu - before.broker_cpu) / jobs * 1e6),
        "postgres_cpu_us_per_job": round((after.pg_cpu - before.pg_cpu) / jobs * 1e6),
    }
    if before.statements is not None and after.statements is not None:
        out["statements_per_job"] = round((after.statements - before.statements) / jobs, 4)
    return out


async def open_transports(ports: list[int], per_broker: int) -> list[TcpTransport]:
    transports = []
    for port in ports:
        for _ in range(per_broker):
            t = TcpTransport.from_url(f"pgqueue://127.0.0.1:{port}", pool=1, timeout=60)
            await t.start()
            transports.append(t)
    return transports


async def push(transports: list[TcpTransport], jobs: int, chunk: int) -> None:
    remaining = jobs

    async def producer(t: TcpTransport) -> None:
        nonlocal remaining
        while remaining > 0:
            n = min(chunk, remaining)
            remaining -= n
            await t.push_bulk(QUEUE, [JobInput("bench", PAYLOAD) for _ in range(n)])

    await asyncio.gather(*(producer(t) for t in transports))


async def drain(transports: list[TcpTransport], jobs: int, batch: int) -> None:
    done = 0

    async def consumer(t: TcpTransport) -> None:
        nonlocal done
        owner = uuid.uuid4().hex
        while done < jobs:
            leases = await t.pull(QUEUE, batch, owner=owner, lock_ttl_ms=60_000, timeout_ms=200)
            if leases:
                await t.ack([AckRequest(lease.job["id"], lease.token) for lease in leases])
                done += len(leases)

    await asyncio.gather(*(consumer(t) for t in transports))


async def claim_then_ack(t: TcpTransport, jobs: int, batch: int, snap: Any) -> list[Any]:
    """Claim everything first (one snapshot), then ack everything (another)."""
    leases = []
    while len(leases) < jobs:
        leases += await t.pull(QUEUE, batch, owner="cost", lock_ttl_ms=600_000, timeout_ms=200)
    claimed = snap()
    for i in range(0, len(leases), batch):
        part = leases[i : i + batch]
        await t.ack([AckRequest(lease.job["id"], lease.token) for lease in part])
    return [claimed, snap()]


@contextmanager
def cluster_on(dsn: str, brokers: int, pool: int) -> Iterator[Cluster]:
    run_dir = Path(tempfile.mkdtemp(prefix="pgqueue-scaling-"))
    cluster = Cluster.up(
        run_dir,
        brokers=brokers,
        dsn=dsn,
        namespace="scaling",
        tcp_port=0,
        http_port=0,
        broker_port_base=0,
        bind="127.0.0.1",
        check=HealthCheck(),
        serve_args=["--pool-size", str(pool), "--set", "retention_interval_ms=3600000"],
        out=lambda line: None,
    )
    try:
        yield cluster
    finally:
        cluster.down()
        shutil.rmtree(run_dir, ignore_errors=True)


async def one_run(dsn: str, brokers: int, args: argparse.Namespace) -> dict[str, Any]:
    with cluster_on(dsn, brokers, args.pool_size) as cluster:
        pids = [b.pid or 0 for b in cluster.state.brokers]
        ports = [b.tcp_port for b in cluster.state.brokers]
        producers = await open_transports(ports, args.connections)
        consumers = await open_transports(ports, args.connections)
        try:
            a = await asyncio.to_thread(Snapshot.take, dsn, pids)
            await push(producers, args.jobs, args.chunk)
            b = await asyncio.to_thread(Snapshot.take, dsn, pids)
            await drain(consumers, args.jobs, args.batch)
            c = await asyncio.to_thread(Snapshot.take, dsn, pids)
        finally:
            await asyncio.gather(*(t.close() for t in producers + consumers))
    return {"brokers": brokers, "push": phase(a, b, args.jobs), "drain": phase(b, c, args.jobs)}


async def cost_run(dsn: str, args: argparse.Namespace) -> dict[str, Any]:
    jobs = min(args.jobs, 20_000)
    with cluster_on(dsn, 1, args.pool_size) as cluster:
        pids = [b.pid or 0 for b in cluster.state.brokers]
        [t] = await open_transports([cluster.state.brokers[0].tcp_port], 1)
        try:
            a = await asyncio.to_thread(Snapshot.take, dsn, pids)
            await push([t], jobs, args.chunk)
            b = await asyncio.to_thread(Snapshot.take, dsn, pids)
            c, d = await claim_then_ack(t, jobs, args.batch, lambda: Snapshot.take(dsn, pids))
        finally:
            await t.close()
        top = top_statements(dsn)
    return {
        "push": phase(a, b, jobs),
        "claim": phase(b, c, jobs),
        "ack": phase(c, d, jobs),
        "top_statements": top,
    }


def top_statements(dsn: str) -> list[dict[str, Any]]:
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT calls, rows, wal_bytes, left(regexp_replace(query, '\\s+', ' ', 'g'), 90)"
                " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database"
                " WHERE datname = current_database()) ORDER BY calls DESC LIMIT 12"
            ).fetchall()
    except psycopg.Error:
        return []
    return [{"calls": c, "rows": r, "wal_bytes": int(w), "query": q} for c, r, w, q in rows]


@contextmanager
def postgres(dsn: str | None) -> Iterator[str]:
    """The server: ``dsn``, or an embedded one with pg_stat_statements preloaded."""
    if dsn:
        yield dsn
        return
    data = Path(tempfile.mkdtemp(prefix="pgqueue-scaling-pg-")) / "data"
    server = EmbeddedPostgres(data, cleanup="delete")
    server_dsn = server.start()
    try:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
        server.restart()
        yield server_dsn
    finally:
        server.stop()


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run whose drain throughput is the median (its figures stay consistent)."""
    ordered = sorted(runs, key=lambda r: r["drain"]["jobs_per_s"])
    return ordered[len(ordered) // 2]


def markdown(curve: list[dict[str, Any]], cost: dict[str, Any], command: str) -> tuple[str, str]:
    head = (
        "| brokers | phase | jobs/s (median) | all runs jobs/s | broker cores | PostgreSQL cores"
        " | client cores | commits/s | commits/job |\n|---|---|---|---|---|---|---|---|---|"
    )
    lines = [f"Command: `{command}`", "", head]
    for point in curve:
        m = point["median"]
        for name in ("push", "drain"):
            p = m[name]
            runs = ", ".join(str(r[name]["jobs_per_s"]) for r in point["runs"])
            lines.append(
                f"| {point['brokers']} | {name} | {p['jobs_per_s']:,} | {runs}"
                f" | {p['broker_cores']} | {p['postgres_cores']} | {p['client_cores']}"
                f" | {p['commits_per_s']:,} | {p['commits_per_job']} |"
            )
    cost_lines = [
        f"Command: `{command}` (the one-broker cost run)",
        "",
        "| operation | statements/job | WAL bytes/job | commits/job | PostgreSQL CPU µs/job"
        " | broker CPU µs/job |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("push", "claim", "ack"):
        p = cost[name]
        cost_lines.append(
            f"| {name} | {p.get('statements_per_job', 'n/a')} | {p['wal_bytes_per_job']:,}"
            f" | {p['commits_per_job']} | {p['postgres_cpu_us_per_job']:,}"
            f" | {p['broker_cpu_us_per_job']:,} |"
        )
    if cost["top_statements"]:
        cost_lines += ["", "| calls | rows | WAL bytes | statement |", "|---|---|---|---|"]
        for s in cost["top_statements"]:
            query = s["query"].replace("|", "\\|")
            cost_lines.append(
                f"| {s['calls']:,} | {s['rows']:,} | {s['wal_bytes']:,} | `{query}` |"
            )
    return "\n".join(lines), "\n".join(cost_lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    curve = []
    with postgres(args.dsn) as server_dsn:
        for brokers in args.brokers:
            runs = []
            for _ in range(args.repeat):
                with scratch_database(server_dsn, "pgq_scaling") as dsn:
                    result = await one_run(dsn, brokers, args)
                print(json.dumps(result), flush=True)
                runs.append(result)
            curve.append({"brokers": brokers, "runs": runs, "median": median_run(runs)})
        with scratch_database(server_dsn, "pgq_scaling") as dsn:
            with psycopg.connect(dsn, autocommit=True) as conn:
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                    conn.execute("SELECT pg_stat_statements_reset()")
                except psycopg.Error as exc:
                    print(f"pg_stat_statements unavailable: {exc}", file=sys.stderr)
            cost = await cost_run(dsn, args)
        print(json.dumps(cost, indent=1), flush=True)
    return {"curve": curve, "cost": cost, "loadavg_at_start": args.loadavg}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dsn", default=None, help="a server to create databases on (else embedded)")
    p.add_argument("--jobs", type=int, default=20_000)
    p.add_argument("--brokers", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--pool-size", type=int, default=10, help="per broker")
    p.add_argument("--connections", type=int, default=2, help="producer and consumer, per broker")
    p.add_argument("--chunk", type=int, default=500)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    args.loadavg = os.getloadavg()
    logging.basicConfig(level=logging.WARNING)
    results = asyncio.run(run(args))
    if not args.no_write:
        command = "scripts/bench_scaling.py " + " ".join(sys.argv[1:])
        IMAGES.mkdir(parents=True, exist_ok=True)
        (IMAGES / "scaling.json").write_text(json.dumps(results, indent=1) + "\n")
        curve, cost = markdown(results["curve"], results["cost"], command)
        write_section(SCALING_DOC, "scaling", curve)
        write_section(SCALING_DOC, "cost", cost)
        print(f"wrote {SCALING_DOC} and {IMAGES / 'scaling.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
