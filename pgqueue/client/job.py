"""``Job``: one job as the SDK shows it, with the calls a handler makes on it.

A job comes from ``Queue.add`` (id, name, data, options), from a query
(``Queue.get_job``: the stored job with its state) or from a worker's pull
(then it also carries the claim: :attr:`Job.token` and :attr:`Job.fence`).
Attribute names follow BullMQ in snake_case (``attempts_made``,
``processed_on``, ``returnvalue``, ...); :attr:`Job.raw` keeps the job in
bunqueue's wire shape.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pgqueue.client._shared import in_transaction_only
from pgqueue.errors import ConfigError

if TYPE_CHECKING:
    from pgqueue.client.transport import Transport

__all__ = ["Job"]


_NO_RAW: dict[str, Any] = {}  # Job.pushed's raw until read (then a new dict: never changed)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


class Job:
    """One job (see the module docstring)."""

    __slots__ = (
        "_cancelled",
        "_completed_in",
        "_raw",
        "_released",
        "_stacktrace",
        "_transport",
        "_view",
        "_waiter",
        "attempts_made",
        "data",
        "failed_reason",
        "fence",
        "finished_on",
        "id",
        "last_heartbeat",
        "max_attempts",
        "name",
        "opts",
        "parent_id",
        "priority",
        "processed_on",
        "progress",
        "queue_name",
        "returnvalue",
        "stall_timeout",
        "state",
        "timeout",
        "timestamp",
        "token",
    )

    def __init__(
        self,
        transport: Transport,
        job_id: str,
        name: str,
        data: Any,
        queue_name: str,
        *,
        opts: Mapping[str, Any] | None = None,
        raw: Mapping[str, Any] | None = None,
        token: str | None = None,
        fence: int | None = None,
        waiter: Callable[[str, float | None], Awaitable[Any]] | None = None,
        view: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        raw = dict(raw or {})
        self._view = view
        self._transport = transport
        self._waiter = waiter
        self._completed_in = False
        self._released = False
        self._cancelled: asyncio.Event | None = None
        self.id = job_id
        self.name = name
        self.data = data
        self.queue_name = queue_name
        self.opts: dict[str, Any] = dict(opts or {})
        self._raw = raw
        self.token = token
        self.fence = fence
        self.attempts_made: int = int(raw.get("attempts") or 0)
        self.max_attempts: int | None = raw.get("maxAttempts", self.opts.get("attempts"))
        self.priority: int = int(raw.get("priority") or self.opts.get("priority") or 0)
        self.progress: Any = raw.get("progress", 0)
        self.timestamp: float | None = _float(raw.get("createdAt"))
        self.processed_on: float | None = _float(raw.get("startedAt"))
        self.finished_on: float | None = _float(raw.get("completedAt"))
        self.returnvalue: Any = raw.get("returnvalue")
        self.failed_reason: str | None = raw.get("failedReason")
        self._stacktrace: list[str] | None = list(raw.get("stacktrace") or [])
        self.parent_id: str | None = raw.get("parentId")
        self.state: str | None = raw.get("state")
        self.timeout: int | None = raw.get("timeout", self.opts.get("timeout"))
        self.stall_timeout: int | None = raw.get("stallTimeout", self.opts.get("stall_timeout"))
        self.last_heartbeat: float | None = _float(raw.get("lastHeartbeat"))

    @classmethod
    def pushed(
        cls,
        transport: Transport,
        ids: Sequence[str],
        jobs: Iterable[tuple[str, Any, Mapping[str, Any]]],
        queue_name: str,
        waiter: Callable[[str, float | None], Awaitable[Any]] | None,
    ) -> list[Job]:
        """The jobs a push just admitted: ``Job(transport, id, name, data, queue_name,
        opts=opts, waiter=waiter)`` for each id and (name, data, opts), with the
        attributes ``__init__`` derives from an empty ``raw`` set directly (a bulk
        push makes one per job: 1.0 -> 0.4 us, docs/performance.md).  ``raw`` is made
        when first read (a new dict, as ``__init__``'s)."""
        made: list[Job] = []
        append = made.append
        new = object.__new__
        for job_id, (name, data, opts) in zip(ids, jobs, strict=True):
            job = new(cls)
            job._view = dict  # raw: a new empty dict when first read
            job._transport = transport
            job._waiter = waiter
            job._completed_in = False
            job._released = False
            job._cancelled = None
            job.id = job_id
            job.name = name
            job.data = data
            job.queue_name = queue_name
            job.opts = own = dict(opts) if opts else {}
            job._raw = _NO_RAW
            job.token = None
            job.fence = None
            job.attempts_made = 0
            job.max_attempts = own.get("attempts") if own else None
            job.priority = int(own.get("priority") or 0) if own else 0
            job.progress = 0
            job.timestamp = None
            job.processed_on = None
            job.finished_on = None
            job.returnvalue = None
            job.failed_reason = None
            job._stacktrace = None  # made when first read: one tracked object less per job
            job.parent_id = None
            job.state = None
            job.timeout = own.get("timeout") if own else None
            job.stall_timeout = own.get("stall_timeout") if own else None
            job.last_heartbeat = None
            append(job)
        return made

    @classmethod
    def from_wire(
        cls,
        transport: Transport,
        raw: Mapping[str, Any],
        *,
        token: str | None = None,
        fence: int | None = None,
        waiter: Callable[[str, float | None], Awaitable[Any]] | None = None,
        view: Callable[[], dict[str, Any]] | None = None,
    ) -> Job:
        """A job from its wire dict (a query's answer or a pulled job); ``view``: see
        :class:`~pgqueue.client.transport.Lease` (``raw`` then holds some keys only)."""
        return cls(
            transport,
            str(raw["id"]),
            str(raw.get("name") or "default"),
            raw.get("data"),
            str(raw.get("queue") or ""),
            raw=raw,
            token=token,
            fence=fence,
            waiter=waiter,
            view=view,
        )

    @property
    def stacktrace(self) -> list[str]:
        """The stack traces of the job's failed attempts (the transport's, as given)."""
        if self._stacktrace is None:
            self._stacktrace = []
        return self._stacktrace

    @stacktrace.setter
    def stacktrace(self, value: list[str]) -> None:
        self._stacktrace = value

    @property
    def raw(self) -> dict[str, Any]:
        """The job's wire dict, as the transport gave it."""
        if self._view is not None:
            whole = self._view()
            whole.update(self._raw)  # the same values, the same objects as the attributes
            self._raw, self._view = whole, None
        return self._raw

    @raw.setter
    def raw(self, value: dict[str, Any]) -> None:
        self._raw, self._view = value, None

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, name={self.name!r}, queue={self.queue_name!r})"

    @property
    def completed_in_transaction(self) -> bool:
        """Whether :meth:`complete_in` completed this job (the worker will not ack it)."""
        return self._completed_in

    @property
    def released(self) -> bool:
        """Whether the handler gave this job back itself (moved it to delayed, or
        discarded it, with its token): the worker then sends no outcome."""
        return self._released

    # -- cancellation ------------------------------------------------------------

    @property
    def cancelled(self) -> asyncio.Event:
        """Set when the job was cancelled while this worker ran it (the worker
        learns it at its next heartbeat): ``await job.cancelled.wait()``."""
        if self._cancelled is None:
            self._cancelled = asyncio.Event()
        return self._cancelled

    def is_cancelled(self) -> bool:
        """Whether the job was cancelled while this worker ran it (usable from a
        plain-function handler's thread)."""
        return self._cancelled is not None and self._cancelled.is_set()

    def mark_cancelled(self) -> None:
        """Record that the job was cancelled (the worker calls it)."""
        self.cancelled.set()

    # -- calls a handler makes ---------------------------------------------------

    async def update_progress(self, progress: Any, message: str | None = None) -> None:
        """Record progress (a number or a JSON object) of this active job."""
        await self._transport.update_progress(self.id, self.token, progress, message)
        self.progress = progress

    async def log(self, message: str, level: str = "info") -> None:
        """Append a line to the job's log (``info``, ``warn`` or ``error``)."""
        await self._transport.add_log(self.id, message, level)

    async def complete_in(self, connection: Any, result: Any = None) -> None:
        """Complete this job inside the caller's open transaction on ``connection``
        (asyncpg, psycopg async or sync, a SQLAlchemy session or connection):
        the completion commits with the handler's own writes or not at all, and
        a stale claim (lease lost, job re-claimed) raises, so the handler's
        transaction rolls back.  The
        worker then does not ack the job (embedded transport only)."""
        if self.token is None:
            raise ConfigError("complete_in needs a job pulled by a Worker (it has no token)")
        complete_in = getattr(self._transport, "complete_in", None)
        if complete_in is None:
            raise in_transaction_only("complete_in")
        await complete_in(connection, self.id, self.token, result)
        self._completed_in = True
        self.returnvalue = result

    async def get_children_values(self) -> dict[str, Any]:
        """Results of this job's completed children, keyed ``"<queue>:<id>"``."""
        return await self._transport.get_children_values(self.id)

    async def get_failed_children_values(self) -> dict[str, str]:
        """Errors of the children that failed with ``continue_parent_on_failure``
        (and so made this job run early), keyed ``"<queue>:<id>"``."""
        return await self._transport.get_children_failures(self.id, ignored=False)

    async def get_ignored_children_failures(self) -> dict[str, str]:
        """Errors of the children that failed with ``ignore_dependency_on_failure``
        (this job went on without them), keyed ``"<queue>:<id>"``."""
        return await self._transport.get_children_failures(self.id, ignored=True)

    async def get_state(self) -> str:
        """``waiting``, ``prioritized``, ``delayed``, ``active``, ``completed``,
        ``failed``, ``waiting-children`` or ``unknown``."""
        self.state = await self._transport.get_state(self.id)
        return self.state

    async def get_logs(self, start: int = 0, end: int = -1) -> list[dict[str, Any]]:
        return await self._transport.get_logs(self.id, start, end)

    async def remove(self) -> None:
        """Cancel the job (an active one too: its worker learns at its next heartbeat)."""
        await self._transport.remove(self.id)

    cancel = remove

    async def update_data(self, data: Any) -> None:
        """Replace the data of this live job (BullMQ's ``updateData``)."""
        await self._transport.update_data(self.id, data)
        self.data = data

    async def change_priority(self, priority: int, lifo: bool | None = None) -> None:
        """Change this pending job's priority (and LIFO flag)."""
        await self._transport.change_priority(self.id, priority, lifo)
        self.priority = priority

    async def change_delay(self, delay_ms: int) -> None:
        """Run this job ``delay_ms`` from now (a pending job; in a handler, the
        job itself, moved to delayed with its lock token)."""
        await self._transport.change_delay(self.id, delay_ms, self.token)
        self._released = self.token is not None

    async def move_to_delayed(self, delay_ms: int) -> None:
        """Make this job due ``delay_ms`` from now (database clock).  In a
        handler, the running job goes back to delayed with its lock token and
        the worker sends no outcome for it; otherwise a pending job is delayed.
        (BullMQ's ``moveToDelayed`` takes an instant; bunqueue's wire, a delay.)"""
        await self._transport.move_to_delayed(self.id, delay_ms, self.token)
        self._released = self.token is not None

    async def discard(self) -> None:
        """Dead-letter this job now without retries (reason ``explicit_fail``).
        In a handler, the worker then sends no outcome for it."""
        await self._transport.discard(self.id, self.token)
        self._released = self.token is not None

    async def promote(self) -> None:
        await self._transport.promote(self.id)

    async def retry(self) -> None:
        """Send a dead-lettered job back to waiting."""
        await self._transport.retry_job(self.id)

    async def remove_child_dependency(self) -> bool:
        """Stop being a dependency of the parent (see :meth:`Queue.remove_child_dependency`)."""
        return await self._transport.remove_child_dependency(self.id)

    async def remove_unprocessed_children(self) -> None:
        """Remove this job's children that have not started."""
        await self._transport.remove_unprocessed_children(self.id)

    async def remove_deduplication_key(self) -> bool:
        """Free the deduplication key this job holds; False when it holds none."""
        return await self._transport.remove_job_deduplication_key(self.id)

    async def wait_until_finished(self, timeout: float | None = None) -> Any:
        """The job's result once it completed (see :meth:`Queue.wait_for`)."""
        if self._waiter is None:
            raise ConfigError("wait with Queue.wait_for(job): this job came from no Queue")
        return await self._waiter(self.id, timeout)
