"""``Queue``: add jobs, look at them, control the queue.

    queue = Queue("emails", connection="postgresql://localhost/app")
    job = await queue.add("welcome", {"to": "ada@example.com"}, attempts=5)
    result = await queue.wait_for(job, timeout=30)

The same code talks to brokers with ``connection="pgqueue://host:6789"``.
With the embedded transport, ``add(..., connection=conn)`` enqueues inside
the application's own transaction on ``conn`` (asyncpg, psycopg, or a
SQLAlchemy session or connection): the job exists if and only if that
transaction commits (docs/transactions.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any, NotRequired, TypedDict, Unpack

from pgqueue.client._shared import TransportOwner, in_transaction_only
from pgqueue.client.events import QueueEvent, QueueEvents
from pgqueue.client.job import Job
from pgqueue.client.options import JobOptions, RepeatOptions, check_job, merge_options
from pgqueue.client.schedulers import JobScheduler, SchedulerTemplate, scheduler_input
from pgqueue.client.transport import DlqRedrive, JobInput, PlainInputs, Transport
from pgqueue.config import MAX_PAYLOAD_BYTES_DEFAULT
from pgqueue.errors import JobFailed, JobNotFound, ValidationError
from pgqueue.manager.options import plain_specs
from pgqueue.vocabulary.names import validate_job_id, validate_queue_name

__all__ = ["MAX_BULK", "BulkJob", "Queue"]

MAX_BULK = 10_000
_BULK_KEYS = frozenset({"name", "data", "opts"})
"""The keys of an ``add_bulk`` entry."""
_PLAIN_KEYS = frozenset({"name", "data"})
"""The keys of an ``add_bulk`` entry without options."""
_NO_OPTS: Mapping[str, Any] = {}  # the options of a PlainInputs job (Job.pushed copies them)
RECHECK_FIRST = 0.05
RECHECK_MAX = 2.0


class BulkJob(TypedDict):
    """One entry of :meth:`Queue.add_bulk`."""

    name: str
    data: NotRequired[Any]
    opts: NotRequired[JobOptions]


class Queue(TransportOwner):
    """A named queue (see the module docstring)."""

    def __init__(
        self,
        name: str,
        connection: str | Transport,
        *,
        default_job_options: JobOptions | None = None,
        **transport_options: Any,
    ) -> None:
        super().__init__(connection, transport_options)
        self.name = validate_queue_name(name)
        self.default_job_options: dict[str, Any] = dict(default_job_options or {})
        if self.default_job_options:
            check_job(self.name, "default", None, self.default_job_options)
        self._listener: QueueEvents | None = None
        self._waiters: dict[str, set[asyncio.Future[QueueEvent]]] = {}

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.close()
        await self.close_transport()

    # -- producing -------------------------------------------------------------------

    def _input(
        self, name: object, data: Any, opts: Mapping[str, Any] | None, prefix: str = ""
    ) -> JobInput:
        merged = merge_options(self.default_job_options, opts)
        spec = check_job(self.name, name, data, merged, prefix=prefix, queue_checked=True)
        return JobInput(str(name), data, merged, spec)

    def _jobs(
        self, transport: Transport, ids: Sequence[str], jobs: Sequence[JobInput]
    ) -> list[Job]:
        waiter = self._wait_for_id  # one bound method for the batch, not one per job
        if type(jobs) is PlainInputs:  # (no JobInput made per job)
            fields = zip(jobs.specs.names, jobs.datas, repeat(_NO_OPTS))
            return Job.pushed(transport, ids, fields, self.name, waiter)
        fields_ = [(job.name, job.data, job.opts) for job in jobs]
        return Job.pushed(transport, ids, fields_, self.name, waiter)

    async def add(
        self,
        name: str,
        data: Any = None,
        *,
        connection: Any = None,
        **opts: Unpack[JobOptions],
    ) -> Job:
        """Add one job; returns it with its ``id`` (the live job's id when
        ``job_id`` names a job that exists).  ``connection``: enqueue inside
        that open transaction (embedded transport only)."""
        job = self._input(name, data, opts)
        transport = await self.transport()
        if connection is not None:
            [job_id] = await self._push_in(transport, connection, [job])
        else:
            job_id = await transport.push(self.name, job)
        return self._jobs(transport, [job_id], [job])[0]

    async def add_bulk(
        self, jobs: Sequence[BulkJob | Mapping[str, Any]], *, connection: Any = None
    ) -> list[Job]:
        """Add many jobs: ``[{"name", "data", "opts"}, ...]``, all validated first.

        Atomic up to :data:`MAX_BULK` (10,000) jobs, the protocol's limit for one
        batch, on both transports: a longer list goes in consecutive atomic
        batches of 10,000.  With ``connection`` (embedded) every job is written in
        that transaction, so the whole list commits or rolls back with it.
        """
        inputs = self._plain_inputs(jobs) or [
            self._entry_input(i, entry) for i, entry in enumerate(jobs)
        ]
        if not inputs:
            return []
        transport = await self.transport()
        if connection is not None:
            ids = await self._push_in(transport, connection, inputs)
        else:
            ids = []
            for start in range(0, len(inputs), MAX_BULK):
                ids += await transport.push_bulk(self.name, inputs[start : start + MAX_BULK])
        return self._jobs(transport, ids, inputs)

    def _entry_input(self, i: int, entry: object) -> JobInput:
        """The input of ``add_bulk``'s entry ``i``, validated (named ``jobs[i]`` in errors)."""
        if not isinstance(entry, dict) and not isinstance(entry, Mapping):
            raise ValidationError(f"jobs[{i}]: must be a map", field="jobs")
        if not _BULK_KEYS.issuperset(entry):  # (a frozenset: no set built per job)
            extra = set(entry) - _BULK_KEYS
            raise ValidationError(
                f"jobs[{i}]: unknown key: {', '.join(sorted(extra))} (options go under 'opts')",
                field="jobs",
            )
        opts = entry.get("opts")
        if opts is not None and not isinstance(opts, Mapping):
            raise ValidationError(f"jobs[{i}]: opts must be a map", field="opts")
        return self._input(entry.get("name"), entry.get("data"), opts, prefix=f"jobs[{i}]: ")

    def _plain_inputs(self, jobs: Sequence[BulkJob | Mapping[str, Any]]) -> Sequence[JobInput]:
        """The inputs of ``jobs`` when none carries options (nor has the queue default
        ones), validated for the whole list at once (:func:`plain_specs`); empty when
        some entry needs the per-entry check, which then names its fault."""
        if (
            self.default_job_options
            or type(jobs) not in (list, tuple)  # read more than once below
            or not all(type(entry) is dict and _PLAIN_KEYS.issuperset(entry) for entry in jobs)
        ):
            return []
        datas = [entry.get("data") for entry in jobs]
        specs = plain_specs(
            self.name,
            [entry.get("name") for entry in jobs],
            datas,
            max_payload_bytes=MAX_PAYLOAD_BYTES_DEFAULT,
        )
        if specs is None:
            return []
        return PlainInputs(specs, datas)

    async def _push_in(
        self, transport: Transport, connection: Any, jobs: Sequence[JobInput]
    ) -> list[str]:
        push_in = getattr(transport, "push_in", None)
        if push_in is None:
            raise in_transaction_only("add(..., connection=...)")
        ids: list[str] = await push_in(connection, self.name, jobs)
        return ids

    # -- reading -----------------------------------------------------------------------

    async def get_job(self, job_id: str) -> Job | None:
        """The job with its current state, or None."""
        transport = await self.transport()
        raw = await transport.get_job(validate_job_id(job_id, "job_id"))
        if raw is None:
            return None
        return Job.from_wire(transport, raw, waiter=self._wait_for_id)

    async def get_jobs(
        self,
        states: str | Sequence[str] | None = None,
        *,
        offset: int = 0,
        limit: int = 100,
        asc: bool = True,
    ) -> list[Job]:
        """Jobs of this queue in the given states (all states by default)."""
        wanted = [states] if isinstance(states, str) else states
        transport = await self.transport()
        rows = await transport.get_jobs(self.name, wanted, offset, limit, asc)
        return [Job.from_wire(transport, raw, waiter=self._wait_for_id) for raw in rows]

    async def get_state(self, job_id: str) -> str:
        """The job's state (``unknown`` for an id no job has)."""
        return await (await self.transport()).get_state(validate_job_id(job_id, "job_id"))

    async def get_result(self, job_id: str) -> Any:
        """The completed job's result (None when it has none)."""
        _, result = await (await self.transport()).get_result(validate_job_id(job_id, "job_id"))
        return result

    async def get_counts(self) -> dict[str, int]:
        """Jobs per state: waiting, prioritized, delayed, active, completed, failed,
        waiting-children, paused."""
        return await (await self.transport()).get_counts(self.name)

    async def get_children_values(self, job_id: str) -> dict[str, Any]:
        return await (await self.transport()).get_children_values(job_id)

    async def get_logs(self, job_id: str, start: int = 0, end: int = -1) -> list[dict[str, Any]]:
        return await (await self.transport()).get_logs(job_id, start, end)

    # -- waiting for a result --------------------------------------------------------------

    async def wait_for(self, job: Job | str, timeout: float | None = None) -> Any:
        """The job's result once it completed.

        Raises :class:`~pgqueue.errors.JobFailed` when it failed for good,
        :class:`~pgqueue.errors.JobNotFound` when it does not exist (or was
        removed), ``TimeoutError`` after ``timeout`` seconds.  Driven by the
        queue's events: the state is read once the subscription is live, and
        re-read only until the subscription has shown it is live.
        """
        job_id = validate_job_id(job.id if isinstance(job, Job) else job, "job_id")
        listener = await self._events()
        done: asyncio.Future[QueueEvent] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(job_id, set()).add(done)
        try:
            async with asyncio.timeout(timeout):
                return await self._wait(job_id, listener, done)
        except TimeoutError:
            finished, result = await self._finished(job_id)
            if finished:
                return result
            raise TimeoutError(f"job {job_id} did not finish within {timeout}s") from None
        finally:
            waiters = self._waiters.get(job_id)
            if waiters is not None:
                waiters.discard(done)
                if not waiters:
                    del self._waiters[job_id]

    async def _wait_for_id(self, job_id: str, timeout: float | None) -> Any:
        return await self.wait_for(job_id, timeout)

    async def _wait(
        self, job_id: str, listener: QueueEvents, done: asyncio.Future[QueueEvent]
    ) -> Any:
        delay = RECHECK_FIRST
        while True:
            if done.done():
                return await self._outcome(job_id, done.result())
            live = listener.confirmed.is_set()
            finished, result = await self._finished(job_id)
            if finished:
                return result
            if live:
                return await self._outcome(job_id, await done)
            # Until an event shows the subscription is live, an event may have
            # gone by before it existed: re-read the state when it turns live.
            confirmed = asyncio.ensure_future(listener.confirmed.wait())
            watched: set[asyncio.Future[Any]] = {done, confirmed}
            try:
                await asyncio.wait(watched, timeout=delay)
            finally:
                confirmed.cancel()
            delay = min(delay * 2, RECHECK_MAX)

    async def _finished(self, job_id: str) -> tuple[bool, Any]:
        transport = await self.transport()
        raw = await transport.get_job(job_id)
        if raw is None:
            raise JobNotFound(job_id, f"Job not found: {job_id}")
        if raw.get("state") == "completed":
            return True, raw.get("returnvalue")
        if raw.get("state") == "failed":
            raise JobFailed(job_id, raw.get("failedReason"))
        return False, None

    async def _outcome(self, job_id: str, event: QueueEvent) -> Any:
        if event.event == "completed":
            if "returnvalue" in event.data:
                return event.returnvalue
            return await self.get_result(job_id)
        if event.event == "removed":
            raise JobNotFound(job_id, f"Job {job_id} was removed")
        raise JobFailed(job_id, event.failed_reason)

    async def _events(self) -> QueueEvents:
        if self._listener is None:
            listener = QueueEvents(self.name, await self.transport(), autorun=False)
            listener.on("completed", self._on_finish)
            listener.on("failed", self._on_finish)
            listener.on("removed", self._on_finish)
            listener.start()
            self._listener = listener
        return self._listener

    def _on_finish(self, event: QueueEvent) -> None:
        if event.event == "failed" and not event.data.get("terminal", True):
            return  # an attempt failed; the job will be retried
        for waiter in self._waiters.get(event.job_id, ()):
            if not waiter.done():
                waiter.set_result(event)

    # -- control ------------------------------------------------------------------------------

    async def pause(self) -> None:
        """Stop workers everywhere from taking jobs of this queue."""
        await (await self.transport()).pause(self.name)

    async def resume(self) -> None:
        await (await self.transport()).resume(self.name)

    async def is_paused(self) -> bool:
        return await (await self.transport()).is_paused(self.name)

    # -- global limits (every broker, enforced by the claim in PostgreSQL) --------------

    async def _limits(self, op: str, *args: Any) -> Any:
        return await (await self.transport()).limits(op, self.name, args)

    async def set_global_concurrency(self, concurrency: int) -> None:
        """At most ``concurrency`` active jobs of this queue across every worker and broker."""
        await self._limits("set_concurrency", concurrency)

    async def remove_global_concurrency(self) -> None:
        await self._limits("clear_concurrency")

    async def set_global_rate_limit(
        self, max_jobs: int, duration_ms: int = 1000, ttl_ms: int | None = None
    ) -> None:
        """At most ``max_jobs`` claims per ``duration_ms`` window (database clock),
        lifted after ``ttl_ms`` when given."""
        await self._limits("set_rate_limit", max_jobs, duration_ms, ttl_ms)

    async def remove_global_rate_limit(self) -> None:
        await self._limits("clear_rate_limit")

    async def get_queue_limits(self, max_jobs: int | None = None) -> dict[str, Any]:
        """``{rateLimit: {max, duration}|None, rateLimitTtl, concurrencyLimit, maxed}``
        (bunqueue's GetQueueLimits)."""
        return dict(await self._limits("get_queue_limits", max_jobs))

    async def get_rate_limit_ttl(self, max_jobs: int | None = None) -> int:
        """Ms left in the full rate window (0: a claim may run now)."""
        return int((await self.get_queue_limits(max_jobs))["rateLimitTtl"])

    # -- job groups ---------------------------------------------------------------------

    async def get_group_jobs_count(self, group_id: str) -> int:
        """Waiting, prioritized and delayed jobs of the group."""
        return int(await self._limits("get_group_jobs_count", group_id))

    async def get_groups_jobs_count(self) -> int:
        """Waiting, prioritized and delayed jobs of this queue that belong to a group."""
        return int(await self._limits("get_groups_jobs_count"))

    async def get_group_active_count(self, group_id: str) -> int:
        return int(await self._limits("get_group_active_count", group_id))

    async def set_group_rate_limit(self, group_id: str, max_jobs: int, duration_ms: int) -> None:
        await self._limits("set_group_rate_limit", group_id, max_jobs, duration_ms)

    async def get_group_rate_limit(self, group_id: str) -> dict[str, int] | None:
        """The group's own rate limit ``{max, duration}``, or None."""
        limit = await self._limits("get_group_rate_limit", group_id)
        return None if limit is None else dict(limit)

    async def remove_group_rate_limit(self, group_id: str) -> bool:
        return bool(await self._limits("remove_group_rate_limit", group_id))

    async def get_group_rate_limit_ttl(self, group_id: str, max_jobs: int | None = None) -> int:
        """Ms until the group may be claimed from again; -2 when nothing holds it back."""
        return int(await self._limits("get_group_rate_limit_ttl", group_id, max_jobs))

    async def set_group_concurrency(self, group_id: str, concurrency: int) -> None:
        await self._limits("set_group_concurrency", group_id, concurrency)

    async def get_group_concurrency(self, group_id: str) -> int | None:
        value = await self._limits("get_group_concurrency", group_id)
        return None if value is None else int(value)

    async def remove_group_concurrency(self, group_id: str) -> bool:
        return bool(await self._limits("remove_group_concurrency", group_id))

    async def pause_group(self, group_id: str) -> bool:
        """Stop claims of the group everywhere; True when it was not paused."""
        return bool(await self._limits("pause_group", group_id))

    async def resume_group(self, group_id: str) -> bool:
        return bool(await self._limits("resume_group", group_id))

    async def is_group_paused(self, group_id: str) -> bool:
        return bool(await self._limits("is_group_paused", group_id))

    async def rate_limit_group(self, group_id: str, duration_ms: int) -> None:
        """Hold the group back for ``duration_ms`` from now (database clock)."""
        await self._limits("rate_limit_group", group_id, duration_ms)

    async def drain(self, delayed: bool = False) -> int:
        """Remove the waiting jobs (and the delayed ones with ``delayed=True``)."""
        return await (await self.transport()).drain(self.name, delayed)

    async def clean(self, grace_ms: int, limit: int = 1_000, state: str = "completed") -> list[str]:
        """Remove up to ``limit`` jobs in ``state`` older than ``grace_ms``; their ids."""
        return await (await self.transport()).clean(self.name, grace_ms, state, limit)

    async def obliterate(self, force: bool = False) -> None:
        """Remove the queue and all its jobs (``force`` even with active jobs)."""
        await (await self.transport()).obliterate(self.name, force)

    async def remove(self, job_id: str) -> None:
        """Cancel a job.  An active one ends at once as removed; its worker learns
        at its next heartbeat (the handler sees ``job.cancelled``) and its late
        ACK changes nothing."""
        await (await self.transport()).remove(validate_job_id(job_id, "job_id"))

    cancel = remove

    async def update_job_data(self, job_id: str, data: Any) -> None:
        """Replace the data of a live job (waiting, delayed, active, waiting for children)."""
        await (await self.transport()).update_data(validate_job_id(job_id, "job_id"), data)

    async def change_job_priority(
        self, job_id: str, priority: int, lifo: bool | None = None
    ) -> None:
        """Change a pending job's priority (and LIFO flag); it keeps its place in time."""
        await (await self.transport()).change_priority(
            validate_job_id(job_id, "job_id"), priority, lifo
        )

    async def change_job_delay(self, job_id: str, delay_ms: int) -> None:
        """Run a pending job ``delay_ms`` from now (database clock)."""
        await (await self.transport()).change_delay(
            validate_job_id(job_id, "job_id"), delay_ms, None
        )

    async def move_job_to_delayed(self, job_id: str, delay_ms: int) -> None:
        """Delay a waiting, prioritized or delayed job by ``delay_ms`` from now (an
        active job is moved by its worker: ``job.move_to_delayed`` in the handler)."""
        await (await self.transport()).move_to_delayed(
            validate_job_id(job_id, "job_id"), delay_ms, None
        )

    async def discard(self, job_id: str) -> None:
        """Dead-letter a live job now, without retries (reason ``explicit_fail``)."""
        await (await self.transport()).discard(validate_job_id(job_id, "job_id"), None)

    async def promote(self, job_id: str) -> None:
        """Make a delayed job due now."""
        await (await self.transport()).promote(validate_job_id(job_id, "job_id"))

    async def retry_job(self, job_id: str) -> None:
        """Send a failed (dead-lettered) job back to waiting."""
        await (await self.transport()).retry_job(validate_job_id(job_id, "job_id"))

    # -- flows and deduplication keys -----------------------------------------------------------

    async def remove_child_dependency(self, job_id: str) -> bool:
        """The child stops being a dependency of its parent: it stays queued and runs
        on its own, and the parent is released if it waited only for it.  False when
        the job has no parent or has already finished."""
        return await (await self.transport()).remove_child_dependency(
            validate_job_id(job_id, "job_id")
        )

    async def remove_unprocessed_children(self, job_id: str) -> None:
        """Remove the children of ``job_id`` that have not started (and theirs); a
        parent left waiting for nothing runs."""
        await (await self.transport()).remove_unprocessed_children(
            validate_job_id(job_id, "job_id")
        )

    async def get_deduplication_job_id(self, key: str) -> str | None:
        """The id of the job of this queue holding deduplication key ``key`` (a live
        job, or a finished one whose key has a TTL that has not passed)."""
        return await (await self.transport()).get_deduplication_job_id(
            self.name, validate_job_id(key, "key")
        )

    async def remove_deduplication_key(self, key: str) -> int:
        """Free deduplication key ``key`` (its job stays); 1 when a live job held it."""
        return await (await self.transport()).remove_deduplication_key(
            self.name, validate_job_id(key, "key")
        )

    # -- dead-letter queue ----------------------------------------------------------------------

    async def get_dlq(
        self, limit: int = 100, offset: int = 0, *, reason: str | None = None
    ) -> list[dict[str, Any]]:
        """Dead-lettered jobs of this queue, oldest first: ``{job, reason, error,
        attempts, enteredAt, ...}`` (only those of ``reason``, if given)."""
        return await (await self.transport()).get_dlq(self.name, limit, offset, reason=reason)

    async def retry_dlq(
        self,
        job_id: str | None = None,
        *,
        limit: int | None = None,
        reason: str | None = None,
        why: str | None = None,
    ) -> int:
        """Send one dead-lettered job, up to ``limit`` of them (oldest first, only
        ``reason``'s if given), or every one back to waiting; how many moved.
        ``why`` is stored in the DLQ audit."""
        redrive = DlqRedrive(limit, reason, why)
        return await (await self.transport()).retry_dlq(self.name, job_id, redrive)

    async def purge_dlq(self, *, reason: str | None = None, why: str | None = None) -> int:
        """Delete every dead-letter entry of this queue (of ``reason``, if given); how many."""
        return await (await self.transport()).purge_dlq(self.name, reason=reason, why=why)

    async def get_dlq_stats(self) -> dict[str, Any]:
        """``{total, byReason, pendingRetry, expired, oldestEntry, newestEntry, ...}``."""
        return await (await self.transport()).get_dlq_stats(self.name)

    async def get_dlq_audit(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest audited DLQ operations on this queue, newest first."""
        return await (await self.transport()).get_dlq_audit(self.name, limit)

    # -- job schedulers (cron) -------------------------------------------------------------

    async def upsert_job_scheduler(
        self,
        scheduler_id: str,
        repeat: RepeatOptions,
        template: SchedulerTemplate | None = None,
        *,
        prevent_overlap: bool = True,
        skip_missed_on_restart: bool = True,
        skip_if_no_worker: bool = False,
    ) -> JobScheduler:
        """Create or replace the scheduler ``scheduler_id`` of this queue (BullMQ's
        ``upsertJobScheduler``): at every tick of ``repeat`` (``pattern`` in ``tz``,
        or ``every`` ms; ``limit``, ``startDate``, ``endDate``, ``immediately``) it
        pushes ``template`` (``{name, data, opts}``; ``name`` defaults to the
        scheduler's id, ``opts`` the queue's default job options merged with the
        template's).  Each tick fires exactly once, whatever brokers run.

        ``prevent_overlap``: no new tick job while the previous one is live;
        ``skip_missed_on_restart``: ticks missed while no broker ran collapse into
        one (False: each is caught up); ``skip_if_no_worker``: a tick with no
        live worker on the queue pushes nothing.  See docs/cron.md."""
        job: dict[str, Any] = dict(template or {})
        job["opts"] = merge_options(self.default_job_options, job.get("opts"))
        request = scheduler_input(
            validate_job_id(scheduler_id, "scheduler_id"),
            self.name,
            repeat,
            job,
            prevent_overlap=prevent_overlap,
            skip_missed_on_restart=skip_missed_on_restart,
            skip_if_no_worker=skip_if_no_worker,
            max_payload_bytes=MAX_PAYLOAD_BYTES_DEFAULT,
        )
        transport = await self.transport()
        return JobScheduler.from_wire(
            await transport.upsert_scheduler(scheduler_id, self.name, request)
        )

    async def add_cron(
        self, name: str, pattern: str, data: Any = None, *, tz: str | None = None
    ) -> JobScheduler:
        """A scheduler pushing ``name`` jobs with ``data`` at every tick of ``pattern``."""
        repeat: RepeatOptions = {"pattern": pattern}
        if tz is not None:
            repeat["tz"] = tz
        return await self.upsert_job_scheduler(name, repeat, {"name": name, "data": data})

    async def every(self, name: str, every_ms: int, data: Any = None) -> JobScheduler:
        """A scheduler pushing ``name`` jobs with ``data`` every ``every_ms`` ms."""
        return await self.upsert_job_scheduler(
            name, {"every": every_ms}, {"name": name, "data": data}
        )

    async def get_job_scheduler(self, scheduler_id: str) -> JobScheduler | None:
        """The scheduler ``scheduler_id`` of this queue, or None."""
        cron = await (await self.transport()).get_scheduler(
            validate_job_id(scheduler_id, "scheduler_id")
        )
        if cron is None or cron.get("queue") != self.name:
            return None
        return JobScheduler.from_wire(cron)

    async def get_job_schedulers(self) -> list[JobScheduler]:
        """The schedulers of this queue, by id."""
        crons = await (await self.transport()).list_schedulers(self.name)
        return [JobScheduler.from_wire(c) for c in crons]

    async def remove_job_scheduler(self, scheduler_id: str) -> bool:
        """Remove the scheduler (jobs it already pushed stay); False when unknown."""
        transport = await self.transport()
        scheduler_id = validate_job_id(scheduler_id, "scheduler_id")
        cron = await transport.get_scheduler(scheduler_id)
        if cron is None or cron.get("queue") != self.name:
            return False
        return await transport.remove_scheduler(scheduler_id)

    async def get_workers(self) -> list[dict[str, Any]]:
        """The registered workers that serve this queue."""
        workers = await (await self.transport()).list_workers()
        return [w for w in workers if self.name in (w.get("queues") or ())]

    async def add_webhook(
        self, url: str, events: Sequence[str], *, secret: str | None = None
    ) -> str:
        """Register a webhook for ``events`` of this queue (``job.completed``, ...); its id."""
        return await (await self.transport()).add_webhook(url, events, self.name, secret)

    async def remove_webhook(self, webhook_id: str) -> bool:
        """Remove a webhook; False when none has that id."""
        return await (await self.transport()).remove_webhook(webhook_id)

    async def list_webhooks(self) -> list[dict[str, Any]]:
        """The webhooks that fire for this queue (its own and those of every queue)."""
        webhooks = await (await self.transport()).list_webhooks()
        return [w for w in webhooks if w.get("queue") in (None, self.name)]
