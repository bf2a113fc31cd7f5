"""Measurements the soak and the scaling benchmark share (not a test, not the package).

- :func:`table_health`: dead and live tuples, table and index sizes of the hot tables;
- :func:`rss_bytes` / :func:`cpu_seconds`: a process's memory and CPU time from /proc;
- :class:`TimedPulls`: wraps a transport's ``pull`` to record claim round trips;
- :func:`broker_gauges`: gauges scraped from a broker's ``/metrics``;
- :func:`broker_heap`: a broker's ``/heapstats`` (its in-memory books, objects by
  type, tracemalloc's top lines while it traces) and :func:`broker_trace` to start
  tracing.
"""

from __future__ import annotations

import json
import os
import statistics
import time
import urllib.request
from collections.abc import Iterable
from typing import Any

import psycopg
from prometheus_client.parser import text_string_to_metric_families

HOT_TABLES = ("pgqueue_jobs", "pgqueue_finished", "pgqueue_events")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def table_health(dsn: str, tables: Iterable[str] = HOT_TABLES) -> dict[str, dict[str, int]]:
    query = (
        "SELECT relname, n_dead_tup, n_live_tup, pg_table_size(relid), pg_indexes_size(relid),"
        " autovacuum_count FROM pg_stat_user_tables WHERE relname = ANY(%s)"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(query, (list(tables),)).fetchall()
    return {
        name: {
            "dead_tuples": dead,
            "live_tuples": live,
            "table_bytes": size,
            "index_bytes": index,
            "autovacuums": vacuums,
        }
        for name, dead, live, size, index, vacuums in rows
    }


def _read(path: str) -> str:
    with open(path) as file:
        return file.read()


def rss_bytes(pid: int) -> int:
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU time of ``pid`` (and of its waited-for children)."""
    fields = _read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLOCK_TICKS


def postgres_pids(dsn: str) -> list[int]:
    """The postmaster and every backend of the server (for CPU accounting)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        data_dir = conn.execute("SHOW data_directory").fetchone()[0]  # type: ignore[index]
    postmaster = int(_read(os.path.join(data_dir, "postmaster.pid")).split()[0])
    pids = [postmaster]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = _read(f"/proc/{entry}/stat").rsplit(")", 1)[1].split()[1]
            except OSError:
                continue
            if int(parent) == postmaster:
                pids.append(int(entry))
    return pids


def total_cpu(pids: Iterable[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += cpu_seconds(pid)
        except OSError:
            continue  # a backend that ended meanwhile
    return total


class TimedPulls:
    """Records the round trip of every pull that returned at least one job."""

    def __init__(self) -> None:
        self.samples: list[float] = []

    def wrap(self, transport: Any) -> Any:
        original = transport.pull

        async def pull(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            leases = await original(*args, **kwargs)
            if leases:
                self.samples.append(time.perf_counter() - started)
            return leases

        transport.pull = pull
        return transport

    def take(self) -> dict[str, float | int]:
        """p50 and p99 (ms) of the samples since the last call, and their count."""
        samples, self.samples = self.samples, []
        if len(samples) < 2:
            return {"count": len(samples), "p50_ms": 0.0, "p99_ms": 0.0}
        cuts = statistics.quantiles(samples, n=100, method="inclusive")
        return {"count": len(samples), "p50_ms": cuts[49] * 1000, "p99_ms": cuts[98] * 1000}


def broker_gauges(http_port: int, names: Iterable[str]) -> dict[str, float]:
    """The first sample of each named metric on one broker's /metrics."""
    wanted = set(names)
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=30) as reply:
        text = reply.read().decode()
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted and sample.name not in found:
                found[sample.name] = float(sample.value)
    return found


def broker_heap(http_port: int, top: int = 30) -> dict[str, Any]:
    """One broker's ``GET /heapstats?top=N`` (a full ``gc.get_objects()`` walk)."""
    url = f"http://127.0.0.1:{http_port}/heapstats?top={top}"
    with urllib.request.urlopen(url, timeout=30) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
    return answer


def broker_trace(http_port: int, on: bool = True) -> None:
    """Start (or stop) :mod:`tracemalloc` in one broker (``POST /gc``)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{http_port}/gc",
        data=json.dumps({"tracemalloc": on}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        reply.read()
