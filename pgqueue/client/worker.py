"""``Worker``: pull jobs, run a handler on each, report the outcome.

    async def send(job: Job) -> dict:
        await job.update_progress(50)
        return {"sent": True}

    worker = Worker("emails", send, connection="postgresql://localhost/app", concurrency=10)

Created inside a running event loop, a worker starts at once (as in BullMQ;
``autorun=False`` waits for ``await worker.run()``).  Its loop pulls as many
jobs as it has free slots (and as its rate limit allows), runs the handler
for each (a coroutine function on the loop, a plain function in a thread
pool, where the job's methods block), and reports: completions go out in
batches (up to 50 or 50 ms), failures at once with the error and its stack.
Every lease it holds is renewed every ``heartbeat_interval`` seconds until
its outcome is recorded.  A handler's exception retries the job per its
backoff; :class:`~pgqueue.errors.UnrecoverableError` dead-letters it at once.

:meth:`Worker.close` stops pulling, lets the running handlers finish, sends
the outstanding acks, and only then stops the heartbeats and closes the
connection.  Callbacks: ``worker.on("completed", fn)`` (job, result),
``"failed"`` (job, error), ``"active"`` (job), ``"error"`` (error),
``"lost"`` (job, :class:`~pgqueue.errors.LeaseLost`), ``"drained"`` (the
pulls came back empty after work, no handler runs and every outcome sent is
answered: it follows the last job's ``"completed"`` / ``"failed"``),
``"ready"``, ``"closed"``.

A job whose lease was lost while its handler ran (it expired and was
claimed again, maybe already finished by someone else) is not counted as
completed or failed: its ACK or FAIL is refused or answered "already
finalized", and the worker emits ``"lost"`` (and ``"error"``) and counts it
in ``worker.lost``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import os
import socket
import traceback
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pgqueue.client._shared import TransportOwner
from pgqueue.client.acks import AckBatcher, retrying
from pgqueue.client.blocking import Blocking
from pgqueue.client.job import Job
from pgqueue.client.options import RateLimit
from pgqueue.client.transport import AckRequest, FailRequest, Lease, Transport
from pgqueue.config import MAX_PAYLOAD_BYTES_DEFAULT
from pgqueue.errors import (
    ConfigError,
    LeaseLost,
    PgQueueError,
    UnrecoverableError,
    ValidationError,
)
from pgqueue.manager.options import encode_json
from pgqueue.vocabulary.frozen import fast_maker
from pgqueue.vocabulary.names import validate_queue_name

__all__ = ["Processor", "Worker"]

log = logging.getLogger("pgqueue.client.worker")

Processor = Callable[[Job], Any]
MAX_STACK_LINES = 100
RETRY_DELAYS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
_ack_request = fast_maker(AckRequest)  # AckRequest(...), ~0.3 us faster per job


class _Interruption:
    """How :meth:`Worker._interrupt` ends the handler of a job without a timeout:
    ``asyncio.timeout``'s own way (cancel the handler's task once, and take that
    cancellation back when the handler ends), for a fraction of its cost."""

    __slots__ = ("_cancelling", "_fired", "_task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self._task = task
        self._cancelling = task.cancelling()
        self._fired = False

    def fire(self) -> None:
        if not self._fired:
            self._fired = True
            self._task.cancel()

    def taken_back(self) -> bool:
        """Once the handler ended: whether its task was cancelled by :meth:`fire`
        alone (then that cancellation is taken back, as ``asyncio.timeout`` does)."""
        return self._fired and self._task.uncancel() <= self._cancelling


class _Limiter:
    """At most ``max`` job starts in any window of ``duration_ms`` (this worker's)."""

    def __init__(self, limit: RateLimit) -> None:
        self.limit = limit
        self._starts: deque[float] = deque()

    def _trim(self, now: float) -> None:
        horizon = now - self.limit.duration_ms / 1000
        while self._starts and self._starts[0] <= horizon:
            self._starts.popleft()

    def available(self, now: float) -> int:
        self._trim(now)
        return self.limit.max - len(self._starts)

    def next_free(self, now: float) -> float:
        """Seconds until a start leaves the window."""
        self._trim(now)
        if len(self._starts) < self.limit.max:
            return 0.0
        return max(0.0, self._starts[0] + self.limit.duration_ms / 1000 - now)

    def consume(self, count: int, now: float) -> None:
        self._starts.extend([now] * count)


def _rate_limit(limiter: RateLimit | Mapping[str, int] | None) -> RateLimit | None:
    if limiter is None or isinstance(limiter, RateLimit):
        return limiter
    if not isinstance(limiter, Mapping) or set(limiter) - {"max", "duration", "duration_ms"}:
        raise ValidationError("limiter must be RateLimit(max, duration_ms) or {max, duration}")
    duration = limiter.get("duration_ms", limiter.get("duration", 1_000))
    return RateLimit(limiter.get("max", 0), duration)


def _is_async(processor: Processor) -> bool:
    return inspect.iscoroutinefunction(processor) or inspect.iscoroutinefunction(
        getattr(processor, "__call__", None)  # noqa: B004 - an object with async __call__
    )


def _stack(exc: BaseException) -> list[str]:
    lines = "".join(traceback.format_exception(exc)).splitlines()
    return [line for line in lines if line.strip()][-MAX_STACK_LINES:]


class Worker(TransportOwner):
    """Processes the jobs of one queue (see the module docstring)."""

    def __init__(
        self,
        name: str,
        processor: Processor,
        connection: str | Transport,
        *,
        concurrency: int = 1,
        autorun: bool = True,
        limiter: RateLimit | Mapping[str, int] | None = None,
        lock_duration_ms: int = 30_000,
        heartbeat_interval: float = 10.0,
        poll_timeout: float = 1.0,
        batch_size: int | None = None,
        ack_batch_size: int = 50,
        ack_batch_delay: float = 0.05,
        worker_id: str | None = None,
        executor: ThreadPoolExecutor | None = None,
        **transport_options: Any,
    ) -> None:
        super().__init__(connection, transport_options)
        self.name = validate_queue_name(name)
        if not callable(processor):
            raise ConfigError("processor must be a function taking a Job")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError("concurrency must be a positive integer")
        if not 1_000 <= lock_duration_ms <= 86_400_000:
            raise ConfigError("lock_duration_ms must be between 1000 and 86400000")
        if not 0 < heartbeat_interval * 1000 < lock_duration_ms:
            raise ConfigError("heartbeat_interval must be shorter than the lock duration")
        if not 0 <= poll_timeout <= 30:
            raise ConfigError("poll_timeout must be between 0 and 30 seconds")
        self.processor = processor
        self.concurrency = concurrency
        self.lock_duration_ms = lock_duration_ms
        self.heartbeat_interval = heartbeat_interval
        self.poll_timeout = poll_timeout
        self.batch_size = min(batch_size or concurrency, 1_000)
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.processed = 0
        self.failed = 0
        self.lost = 0  # outcomes refused or already finalized: the lease was lost
        self._limit = _rate_limit(limiter)
        self._limiter = _Limiter(self._limit) if self._limit else None
        self._async = _is_async(processor)
        self._executor = executor
        self._owns_executor = executor is None
        self._acks: AckBatcher[tuple[Job, Any]] | None = None
        self._ack_settings = (ack_batch_size, ack_batch_delay)
        self._running = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.cancelled = 0  # jobs cancelled while they ran here (no outcome sent)
        self._held: dict[str, Job] = {}  # job id -> its claim, until its outcome is recorded
        self._recording: set[str] = set()  # held jobs whose ACK or FAIL is on its way
        self._drained_due = False  # the pulls came back empty: "drained" once outcomes are in
        # job id -> its handler's interruption
        self._scopes: dict[str, asyncio.Timeout | _Interruption] = {}
        self._threads: dict[str, asyncio.Future[Any]] = {}  # interrupted plain handlers
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._closing = False
        self._main: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()
        if autorun:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop()
                self.start()

    # -- lifecycle ------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._main is not None and not self._closed.is_set()

    @property
    def active(self) -> int:
        """Handlers running now."""
        return self._running

    def start(self) -> None:
        """Start processing in the background (done at creation inside a running loop)."""
        if self._main is None:
            if self._closing:
                raise PgQueueError("this Worker is closed")
            self._main = asyncio.get_running_loop().create_task(
                self._loop(), name=f"pgqueue:worker:{self.name}"
            )
            self._main.add_done_callback(self._loop_done)

    def _loop_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("worker %s stopped on an error", self.id, exc_info=task.exception())

    async def run(self) -> None:
        """Process until :meth:`close` (starting first when not started yet)."""
        self.start()
        await self._closed.wait()

    async def close(self, force: bool = False) -> None:
        """Stop pulling, let running handlers finish (``force``: cancel them), send
        the acks, then stop the heartbeats and close the connection."""
        if force:
            for task in list(self._tasks):
                task.cancel()
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        self._stopping.set()
        self._wake.set()
        main = self._main
        if main is None:
            self._closed.set()
            await self.close_transport()
            return
        await asyncio.wait([main])
        await self._closed.wait()

    async def _enter(self) -> None:
        self.start()

    # -- the loop -----------------------------------------------------------------------

    async def _loop(self) -> None:
        heartbeats: asyncio.Task[None] | None = None
        try:
            transport = await self._connect()
            if transport is None:
                return
            size, delay = self._ack_settings
            self._acks = AckBatcher(
                transport.ack,
                self._acked,
                max_size=size,
                max_delay=delay,
                retry_for=self.lock_duration_ms / 1000,
            )
            heartbeats = asyncio.get_running_loop().create_task(
                self._heartbeats(transport), name=f"pgqueue:worker-heartbeats:{self.name}"
            )
            await self._register(transport)
            self.emit("ready")
            await self._pull_loop(transport)
        finally:
            await self._shutdown(heartbeats)

    async def _connect(self) -> Transport | None:
        failures = 0
        while not self._closing:
            try:
                return await self.transport()
            except Exception as exc:  # outlive any transport error
                self.emit("error", exc)
                await self._backoff(failures)
                failures += 1
        return None

    async def _backoff(self, failures: int) -> None:
        """Wait after a failure (longer after each in a row), or until close."""
        delay = RETRY_DELAYS[min(failures, len(RETRY_DELAYS) - 1)]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._stopping.wait()

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` or until something wakes the loop (a free slot, close)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._wake.wait()

    async def _pull_loop(self, transport: Transport) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        busy = False
        while not self._closing:
            self._wake.clear()
            free = min(self.concurrency - self._running, self.batch_size)
            if free <= 0:
                await self._pause(self.poll_timeout or 1.0)
                await asyncio.sleep(0)  # let handlers finishing now free their slots too
                continue
            if self._limiter is not None:
                wait = self._limiter.next_free(loop.time())
                if wait > 0:
                    await self._pause(wait)
                    continue
                free = min(free, self._limiter.available(loop.time()))
            try:
                leases = await transport.pull(
                    self.name,
                    free,
                    owner=self.id,
                    lock_ttl_ms=self.lock_duration_ms,
                    timeout_ms=int(self.poll_timeout * 1000),
                )
                failures = 0
            except Exception as exc:  # outlive any transport error
                self.emit("error", exc)
                await self._backoff(failures)
                failures += 1
                continue
            if self._closing:
                await self._give_back(transport, leases)
                break
            if not leases:
                if busy and self._running == 0:
                    busy = False
                    self._drained_due = True
                self._settled()
                continue
            busy = True
            self._drained_due = False
            if self._limiter is not None:
                self._limiter.consume(len(leases), loop.time())
            for lease in leases:
                self._begin(loop, transport, lease)
            # Let the handlers start before the next pull goes on the wire (its
            # claim or PULLB wakes another process that would run first).
            await asyncio.sleep(0)

    async def _give_back(self, transport: Transport, leases: list[Lease]) -> None:
        if leases:
            with contextlib.suppress(Exception):
                await transport.release([(lease.job["id"], lease.token) for lease in leases])

    async def _shutdown(self, heartbeats: asyncio.Task[None] | None) -> None:
        try:
            while self._tasks:
                await asyncio.wait(list(self._tasks))
                # a task cancelled before it started never ran to discard itself
                self._tasks = {task for task in self._tasks if not task.done()}
            if self._acks is not None:
                await self._acks.flush()
        finally:
            if heartbeats is not None:
                heartbeats.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heartbeats
            if self._transport is not None:
                with contextlib.suppress(Exception):
                    await self._transport.unregister_worker(self.id)
            await self.close_transport()
            if self._executor is not None and self._owns_executor:
                self._executor.shutdown(wait=False)
            self._closing = True
            self._closed.set()
            self.emit("closed")

    # -- one job --------------------------------------------------------------------------

    def _begin(self, loop: asyncio.AbstractEventLoop, transport: Transport, lease: Lease) -> None:
        job = Job.from_wire(
            transport, lease.job, token=lease.token, fence=lease.fence, view=lease.view
        )
        self._held[job.id] = job
        self._running += 1
        # The task leaves ``_tasks`` itself as it ends (no done callback, one loop
        # step less per job); one cancelled before it started is dropped by
        # ``_shutdown``.
        self._tasks.add(loop.create_task(self._process(transport, job)))

    async def _process(self, transport: Transport, job: Job) -> None:
        task = asyncio.current_task()
        try:
            self.emit("active", job)
            try:
                if job.timeout:
                    ending, result = await self._run(job)
                else:  # what _run does, one coroutine less
                    ending, result = await self._run_interruptible(job, task)
                if (
                    result is not None
                    and ending == "done"
                    and not (job.completed_in_transaction or job.released)
                ):
                    # Refused here, the job fails at once with the reason (never an
                    # ACK that cannot be sent, or that fails its batch neighbours).
                    encode_json(
                        result,
                        label="result",
                        limit=MAX_PAYLOAD_BYTES_DEFAULT,
                        what="Job result",
                        wide_ints=transport.wide_ints,
                    )
            except asyncio.CancelledError:
                self._slot_freed()
                await self._give_back_one(transport, job)
                raise
            except Exception as exc:
                self._slot_freed()
                await self._fail(transport, job, exc)
                return
            if ending == "timeout":
                # Failed at once; a plain handler's thread cannot be stopped, so its
                # slot stays taken until it returns (its late result is dropped).
                await self._fail(
                    transport, job, TimeoutError(f"job timed out after {job.timeout} ms")
                )
                await self._thread_done(job)
                self._slot_freed()
                return
            self._slot_freed()
            if ending == "cancelled":
                self._held.pop(job.id, None)
                self._was_cancelled(job)
            elif job.completed_in_transaction or job.released:
                self._held.pop(job.id, None)
                if job.completed_in_transaction:
                    self.processed += 1
                    self.emit("completed", job, result)
            else:
                self._complete(job, result)
        finally:
            self._tasks.discard(task)

    async def _run(self, job: Job) -> tuple[str, Any]:
        """Run the handler inside a scope that :meth:`_interrupt` or the job's
        ``timeout`` can end: ``("done", result)``, ``("cancelled", None)`` or
        ``("timeout", None)``; the handler's own exception propagates."""
        if not job.timeout:
            return await self._run_interruptible(job)
        scope = asyncio.timeout(None)
        result: Any = None
        try:
            async with scope:
                scope.reschedule(asyncio.get_running_loop().time() + job.timeout / 1000)
                self._scopes[job.id] = scope
                result = await self._call(job)
        except Exception:
            if not (scope.expired() or job.is_cancelled()):
                raise  # the handler's own error (a TimeoutError of its own too)
        finally:
            self._scopes.pop(job.id, None)
        if job.is_cancelled():
            await self._thread_done(job)
            return "cancelled", None
        if scope.expired():
            return "timeout", None
        return "done", result

    async def _run_interruptible(
        self, job: Job, task: asyncio.Task[Any] | None = None
    ) -> tuple[str, Any]:
        """:meth:`_run` of a job without a timeout: only :meth:`_interrupt` ends it,
        the way ``asyncio.timeout`` would (cancel the task, then take back that one
        cancellation), without that scope's cost per job (~1.9 us)."""
        task = task or asyncio.current_task()
        assert task is not None
        interrupt = _Interruption(task)
        result: Any = None
        self._scopes[job.id] = interrupt
        try:
            try:
                if self._async:
                    result = await self.processor(job)
                else:
                    result = await self._call(job)
            finally:
                self._scopes.pop(job.id, None)
                ours = interrupt.taken_back()
        except asyncio.CancelledError:
            if not ours:
                raise  # cancelled from outside too (the worker closes)
        except Exception:
            if not job.is_cancelled():
                raise  # the handler's own error
        if job.is_cancelled():
            await self._thread_done(job)
            return "cancelled", None
        return "done", result

    async def _call(self, job: Job) -> Any:
        if self._async:
            return await self.processor(job)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self.concurrency, thread_name_prefix=f"pgqueue-{self.name}"
            )
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        blocking_job: Any = Blocking(job, loop)  # the same Job, its methods blocking
        call = functools.partial(context.run, self.processor, blocking_job)
        thread = loop.run_in_executor(self._executor, call)
        try:
            outcome = await asyncio.shield(thread)
        except asyncio.CancelledError:
            if not thread.done():
                self._threads[job.id] = thread  # it runs on; see _thread_done
            raise
        if inspect.isawaitable(outcome):
            return await outcome
        return outcome

    async def _thread_done(self, job: Job) -> None:
        """Wait for an interrupted plain handler's thread (its result is dropped)."""
        thread = self._threads.pop(job.id, None)
        if thread is not None:
            await asyncio.wait([thread])
            if not thread.cancelled():
                thread.exception()  # retrieved: not logged as never retrieved

    def _interrupt(self, job: Job) -> None:
        """The job was cancelled: tell the handler (``job.cancelled``) and, for a
        coroutine handler, cancel its task (a thread runs on until it returns)."""
        job.mark_cancelled()
        scope = self._scopes.get(job.id)
        if scope is None or not self._async:
            return
        if isinstance(scope, _Interruption):
            scope.fire()
        elif not scope.expired():
            with contextlib.suppress(RuntimeError):  # the handler is just ending
                scope.reschedule(asyncio.get_running_loop().time())

    def _was_cancelled(self, job: Job) -> None:
        self.cancelled += 1
        self.emit("cancelled", job)

    def _slot_freed(self) -> None:
        self._running -= 1
        self._wake.set()

    async def _give_back_one(self, transport: Transport, job: Job) -> None:
        self._held.pop(job.id, None)
        with contextlib.suppress(Exception):
            await transport.release([(job.id, job.token or "")])

    def _complete(self, job: Job, result: Any) -> None:
        """Hand the ACK to the batcher; its answer is handled by :meth:`_acked` (the
        handler's task ends here: nothing waits for the batch in it)."""
        assert self._acks is not None and job.token is not None
        self._recording.add(job.id)
        self._acks.add(_ack_request(job.id, job.token, result), (job, result))

    def _acked(
        self,
        batch: Sequence[tuple[AckRequest, tuple[Job, Any]]],
        outcome: list[bool] | Exception | None,
    ) -> None:
        """A batch's ACK answer (see :meth:`_record`, which does the same for a FAIL),
        each job in turn: ``outcome`` says whether each applied, or is the error
        they all met, or None (cancelled: nothing to report)."""
        recording, held = self._recording, self._held
        for index, (_, (job, result)) in enumerate(batch):
            recording.discard(job.id)
            held.pop(job.id, None)
            if outcome is None:
                continue
            if isinstance(outcome, Exception):
                self.emit("error", outcome)
            elif outcome[index]:
                self.processed += 1
                job.returnvalue = result
                self.emit("completed", job, result)
            else:
                self._not_recorded(job)
        if outcome is not None:
            # once: while the batch is answered its later jobs are still recording
            self._settled()

    def _settled(self) -> None:
        """Emit ``drained`` once the pulls came back empty, no handler runs and every
        outcome sent is answered (so it follows the last ``completed`` / ``failed``)."""
        if self._drained_due and self._running == 0 and not self._recording:
            self._drained_due = False
            self.emit("drained")

    async def _fail(self, transport: Transport, job: Job, exc: Exception) -> None:
        assert job.token is not None
        request = FailRequest(
            job.id,
            job.token,
            str(exc) or type(exc).__name__,
            _stack(exc),
            unrecoverable=isinstance(exc, UnrecoverableError),
        )
        retry_for = self.lock_duration_ms / 1000
        if await self._record(job, lambda: retrying(lambda: transport.fail(request), retry_for)):
            self.failed += 1
            job.failed_reason = request.error
            self.emit("failed", job, exc)
        self._settled()

    async def _record(self, job: Job, send: Callable[[], Awaitable[bool]]) -> bool:
        """Send the job's outcome (ACK or FAIL) and release its claim here; True when
        it was recorded.  One that was not is reported: the job was cancelled, or
        its lease lost; a transport error is emitted."""
        self._recording.add(job.id)
        try:
            applied = await send()
        except Exception as exc:  # outlive any transport error
            self.emit("error", exc)
            return False
        finally:
            self._recording.discard(job.id)
            self._held.pop(job.id, None)
        if not applied:
            self._not_recorded(job)
        return applied

    def _not_recorded(self, job: Job) -> None:
        if job.is_cancelled():
            self._was_cancelled(job)
        elif not job.completed_in_transaction:
            self._lost(job)

    def _lost(self, job: Job) -> None:
        """The outcome of ``job`` was not recorded: its lease had been lost."""
        self.lost += 1
        error = LeaseLost(job.id)
        self.emit("lost", job, error)
        self.emit("error", error)

    # -- heartbeats and the workers registry ---------------------------------------------------

    async def _register(self, transport: Transport) -> None:
        try:
            await transport.register_worker(
                self.id, f"pgqueue-python@{socket.gethostname()}", [self.name], self.concurrency
            )
        except Exception as exc:  # outlive any transport error
            self.emit("error", exc)

    async def _heartbeats(self, transport: Transport) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            await self._renew(transport)
            try:
                await transport.worker_heartbeat(
                    self.id, self._running, self.processed, self.failed
                )
            except Exception as exc:  # outlive any transport error
                self.emit("error", exc)

    async def _renew(self, transport: Transport) -> None:
        """Extend every lease held (one batched call); a job cancelled meanwhile
        is interrupted, a lost lease reported.  A job whose outcome is on its way
        is renewed too (the ACK may wait for its batch), but its loss is not
        reported here (a cancellation still is): the renewal may have found it
        finished by that very ACK, and the ACK's answer says which
        (:meth:`_record`)."""
        held = [
            (job.id, job.token) for job in self._held.values() if job.token and not job.released
        ]
        if not held:
            return
        try:
            outcomes = await transport.extend(held, self.lock_duration_ms)
        except Exception as exc:  # outlive any transport error
            self.emit("error", exc)
            return
        for (job_id, token), renewal in zip(held, outcomes, strict=True):
            job = self._held.get(job_id)
            if renewal == "renewed" or job is None or job.token != token:
                continue
            if renewal == "lost" and job_id in self._recording:
                continue
            del self._held[job_id]
            if renewal == "cancelled":
                self._interrupt(job)
            else:
                self.emit("error", LeaseLost(job_id))
