#!/usr/bin/env python3
"""Cost per job: statements, transactions, WAL bytes, rows written and NOTIFYs, per phase.

Not a test, and not timed: these figures do not depend on how loaded the machine is, so
they guide performance work where wall-clock numbers on a shared 2-core box cannot.
Phases, each on the engine (``PostgresQueueManager``) against a fresh database:

* ``push single``: ``push`` one job at a time (one awaited call after the other);
* ``push bulk``: ``push_bulk`` in chunks;
* ``claim + ack``: ``pull_batch`` -> ``ack_batch`` until the queue is empty.

Statements are counted in the client (every ``fetch``/``fetchrow``/``fetchval``/
``execute`` of the asyncpg driver, by query name); WAL bytes from
``pg_current_wal_lsn()`` (cluster-wide: other databases' writes count too, so the figure
is an upper bound on a shared server);
the database's size growth per job once every job is finished (after a CHECKPOINT, no
autovacuum in between); rows from ``pg_stat_user_tables``; NOTIFYs by a LISTEN
connection on ``pgqueue_events``;
Python CPU from ``time.process_time()``.  Rewrites the "cost per job" section of
docs/benchmarks.md (unless ``--no-write``).

    .venv/bin/python scripts/bench_cost.py --jobs 5000
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue import Config, PostgresQueueManager  # noqa: E402
from pgqueue.db import asyncpg_db  # noqa: E402
from scripts.benchlib import default_dsn, scratch_database, write_section  # noqa: E402

STATEMENTS: collections.Counter[str] = collections.Counter()


def _count_statements() -> None:
    """Count every statement the engine sends, by query name (wraps the asyncpg executors)."""
    for cls in (asyncpg_db.ConnectionExecutor, asyncpg_db.AsyncpgDatabase):
        for method in ("fetch", "fetchrow", "fetchval", "execute"):
            original = getattr(cls, method)

            def wrapper(self: Any, query: Any, /, *a: Any, _o: Any = original, **k: Any) -> Any:
                STATEMENTS[getattr(query, "name", "?")] += 1
                return _o(self, query, *a, **k)

            setattr(cls, method, wrapper)


def manager(dsn: str, broker: str) -> PostgresQueueManager:
    return PostgresQueueManager(
        Config(
            dsn=dsn,
            namespace="bench",
            broker_id=broker,
            pool_min_size=1,
            pool_max_size=2,
            run_maintenance=False,
        )
    )


def _snapshot(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        lsn = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        rows = conn.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del"
            " FROM pg_stat_user_tables"
        ).fetchall()
    return {
        "lsn": lsn,
        "rows": {r[0]: r[1:] for r in rows},
    }


def _settled(dsn: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    """A snapshot once the backends' statistics have been flushed (they flush within ~1 s)."""
    time.sleep(1.2)
    snap = _snapshot(dsn)
    for _ in range(10):
        time.sleep(0.5)
        again = _snapshot(dsn)
        if again["rows"] == snap["rows"]:
            return again
        snap = again
    return snap


def _database_bytes(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    assert row is not None
    return int(row[0])


def _wal_bytes(dsn: str, a: str, b: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return int(conn.execute("SELECT pg_wal_lsn_diff(%s, %s)", (b, a)).fetchone()[0])  # type: ignore[index]


async def _phase(dsn: str, name: str, jobs: int, body: Any) -> dict[str, Any]:
    notifies = 0
    listener = await asyncpg.connect(dsn)

    def on_notify(*_: Any) -> None:
        nonlocal notifies
        notifies += 1

    await listener.add_listener("pgqueue_events", on_notify)
    m = manager(dsn, f"cost-{name.replace(' ', '-')}")
    await m.start()
    before = await asyncio.to_thread(_settled, dsn, None)
    STATEMENTS.clear()
    cpu = time.process_time()
    await body(m)
    cpu = time.process_time() - cpu
    statements = dict(STATEMENTS)
    await m.close()
    after = await asyncio.to_thread(_settled, dsn, before)
    await listener.close()
    rows: dict[str, list[int]] = {}
    for table, values in after["rows"].items():
        old = before["rows"].get(table, (0, 0, 0, 0))
        delta = [v - o for v, o in zip(values, old, strict=True)]
        if any(delta):
            rows[table] = delta
    return {
        "phase": name,
        "jobs": jobs,
        "statements": statements,
        "wal": await asyncio.to_thread(_wal_bytes, dsn, before["lsn"], after["lsn"]),
        "rows": rows,
        "notifies": notifies,
        "cpu_s": cpu,
    }


async def measure(
    dsn: str, jobs: int, chunk: int, batch: int
) -> tuple[list[dict[str, Any]], float]:
    """The phases' figures, and the database's growth per job once all are finished."""
    results = []
    empty = await asyncio.to_thread(_database_bytes, dsn)

    async def single(m: PostgresQueueManager) -> None:
        for i in range(jobs):
            await m.push("bench", "noop", {"i": i, "t": time.time()})

    async def bulk(m: PostgresQueueManager) -> None:
        payloads = [{"name": "noop", "data": {"i": i, "t": time.time()}} for i in range(jobs)]
        for lo in range(0, jobs, chunk):
            await m.push_bulk("bench", payloads[lo : lo + chunk])

    async def drain(m: PostgresQueueManager) -> None:
        done = 0
        while True:
            claimed = await m.pull_batch("bench", batch)
            if not claimed:
                break
            outcomes = await m.ack_batch([(j.id, j.token, None) for j in claimed])
            done += sum(o.applied for o in outcomes)
        if done != 2 * jobs:
            raise SystemExit(f"drained {done} of {2 * jobs}")

    results.append(await _phase(dsn, "push single", jobs, single))
    results.append(await _phase(dsn, "push bulk", jobs, bulk))
    results.append(await _phase(dsn, "claim + ack", 2 * jobs, drain))
    grown = await asyncio.to_thread(_database_bytes, dsn) - empty
    return results, grown / (2 * jobs)


def _rows_text(rows: dict[str, list[int]], jobs: int) -> str:
    parts = []
    for table, (ins, upd, hot, dele) in sorted(rows.items()):
        bits = []
        if ins:
            bits.append(f"{ins / jobs:.2f} ins")
        if upd:
            bits.append(f"{upd / jobs:.2f} upd ({hot / jobs:.2f} HOT)")
        if dele:
            bits.append(f"{dele / jobs:.2f} del")
        parts.append(f"{table.removeprefix('pgqueue_')}: {', '.join(bits)}")
    return "; ".join(parts)


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| phase | jobs | statements/job | WAL bytes/job | NOTIFYs/job "
        "| client CPU µs/job | rows written per job |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        n = r["jobs"]
        lines.append(
            f"| {r['phase']} | {n:,} | {sum(r['statements'].values()) / n:.3f} "
            f"| {r['wal'] / n:,.0f} | {r['notifies'] / n:.3f} "
            f"| {r['cpu_s'] / n * 1e6:,.0f} | {_rows_text(r['rows'], n)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", default=default_dsn())
    parser.add_argument("--jobs", type=int, default=5_000)
    parser.add_argument("--chunk", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="statements by query name")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    _count_statements()
    with scratch_database(args.dsn, "pgq_cost") as dsn:
        results, disk = asyncio.run(measure(dsn, args.jobs, args.chunk, args.batch))
    text = table(results) + (
        f"\n\nDatabase size growth once all {2 * args.jobs:,} jobs are finished (after a "
        f"CHECKPOINT; no autovacuum ran, nothing pruned): {disk:,.0f} bytes per job."
    )
    print(text)
    if args.verbose:
        for r in results:
            print(r["phase"], dict(sorted(r["statements"].items(), key=lambda kv: -kv[1])))
    if not args.no_write:
        write_section(
            "### Cost per job (`scripts/bench_cost.py`)\n\n"
            f"The engine alone on a fresh database: {args.jobs:,} jobs pushed one by one, "
            f"{args.jobs:,} in bulk chunks of {args.chunk:,}, then all of them claimed and "
            f"acknowledged in batches of {args.batch}.  Load-independent figures: statements "
            "counted in the client, WAL from "
            "`pg_current_wal_lsn()` (cluster-wide, an upper bound on a shared server), rows "
            "from `pg_stat_user_tables`, NOTIFYs received by a listener, the benchmark "
            "process's CPU.\n\n" + text + "\n",
            "bench_cost",
        )


if __name__ == "__main__":
    main()
