"""Recording producers, workers and event subscribers (the pgqueue SDK).

They run a workload against any deployment and write what they saw to a
history (:mod:`pgqueue.testing.history`), for the checker to compare with the
database afterwards.  Every job gets a unique custom id (``cid``): an admission
of unknown outcome is re-sent with the same id, and the checker can tell
whether it was admitted.  A handler records each execution with its fence and
returns ``{"exec": <execution id>, "fence": <fence>}``: the database then shows
which claim's completion was accepted.

In-process::

    history = HistoryWriter("run/", "producer-1")
    producer = RecordingProducer(Queue("q", "pgqueue://b1:6789"), history, prefix="p1")
    await producer.run(stop)

As processes (each until SIGTERM, or ``--seconds``)::

    python -m pgqueue.testing.workload worker --url pgqueue://b1:6789,b2:6789 \\
        --queue q --history run/ --name w1 --concurrency 8 --lock-ms 5000
    python -m pgqueue.testing.workload producer --url ... --queue q --history run/ --name p1
    python -m pgqueue.testing.workload subscriber --url ... --queue q --history run/ --name s1

Job data a producer sends: ``{"cid": ..., "work_ms": ...}``; ``"poison": true``
makes every attempt fail (the job must end in the DLQ after its attempts).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pgqueue.client.events import QueueEvents
from pgqueue.client.job import Job
from pgqueue.client.queue import Queue
from pgqueue.client.worker import Worker
from pgqueue.errors import ConfigError, DuplicateJob, ValidationError
from pgqueue.testing.history import HistoryWriter

__all__ = [
    "DEFINITE_REFUSALS",
    "PoisonError",
    "RecordingProducer",
    "RecordingSubscriber",
    "main",
    "recording_processor",
    "recording_worker",
]

# Errors after which the broker wrote nothing: the push definitely failed.
# Anything else (a cut connection, a timeout, a commit of unknown outcome, the
# database unavailable after the SDK's own retries) may have committed: info.
DEFINITE_REFUSALS: tuple[type[Exception], ...] = (ValidationError, DuplicateJob, ConfigError)


class PoisonError(Exception):
    """Raised by the handler for every attempt of a poison job."""


class RecordingProducer:
    """Pushes jobs with unique custom ids and records every attempt's outcome."""

    def __init__(
        self,
        queue: Queue,
        history: HistoryWriter,
        *,
        prefix: str,
        work_ms: int = 20,
        poison_every: int = 0,
        job_options: Mapping[str, Any] | None = None,
        poison_options: Mapping[str, Any] | None = None,
        retries: int = 8,
    ) -> None:
        self.queue = queue
        self.history = history
        self.prefix = prefix
        self.work_ms = work_ms
        self.poison_every = poison_every
        self.job_options = dict(job_options or {})
        self.poison_options = dict(poison_options or {"attempts": 3, "backoff": 100})
        self.retries = retries
        self.sent = 0
        self.admitted = 0

    def _job(self, n: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
        cid = f"{self.prefix}-{n}"
        poison = self.poison_every > 0 and n % self.poison_every == self.poison_every - 1
        data: dict[str, Any] = {"cid": cid, "work_ms": self.work_ms}
        opts = dict(self.job_options)
        if poison:
            data["poison"] = True
            opts.update(self.poison_options)
        return cid, data, opts

    async def push(self, cid: str, data: Any, opts: Mapping[str, Any]) -> str | None:
        """Push one job; re-send it (same custom id) after an unknown outcome.

        Returns its id once a try was confirmed, None otherwise."""
        for attempt in range(self.retries + 1):
            poison = isinstance(data, dict) and bool(data.get("poison"))
            self.history.write("enqueue", type="invoke", cid=cid, attempt=attempt, poison=poison)
            try:
                job = await self.queue.add("job", data, job_id=cid, **opts)
            except DEFINITE_REFUSALS as exc:
                self.history.write("enqueue", type="fail", cid=cid, error=repr(exc))
                return None
            except Exception as exc:  # the outcome is unknown: info, then try again
                self.history.write("enqueue", type="info", cid=cid, error=repr(exc))
                await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
                continue
            self.history.write("enqueue", type="ok", cid=cid, job_id=job.id)
            self.admitted += 1
            return job.id
        return None

    async def run(
        self, stop: asyncio.Event, *, pause: float = 0.01, limit: int | None = None
    ) -> None:
        """Push until ``stop`` is set (or ``limit`` jobs were sent)."""
        while not stop.is_set() and (limit is None or self.sent < limit):
            cid, data, opts = self._job(self.sent)
            self.sent += 1
            await self.push(cid, data, opts)
            if pause:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(pause):
                        await stop.wait()


def recording_processor(
    history: HistoryWriter, *, work_ms: int = 20
) -> Callable[[Job], Awaitable[dict[str, Any]]]:
    """A handler that records each execution and returns its id and fence."""

    async def handle(job: Job) -> dict[str, Any]:
        data = job.data if isinstance(job.data, dict) else {}
        execution = uuid.uuid4().hex[:16]
        history.write(
            "exec",
            job_id=job.id,
            cid=data.get("cid"),
            fence=job.fence,
            exec=execution,
            attempt=job.attempts_made + 1,
        )
        await asyncio.sleep(float(data.get("work_ms", work_ms)) / 1000)
        if data.get("poison"):
            raise PoisonError(f"poison job {data.get('cid')}")
        return {"exec": execution, "fence": job.fence}

    return handle


def recording_worker(
    queue: str,
    connection: str,
    history: HistoryWriter,
    *,
    work_ms: int = 20,
    **worker_options: Any,
) -> Worker:
    """An SDK :class:`Worker` whose handler and outcomes are recorded."""
    worker = Worker(
        queue, recording_processor(history, work_ms=work_ms), connection, **worker_options
    )

    def completed(job: Job, result: Any) -> None:
        execution = result.get("exec") if isinstance(result, dict) else None
        history.write("ack", type="ok", job_id=job.id, fence=job.fence, exec=execution)

    def failed(job: Job, error: Exception) -> None:
        history.write("fail", type="ok", job_id=job.id, fence=job.fence, error=str(error))

    def lost(job: Job, error: Exception) -> None:
        history.write("ack", type="rejected", job_id=job.id, fence=job.fence, error=str(error))

    worker.on("completed", completed)
    worker.on("failed", failed)
    worker.on("lost", lost)
    return worker


class RecordingSubscriber:
    """A :class:`QueueEvents` subscriber that records every event it receives."""

    def __init__(self, queue: str, connection: str, history: HistoryWriter, name: str) -> None:
        self.queue = queue
        self.history = history
        self.name = name
        self.events = QueueEvents(queue, connection, autorun=False)
        self.max_seq = 0
        self.received = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout: float = 30) -> None:
        """Subscribe; returns once the subscription is live (recorded as ``subscribed``)."""
        stream = aiter(self.events)
        self._task = asyncio.create_task(self._consume(stream), name=f"subscriber:{self.name}")
        await self.events.wait_until_ready(timeout)
        self.history.write("subscribed", subscriber=self.name, queue=self.queue)

    async def _consume(self, stream: Any) -> None:
        async for event in stream:
            seq = event.data.get("seq")
            if isinstance(seq, int):
                self.max_seq = max(self.max_seq, seq)
            self.received += 1
            self.history.write(
                "event",
                subscriber=self.name,
                queue=self.queue,
                job_id=event.job_id,
                event=event.event,
                seq=seq,
                ts=event.timestamp,
            )

    async def close(self, upto: int | None = None) -> None:
        """Unsubscribe; ``upto``: the outbox event id the caller waited for this
        subscriber to reach (the checker expects every event up to it)."""
        position = {} if upto is None else {"upto": upto}
        self.history.write("unsubscribed", subscriber=self.name, queue=self.queue, **position)
        await self.events.close()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def _serve(args: argparse.Namespace) -> None:
    history = HistoryWriter(args.history, args.name)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.seconds:
        loop.call_later(args.seconds, stop.set)
    try:
        if args.role == "worker":
            worker = recording_worker(
                args.queue,
                args.url,
                history,
                work_ms=args.work_ms,
                concurrency=args.concurrency,
                lock_duration_ms=args.lock_ms,
                heartbeat_interval=max(0.1, args.lock_ms / 4000),
                poll_timeout=0.2,
            )
            history.write("started", role="worker")
            await stop.wait()
            await worker.close()
        elif args.role == "producer":
            queue = Queue(args.queue, args.url)
            producer = RecordingProducer(
                queue,
                history,
                prefix=args.name,
                work_ms=args.work_ms,
                poison_every=args.poison_every,
            )
            await producer.run(stop, pause=args.pause)
            await queue.close()
        else:
            subscriber = RecordingSubscriber(args.queue, args.url, history, args.name)
            await subscriber.start()
            await stop.wait()
            await subscriber.close()
    finally:
        history.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pgqueue.testing.workload")
    parser.add_argument("role", choices=["worker", "producer", "subscriber"])
    parser.add_argument("--url", required=True, help="pgqueue://host:port[,host:port...]")
    parser.add_argument("--queue", required=True)
    parser.add_argument("--history", required=True, help="directory of the history files")
    parser.add_argument("--name", required=True, help="this process's name (its file)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--lock-ms", type=int, default=5_000)
    parser.add_argument("--work-ms", type=int, default=20)
    parser.add_argument("--pause", type=float, default=0.01, help="producer: between pushes")
    parser.add_argument("--poison-every", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=0, help="stop after (0: at SIGTERM)")
    asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
