"""What the benchmark scripts share: scratch databases, free ports, the results file.

Not a test and not part of the package; imported by ``scripts/bench_*.py`` and
``scripts/measure_broker_memory.py``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg

from pgqueue.db.schema import migrate
from pgqueue.embedded import dsn_for_database

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "benchmarks.md"


def default_dsn() -> str:
    return os.environ.get("PGQUEUE_BENCH_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def scratch_database(
    server_dsn: str, prefix: str = "pgq_bench", *, migrated: bool = True
) -> Iterator[str]:
    """A fresh database on ``server_dsn`` (migrated unless told otherwise), dropped after."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    try:
        dsn = dsn_for_database(server_dsn, name)
        if migrated:
            migrate(dsn)
        yield dsn
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


def write_section(text: str, section: str) -> None:
    """Replace (or append) the marked section ``section`` of docs/benchmarks.md."""
    start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    current = RESULTS.read_text() if RESULTS.exists() else "# Benchmarks\n"
    block = f"{start}\n{text.rstrip()}\n{end}"
    if start in current:
        head, rest = current.split(start, 1)
        tail = rest.split(end, 1)[1]
        current = head + block + tail
    else:
        current = current.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(current)


def start_broker(
    dsn: str,
    *,
    broker_id: str,
    tcp_port: int,
    namespace: str = "default",
    http_port: int | None = None,
    root: Path = ROOT,
) -> subprocess.Popen[bytes]:
    """One ``python -m pgqueue serve`` process, returned once it says it is serving;
    ``root``: the checkout whose code it runs (another one to compare base and new)."""
    http = ["--http-port", str(http_port)] if http_port else ["--no-http"]
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
            namespace,
            "--broker-id",
            broker_id,
            "--host",
            "127.0.0.1",
            "--tcp-port",
            str(tcp_port),
            *http,
        ],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(root)},
    )
    assert process.stdout is not None
    for line in process.stdout:
        if b"serving namespace" in line:
            # Keep reading so a chatty broker never blocks on a full pipe.
            threading.Thread(target=process.stdout.read, daemon=True).start()
            return process
    raise SystemExit(f"broker {broker_id} did not start (exit {process.wait()})")


@contextlib.contextmanager
def brokers(dsn: str, count: int = 2, *, namespace: str = "default") -> Iterator[list[int]]:
    """``count`` brokers on ``dsn``; yields their TCP ports; SIGTERM (drain) on exit."""
    processes: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        for i in range(count):
            ports.append(free_port())
            processes.append(
                start_broker(dsn, broker_id=f"bench-{i}", tcp_port=ports[-1], namespace=namespace)
            )
        yield ports
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
