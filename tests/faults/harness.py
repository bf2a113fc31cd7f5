"""A fault run on real processes: brokers, recording workers, producers, subscribers.

Brokers are ``python -m pgqueue serve`` processes (tests/acceptance/conftest.py's
``BrokerFactory``); workers are ``python -m pgqueue.testing.workload worker``
processes (so a test can SIGSTOP or kill them); producers and event
subscribers run in the test's own event loop.  Every fault the run injects is
recorded in the history (``nemesis.jsonl``); :meth:`FaultRun.finish` stops
producing, waits for the queues to drain, stops the workers, reads the
database and returns the checker's report (its headline is printed).
scripts/chaos.py drives the same harness for the long tier.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from pgqueue.client.queue import Queue
from pgqueue.testing import eventually
from pgqueue.testing.checker import Report, check_run
from pgqueue.testing.history import HistoryWriter, read_history
from pgqueue.testing.workload import RecordingProducer, RecordingSubscriber
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.faults.broken_builds import broken_env

ROOT = Path(__file__).resolve().parents[2]

REAPER_MS = 200
SESSION_STALE_MS = 4_000
# Short intervals so that faults resolve within seconds on the database clock.
FAST_BROKER = (
    "--poll-interval-ms",
    "100",
    "--session-heartbeat-ms",
    "1000",
    "--set",
    f"session_stale_ms={SESSION_STALE_MS}",
    "--set",
    f"reaper_interval_ms={REAPER_MS}",
    "--set",
    "claim_events=true",  # the checker reads every claim's active event
    "--lease-ms",
    "5000",
)


@dataclass
class WorkerProcess:
    """A recording SDK worker in a process of its own."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def terminate(self, timeout: float = 20) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@dataclass
class FaultRun:
    """One run: start its parts, inject faults, then :meth:`finish`."""

    dsn: str
    namespace: str
    tmp: Path
    broken: str | None = None
    broker_args: Sequence[str] = ()
    label: str = ""
    client_options: str = ""  # appended to every client's URL, e.g. "timeout=5"
    brokers: dict[str, BrokerProcess] = field(default_factory=dict)
    workers: dict[str, WorkerProcess] = field(default_factory=dict)
    subscribers: list[RecordingSubscriber] = field(default_factory=list)
    queues: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.history_dir = self.tmp / "history"
        self.history_dir.mkdir(parents=True, exist_ok=True)
        self.nemesis = HistoryWriter(self.history_dir, "nemesis")
        self.env = broken_env(self.tmp, self.broken) if self.broken else None
        self._producing = asyncio.Event()
        self._producers: list[tuple[RecordingProducer, asyncio.Task[None]]] = []
        self._histories: list[HistoryWriter] = [self.nemesis]
        self._own_args: dict[str, tuple[str, ...]] = {}
        self._dsns: dict[str, str] = {}
        self._envs: dict[str, dict[str, str]] = {}
        self.timings: list[tuple[str, float]] = []  # how long drains and starts took
        self._worker_args: dict[str, tuple[str, tuple[str, ...], int, int, int]] = {}

    # -- parts -------------------------------------------------------------------

    def start_broker(
        self,
        name: str,
        *args: str,
        tcp_port: int | None = None,
        dsn: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> BrokerProcess:
        """Start a broker; ``dsn``: its own way to the database (a fault proxy);
        ``env``: variables of its process (a skewed clock), kept for restarts."""
        dsn = dsn or self._dsns.get(name) or self.dsn
        self._dsns[name] = dsn
        if env is not None:
            self._envs[name] = {**(self.env or {}), **env}
        factory = BrokerFactory(dsn, self.namespace, self.tmp)
        began = time.monotonic()
        broker = factory.start(
            name,
            *FAST_BROKER,
            *self.broker_args,
            *args,
            http=False,
            env=self._envs.get(name, self.env),
            tcp_port=tcp_port,
        )
        self.timings.append((f"start {name}", time.monotonic() - began))
        self.brokers[name] = broker
        self._own_args[name] = args
        return broker

    async def start_broker_async(self, name: str, *args: str, **options: Any) -> BrokerProcess:
        """:meth:`start_broker` off the event loop (which may serve its fault proxy)."""
        return await asyncio.to_thread(self.start_broker, name, *args, **options)

    async def start_brokers(self, *names: str, args: Sequence[str] = ()) -> None:
        """Start several brokers at once (each start is mostly Python importing)."""
        await asyncio.gather(*(self.start_broker_async(name, *args) for name in names))

    def restart_broker(self, name: str) -> BrokerProcess:
        """Start ``name`` again on its port (after a kill or a stop)."""
        port = self.brokers[name].tcp_port
        return self.start_broker(name, *self._own_args[name], tcp_port=port)

    def url(self, *names: str) -> str:
        chosen = names or tuple(self.brokers)
        url = "pgqueue://" + ",".join(self.brokers[n].address for n in chosen)
        return f"{url}?{self.client_options}" if self.client_options else url

    def start_worker(
        self,
        name: str,
        queue: str,
        *,
        brokers: Sequence[str] = (),
        concurrency: int = 4,
        lock_ms: int = 2_000,
        work_ms: int = 20,
    ) -> WorkerProcess:
        self.queues.add(queue)
        log_path = self.tmp / f"worker-{name}.log"
        command = [
            sys.executable,
            "-m",
            "pgqueue.testing.workload",
            "worker",
            "--url",
            self.url(*brokers),
            "--queue",
            queue,
            "--history",
            str(self.history_dir),
            "--name",
            name,
            "--concurrency",
            str(concurrency),
            "--lock-ms",
            str(lock_ms),
            "--work-ms",
            str(work_ms),
        ]
        with open(log_path, "ab") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        worker = WorkerProcess(name, process, log_path)
        self.workers[name] = worker
        self._worker_args[name] = (queue, tuple(brokers), concurrency, lock_ms, work_ms)
        return worker

    def restart_worker(self, name: str) -> WorkerProcess:
        """Start worker ``name`` again (same options, same history file)."""
        queue, brokers, concurrency, lock_ms, work_ms = self._worker_args[name]
        return self.start_worker(
            name,
            queue,
            brokers=brokers,
            concurrency=concurrency,
            lock_ms=lock_ms,
            work_ms=work_ms,
        )

    def start_producer(
        self,
        name: str,
        queue: str,
        *,
        brokers: Sequence[str] = (),
        work_ms: int = 20,
        poison_every: int = 0,
        poison_options: Mapping[str, Any] | None = None,
        pause: float = 0.01,
        limit: int | None = None,
    ) -> RecordingProducer:
        self.queues.add(queue)
        history = HistoryWriter(self.history_dir, name)
        self._histories.append(history)
        producer = RecordingProducer(
            Queue(queue, self.url(*brokers)),
            history,
            prefix=name,
            work_ms=work_ms,
            poison_every=poison_every,
            poison_options=poison_options,
        )
        task = asyncio.create_task(
            producer.run(self._producing, pause=pause, limit=limit), name=f"producer:{name}"
        )
        self._producers.append((producer, task))
        return producer

    async def start_subscriber(
        self, name: str, queue: str, *, brokers: Sequence[str] = ()
    ) -> RecordingSubscriber:
        self.queues.add(queue)
        history = HistoryWriter(self.history_dir, name)
        self._histories.append(history)
        subscriber = RecordingSubscriber(queue, self.url(*brokers), history, name)
        await subscriber.start()
        self.subscribers.append(subscriber)
        return subscriber

    async def producers_done(self, timeout: float = 60) -> None:
        """Wait for producers started with a ``limit`` to have sent everything."""
        async with asyncio.timeout(timeout):
            await asyncio.gather(*(task for _, task in self._producers))

    # -- faults ------------------------------------------------------------------

    def kill_broker(self, name: str) -> None:
        self.nemesis.nemesis("kill", name)
        self.brokers[name].kill()

    def kill_worker(self, name: str) -> None:
        self.nemesis.nemesis("kill", name)
        self.workers[name].process.kill()
        self.workers[name].process.wait(10)

    def stop(self, name: str) -> None:
        """SIGSTOP a broker or a worker (until :meth:`resume`)."""
        self.nemesis.nemesis("stop", name)
        self._process(name).send_signal(signal.SIGSTOP)

    def resume(self, name: str) -> None:
        self._process(name).send_signal(signal.SIGCONT)
        self.nemesis.nemesis("stop", name, "end")

    def _process(self, name: str) -> subprocess.Popen[bytes]:
        if name in self.workers:
            return self.workers[name].process
        return self.brokers[name].process

    async def kill_listen(self, name: str) -> int:
        """Terminate broker ``name``'s LISTEN backend (idle on its LISTEN or on the
        listener's ``SELECT 1`` ping); records a ``listen-kill`` when one went."""
        conn = await asyncpg.connect(self.dsn)
        try:
            killed = int(
                await conn.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE application_name = $1 AND state = 'idle'"
                    " AND (query ILIKE 'LISTEN%' OR query = 'SELECT 1')",
                    f"pgqueue:{name}",
                )
            )
        finally:
            await conn.close()
        if killed:
            self.nemesis.nemesis("listen-kill", name)
        return killed

    def terminate_broker(self, name: str) -> None:
        """SIGTERM: the graceful drain."""
        self.nemesis.nemesis("sigterm", name)
        began = time.monotonic()
        self.brokers[name].terminate()
        self.timings.append((f"drain {name}", time.monotonic() - began))
        self.nemesis.nemesis("sigterm", name, "end")

    # -- progress ----------------------------------------------------------------

    async def completed(self) -> int:
        return int(
            await self._value(
                "SELECT count(*) FROM pgqueue_finished WHERE namespace = $1 AND queue = ANY($2)"
                " AND state = 'completed'"
            )
        )

    async def live(self) -> int:
        return int(
            await self._value(
                "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND queue = ANY($2)"
            )
        )

    async def last_event(self, queue: str) -> int:
        """The id of ``queue``'s last event that the wire carries (0 if none)."""
        conn = await asyncpg.connect(self.dsn)
        try:
            return int(
                await conn.fetchval(
                    "SELECT coalesce(max(id), 0) FROM pgqueue_events WHERE namespace = $1"
                    " AND queue = $2 AND type NOT IN ('dlq', 'dlq_audit')",
                    self.namespace,
                    queue,
                )
            )
        finally:
            await conn.close()

    async def _value(self, query: str) -> Any:
        conn = await asyncpg.connect(self.dsn)
        try:
            return await conn.fetchval(query, self.namespace, sorted(self.queues))
        finally:
            await conn.close()

    async def progress(self, more: int, timeout: float = 60) -> None:
        """Wait until ``more`` further jobs have completed."""
        target = await self.completed() + more

        async def reached() -> bool:
            return await self.completed() >= target

        await eventually(reached, timeout=timeout, interval=0.1, message=f"{target} completed")

    def executions(self, worker: str) -> list[dict[str, Any]]:
        path = self.history_dir / f"{worker}.jsonl"
        if not path.exists():
            return []
        return [r for r in read_history([path]) if r.get("kind") == "exec"]

    # -- the end -----------------------------------------------------------------

    async def finish(self, *, drain_timeout: float = 90, backoff_ms: float | None = None) -> Report:
        """Stop producing, drain, stop the workers, check; the brokers are stopped."""
        self._producing.set()
        for producer, task in self._producers:
            with contextlib.suppress(Exception):
                await task
            await producer.queue.close()

        async def drained() -> bool:
            return await self.live() == 0

        with contextlib.suppress(TimeoutError):
            await eventually(drained, timeout=drain_timeout, interval=0.2, message="drained")
        # Each subscriber must reach its queue's last event before it closes;
        # the checker then expects every event up to that one (a dropped event
        # that is the last shows as missing after this wait's deadline).
        last: dict[str, int] = {}
        for subscriber in self.subscribers:
            last[subscriber.name] = await self.last_event(subscriber.queue)
            with contextlib.suppress(TimeoutError):
                await eventually(
                    lambda s=subscriber: s.max_seq >= last[s.name], timeout=10, interval=0.05
                )
        await asyncio.gather(*(asyncio.to_thread(w.terminate) for w in self.workers.values()))
        for subscriber in self.subscribers:
            await subscriber.close(upto=last[subscriber.name])
        for history in self._histories:
            history.close()
        report = await check_run(
            self.dsn,
            self.namespace,
            sorted(self.queues),
            [self.history_dir],
            backoff_ms=backoff_ms,
            label=self.label,
        )
        print(report.headline())
        if self.timings:
            print("timings:", ", ".join(f"{what} {seconds:.1f}s" for what, seconds in self.timings))
        (self.tmp / "report.json").write_text(json.dumps(report.to_json(), indent=2))
        await asyncio.gather(*(asyncio.to_thread(b.terminate, 15) for b in self.brokers.values()))
        return report

    async def abort(self) -> None:
        """Stop everything without checking (a test that failed midway)."""
        self._producing.set()
        for producer, task in self._producers:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            with contextlib.suppress(Exception):
                await producer.queue.close()
        for subscriber in self.subscribers:
            with contextlib.suppress(Exception):
                await subscriber.close()
        await asyncio.gather(*(asyncio.to_thread(w.terminate, 5) for w in self.workers.values()))

        def stop_broker(broker: BrokerProcess) -> None:
            with contextlib.suppress(Exception):
                broker.process.send_signal(signal.SIGCONT)
                broker.terminate(10)

        await asyncio.gather(*(asyncio.to_thread(stop_broker, b) for b in self.brokers.values()))
        for history in self._histories:
            history.close()


def assert_safe(report: Report) -> None:
    """The CI tier's bar: nothing lost, no stale ack, no overlap, no duplicate id,
    no event missing, and the run valid as a whole."""
    figures = {
        "lost": report.lost,
        "stale acks accepted": report.stale_acks_accepted,
        "lease overlaps": report.lease_overlaps,
        "custom-id duplicates": report.cid_duplicates,
        "events missing": sum(report.events_missing.values()),
    }
    assert all(v == 0 for v in figures.values()), (figures, dict(report.examples))
    assert report.valid, (report.headline(), dict(report.examples))
