"""The long fault tier: combined random faults for N minutes, then the checker's headline.

    .venv/bin/python scripts/chaos.py --minutes 30 --seed 4711

Starts an embedded PostgreSQL of its own (so it may restart it), three brokers
(the first reaching the database through a fault proxy), recording workers
(processes), producers and an event subscriber, then runs the seeded nemesis
of tests/faults/nemesis.py: kill -9 / SIGSTOP / SIGTERM of brokers, SIGSTOP past
the lease and kill -9 of workers, COMMIT replies dropped, database links cut,
LISTEN connections killed, PostgreSQL restarts.  At the end it drains, checks
the history against the database and prints one headline line (exit status 1
if the run is not valid).  The history and report.json stay in --keep DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from pgqueue.db.schema import migrate  # noqa: E402
from pgqueue.embedded import EmbeddedPostgres, dsn_for_database  # noqa: E402
from tests.fault_proxy import FaultProxy  # noqa: E402
from tests.faults.harness import FaultRun  # noqa: E402
from tests.faults.nemesis import combined_run  # noqa: E402


async def chaos(minutes: float, seed: int, keep: Path, brokers: int, workers: int) -> bool:
    data_dir = Path(tempfile.mkdtemp(prefix="pgqueue-chaos-pg-")) / "data"
    server = EmbeddedPostgres(data_dir, cleanup="delete")
    admin = server.start()
    proxy: FaultProxy | None = None
    run: FaultRun | None = None
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE chaos")
        dsn = dsn_for_database(admin, "chaos")
        migrate(dsn)
        proxy = FaultProxy(dsn)
        await proxy.start()
        run = FaultRun(
            dsn,
            "chaos",
            keep,
            label=f"chaos seed={seed} minutes={minutes:g}",
            client_options="timeout=5",
        )
        started = time.monotonic()
        nemesis = await combined_run(
            run,
            seed=seed,
            seconds=minutes * 60,
            queue="chaos",
            proxy=proxy,
            postgres=server,
            brokers=[f"b{i + 1}" for i in range(brokers)],
            workers=workers,
        )
        report = await run.finish(backoff_ms=100, drain_timeout=180)
        steps = ", ".join(nemesis.steps)
        (keep / "steps.txt").write_text(steps + "\n")
        print(f"ran {time.monotonic() - started:.0f} s, {len(nemesis.steps)} nemesis steps")
        print(f"history, report.json and steps.txt in {keep}")
        return report.valid
    finally:
        if run is not None:
            await run.abort()
        if proxy is not None:
            await proxy.close()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--seed", type=int, default=4711)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="run directory (default: tmp)")
    args = parser.parse_args()
    keep = args.keep or Path(tempfile.mkdtemp(prefix="pgqueue-chaos-"))
    keep.mkdir(parents=True, exist_ok=True)
    valid = asyncio.run(chaos(args.minutes, args.seed, keep, args.brokers, args.workers))
    sys.exit(0 if valid else 1)


if __name__ == "__main__":
    main()
