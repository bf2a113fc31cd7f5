#!/usr/bin/env python3
"""Disk per job, relation by relation, after the peers' W2 step.

Not a test, and not timed.  On a fresh database migrated to head it does what the peers
harness's W2 step does to pgqueue (../shared/bench/peers: preload ``--jobs`` jobs with
``push_bulk`` in chunks of ``--chunk``, no options, payload ``{"i": n, "t": epoch}``; then
claim and acknowledge them all in batches of ``--batch``; the harness then reads
``pg_database_size`` with autovacuum off and no maintenance run), then a CHECKPOINT, and
prints for every table of the schema its heap (main fork, plus free-space and visibility
maps), TOAST and each index, in bytes and bytes per job, and the database's growth.  No
retention pass runs (the harness's adapters run without maintenance; with the default ages,
a pass that soon after would prune nothing, and a DELETE frees no bytes before a VACUUM).
``--maintenance`` runs the manager's maintenance beside the drain, as the harness's
embedded adapter does (its ``Worker`` runs it by default): the leader's VACUUM of
``pgqueue_jobs`` (:mod:`pgqueue.maintenance.jobs_vacuum`) then runs when it is due.

    .venv/bin/python scripts/bench_disk.py --jobs 20000 [--maintenance]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue import Config, PostgresQueueManager  # noqa: E402
from scripts.benchlib import default_dsn, scratch_database  # noqa: E402

RELATIONS = """
SELECT c.relname, 'heap', pg_relation_size(c.oid, 'main')
       + pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind = 'r'
UNION ALL
SELECT c.relname, 'toast', pg_total_relation_size(c.reltoastrelid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.reltoastrelid <> 0
UNION ALL
SELECT t.relname, i.relname, pg_relation_size(i.oid)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = 'public'
"""


def manager(dsn: str, maintenance: bool) -> PostgresQueueManager:
    return PostgresQueueManager(
        Config(
            dsn=dsn,
            namespace="bench",
            broker_id="disk",
            pool_min_size=1,
            pool_max_size=2,
            run_maintenance=maintenance,
        )
    )


def sizes(dsn: str) -> tuple[int, dict[tuple[str, str], int]]:
    """The database's size and every relation part's, after a CHECKPOINT."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        total = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        rows = conn.execute(RELATIONS).fetchall()
    assert total is not None
    return int(total[0]), {(t, part): int(b) for t, part, b in rows}


async def w2(dsn: str, jobs: int, chunk: int, batch: int, maintenance: bool) -> None:
    m = manager(dsn, maintenance)
    await m.start()
    try:
        payloads = [{"name": "noop", "data": {"i": i, "t": time.time()}} for i in range(jobs)]
        for lo in range(0, jobs, chunk):
            await m.push_bulk("bench", payloads[lo : lo + chunk])
        done = 0
        while claimed := await m.pull_batch("bench", batch):
            outcomes = await m.ack_batch([(j.id, j.token, None) for j in claimed])
            done += sum(o.applied for o in outcomes)
        if done != jobs:
            raise SystemExit(f"drained {done} of {jobs}")
    finally:
        await m.close()


def table(
    title: str,
    empty: tuple[int, dict[tuple[str, str], int]],
    after: tuple[int, dict[tuple[str, str], int]],
    jobs: int,
) -> str:
    lines = [f"### {title}", "", "| table | part | bytes | bytes/job |", "|---|---|---:|---:|"]
    per_table: dict[str, int] = {}
    for (t, part), b in sorted(after[1].items()):
        grown = b - empty[1].get((t, part), 0)
        per_table[t] = per_table.get(t, 0) + grown
        if grown:
            lines.append(f"| {t} | {part} | {grown:,} | {grown / jobs:,.0f} |")
    for t, b in sorted(per_table.items(), key=lambda kv: -kv[1]):
        if b:
            lines.append(f"| **{t}** | all | {b:,} | {b / jobs:,.0f} |")
    grown = after[0] - empty[0]
    lines.append(f"| **database** | pg_database_size growth | {grown:,} | {grown / jobs:,.0f} |")
    mib = after[0] / 2**20
    lines.append(f"| **database** | pg_database_size | {after[0]:,} | ({mib:.1f} MiB) |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--chunk", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument(
        "--maintenance", action="store_true", help="run maintenance (the jobs vacuum) beside"
    )
    parser.add_argument("--prefix", default="pgq_disk", help="scratch database name prefix")
    parser.add_argument(
        "--sql", action="append", default=[], help="run after the migrations (to try a variant)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with scratch_database(args.dsn, args.prefix) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for statement in args.sql:
                conn.execute(statement)
        empty = sizes(dsn)
        asyncio.run(w2(dsn, args.jobs, args.chunk, args.batch, args.maintenance))
        drained = sizes(dsn)
        title = f"After W2 ({args.jobs:,} jobs pushed in bulk, drained)"
        print(table(title, empty, drained, args.jobs))
        print(f"\nempty database after migrations: {empty[0]:,} bytes ({empty[0] / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
