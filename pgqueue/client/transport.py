"""One API, two transports: what ``Queue``, ``Worker``, ``FlowProducer`` and
``QueueEvents`` need from the queue, whatever carries it.

:class:`~pgqueue.client.embedded.EmbeddedTransport` calls the engine in-process
(a ``postgresql://`` connection string); the TCP transport speaks bunqueue's
protocol to brokers (``pgqueue://host:6789,host2:6789?token=...``).  Both return
the same plain values: job dicts in bunqueue's wire shape (camelCase, float
millisecond timestamps), so user code sees one shape.

Errors are the package's tree: :class:`~pgqueue.errors.ValidationError`,
:class:`~pgqueue.errors.LeaseLost`, :class:`~pgqueue.errors.JobNotFound`, and for
the TCP transport :class:`~pgqueue.errors.ConnectionLost` (retryable) and
:class:`~pgqueue.errors.IndeterminateCommit` (a push whose outcome is unknown:
re-push with the same custom id).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from pgqueue.vocabulary.completions import AckItem, FailItem
from pgqueue.vocabulary.frozen import fast_maker

if TYPE_CHECKING:
    from pgqueue.client.schedulers import SchedulerInput
    from pgqueue.manager.options import JobSpec, PlainSpecs

__all__ = [
    "AckRequest",
    "DlqRedrive",
    "FailRequest",
    "JobInput",
    "Lease",
    "PlainInputs",
    "Renewal",
    "Transport",
    "TransportEvent",
    "checked_spec",
]


@dataclass(frozen=True, slots=True)
class JobInput:
    """One job to push: name, data and options in the SDK's snake_case names
    (``attempts``, ``backoff``, ``delay``, ``priority``, ``job_id``, ...; the
    engine's option names, see :data:`pgqueue.manager.options.JOB_OPTIONS`)."""

    name: str
    data: Any = None
    opts: Mapping[str, Any] = field(default_factory=dict)
    spec: JobSpec | None = field(default=None, compare=False, repr=False)
    """The engine's spec of this job as ``Queue`` validated it (None: not validated
    here); a transport reuses it instead of building it again (:func:`checked_spec`)."""


_plain_input = fast_maker(JobInput)


class PlainInputs(Sequence[JobInput]):
    """The inputs of an ``add_bulk`` of jobs without options, validated for the whole
    batch (``Queue``): ``JobInput(specs.names[i], datas[i], {}, specs[i])`` for each
    job, made only when read one by one.  A transport reads ``specs`` and ``datas``
    themselves and so makes no object per job (docs/performance.md)."""

    __slots__ = ("datas", "specs")

    def __init__(self, specs: PlainSpecs, datas: list[Any]) -> None:
        self.specs = specs
        self.datas = datas

    def __len__(self) -> int:
        return len(self.datas)

    @overload
    def __getitem__(self, index: int) -> JobInput: ...

    @overload
    def __getitem__(self, index: slice) -> PlainInputs: ...

    def __getitem__(self, index: int | slice) -> JobInput | PlainInputs:
        if isinstance(index, slice):
            return PlainInputs(self.specs[index], self.datas[index])
        spec = self.specs[index]
        return _plain_input(spec.name, self.datas[index], {}, spec)

    def __iter__(self) -> Iterator[JobInput]:
        for spec, data in zip(self.specs, self.datas, strict=True):
            yield _plain_input(spec.name, data, {}, spec)


def checked_spec(job: JobInput, queue: str, max_payload_bytes: int) -> JobSpec | None:
    """``job.spec`` when it is what ``build_job_spec(queue, ...)`` with this limit would
    return: the same queue, and the data's JSON text within ``max_payload_bytes`` (the
    one rule of the check that depends on the limit).  None: build it again."""
    spec = job.spec
    if spec is None or spec.queue != queue:
        return None
    text = spec.data_json
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    return spec if size <= max_payload_bytes else None


@dataclass(frozen=True, slots=True)
class DlqRedrive:
    """Which entries a DLQ redrive takes besides a job id: up to ``limit`` (of
    ``reason``), or all; ``why`` goes in the DLQ audit."""

    limit: int | None = None
    reason: str | None = None
    why: str | None = None


Renewal = Literal["renewed", "lost", "cancelled"]
"""A lease heartbeat's outcome: renewed; lost (the claim is stale); cancelled (the
job was cancelled while this claim held it: stop working on it)."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A pulled job: its wire dict plus the claim's token and fence.

    With ``view`` set, ``job`` holds only the keys :class:`~pgqueue.client.job.Job`
    reads when it is made (their values as in the whole dict) and ``view()``
    makes the whole wire dict, when :attr:`Job.raw` is first read (the embedded
    transport: most handlers never read it).
    """

    job: dict[str, Any]
    token: str
    fence: int
    view: Callable[[], dict[str, Any]] | None = None


AckRequest = AckItem
"""A completion the SDK sends: the job, its claim's token, its result."""

FailRequest = FailItem
"""A failed attempt the SDK reports."""


@dataclass(frozen=True, slots=True)
class TransportEvent:
    """One queue event: bunqueue's event body plus a resume cursor."""

    event_type: str
    queue: str
    job_id: str
    timestamp: float
    body: dict[str, Any]
    cursor: str


class Transport(Protocol):
    """The queue operations the SDK uses (see the module docstring)."""

    wide_ints: bool
    """Integers of any size travel exactly (embedded); else 64 bits (msgpack)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    # producing
    async def push(self, queue: str, job: JobInput) -> str: ...

    async def push_bulk(self, queue: str, jobs: Sequence[JobInput]) -> list[str]: ...

    async def push_flow(self, flow: Mapping[str, Any]) -> dict[str, Any]:
        """``{name, queue, data, opts, children: [...]}`` -> the same tree with ``id``s."""
        ...

    # the worker loop
    async def pull(
        self, queue: str, count: int, *, owner: str, lock_ttl_ms: int, timeout_ms: int
    ) -> list[Lease]: ...

    async def ack(self, items: Sequence[AckRequest]) -> list[bool]:
        """Complete jobs; True per item that applied (False: its claim is stale)."""
        ...

    async def fail(self, item: FailRequest) -> bool: ...

    async def extend(self, items: Sequence[tuple[str, str]], duration_ms: int) -> list[Renewal]:
        """Renew leases of ``(job_id, token)`` pairs; one :data:`Renewal` each."""
        ...

    async def release(self, items: Sequence[tuple[str, str]]) -> None:
        """Give pulled jobs back to waiting (a worker closing before running them)."""
        ...

    async def update_progress(
        self, job_id: str, token: str | None, progress: Any, message: str | None
    ) -> None: ...

    async def add_log(self, job_id: str, message: str, level: str) -> None: ...

    async def register_worker(
        self, worker_id: str, name: str, queues: Sequence[str], concurrency: int
    ) -> None: ...

    async def worker_heartbeat(
        self, worker_id: str, active: int, processed: int, failed: int
    ) -> None: ...

    async def unregister_worker(self, worker_id: str) -> None: ...

    # queries
    async def get_job(self, job_id: str) -> dict[str, Any] | None: ...

    async def get_state(self, job_id: str) -> str: ...

    async def get_result(self, job_id: str) -> tuple[bool, Any]:
        """(has a result, the result)."""
        ...

    async def get_counts(self, queue: str) -> dict[str, int]: ...

    async def get_jobs(
        self, queue: str, states: Sequence[str] | None, offset: int, limit: int, asc: bool
    ) -> list[dict[str, Any]]: ...

    async def get_children_values(self, job_id: str) -> dict[str, Any]: ...

    async def get_children_failures(self, job_id: str, *, ignored: bool) -> dict[str, str]: ...

    async def get_logs(self, job_id: str, start: int, end: int) -> list[dict[str, Any]]: ...

    # control
    async def pause(self, queue: str) -> None: ...

    async def resume(self, queue: str) -> None: ...

    async def is_paused(self, queue: str) -> bool: ...

    async def limits(self, op: str, queue: str, args: Sequence[Any]) -> Any:
        """A queue-limit or job-group operation of :data:`pgqueue.client.limits.LIMIT_OPS`
        (``op``: the engine method's name), answered in the wire's shape."""
        ...

    async def drain(self, queue: str, include_delayed: bool) -> int: ...

    async def clean(self, queue: str, grace_ms: int, state: str, limit: int) -> list[str]: ...

    async def obliterate(self, queue: str, force: bool) -> None: ...

    async def remove(self, job_id: str) -> None: ...

    async def promote(self, job_id: str) -> None: ...

    async def retry_job(self, job_id: str) -> None:
        """A dead-lettered (failed) job back to waiting."""
        ...

    async def update_data(self, job_id: str, data: Any) -> None: ...

    async def change_priority(self, job_id: str, priority: int, lifo: bool | None) -> None: ...

    async def change_delay(self, job_id: str, delay_ms: int, token: str | None) -> None:
        """A pending job runs ``delay_ms`` from now; with ``token``, the active job
        it leases moves to delayed."""
        ...

    async def move_to_delayed(self, job_id: str, delay_ms: int, token: str | None) -> None:
        """MoveToDelayed: a pending job (no token) or the active job ``token`` leases."""
        ...

    async def discard(self, job_id: str, token: str | None) -> None:
        """Dead-letter a live job now (with ``token``: only the active job it leases)."""
        ...

    # flows and deduplication keys
    async def remove_child_dependency(self, job_id: str) -> bool: ...

    async def remove_unprocessed_children(self, job_id: str) -> None: ...

    async def get_deduplication_job_id(self, queue: str, key: str) -> str | None: ...

    async def remove_deduplication_key(self, queue: str, key: str) -> int: ...

    async def remove_job_deduplication_key(self, job_id: str) -> bool: ...

    async def get_dlq(
        self, queue: str, limit: int, offset: int, *, reason: str | None = None
    ) -> list[dict[str, Any]]: ...

    async def retry_dlq(
        self, queue: str, job_id: str | None, redrive: DlqRedrive = DlqRedrive()
    ) -> int:
        """Redrive one entry, or those ``redrive`` takes; how many."""
        ...

    async def purge_dlq(
        self, queue: str, *, reason: str | None = None, why: str | None = None
    ) -> int: ...

    async def get_dlq_stats(self, queue: str | None) -> dict[str, Any]:
        """``{total, byReason, byQueue, pendingRetry, expired, oldestEntry, newestEntry}``
        of one queue's DLQ, or of every queue's (None)."""
        ...

    async def get_dlq_audit(self, queue: str | None, limit: int) -> list[dict[str, Any]]:
        """The newest audited DLQ operations (``{id, at, actor, action, queue, jobIds,
        filter, reason, count}``), newest first."""
        ...

    # schedulers (cron)
    async def upsert_scheduler(
        self, name: str, queue: str, request: SchedulerInput
    ) -> dict[str, Any]:
        """Create or replace scheduler ``name``; its wire shape (bunqueue's cron)."""
        ...

    async def get_scheduler(self, name: str) -> dict[str, Any] | None: ...

    async def list_schedulers(self, queue: str | None) -> list[dict[str, Any]]: ...

    async def remove_scheduler(self, name: str) -> bool:
        """False when there was no such scheduler."""
        ...

    # the namespace as a whole
    async def list_queues(self) -> list[str]: ...

    async def list_workers(self) -> list[dict[str, Any]]:
        """Registered workers (``{workerId, name, queues, concurrency, hostname, pid,
        status, lastSeen, activeJobs, processedJobs, failedJobs, ...}``)."""
        ...

    async def add_webhook(
        self, url: str, events: Sequence[str], queue: str | None, secret: str | None
    ) -> str:
        """Register a webhook; its id."""
        ...

    async def remove_webhook(self, webhook_id: str) -> bool:
        """False when no webhook has that id."""
        ...

    async def list_webhooks(self) -> list[dict[str, Any]]:
        """Registered webhooks (``{id, url, events, queue, enabled, createdAt,
        successCount, failureCount, hasSecret, deliveries, ...}``), oldest first."""
        ...

    async def list_brokers(self) -> list[dict[str, Any]]:
        """Broker sessions (``{brokerId, hostname, pid, startedAt, heartbeatAt, live,
        draining, leader, ...}``); an embedded client's own session is one of them."""
        ...

    async def alert_figures(self, queue: str | None) -> list[dict[str, Any]]:
        """Per queue (one, or all) the figures an operator alerts on (``AlertFigures``:
        ``{queue, oldestWaitingMs, oldestRetryMs, dlq, active, concurrencyLimit,
        workerSlots, workerSlotsBusy, rateLimited, ...}``)."""
        ...

    # events
    def events(self, queue: str, after: str | None) -> AsyncIterator[TransportEvent]:
        """Events of ``queue`` from now on (or after a cursor), resuming across
        reconnects without gaps or duplicates.

        The first item is a ``subscribed`` marker (empty ``job_id``) whose
        ``cursor`` is the start position: once it arrived, the subscription is
        live and resuming from that cursor misses nothing.
        """
        ...
