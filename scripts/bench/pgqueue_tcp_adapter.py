"""pgqueue over TCP: two ``pgqueue serve`` brokers per database, the SDK talking to both.

For ../shared/bench/peers (BENCH_ADAPTER_DIRS=<repo>/scripts/bench).  ``start_services``
runs two brokers on the step's database (like peers that need a server); producers
and workers use ``pgqueue://`` connections (pooled, auto-batched ``add``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from importlib import metadata
from typing import Any

from pgqueue import Queue, Worker
from pgqueue.db.schema import migrate_async

NAME = "pgqueue_tcp"
CONFIGS = {
    "default": {"procs": 1, "concurrency": 50},
    "2x10": {"procs": 2, "concurrency": 10},
}
PENDING_SQL = "SELECT count(*) FROM pgqueue_jobs"
DONE_SQL = "SELECT count(*) FROM pgqueue_finished WHERE state = 'completed'"
QUEUE = "bench"
PORTS_FILE = "PGQUEUE_BENCH_BROKERS"

logging.getLogger("pgqueue").setLevel(logging.WARNING)


def describe() -> dict[str, str]:
    return {
        "version": metadata.version("pgqueue"),
        "client": "pgqueue SDK, TCP transport to 2 brokers (pgqueue serve) per database",
        "enqueue_single": "await Queue.add(name, data) (auto-batched into PUSHB)",
        "enqueue_bulk": "await Queue.add_bulk([...]) (PUSHB)",
        "worker": "pgqueue.Worker(concurrency=C) over TCP: PULLB, ACKB, JobHeartbeatB",
    }


async def install(dsn: str) -> None:
    await migrate_async(dsn)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_services(dsn: str, scratch: pathlib.Path) -> dict[str, Any]:
    # Called right after CREATE DATABASE: brokers check the schema, never create it.
    from pgqueue.db.schema import migrate

    migrate(dsn)
    ports = [_free_port(), _free_port()]
    processes = []
    for i, port in enumerate(ports):
        log = open(scratch / f"pgqueue-broker-{i}.log", "wb")  # noqa: SIM115
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pgqueue",
                    "--log-level",
                    "WARNING",
                    "serve",
                    "--dsn",
                    dsn,
                    "--broker-id",
                    f"bench-{i}",
                    "--host",
                    "127.0.0.1",
                    "--tcp-port",
                    str(port),
                    "--no-http",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
    deadline = time.monotonic() + 60
    for port in ports:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"pgqueue broker on {port} did not start") from None
                time.sleep(0.1)
    url = "pgqueue://" + ",".join(f"127.0.0.1:{p}" for p in ports)
    (scratch / PORTS_FILE).write_text(url)
    os.environ[PORTS_FILE] = url
    return {"processes": processes, "url": url}


def stop_services(handle: dict[str, Any]) -> None:
    for process in handle["processes"]:
        process.send_signal(signal.SIGTERM)
    for process in handle["processes"]:
        process.wait(60)


def _url() -> str:
    url = os.environ.get(PORTS_FILE)
    if url:
        return url
    scratch = pathlib.Path(os.environ.get("BENCH_SCRATCH", "/tmp/peers-bench"))
    return (scratch / PORTS_FILE).read_text()


class Producer:
    def __init__(self, dsn: str) -> None:
        self.queue = Queue(QUEUE, connection=_url())

    async def __aenter__(self) -> Producer:
        await self.queue.get_counts()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.queue.close()

    async def enqueue(self, payload: dict[str, Any]) -> None:
        await self.queue.add("noop", payload)

    async def enqueue_many(self, payloads: list[dict[str, Any]]) -> None:
        await self.queue.add_bulk([{"name": "noop", "data": p} for p in payloads])


async def run_worker(dsn: str, config: dict, handler, stop: asyncio.Event) -> None:  # type: ignore[no-untyped-def]
    async def process(job: Any) -> None:
        handler(job.data)

    worker = Worker(QUEUE, process, connection=_url(), concurrency=config["concurrency"])
    try:
        await stop.wait()
    finally:
        await worker.close()
