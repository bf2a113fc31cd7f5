#!/usr/bin/env python3
"""Claim latency and broker memory against the backlog: 10k to 1M waiting jobs.

Not a test.  On a fresh database one broker (``pgqueue serve``) watches its
namespace while waiting jobs are admitted through the engine in bulk; with
``--base PATH`` a second broker runs the code of another checkout on the same
database (base and new measured interleaved, on the same backlog).  At each
checkpoint, once every broker's projection has applied every ``pushed`` event:

* each broker's resident memory and what its projection holds;
* ``--claims`` single claims through each broker over TCP, alternating between
  the brokers: one ``PULLB`` of one job then its ``ACKB``, each awaited, with the
  SDK's transport; p50 / p99 of the round trips (wall clock: noisy on a shared
  machine) and the broker's CPU per claim + ack (user + system, from /proc);
* ``EXPLAIN (ANALYZE, BUFFERS)`` of the engine's claim (``job_claim_batch``, one
  job, rolled back): the index it reads, buffers touched, rows it passed over.

Queues (``--queues``): ``backlog`` (plain FIFO jobs, as the peers harness
admits them), ``mixed`` (priorities 0 / 5 / 10 / 15 and every tenth job delayed
an hour, as tests/integration/test_claim_plan.py seeds) and ``scheduled`` (every
tenth job delayed an hour at priority 10, the rest due at priority 0: the
delayed jobs sort ahead of every due one in the claim index).  With ``--base``
the claim statement of the base checkout is explained too.  Prints the tables
and rewrites the ``backlog`` section of docs/benchmarks.md.

    .venv/bin/python scripts/bench_backlog.py --base /tmp/base-checkout
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue import Config, PostgresQueueManager  # noqa: E402
from pgqueue.client.connect import open_transport  # noqa: E402
from pgqueue.client.transport import AckRequest  # noqa: E402
from pgqueue.db.queries import Q, Query, parse_queries  # noqa: E402
from scripts.benchlib import (  # noqa: E402
    default_dsn,
    free_port,
    scratch_database,
    start_broker,
    write_section,
)

NAMESPACE = "backlog"
CHUNK = 10_000
SIZES = (10_000, 100_000, 250_000, 1_000_000)
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Broker:
    label: str
    pid: int
    tcp_port: int
    http_port: int
    transport: Any = None
    rows: list[dict[str, Any]] = field(default_factory=list)


def metric(text: str, name: str) -> float:
    match = re.search(rf"^{name} ([0-9.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as answer:
        return str(answer.read().decode())


def caught_up(http_port: int, pushed: dict[str, int]) -> str:
    """The broker's /metrics once its projection applied ``pushed`` 'pushed' events."""
    deadline = time.monotonic() + 1800
    while True:
        text = scrape(http_port)
        behind = {
            q: n
            for q, n in pushed.items()
            if metric(text, rf'pgqueue_jobs_pushed_total\{{queue="{q}"\}}') < n
        }
        if not behind:
            return text
        if time.monotonic() > deadline:
            raise SystemExit(f"broker on {http_port} still behind on {behind} after 30 min")
        time.sleep(1)  # the broker catching up with the outbox; polled with a deadline


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


QUEUES = {
    "backlog": "plain FIFO jobs",
    "mixed": "priorities 0/5/10/15, every tenth job delayed an hour",
    "scheduled": "every tenth job delayed an hour at priority 10, the rest due at priority 0",
}


def job_spec(queue: str, i: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": "n", "data": {"i": i}}
    if queue == "mixed":
        spec["priority"] = (i % 4) * 5
        if i % 10 == 0:
            spec["delay"] = 3_600_000
    elif queue == "scheduled" and i % 10 == 0:
        spec.update(priority=10, delay=3_600_000)
    return spec


async def admit(manager: PostgresQueueManager, queue: str, lo: int, hi: int) -> None:
    for start in range(lo, hi, CHUNK):
        end = min(hi, start + CHUNK)
        await manager.push_bulk(queue, [job_spec(queue, i) for i in range(start, end)])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def claims(brokers: list[Broker], queue: str, count: int) -> dict[str, dict[str, float]]:
    """``count`` PULLB (one job) + ACKB round trips per broker, alternating."""
    times: dict[str, list[float]] = {b.label: [] for b in brokers}
    before = {b.label: cpu_seconds(b.pid) for b in brokers}
    for _ in range(count):
        for broker in brokers:
            started = time.perf_counter()
            [lease] = await broker.transport.pull(
                queue, 1, owner="bench", lock_ttl_ms=30_000, timeout_ms=0
            )
            [done] = await broker.transport.ack([AckRequest(str(lease.job["id"]), lease.token)])
            times[broker.label].append(time.perf_counter() - started)
            assert done
    # Each broker's CPU over the whole run: its own claims and acks, and following
    # the events of every claim (its projection applies the other broker's too).
    cpu = {b.label: cpu_seconds(b.pid) - before[b.label] for b in brokers}
    return {
        label: {
            "p50_ms": statistics.median(values) * 1000,
            "p99_ms": percentile(values, 0.99) * 1000,
            "cpu_us": cpu[label] / count * 1e6,
        }
        for label, values in times.items()
    }


def walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = [node]
    for child in node.get("Plans", []):
        out.extend(walk(child))
    return out


async def explain_claim(
    dsn: str, query: Query, queue: str, broker_id: str, session_id: str
) -> dict[str, float | str]:
    """EXPLAIN (ANALYZE, BUFFERS) of job_claim_batch for one job, rolled back."""
    args = query.arguments(
        (),
        dict(
            namespace=NAMESPACE,
            queue=queue,
            count=1,
            owner="explain",
            broker_id=broker_id,
            session_id=session_id,
            lease_ms=30_000,
            default_lease_ms=30_000,
            now=None,
        ),
    )
    conn = await asyncpg.connect(dsn)
    transaction = conn.transaction()
    await transaction.start()
    try:
        text = await conn.fetchval(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {query.sql}", *args)
    finally:
        await transaction.rollback()
        await conn.close()
    top = json.loads(text)[0]
    nodes = walk(top["Plan"])
    [locking] = [n for n in nodes if n["Node Type"] == "LockRows"]
    scans = [
        f"{n['Node Type']} {n.get('Index Name', '')}".strip()
        for n in walk(locking)
        if n.get("Relation Name") == "pgqueue_jobs"
    ]
    plan = top["Plan"]
    return {
        "scan": ", ".join(scans),
        "buffers": plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0),
        "filtered": sum(n.get("Rows Removed by Filter", 0) for n in walk(locking)),
        "ms": top["Execution Time"],
    }


async def measure(
    dsn: str,
    brokers: list[Broker],
    sizes: list[int],
    queues: list[str],
    count: int,
    statements: dict[str, Query],
) -> list[dict[str, Any]]:
    manager = PostgresQueueManager(
        Config(dsn=dsn, namespace=NAMESPACE, broker_id="loader", run_maintenance=False)
    )
    await manager.start()
    for broker in brokers:
        broker.transport = open_transport(f"pgqueue://127.0.0.1:{broker.tcp_port}")
        await broker.transport.start()
    rows: list[dict[str, Any]] = []
    row0: dict[str, Any] = {"jobs": 0}
    for broker in brokers:
        row0[f"{broker.label}:rss"] = psutil.Process(broker.pid).memory_info().rss
    rows.append(row0)
    pushed = dict.fromkeys(queues, 0)
    waiting = dict.fromkeys(queues, 0)
    try:
        for target in sizes:
            for queue in queues:  # top up to ``target`` waiting (claims took some)
                await admit(manager, queue, pushed[queue], pushed[queue] + target - waiting[queue])
                pushed[queue] += target - waiting[queue]
                waiting[queue] = target
            for broker in brokers:
                await asyncio.to_thread(caught_up, broker.http_port, pushed)
            await asyncio.to_thread(_analyze, dsn)
            row: dict[str, Any] = {"jobs": target}
            for broker in brokers:
                text = scrape(broker.http_port)
                row[f"{broker.label}:rss"] = psutil.Process(broker.pid).memory_info().rss
                row[f"{broker.label}:entries"] = metric(text, "pgqueue_projection_entries")
                row[f"{broker.label}:bytes"] = metric(text, "pgqueue_projection_bytes")
            session = str(manager.session.session_id)
            for queue in queues:
                row[f"explain:{queue}"] = {
                    label: await explain_claim(dsn, query, queue, manager.broker_id, session)
                    for label, query in statements.items()
                }
                row[f"claims:{queue}"] = await claims(brokers, queue, count)
                waiting[queue] -= count * len(brokers)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        for broker in brokers:
            await broker.transport.close()
        await manager.close()
    return rows


def _analyze(dsn: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("VACUUM ANALYZE pgqueue_jobs")
        finally:
            await conn.close()

    asyncio.run(run())


def commit(root: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or "?"


def tables(rows: list[dict[str, Any]], labels: list[str], queues: list[str]) -> list[str]:
    out = [
        "| waiting jobs | "
        + " | ".join(f"RSS {lb} (MiB)" for lb in labels)
        + " | "
        + " | ".join(f"projection {lb} (entries / est. MiB)" for lb in labels)
        + " |",
        "|---" * (1 + 2 * len(labels)) + "|",
    ]
    for row in rows:
        rss = " | ".join(f"{row[f'{lb}:rss'] / 2**20:.1f}" for lb in labels)
        proj = " | ".join(
            f"{row.get(f'{lb}:entries', 0):,.0f} / {row.get(f'{lb}:bytes', 0) / 2**20:.1f}"
            for lb in labels
        )
        out.append(f"| {row['jobs']:,} | {rss} | {proj} |")
    for queue in queues:
        out += [
            "",
            f"Queue `{queue}` ({QUEUES[queue]}): one claim + ack at a time through each "
            "broker over TCP; the engine's claim statement of each checkout (buffers, index "
            "entries passed over by the claim's filter, execution time):",
            "",
            "| waiting jobs | "
            + " | ".join(f"{lb} p50 / p99 ms (wall) | {lb} broker CPU µs" for lb in labels)
            + " | claim plan | "
            + " | ".join(f"{lb} buffers / passed over / ms" for lb in labels)
            + " |",
            "|---" * (2 + 3 * len(labels)) + "|",
        ]
        for row in rows[1:]:
            c = row[f"claims:{queue}"]
            e = row[f"explain:{queue}"]
            lat = " | ".join(
                f"{c[lb]['p50_ms']:.2f} / {c[lb]['p99_ms']:.2f} | {c[lb]['cpu_us']:,.0f}"
                for lb in labels
            )
            plans = " | ".join(
                f"{e[lb]['buffers']:,} / {e[lb]['filtered']:,} / {e[lb]['ms']:.2f}" for lb in labels
            )
            out.append(f"| {row['jobs']:,} | {lat} | {e[labels[0]]['scan']} | {plans} |")
    return out


def section(
    rows: list[dict[str, Any]], labels: list[str], queues: list[str], claims: int, base: Path | None
) -> str:
    """The ``backlog`` section of docs/benchmarks.md."""
    table = tables(rows, labels, queues)
    return (
        "### Claims and broker memory against the backlog (`scripts/bench_backlog.py`)\n\n"
        f"Waiting jobs admitted through the engine in bulk (chunks of {CHUNK:,}) into one "
        "namespace, "
        + ", ".join(f"queue `{q}` ({QUEUES[q]})" for q in queues)
        + ", each up to the checkpoint, while "
        + " and ".join(f"broker `{lb}`" for lb in labels)
        + " (`pgqueue serve`, default settings"
        + (f"; `base` runs commit {commit(base)}, `new` {commit(ROOT)}" if base else "")
        + ') follow the namespace.  "Waiting jobs" is per queue (the namespace holds '
        f"{len(queues)} times as many).  At each checkpoint, once each broker has applied "
        "every `pushed` event: RSS; then per queue, after `VACUUM ANALYZE`, `EXPLAIN "
        "(ANALYZE, BUFFERS)` of each checkout's `job_claim_batch` (one job, rolled back), "
        f"then {claims} single PULLB + ACKB round trips per broker (alternating).  "
        "Wall-clock figures are noisy on a shared machine, buffers are not; broker CPU is "
        "each broker's over the whole round-trip run divided by its claims, so it "
        "includes following the other broker's events and its background work (polls, "
        "heartbeats), which grows with the run's wall time.\n\n" + "\n".join(table) + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--sizes", default=",".join(str(n) for n in SIZES))
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--base", type=Path, help="a checkout to run a second broker from")
    parser.add_argument("--queues", default=",".join(QUEUES))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.sizes.split(","))
    queues = args.queues.split(",")
    statements = {"new": Q.job_claim_batch}
    if args.base:
        claim_sql = (args.base / "pgqueue" / "sql" / "claim.sql").read_text()
        statements["base"] = parse_queries(claim_sql)["job_claim_batch"]
    roots = [("new", ROOT)] + ([("base", args.base.resolve())] if args.base else [])
    with scratch_database(args.dsn, "pgq_backlog") as dsn:
        brokers: list[Broker] = []
        processes = []
        try:
            for label, root in roots:
                tcp_port, http_port = free_port(), free_port()
                process = start_broker(
                    dsn,
                    broker_id=label,
                    tcp_port=tcp_port,
                    namespace=NAMESPACE,
                    http_port=http_port,
                    root=root,
                )
                processes.append(process)
                brokers.append(Broker(label, process.pid, tcp_port, http_port))
            rows = asyncio.run(measure(dsn, brokers, sizes, queues, args.claims, statements))
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(60)
    labels = [b.label for b in brokers]
    print("\n".join(tables(rows, labels, queues)))
    if not args.no_write:
        write_section(section(rows, labels, queues, args.claims, args.base), "backlog")


if __name__ == "__main__":
    main()
