#!/usr/bin/env python3
"""Soak: N jobs pushed and drained through brokers behind HAProxy, with retention on.

Not a test.  Brings up ``scripts/cluster.py``'s topology (embedded PostgreSQL unless
``--dsn``), then producers (``Queue.add_bulk``) and workers (``Worker``, no-op handler)
of the pgqueue SDK talk to HAProxy only, with a bounded backlog, while the leader's
retention prunes finished jobs and events continuously.  Every ``--report-s``
seconds it prints, and records, the dead tuples, table and index sizes of the hot
tables, the claim latency (PULLB round trips that returned jobs) p50/p99, the outbox
lag and each broker's RSS.  At the end: ``docs/images/soak.png`` (matplotlib),
``docs/images/soak.json`` (the rows) and the figures' section of docs/operations.md.

    .venv/bin/python scripts/soak.py --jobs 200000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pgqueue.client import Job, Queue, Worker  # noqa: E402
from pgqueue.client.tcp import TcpTransport  # noqa: E402
from pgqueue.errors import IndeterminateCommit  # noqa: E402
from scripts.cluster import Cluster  # noqa: E402
from scripts.haproxy_config import HealthCheck  # noqa: E402
from scripts.probes import (  # noqa: E402
    HOT_TABLES,
    TimedPulls,
    broker_gauges,
    broker_heap,
    broker_trace,
    rss_bytes,
    table_health,
)

QUEUE = "soak"
PAD = "x" * 200  # a small realistic payload
OPERATIONS = ROOT / "docs" / "operations.md"
IMAGES = ROOT / "docs" / "images"
MB = 1024 * 1024


async def handler(job: Job) -> None:
    return None


class _ClientWarnings(logging.Handler):
    """The SDK's warnings (a connection dropped by the liveness check, say) as errors."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(logging.WARNING)
        self.soak = soak

    def emit(self, record: logging.LogRecord) -> None:
        self.soak.errors.append(
            {
                "at_s": self.soak.elapsed(),
                "worker": None,
                "type": "client warning",
                "message": record.getMessage()[:300],
            }
        )


class Soak:
    def __init__(self, cluster: Cluster, args: argparse.Namespace) -> None:
        self.cluster = cluster
        self.args = args
        self.url = f"pgqueue://127.0.0.1:{cluster.state.tcp_port}"
        self.timed = TimedPulls()
        self.transports: list[TcpTransport] = []
        self.workers: list[Worker] = []
        self.pushed = 0
        self.rows: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.lost_jobs: list[dict[str, Any]] = []  # since the last row
        self.errors: list[dict[str, Any]] = []  # since the last row
        self.indeterminate = 0  # jobs of pushes of unknown outcome (pushed again)
        logging.getLogger("pgqueue.client").addHandler(_ClientWarnings(self))

    def watch(self, number: int, worker: Worker) -> None:
        """Record each refused ack (a lost lease) and each error a worker emits."""

        def lost(job: Job, error: Exception) -> None:
            self.lost_jobs.append(
                {"at_s": self.elapsed(), "worker": number, "job": job.id, "token": job.token}
            )

        def error(exc: Exception) -> None:
            self.errors.append(
                {
                    "at_s": self.elapsed(),
                    "worker": number,
                    "type": type(exc).__name__,
                    "message": str(exc)[:300],
                }
            )

        worker.on("lost", lost)
        worker.on("error", error)

    def elapsed(self) -> float:
        return round(time.monotonic() - self.started, 2)

    def completed(self) -> int:
        return sum(w.processed for w in self.workers)

    async def transport(self) -> TcpTransport:
        transport = TcpTransport.from_url(self.url, pool=1, timeout=30)
        await transport.start()
        self.transports.append(transport)
        return transport

    async def produce(self, queue: Queue) -> None:
        a = self.args
        while self.pushed < a.jobs:
            while self.pushed - self.completed() > a.backlog:  # noqa: ASYNC110
                await asyncio.sleep(0.02)  # load shaping: a bounded backlog
            if a.rate:  # load shaping: a steady push rate, so the tables hold a steady window
                ahead = self.started + self.pushed / a.rate - time.monotonic()
                if ahead > 0:
                    await asyncio.sleep(ahead)
            n = min(a.chunk, a.jobs - self.pushed)
            self.pushed += n
            try:
                await queue.add_bulk([{"name": "soak", "data": {"pad": PAD}} for _ in range(n)])
            except IndeterminateCommit as exc:  # committed or not: pushed again, counted
                self.pushed -= n
                self.indeterminate += n
                self.errors.append(
                    {
                        "at_s": self.elapsed(),
                        "worker": None,
                        "type": type(exc).__name__,
                        "message": str(exc)[:300],
                    }
                )

    def report(self) -> dict[str, Any]:
        s = self.cluster.state
        tables = table_health(s.dsn)
        lags, staleness = [], []
        for b in s.brokers:
            gauges = broker_gauges(
                b.http_port,
                ["pgqueue_outbox_lag_transactions", "pgqueue_projection_staleness_seconds"],
            )
            lags.append(gauges.get("pgqueue_outbox_lag_transactions", 0.0))
            staleness.append(gauges.get("pgqueue_projection_staleness_seconds", 0.0))
        done = self.completed()
        previous = self.rows[-1] if self.rows else {"completed": 0, "elapsed_s": 0.0}
        elapsed = time.monotonic() - self.started
        row = {
            "elapsed_s": round(elapsed, 1),
            "pushed": self.pushed,
            "completed": done,
            "lost_leases": sum(w.lost for w in self.workers),
            "indeterminate_pushes": self.indeterminate,
            "jobs_per_s": round(
                (done - previous["completed"]) / max(elapsed - previous["elapsed_s"], 1e-9)
            ),
            "tables": tables,
            "claim": self.timed.take(),
            "outbox_lag_transactions": max(lags),
            "projection_staleness_s": max(staleness),
            "broker_rss_bytes": {b.broker_id: rss_bytes(b.pid or 0) for b in s.brokers},
            "broker_heap": {b.broker_id: heap_summary(b.http_port) for b in s.brokers},
            "lost": lost_summary(self.lost_jobs),
            "worker_errors": error_summary(self.errors),
        }
        self.lost_jobs, self.errors = [], []
        self.rows.append(row)
        print(summary_line(row), flush=True)
        for line in detail_lines(row):
            print(f"         {line}", flush=True)
        return row

    async def run(self) -> None:
        a = self.args
        for number in a.tracemalloc:
            broker_trace(self.cluster.state.broker(number).http_port)
        for number in range(a.workers):
            transport = self.timed.wrap(await self.transport())
            worker = Worker(
                QUEUE,
                handler,
                transport,
                concurrency=a.concurrency,
                batch_size=a.concurrency,
                poll_timeout=0.5,
            )
            self.watch(number, worker)
            self.workers.append(worker)
        queues = [Queue(QUEUE, await self.transport()) for _ in range(a.producers)]
        producers = [asyncio.create_task(self.produce(q)) for q in queues]
        next_report = time.monotonic() + a.report_s
        try:
            while self.completed() < a.jobs:
                for task in producers:
                    if task.done() and task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
                if time.monotonic() >= next_report:
                    await asyncio.to_thread(self.report)
                    next_report += a.report_s
                await asyncio.sleep(0.2)
            await asyncio.to_thread(self.report)
        finally:
            for task in producers:
                task.cancel()
            await asyncio.gather(*producers, return_exceptions=True)
            await asyncio.gather(*(w.close() for w in self.workers))
            await asyncio.gather(*(q.close() for q in queues))
            await asyncio.gather(*(t.close() for t in self.transports))


def heap_summary(http_port: int) -> dict[str, Any]:
    """What one broker holds: its books, object counts, tracemalloc's top lines."""
    started = time.monotonic()
    try:
        heap = broker_heap(http_port)
    except OSError as exc:  # a measurement, not a reason to stop the soak
        return {"error": str(exc), "seconds": round(time.monotonic() - started, 1)}
    tracing = heap["tracemalloc"]
    return {
        "seconds": round(time.monotonic() - started, 2),
        "objects": heap["heap"]["objectCount"],
        "collections": heap["collections"],
        "top_types": {t["type"]: t["count"] for t in heap["topObjectTypes"][:8]},
        "traced_bytes": tracing.get("currentBytes"),
        "top_lines": [
            {"where": line["where"], "kb": round(line["bytes"] / 1024), "count": line["count"]}
            for line in tracing.get("top", [])
        ],
    }


def lost_summary(lost: list[dict[str, Any]]) -> dict[str, Any]:
    """Refused acks of one interval, grouped in runs of the same worker and second."""
    groups: list[dict[str, Any]] = []
    for item in lost:
        last = groups[-1] if groups else None
        if (
            last is not None
            and last["worker"] == item["worker"]
            and item["at_s"] - last["at_s"] < 1
        ):
            last["jobs"] += 1
            last["last_job"] = item["job"]
        else:
            groups.append(
                {
                    "at_s": item["at_s"],
                    "worker": item["worker"],
                    "jobs": 1,
                    "first_job": item["job"],
                    "last_job": item["job"],
                    "token": item["token"],
                }
            )
    return {"count": len(lost), "groups": groups}


def error_summary(errors: list[dict[str, Any]]) -> dict[str, Any]:
    by_type: dict[str, int] = {}
    for item in errors:
        by_type[item["type"]] = by_type.get(item["type"], 0) + 1
    return {"count": len(errors), "by_type": by_type, "first": errors[:5]}


def detail_lines(row: dict[str, Any], heaps: bool = True) -> list[str]:
    lines = []
    for broker, heap in row["broker_heap"].items() if heaps else ():
        if "error" in heap:
            lines.append(f"{broker}: /heapstats failed after {heap['seconds']} s: {heap['error']}")
            continue
        c = heap["collections"]
        traced = heap["traced_bytes"]
        lines.append(
            f"{broker}: rss {row['broker_rss_bytes'][broker] / MB:.0f} MB, {heap['objects']:,}"
            f" objects, projection {c.get('projectionEntries', 0):,}"
            f" ({c.get('projectionBytes', 0) / MB:.0f} MB est.), claim book"
            f" {c.get('claimBook', 0):,} + {c.get('claimBookClean', 0):,} clean,"
            f" tcp {c.get('tcpConnections', 0)} ({heap['seconds']} s)"
            + (f", traced {traced / MB:.0f} MB" if traced is not None else "")
        )
        for line in heap["top_lines"][:5]:
            lines.append(f"  {line['kb']:>8} KB {line['count']:>8}  {line['where']}")
    for group in row["lost"]["groups"]:
        lines.append(
            f"lost: {group['jobs']} acks refused at {group['at_s']:.1f}s, worker"
            f" {group['worker']}, jobs {group['first_job']}..{group['last_job']}"
            f" (token {group['token']})"
        )
    errors = row["worker_errors"]
    if errors["count"]:
        lines.append(f"errors: {errors['by_type']}; first: {errors['first'][:2]}")
    return lines


def summary_line(row: dict[str, Any]) -> str:
    t = row["tables"]
    dead = "/".join(str(t.get(n, {}).get("dead_tuples", 0)) for n in HOT_TABLES)
    size = "/".join(
        f"{(t.get(n, {}).get('table_bytes', 0) + t.get(n, {}).get('index_bytes', 0)) / MB:.1f}"
        for n in HOT_TABLES
    )
    rss = max(row["broker_rss_bytes"].values()) / MB
    return (
        f"{row['elapsed_s']:7.0f}s {row['completed']:>8} done {row['jobs_per_s']:>5}/s"
        f"  dead {dead}  MB {size}  claim p50 {row['claim']['p50_ms']:.1f} ms"
        f" p99 {row['claim']['p99_ms']:.1f} ms  outbox lag {row['outbox_lag_transactions']:.0f}"
        f" tx  rss max {rss:.0f} MB"
    )


def flatness(rows: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """First full-minute row (after warm-up) against the last one, per figure."""
    first, last = rows[1] if len(rows) > 2 else rows[0], rows[-2] if len(rows) > 2 else rows[-1]

    def figures(row: dict[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, t in row["tables"].items():
            out[f"{name} size MB"] = (t["table_bytes"] + t["index_bytes"]) / MB
            out[f"{name} dead tuples"] = t["dead_tuples"]
        out["claim p50 ms"] = row["claim"]["p50_ms"]
        out["claim p99 ms"] = row["claim"]["p99_ms"]
        out["broker RSS MB (max)"] = max(row["broker_rss_bytes"].values()) / MB
        for broker, rss in row["broker_rss_bytes"].items():
            out[f"{broker} RSS MB"] = rss / MB
        out["jobs/s"] = row["jobs_per_s"]
        return out

    a, b = figures(first), figures(last)
    return {name: (a[name], b.get(name, 0.0)) for name in a}


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["completed"] / 1000 for r in rows]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    fig.suptitle(title)
    panels = [
        ("dead tuples", lambda r, n: r["tables"].get(n, {}).get("dead_tuples", 0)),
        (
            "table + index size (MB)",
            lambda r, n: (
                (
                    r["tables"].get(n, {}).get("table_bytes", 0)
                    + r["tables"].get(n, {}).get("index_bytes", 0)
                )
                / MB
            ),
        ),
    ]
    for ax, (label, value) in zip(axes[0][:2], panels, strict=True):
        for name in HOT_TABLES:
            ax.plot(x, [value(r, name) for r in rows], marker=".", label=name)
        ax.set_title(label)
        ax.legend(fontsize=8)
    ax = axes[0][2]
    ax.plot(x, [r["claim"]["p50_ms"] for r in rows], marker=".", label="p50")
    ax.plot(x, [r["claim"]["p99_ms"] for r in rows], marker=".", label="p99")
    ax.set_title("claim round trip (ms)")
    ax.legend(fontsize=8)
    ax = axes[1][0]
    ax.plot(x, [r["outbox_lag_transactions"] for r in rows], marker=".")
    ax.set_title("outbox lag (transactions, max over brokers)")
    ax = axes[1][1]
    for broker in rows[0]["broker_rss_bytes"]:
        ax.plot(x, [r["broker_rss_bytes"][broker] / MB for r in rows], marker=".", label=broker)
    ax.set_title("broker RSS (MB)")
    ax.legend(fontsize=8)
    ax = axes[1][2]
    ax.plot(x, [r["jobs_per_s"] for r in rows], marker=".")
    ax.set_title("jobs completed per second")
    for row_axes in axes:
        for ax in row_axes:
            ax.set_xlabel("jobs completed (thousands)")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)


def keep_logs(run_dir: Path) -> Path:
    """Copy the run's logs out of its directory (the database goes with it): what
    a refused ack or a slow minute needs explaining from."""
    kept = Path(tempfile.mkdtemp(prefix="pgqueue-soak-logs-"))
    for log_file in run_dir.glob("*.log"):
        shutil.copy2(log_file, kept / log_file.name)
    return kept


def markdown(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        f"Command: `{command}`",
        "",
        "| elapsed | completed | jobs/s | dead tuples jobs / finished / events"
        " | MB jobs / finished / events (table+index) | claim p50 / p99 ms | outbox lag tx"
        " | broker RSS MB (each) | claim book clean records (max) | lost leases |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t = r["tables"]
        dead = " / ".join(str(t.get(n, {}).get("dead_tuples", 0)) for n in HOT_TABLES)
        size = " / ".join(
            f"{(t.get(n, {}).get('table_bytes', 0) + t.get(n, {}).get('index_bytes', 0)) / MB:.1f}"
            for n in HOT_TABLES
        )
        lines.append(
            f"| {r['elapsed_s']:.0f} s | {r['completed']:,} | {r['jobs_per_s']:,} | {dead}"
            f" | {size} | {r['claim']['p50_ms']:.1f} / {r['claim']['p99_ms']:.1f}"
            f" | {r['outbox_lag_transactions']:.0f}"
            f" | {' / '.join(f'{v / MB:.0f}' for v in r['broker_rss_bytes'].values())}"
            f" | {clean_records(r):,} | {r.get('lost_leases', 0)} |"
        )
    return "\n".join(lines)


def clean_records(row: dict[str, Any]) -> int:
    heaps = row.get("broker_heap", {}).values()
    return max((h.get("collections", {}).get("claimBookClean", 0) for h in heaps), default=0)


def write_section(path: Path, section: str, text: str) -> None:
    start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    current = path.read_text()
    block = f"{start}\n{text}\n{end}"
    if start in current and end in current:
        head, rest = current.split(start, 1)
        current = head + block + rest.split(end, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(current)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--dsn", default=None, help="a database to use (default: embedded)")
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--producers", type=int, default=2)
    p.add_argument("--workers", type=int, default=3, help="Worker objects (one connection each)")
    p.add_argument("--concurrency", type=int, default=100, help="per worker (and pull batch)")
    p.add_argument("--chunk", type=int, default=500, help="jobs per add_bulk")
    p.add_argument("--backlog", type=int, default=20_000, help="most jobs waiting at once")
    p.add_argument(
        "--rate",
        type=float,
        default=0,
        help="push at most this many jobs/s in all (0: as fast as the backlog allows); "
        "a steady rate keeps a steady retention window in the tables, so their sizes "
        "show ageing rather than the machine's changing speed",
    )
    p.add_argument("--report-s", type=float, default=60.0)
    p.add_argument("--retention-ms", type=int, default=60_000, help="completed jobs and events")
    p.add_argument(
        "--tracemalloc",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="brokers to run tracemalloc in (their top allocating lines in every row): a"
        " diagnosis, not figures — it slows them down, and each row's snapshot stops their"
        " event loop for seconds (long enough for the SDK's liveness check to drop them)",
    )
    p.add_argument("--no-write", action="store_true", help="do not touch docs/")
    args = p.parse_args()
    if not args.no_write:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            p.error("the plot needs matplotlib: pip install -e '.[bench]' (or pass --no-write)")
    logging.basicConfig(level=logging.WARNING)
    run_dir = Path(tempfile.mkdtemp(prefix="pgqueue-soak-"))
    serve_args = [
        "--set",
        "retention_interval_ms=10000",
        "--set",
        f"retention_completed_ms={args.retention_ms}",
        "--set",
        f"retention_events_ms={args.retention_ms}",
    ]
    cluster = Cluster.up(
        run_dir,
        brokers=args.brokers,
        dsn=args.dsn,
        namespace="soak",
        tcp_port=0,
        http_port=0,
        broker_port_base=0,
        bind="127.0.0.1",
        check=HealthCheck(),
        serve_args=serve_args,
    )
    soak = Soak(cluster, args)
    try:
        asyncio.run(soak.run())
    finally:
        cluster.down()
        kept = keep_logs(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
    (kept / "soak.json").write_text(json.dumps(soak.rows, indent=1) + "\n")
    print(f"broker and HAProxy logs, and the rows (soak.json), kept in {kept}")
    if soak.rows:
        last = soak.rows[-1]
        print(f"acks refused as lost leases (those jobs ran again): {last['lost_leases']}")
        print(f"jobs of pushes of unknown outcome (pushed again): {last['indeterminate_pushes']}")
        for row in soak.rows:
            for line in detail_lines(row, heaps=False):
                print(f"  at {row['elapsed_s']:.0f} s: {line}")
    rows = soak.rows
    print("\nfirst full interval -> last full interval:")
    for name, (first, last) in flatness(rows).items():
        ratio = f"{last / first:.2f}x" if first else "n/a"
        print(f"  {name:32} {first:10.1f} -> {last:10.1f}  ({ratio})")
    if not args.no_write:
        command = "scripts/soak.py " + " ".join(sys.argv[1:])
        IMAGES.mkdir(parents=True, exist_ok=True)
        (IMAGES / "soak.json").write_text(json.dumps(rows, indent=1) + "\n")
        title = f"pgqueue soak: {args.jobs:,} jobs, {args.brokers} brokers behind HAProxy"
        plot(rows, IMAGES / "soak.png", title)
        write_section(OPERATIONS, "soak", markdown(rows, command))
        print(f"wrote {IMAGES / 'soak.png'}, {IMAGES / 'soak.json'} and {OPERATIONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
