"""Three brokers behind HAProxy (scripts/cluster.py), clients that know only HAProxy.

Producers and workers of the pgqueue SDK and of the official clients (TypeScript and
Python) run through the load balancer while one broker is killed with SIGKILL and another one
drained with SIGTERM; both come back.  The history (every push outcome, every
handler execution, every acknowledgement the worker saw accepted or refused) is
checked against the database: every admitted job completed exactly once, no
acknowledgement of a claim that had moved on was accepted, HAProxy stopped routing
to the dead broker within its health-check window, and new connections spread back
to the restarted brokers.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import pytest

from pgqueue.client import Job, Queue, Worker
from pgqueue.testing import eventually
from scripts.cluster import ClusterState
from scripts.haproxy_config import HealthCheck
from scripts.haproxy_stats import ServerStat, show_stat
from tests.acceptance.clients.runner import PY_DIR, BunNotInstalledError, bun_path, js_dir
from tests.helpers import live_jobs, sql

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = [sys.executable, str(ROOT / "scripts" / "cluster.py")]
CHECK = HealthCheck(inter_ms=500, fall=2, rise=1)
LEASE_MS = 5000
CLIENT_TIMEOUT_MS = 150_000
"""How long an official client's scenario may run before it reports a timeout."""

pytestmark = pytest.mark.timeout(240)


def cli(run_dir: Path, *args: str) -> str:
    done = subprocess.run(
        [*CLUSTER, "--run-dir", str(run_dir), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"cluster.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture
def cluster(tmp_path: Path, db_dsn: str, namespace: str) -> Iterator[ClusterState]:
    if shutil.which("haproxy") is None:
        if os.environ.get("CI"):
            pytest.fail("haproxy is not installed (.ci/run installs it)")
        pytest.skip("haproxy is not installed (apt-get install -y haproxy)")
    run_dir = tmp_path / "cluster"
    printed = cli(
        run_dir,
        "up",
        "--dsn",
        db_dsn,
        "--namespace",
        namespace,
        "--tcp-port",
        "0",
        "--http-port",
        "0",
        "--broker-port-base",
        "0",
        "--check-interval-ms",
        str(CHECK.inter_ms),
        "--check-fall",
        str(CHECK.fall),
        "--check-rise",
        str(CHECK.rise),
        "--",
        "--lease-ms",
        str(LEASE_MS),
        "--poll-interval-ms",
        "100",
    )
    assert "haproxy: pid" in printed and "broker3: pid" in printed  # it says what it started
    try:
        yield ClusterState.load(run_dir)
    finally:
        subprocess.run([*CLUSTER, "--run-dir", str(run_dir), "down"], capture_output=True)


def tcp_servers(state: ClusterState) -> dict[str, ServerStat]:
    return {s.server: s for s in show_stat(state.stats_socket) if s.backend == "brokers_tcp"}


@dataclass
class History:
    """What the SDK clients saw, per job id."""

    admitted: set[str] = field(default_factory=set)
    push_errors: list[str] = field(default_factory=list)
    executions: dict[str, list[tuple[int, str]]] = field(default_factory=lambda: defaultdict(list))
    accepted: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    refused: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


class SdkClients:
    """A producer and three workers of the pgqueue SDK, through HAProxy only."""

    def __init__(self, url: str, queue: str) -> None:
        self.history = History()
        self.stop = asyncio.Event()
        self.queue = Queue(queue, url)
        self.workers = [
            Worker(
                queue,
                self.handle,
                url,
                concurrency=4,
                poll_timeout=0.2,
                lock_duration_ms=LEASE_MS,
                heartbeat_interval=1.0,
                pool=1,
            )
            for _ in range(3)
        ]
        for worker in self.workers:
            worker.on("completed", self.on_completed)
            worker.on("lost", self.on_lost)
        self.producer = asyncio.ensure_future(self.produce())

    async def handle(self, job: Job) -> dict[str, str]:
        execution = uuid.uuid4().hex
        assert job.fence is not None
        self.history.executions[job.id].append((job.fence, execution))
        await asyncio.sleep(0.05)  # the job's work: long enough to be cut by a kill
        return {"exec": execution}

    def on_completed(self, job: Job, result: dict[str, str]) -> None:
        self.history.accepted[job.id].append(result["exec"])

    def on_lost(self, job: Job, error: Exception) -> None:
        self.history.refused[job.id].append(str(job.fence))

    async def produce(self) -> None:
        n = 0
        while not self.stop.is_set():
            ids = [f"sdk-{n + k}" for k in range(5)]
            jobs = [{"name": "lb", "data": i, "opts": {"job_id": i}} for i in ids]
            try:
                # Every job has a custom id: a push cut after it may have committed
                # is re-sent by the SDK itself, so an answer means admitted.
                await self.queue.add_bulk(jobs)
            except Exception as exc:
                self.history.push_errors.append(repr(exc))
                continue  # the same ids again: the custom id makes the retry safe
            self.history.admitted.update(ids)
            n += len(ids)
            await asyncio.sleep(0.05)  # a steady producer, not a flood

    async def stop_producing(self) -> None:
        self.stop.set()
        await self.producer

    async def close(self) -> None:
        await self.stop_producing()
        await asyncio.gather(*(w.close() for w in self.workers))
        await self.queue.close()


@pytest.fixture
async def ts_client(
    cluster: ClusterState, tmp_path: Path
) -> AsyncIterator[tuple[asyncio.subprocess.Process, Path, str]]:
    try:
        bun = str(bun_path())
    except BunNotInstalledError as exc:
        if os.environ.get("PGQUEUE_REQUIRE_JS") == "1":
            raise
        pytest.skip(f"the official TS client is not installed ({exc})")
    stop_file = tmp_path / "stop-ts"
    queue = f"lb-ts-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "PGQUEUE_JS_DIR": str(js_dir()),
        "PGQ_HOST": "127.0.0.1",
        "PGQ_TCP_PORT": str(cluster.tcp_port),
        "PGQ_QUEUE": queue,
        "PGQ_STOP_FILE": str(stop_file),
        "PGQ_HISTORY_FILE": str(tmp_path / "ts-history.json"),
        "PGQ_LOCK_MS": str(LEASE_MS),
        "PGQ_TIMEOUT_MS": str(CLIENT_TIMEOUT_MS),
    }
    script = ROOT / "tests" / "acceptance" / "clients" / "ts" / "lb_history.ts"
    process = await asyncio.create_subprocess_exec(
        bun,
        "--no-install",
        str(script),
        cwd=script.parent,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield process, stop_file, queue
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.fixture
async def py_client(
    cluster: ClusterState, tmp_path: Path
) -> AsyncIterator[tuple[asyncio.subprocess.Process, Path, str]]:
    """The official Python client (PyPI bunqueue-client) running py/lb_history.py."""
    stop_file = tmp_path / "stop-py"
    queue = f"lb-py-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "PGQ_HOST": "127.0.0.1",
        "PGQ_TCP_PORT": str(cluster.tcp_port),
        "PGQ_QUEUE": queue,
        "PGQ_STOP_FILE": str(stop_file),
        "PGQ_HISTORY_FILE": str(tmp_path / "py-history.json"),
        "PGQ_LOCK_MS": str(LEASE_MS),
        "PGQ_TIMEOUT_MS": str(CLIENT_TIMEOUT_MS),
    }
    python = os.environ.get("PGQUEUE_PYTHON", sys.executable)
    process = await asyncio.create_subprocess_exec(
        python,
        str(PY_DIR / "lb_history.py"),
        cwd=PY_DIR,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield process, stop_file, queue
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def finish_client(
    process: asyncio.subprocess.Process, history_file: Path, what: str
) -> dict[str, Any]:
    """Wait for an official client's scenario to end; its history."""
    # The scenario ends itself CLIENT_TIMEOUT_MS after its start, reporting what it
    # had seen (the jobs whose completion it still waited for): wait past that, so a
    # failure says which, rather than only that it did not exit.
    stdout, stderr = await asyncio.wait_for(
        process.communicate(), timeout=CLIENT_TIMEOUT_MS / 1000 + 15
    )
    assert process.returncode == 0, f"{what}:\n{stdout.decode()[-3000:]}\n{stderr.decode()[-3000:]}"
    history: dict[str, Any] = json.loads(await asyncio.to_thread(history_file.read_text))
    return history


async def check_client_history(
    dsn: str, namespace: str, queue: str, history: dict[str, Any], what: str
) -> None:
    """Every job an official client saw admitted completed once, with a result
    its handler produced and its worker saw accepted, or, for an ack whose broker
    died after its commit and before its answer, that the queue reported stored
    (``completedUnseen``)."""
    rows = await finished_rows(dsn, namespace, queue)
    events = await completion_events(dsn, namespace, queue)
    assert history["admitted"], f"the {what} client admitted nothing"
    assert set(history["admitted"]) <= set(rows), f"an admitted {what} job was lost"
    for job_id, row in rows.items():
        assert row["state"] == "completed", (job_id, row["state"])
        assert events.get(job_id) == 1, (job_id, events.get(job_id))
        stored = json.loads(row["result"])["exec"]
        assert stored in history["executions"][job_id]
        seen, unseen = history["completed"].get(job_id, []), history["completedUnseen"]
        assert stored in seen or unseen.get(job_id) == stored, (job_id, stored, seen)


async def completed_in(dsn: str, namespace: str, queue: str) -> int:
    rows = await sql(
        dsn,
        "SELECT count(*) FROM pgqueue_finished WHERE namespace = $1 AND queue = $2"
        " AND state = 'completed'",
        namespace,
        queue,
    )
    return int(rows[0][0])


async def finished_rows(dsn: str, namespace: str, queue: str) -> dict[str, Any]:
    rows = await sql(
        dsn,
        "SELECT id, state, fence, result FROM pgqueue_finished WHERE namespace = $1 AND queue = $2",
        namespace,
        queue,
    )
    return {r["id"]: r for r in rows}


async def completion_events(dsn: str, namespace: str, queue: str) -> dict[str, int]:
    rows = await sql(
        dsn,
        "SELECT job_id, count(*) FROM pgqueue_events WHERE namespace = $1 AND queue = $2"
        " AND type = 'completed' GROUP BY job_id",
        namespace,
        queue,
    )
    return {r[0]: int(r[1]) for r in rows}


class Pings:
    """Plain TCP connections through HAProxy, each answering a Ping, held open."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []

    def open(self, port: int, count: int) -> None:
        for i in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            body = msgpack.packb({"cmd": "Ping", "reqId": f"p{i}"})
            sock.sendall(struct.pack(">I", len(body)) + body)
            (length,) = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))
            reply = msgpack.unpackb(sock.recv(length, socket.MSG_WAITALL))
            assert reply["ok"] is True
            self.sockets.append(sock)

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        self.sockets.clear()


async def test_every_admitted_job_completes_exactly_once_while_brokers_die_behind_haproxy(
    cluster: ClusterState,
    ts_client: tuple[asyncio.subprocess.Process, Path, str],
    py_client: tuple[asyncio.subprocess.Process, Path, str],
    db_dsn: str,
    namespace: str,
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    url = f"pgqueue://127.0.0.1:{cluster.tcp_port}"
    sdk_queue = f"lb-sdk-{uuid.uuid4().hex[:8]}"
    ts_process, ts_stop, ts_queue = ts_client
    py_process, py_stop, py_queue = py_client
    sdk = SdkClients(url, sdk_queue)
    run_dir = cluster.path
    pings = Pings()
    try:

        async def progress(at_least: int) -> None:
            async def both() -> bool:
                for queue in (sdk_queue, ts_queue, py_queue):
                    if await completed_in(db_dsn, namespace, queue) < at_least:
                        return False
                return True

            done = f"{at_least} jobs of each client done"
            await eventually(both, timeout=45, interval=0.2, message=done)

        await progress(30)
        phases = {"running": time.monotonic() - started}
        # Every broker serves some of the clients' connections.
        assert all(s.current_sessions > 0 for s in tcp_servers(cluster).values())

        # SIGKILL broker1: HAProxy marks it down within its check window.
        await asyncio.to_thread(cli, run_dir, "kill", "1")
        killed_at = time.monotonic()  # the signal went just before the command returned
        await eventually(
            lambda: not tcp_servers(cluster)["broker1"].up,
            timeout=10,
            interval=0.05,
            message="haproxy marks the killed broker down",
        )
        detected_s = time.monotonic() - killed_at
        assert detected_s <= CHECK.detection_ms / 1000 + 0.5, detected_s
        # ... and routes no new connection to it.
        before = tcp_servers(cluster)["broker1"].total_sessions
        await asyncio.to_thread(pings.open, cluster.tcp_port, 4)
        assert tcp_servers(cluster)["broker1"].total_sessions == before
        pings.close()
        await progress(80)
        phases["killed"] = time.monotonic() - started

        # SIGTERM broker2: it drains (/readyz 503) and leaves the rotation.
        await asyncio.to_thread(cli, run_dir, "stop", "2")
        await eventually(
            lambda: not tcp_servers(cluster)["broker2"].up,
            timeout=10,
            message="haproxy marks the drained broker down",
        )
        await progress(130)
        phases["drained"] = time.monotonic() - started

        # Both come back; HAProxy routes to them again, and new connections go to
        # them first (least connections): the load spreads back.
        await asyncio.to_thread(cli, run_dir, "restart", "1")
        await asyncio.to_thread(cli, run_dir, "restart", "2")
        await eventually(
            lambda: all(s.up for s in tcp_servers(cluster).values()),
            timeout=10,
            message="haproxy sees the restarted brokers up",
        )
        before_sessions = {n: s.total_sessions for n, s in tcp_servers(cluster).items()}
        await asyncio.to_thread(pings.open, cluster.tcp_port, 4)
        after = tcp_servers(cluster)
        new = {n: after[n].total_sessions - before_sessions[n] for n in after}
        assert new["broker1"] >= 1 and new["broker2"] >= 1, new
        assert new["broker1"] + new["broker2"] >= 3, new  # the emptiest brokers first
        await progress(180)
        phases["restarted"] = time.monotonic() - started
    finally:
        pings.close()
        ts_stop.touch()
        py_stop.touch()
        await sdk.stop_producing()
        try:
            # Jobs whose push raised may still have been committed: they must
            # complete too, so the workers run until no job is left.
            for queue in (sdk_queue, ts_queue, py_queue):
                await eventually(
                    lambda q=queue: _no_live_jobs(db_dsn, namespace, q),
                    timeout=60,
                    message=f"no live job left in {queue}",
                )
        finally:
            await sdk.close()
    ts = await finish_client(ts_process, tmp_path / "ts-history.json", "TypeScript client")
    py = await finish_client(py_process, tmp_path / "py-history.json", "Python client")

    # SDK: every admitted job completed once, by the claim that was current.
    history = sdk.history
    rows = await finished_rows(db_dsn, namespace, sdk_queue)
    events = await completion_events(db_dsn, namespace, sdk_queue)
    assert history.admitted and history.admitted <= set(rows), "an admitted job was lost"
    for job_id, row in rows.items():
        assert row["state"] == "completed", (job_id, row["state"])
        assert events.get(job_id) == 1, (job_id, events.get(job_id))
        accepted = history.accepted[job_id]
        assert len(accepted) == 1, (job_id, accepted)  # one accepted ack, never two
        stored = json.loads(row["result"])["exec"]
        assert stored == accepted[0]
        fences = dict((e, f) for f, e in history.executions[job_id])
        assert fences[stored] == row["fence"], "an ack of a stale claim was accepted"
    # The official clients: the same, from their own histories.
    await check_client_history(db_dsn, namespace, ts_queue, ts, "TypeScript")
    await check_client_history(db_dsn, namespace, py_queue, py, "Python")
    phases["checked"] = time.monotonic() - started
    assert phases["checked"] < 120, phases
    reruns = sum(len(v) > 1 for v in history.executions.values())
    print(
        f"sdk: {len(history.admitted)} admitted, {reruns} re-run, "
        f"{sum(map(len, history.refused.values()))} acks refused, "
        f"{len(history.push_errors)} push errors; ts: {len(ts['admitted'])} admitted, "
        f"{len(ts['pushErrors'])} push errors, {len(ts['completedUnseen'])} acks unheard; "
        f"py: {len(py['admitted'])} admitted, {len(py['pushErrors'])} push errors, "
        f"{len(py['completedUnseen'])} acks unheard, detection {detected_s:.2f} s, phases {phases}"
    )


async def _no_live_jobs(dsn: str, namespace: str, queue: str) -> bool:
    return await live_jobs(dsn, namespace, queue) == 0
