"""Start latency (the peers harness's W3): enqueue -> handler start, idle workers.

For every transport (the adapters of ``scripts/bench``: engine, embedded, tcp) and
worker setup (``default``, ``2x10``), in a scratch database: start the workers (one
process per ``procs`` of the setup), warm up with a few jobs, let them sit idle
2 s, then push ``--jobs`` jobs at ``--rate`` jobs/s from a fresh producer process.
Each payload carries ``time.time()`` taken just before the push; the handler takes
``time.time()`` when it starts, as the harness's ``Recorder`` does.  Prints
p50/p90/p99/max in ms per transport and setup.

``--tree`` (repeatable, ``label=PATH``) runs the adapters and the package of each
checkout, interleaved, ``--runs`` times (e.g. base vs new), then the medians::

    .venv/bin/python scripts/bench_latency.py --tree base=/tmp/base --tree new=. --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
TRANSPORTS = ("engine", "embedded", "tcp")
SETUPS = ("default", "2x10")
LAT_BASE = 1_000_000


def _adapter(tree: Path, transport: str) -> Any:
    path = tree / "scripts" / "bench" / f"pgqueue_{transport}_adapter.py"
    spec = importlib.util.spec_from_file_location(f"lat_{transport}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    k = (len(values) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


# -- roles run in child processes --------------------------------------------------------


async def _worker(args: argparse.Namespace) -> None:
    adapter = _adapter(Path(args.tree), args.transport)
    samples: list[tuple[int, float, float]] = []

    def handler(data: dict[str, Any]) -> None:
        samples.append((int(data["i"]), float(data["t"]), time.time()))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    config = dict(adapter.CONFIGS[args.setup])
    run = asyncio.create_task(adapter.run_worker(args.dsn, config, handler, stop))
    await stop.wait()
    with open(args.out, "w") as fh:  # noqa: ASYNC230 (the workers are stopping)
        json.dump(samples, fh)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(run, 20)


async def _producer(args: argparse.Namespace) -> None:
    adapter = _adapter(Path(args.tree), args.transport)
    async with adapter.Producer(args.dsn) as producer:
        t0 = time.perf_counter()
        for k in range(args.jobs):
            delay = t0 + k / args.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await producer.enqueue({"i": args.start + k, "t": time.time()})


# -- one trial (in a child process with the tree on PYTHONPATH) --------------------------


def _wait_done(dsn: str, sql: str, cap_s: float) -> int:
    import psycopg

    deadline = time.time() + cap_s
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
            pending = int(row[0]) if row else 0
            if pending == 0 or time.time() > deadline:
                return pending
            time.sleep(0.02)


def _xacts(dsn: str) -> int:
    """Transactions committed in the database so far (claims, pushes, acks, hints...)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else 0


def _role(args: argparse.Namespace, role: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        str(HERE),
        role,
        "--tree",
        args.tree,
        "--transport",
        args.transport,
        "--setup",
        args.setup,
        "--dsn",
        args.dsn,
        *extra,
    ]


def _trial(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(HERE.parent))
    from benchlib import default_dsn, scratch_database

    adapter = _adapter(Path(args.tree), args.transport)
    procs = adapter.CONFIGS[args.setup]["procs"]
    with (
        scratch_database(default_dsn(), "h_latency") as dsn,
        tempfile.TemporaryDirectory() as scratch,
    ):
        services = None
        if hasattr(adapter, "start_services"):
            services = adapter.start_services(dsn, Path(scratch))
        args.dsn = dsn
        outs = [Path(scratch) / f"worker{k}.json" for k in range(procs)]
        workers = [subprocess.Popen(_role(args, "_worker", "--out", str(out))) for out in outs]
        try:
            subprocess.run(
                _role(args, "_producer", "--jobs", "20", "--rate", "10", "--start", "0"),
                check=True,
            )
            if _wait_done(dsn, adapter.PENDING_SQL, 30):
                raise RuntimeError("warm-up jobs not done")
            time.sleep(2.0)
            xacts = _xacts(dsn)
            subprocess.run(
                _role(
                    args,
                    "_producer",
                    "--jobs",
                    str(args.jobs),
                    "--rate",
                    str(args.rate),
                    "--start",
                    str(LAT_BASE),
                ),
                check=True,
            )
            pending = _wait_done(dsn, adapter.PENDING_SQL, 30)
            time.sleep(1.5)  # backends flush their statistics when idle for 1 s
            xacts = _xacts(dsn) - xacts
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                worker.wait(60)
            if services is not None:
                adapter.stop_services(services)
        lat = sorted(
            (t_start - t_enq) * 1000
            for out in outs
            for (i, t_enq, t_start) in json.loads(out.read_text())
            if i >= LAT_BASE
        )
    print(json.dumps({"lat": lat, "pending": pending, "xacts": xacts}))


# -- the driver --------------------------------------------------------------------------


def _run_trial(label: str, tree: Path, transport: str, setup: str, jobs: int, rate: float) -> Any:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run(
        [
            sys.executable,
            str(HERE),
            "_trial",
            "--tree",
            str(tree),
            "--transport",
            transport,
            "--setup",
            setup,
            "--dsn",
            "-",
            "--jobs",
            str(jobs),
            "--rate",
            str(rate),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    lat = result["lat"]
    row = {
        "p50": _percentile(lat, 50),
        "p90": _percentile(lat, 90),
        "p99": _percentile(lat, 99),
        "max": lat[-1] if lat else float("nan"),
        "n": len(lat),
        "xacts": result["xacts"] / jobs,
    }
    print(
        f"{label:8} {transport:8} {setup:7} p50 {row['p50']:6.1f}  p90 {row['p90']:6.1f}  "
        f"p99 {row['p99']:6.1f}  max {row['max']:6.1f} ms  ({row['n']}/{jobs}, "
        f"{row['xacts']:.2f} transactions/job)",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", nargs="?", default="drive")
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--transport", action="append", default=[])
    parser.add_argument("--setup", action="append", default=[])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--dsn")
    parser.add_argument("--out")
    parser.add_argument("--start", type=int, default=0)
    args = parser.parse_args()
    if args.role != "drive":
        args.tree, args.transport, args.setup = args.tree[0], args.transport[0], args.setup[0]
        if args.role == "_worker":
            asyncio.run(_worker(args))
        elif args.role == "_producer":
            asyncio.run(_producer(args))
        else:
            _trial(args)
        return
    trees = [t.split("=", 1) if "=" in t else ["this", t] for t in args.tree] or [
        ["this", str(HERE.parents[1])]
    ]
    results: dict[tuple[str, str, str], list[Any]] = {}
    for _ in range(args.runs):
        for transport in args.transport or TRANSPORTS:
            for setup in args.setup or SETUPS:
                for label, tree in trees:
                    row = _run_trial(
                        label, Path(tree).resolve(), transport, setup, args.jobs, args.rate
                    )
                    results.setdefault((label, transport, setup), []).append(row)
    if args.runs > 1:
        print(f"medians of {args.runs} runs (ms):")
        for (label, transport, setup), rows in results.items():
            med = {k: statistics.median(r[k] for r in rows) for k in ("p50", "p90", "p99", "xacts")}
            print(
                f"{label:8} {transport:8} {setup:7} p50 {med['p50']:6.1f}  "
                f"p90 {med['p90']:6.1f}  p99 {med['p99']:6.1f}  "
                f"transactions/job {med['xacts']:.2f}"
            )


if __name__ == "__main__":
    main()
