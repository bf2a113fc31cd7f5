"""The TCP transport: the SDK to brokers over bunqueue's protocol.

    transport = TcpTransport.from_url("pgqueue://b1:6789,b2:6789?token=s3cret")
    await transport.start()

Every command goes through one :class:`~pgqueue.client.pool.ConnectionPool`
(4 pipelined connections over the listed brokers, least loaded first,
reconnect with backoff, fail-over); event streams use connections of their
own (:mod:`pgqueue.client.tcp_events`).  Semantics follow the embedded
transport: same arguments, same values, same exceptions (a broker's
``{ok: false, error}`` is mapped by :func:`~pgqueue.client.remote_errors.remote_error`).

Pushes are validated here first, with the engine's rules and messages
(:mod:`pgqueue.client.wire_options`).  Concurrent :meth:`TcpTransport.push`
calls are coalesced into PUSHB frames (:mod:`pgqueue.client.autobatch`;
``autobatch=false`` sends one PUSH each).

When a connection drops with requests in flight:

- reads (GetJob, GetState, GetResult, GetJobCounts, GetJobs, IsPaused,
  GetChildrenValues, GetLogs, Dlq) are sent once more on another connection;
- a push raises :class:`~pgqueue.errors.IndeterminateCommit` (it may have
  committed; the safe retry is a re-push with the same custom id) — except a
  push whose every job carries a custom id, which is re-sent once on another
  connection, transparently: the broker answers a live custom id with the
  existing job's id, so the re-send cannot create a second job while the
  first is retained (live, or finished and not removed: the broker answers
  the finished job's id and runs nothing again);
- every other write raises :class:`~pgqueue.errors.ConnectionLost` (retryable:
  the caller knows whether repeating it is harmless).

A lease's fence is read from its lock token (``"<fence>:<uuid>"``).  Pulls
are sent with ``detach: true``: a job pulled over any of the pool's
connections stays leased until it is acked, failed, released or its lease
expires (as in the embedded transport), whichever connection carries the
next command about it.  A PULLB answer that comes after the pull gave up (its
timeout; the broker does not serve a request older than that, so only an
answer in flight arrives late) gives its jobs back at once with MoveToWait and
their tokens: no attempt is used and no stall counted.

Where a wire answer is ambiguous, the transport asks: ``Job not found or
cannot be cancelled`` (and bunqueue's other "not found or ..." texts) is
followed by a GetState, to raise :class:`~pgqueue.errors.JobNotFound` or
:class:`~pgqueue.errors.InvalidState` as the engine does; ExtendLocks answers a
count, so when only some leases were renewed each one is extended alone.

``ack`` reports an already-finalized job as not applied, as the embedded
transport does (the broker lists them in ACKB's ``finalizedIndices``).

Known differences from the embedded transport (limits of the wire answers):
``get_counts`` of a paused queue reports its
prioritized jobs under ``waiting`` (the broker lumps the ready jobs together
when paused); event bodies carry only the payload keys the broker's event
frames carry; a flow node's ``job_id`` becomes its id but not a custom id
(PUSHF drops it).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import operator
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from pgqueue.client.autobatch import AutoBatcher
from pgqueue.client.connection import Connection, LateAnswer
from pgqueue.client.limits import LIMIT_OPS, wire_fields
from pgqueue.client.pool import Backoff, ConnectionPool, Opener
from pgqueue.client.remote_errors import remote_error
from pgqueue.client.schedulers import SchedulerInput
from pgqueue.client.tcp_events import EventFeeds
from pgqueue.client.tcp_settings import TcpSettings, parse_url
from pgqueue.client.transport import (
    AckRequest,
    DlqRedrive,
    FailRequest,
    JobInput,
    Lease,
    PlainInputs,
    Renewal,
    TransportEvent,
)
from pgqueue.client.wire_options import flow_entries, job_entry, wire_options
from pgqueue.errors import (
    ConnectionLost,
    IndeterminateCommit,
    InvalidState,
    JobCancelled,
    JobNotFound,
    LeaseLost,
    PgQueueError,
    ValidationError,
)
from pgqueue.manager.completion import parse_fence
from pgqueue.vocabulary.frozen import fast_maker
from pgqueue.vocabulary.names import validate_queue_name
from pgqueue.vocabulary.states import JOB_STATES

__all__ = ["TcpTransport"]

_lease = fast_maker(Lease)  # Lease(...), ~0.3 us faster per pulled job

log = logging.getLogger("pgqueue.client")

_OPEN_WITH_ROWS: Opener = functools.partial(Connection.open, job_rows=True)
"""The pool's connections ask for PULLB's jobs as rows (:func:`_pulled` reads both)."""


def _raise_undecided(data: Mapping[str, Any]) -> None:
    """Items an error left undecided (``errorIndices``) fail the send, an
    indeterminate one first: the ack batcher sends it again with the same
    tokens, and the items that did apply come back as already finalized."""
    errors = [str(message) for message in data.get("errors") or []]
    if errors:
        found = [remote_error(message) for message in errors]
        raise next((e for e in found if isinstance(e, IndeterminateCommit)), found[0])


_HEAD = (
    "id",
    "queue",
    "name",
    "data",
    "createdAt",
    "startedAt",
    "completedAt",
    "attempts",
    "progress",
    "stacktrace",
    "lastHeartbeat",
    "priority",
    "maxAttempts",
    "timeout",
    "parentId",
    "stallTimeout",
)
"""The keys of a pulled job that :class:`~pgqueue.client.job.Job` reads when it is
made (as the embedded transport's ``pulled_head``); the whole dict is made from the
row when ``Job.raw`` is first read."""


def _row_view(columns: list[str], row: list[Any]) -> dict[str, Any]:
    return dict(zip(columns, row, strict=True))


def _pulled(answer: Mapping[str, Any]) -> list[tuple[dict[str, Any], Any]]:
    """A PULLB answer's jobs, each as (its dict, None), or from ``rows`` (the answer
    to a connection whose ``Hello`` listed ``job-rows``: the keys once, in
    ``columns``, each job's values in that order) as (the :data:`_HEAD` keys, a
    function making the whole dict)."""
    rows = answer.get("rows")
    if rows is None:
        return [(job, None) for job in answer.get("jobs") or []]
    columns = answer.get("columns")
    if not isinstance(columns, list) or not isinstance(rows, list):
        raise ConnectionLost("a PULLB answer's rows came without their columns")
    width = len(columns)
    if any(not isinstance(row, list) or len(row) != width for row in rows):
        raise ConnectionLost("a PULLB answer's row does not match its columns")
    try:
        head = operator.itemgetter(*(columns.index(key) for key in _HEAD))
    except ValueError:  # a broker whose jobs lack a key Job reads: whole dicts
        return [(_row_view(columns, row), None) for row in rows]
    return [
        (dict(zip(_HEAD, head(row), strict=True)), functools.partial(_row_view, columns, row))
        for row in rows
    ]


def _with_token(job_id: str, token: str | None, **fields: Any) -> dict[str, Any]:
    """A job command's fields, with the lock token when there is one."""
    body: dict[str, Any] = {"id": job_id, **fields}
    if token is not None:
        body["token"] = token
    return body


class TcpTransport:
    """Implements :class:`~pgqueue.client.transport.Transport` over brokers."""

    wide_ints = False

    def __init__(
        self,
        settings: TcpSettings,
        *,
        opener: Opener = _OPEN_WITH_ROWS,
        backoff: Backoff = Backoff(),
    ) -> None:
        self.settings = settings.validate()
        tls = settings.ssl_context()
        if tls is not None or settings.namespace is not None:
            opener = functools.partial(opener, ssl=tls, namespace=settings.namespace)
        self.pool = ConnectionPool(
            settings.addresses,
            token=settings.token,
            size=settings.pool,
            request_timeout=settings.timeout,
            connect_timeout=settings.connect_timeout,
            liveness_timeout=settings.liveness_timeout,
            backoff=backoff,
            opener=opener,
        )
        self.batcher: AutoBatcher[dict[str, Any]] | None = None
        if settings.autobatch:
            self.batcher = AutoBatcher(
                self._push_entries,
                max_jobs=settings.batch_max_jobs,
                max_delay=settings.batch_delay_ms / 1000,
                direct_when_idle=True,
            )
        self.feeds = EventFeeds(self.pool, ping_interval=settings.ping_interval)
        self._workers: dict[str, dict[str, Any]] = {}
        self._late_releases: set[asyncio.Task[None]] = set()
        self._closed = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> TcpTransport:
        """A transport for ``pgqueue://host:port[,host:port...]?...``; keyword options
        override the URL's (see :mod:`pgqueue.client.tcp_settings`)."""
        return cls(parse_url(url, **options))

    @property
    def frames_sent(self) -> Counter[str]:
        """Frames sent so far, per command."""
        return self.pool.frames

    async def start(self) -> None:
        """Connect (raises :class:`~pgqueue.errors.ConnectionLost` when no broker answers,
        :class:`~pgqueue.errors.AuthError` when the token is refused)."""
        await self.pool.start()

    async def close(self) -> None:
        """Send the pushes still waiting in an auto-batch, end event streams, disconnect."""
        if self.batcher is not None:
            await self.batcher.close()
        if self._late_releases:  # late-pulled jobs go back before the pool closes
            await asyncio.gather(*self._late_releases, return_exceptions=True)
        self._closed = True
        await self.feeds.close()
        await self.pool.close()

    async def _call(
        self,
        cmd: str,
        fields: Mapping[str, Any],
        *,
        read: bool = False,
        push: bool = False,
        retry: bool = False,
        timeout: float | None = None,
        job_id: str | None = None,
        on_late: LateAnswer | None = None,
    ) -> dict[str, Any]:
        if self._closed:
            raise ConnectionLost(f"the transport is closed; {cmd} was not sent")
        answer = await self.pool.request(
            {"cmd": cmd, **fields},
            timeout=timeout,
            retry=read or retry,
            commit_unknown=push,
            on_late=on_late,
        )
        if answer.get("ok") is True:
            return answer
        message = str(answer.get("error") or f"{cmd} failed")
        error = remote_error(message, job_id)
        if (
            isinstance(error, JobNotFound)
            and job_id
            and message.startswith("Job not found or ")
            and await self.get_state(job_id) != "unknown"
        ):
            # bunqueue's text for "missing, or in the wrong state": it exists, so the latter.
            raise InvalidState(message, field="id")
        raise error

    # -- producing ------------------------------------------------------------

    async def push(self, queue: str, job: JobInput) -> str:
        limit = self.settings.max_payload_bytes
        if self.batcher is not None:
            entry, _ = job_entry(queue, job, custom_id_key="customId", max_payload_bytes=limit)
            return await self.batcher.submit(queue, entry)
        entry, spec = job_entry(queue, job, custom_id_key="jobId", max_payload_bytes=limit)
        answer = await self._call(
            "PUSH", {"queue": queue, **entry}, push=True, retry=spec.custom_id is not None
        )
        return str(answer["id"])

    async def _push_entries(self, queue: str, entries: list[dict[str, Any]]) -> list[str]:
        every_custom = all(entry.get("customId") is not None for entry in entries)
        answer = await self._call(
            "PUSHB", {"queue": queue, "jobs": entries}, push=True, retry=every_custom
        )
        return [str(job_id) for job_id in answer["ids"]]

    async def push_bulk(self, queue: str, jobs: Sequence[JobInput]) -> list[str]:
        validate_queue_name(queue)
        if type(jobs) is PlainInputs and jobs.specs.within(self.settings.max_payload_bytes):
            # job_entry's entries of jobs without options, validated already (Queue)
            names, datas = jobs.specs.names, jobs.datas
            plain = [{"name": n, "data": d} for n, d in zip(names, datas, strict=True)]
            return await self._push_entries(queue, plain) if plain else []
        entries = [
            job_entry(
                queue,
                job,
                custom_id_key="customId",
                max_payload_bytes=self.settings.max_payload_bytes,
                prefix=f"jobs[{i}]: ",
            )[0]
            for i, job in enumerate(jobs)
        ]
        if not entries:
            return []
        return await self._push_entries(queue, entries)

    async def push_flow(self, flow: Mapping[str, Any]) -> dict[str, Any]:
        entries, tree = flow_entries(flow, max_payload_bytes=self.settings.max_payload_bytes)
        await self._call("PUSHF", {"jobs": entries}, push=True)
        return tree

    # -- the worker loop --------------------------------------------------------

    async def pull(
        self, queue: str, count: int, *, owner: str, lock_ttl_ms: int, timeout_ms: int
    ) -> list[Lease]:
        fields = {
            "queue": queue,
            "count": count,
            "owner": owner,
            "lockTtl": lock_ttl_ms,
            "timeout": timeout_ms,
            "detach": True,
        }
        wait = timeout_ms / 1000 if isinstance(timeout_ms, int | float) else 0
        answer = await self._call(
            "PULLB",
            fields,
            timeout=self.settings.timeout + max(0, wait),
            on_late=self._give_back_late_pull,
        )
        tokens = answer.get("tokens") or []
        return [
            _lease(job, str(token), parse_fence(str(token)) or 0, view)
            for (job, view), token in zip(_pulled(answer), tokens, strict=True)
        ]

    def _give_back_late_pull(self, answer: dict[str, Any]) -> None:
        """A PULLB answer nobody waits for any more: release the jobs it claimed."""
        if answer.get("ok") is not True:
            return
        try:
            jobs = [job for job, _ in _pulled(answer)]
        except ConnectionLost:  # malformed: nothing to give back that can be named
            return
        tokens = answer.get("tokens") or []
        items = [
            (str(job["id"]), str(token))
            for job, token in zip(jobs, tokens, strict=False)
            if isinstance(job, dict) and "id" in job and isinstance(token, str)
        ]
        if not items:
            return
        task = asyncio.create_task(self._release_late(items), name="pgqueue:late-pull")
        self._late_releases.add(task)
        task.add_done_callback(self._late_releases.discard)

    async def _release_late(self, items: list[tuple[str, str]]) -> None:
        try:
            await self.release(items)
        except PgQueueError as exc:  # the leases end on their own
            log.warning("could not give back %d late-pulled jobs: %s", len(items), exc)

    async def ack(self, items: Sequence[AckRequest]) -> list[bool]:
        if not items:
            return []
        fields = {
            "ids": [i.job_id for i in items],
            "tokens": [i.token for i in items],
            "results": [i.result for i in items],
        }
        answer = await self._call("ACKB", fields)
        data = answer.get("data")
        ignored: set[int] = set()
        if isinstance(data, dict):
            _raise_undecided(data)
            ignored.update(data.get("ignoredIndices") or [])
            ignored.update(data.get("finalizedIndices") or [])  # finished by another claim
        return [i not in ignored for i in range(len(items))]

    async def fail(self, item: FailRequest) -> bool:
        fields: dict[str, Any] = {
            "id": item.job_id,
            "token": item.token,
            "error": item.error,
            "unrecoverable": item.unrecoverable,
        }
        if item.stacktrace is not None:
            fields["stack"] = list(item.stacktrace)
        try:
            answer = await self._call("FAIL", fields, job_id=item.job_id)
        except (LeaseLost, JobNotFound):
            return False
        data = answer.get("data")
        return not (isinstance(data, dict) and data.get("applied") is False)

    async def extend(self, items: Sequence[tuple[str, str]], duration_ms: int) -> list[Renewal]:
        """ExtendLocks for all; its answer counts the renewed leases and lists the
        cancelled jobs, so when some others were not renewed each one is
        extended again alone to learn which (extending twice is harmless)."""
        if not items:
            return []
        fields = {
            "ids": [job_id for job_id, _ in items],
            "tokens": [token for _, token in items],
            "durations": [duration_ms] * len(items),
        }
        answer = await self._call("ExtendLocks", fields)
        count = int(answer.get("count") or 0)
        cancelled = {str(job_id) for job_id in answer.get("cancelled") or []}
        renewals: list[Renewal] = [
            "cancelled" if job_id in cancelled else "renewed" for job_id, _ in items
        ]
        rest = [i for i, renewal in enumerate(renewals) if renewal == "renewed"]
        if count == 0:
            for i in rest:
                renewals[i] = "lost"
        elif count < len(rest):
            learned = await asyncio.gather(
                *(self._extend_one(*items[i], duration_ms) for i in rest)
            )
            for i, renewal in zip(rest, learned, strict=True):
                renewals[i] = renewal
        return renewals

    async def _extend_one(self, job_id: str, token: str, duration_ms: int) -> Renewal:
        fields = {"id": job_id, "token": token, "duration": duration_ms}
        try:
            await self._call("ExtendLock", fields, job_id=job_id)
        except JobCancelled:
            return "cancelled"
        except (LeaseLost, JobNotFound):
            return "lost"
        return "renewed"

    async def release(self, items: Sequence[tuple[str, str]]) -> None:
        """MoveToWait with each token (a stale claim is skipped, as in the engine)."""
        await asyncio.gather(*(self._release_one(job_id, token) for job_id, token in items))

    async def _release_one(self, job_id: str, token: str) -> None:
        with contextlib.suppress(LeaseLost, JobNotFound, InvalidState):
            await self._call("MoveToWait", {"id": job_id, "token": token}, job_id=job_id)

    async def update_progress(
        self, job_id: str, token: str | None, progress: Any, message: str | None
    ) -> None:
        fields: dict[str, Any] = {"id": job_id, "progress": progress}
        if message is not None:
            fields["message"] = message
        if token is not None:
            fields["token"] = token
        await self._call("Progress", fields, job_id=job_id)

    async def add_log(self, job_id: str, message: str, level: str) -> None:
        await self._call(
            "AddLog", {"id": job_id, "message": message, "level": level}, job_id=job_id
        )

    async def register_worker(
        self, worker_id: str, name: str, queues: Sequence[str], concurrency: int
    ) -> None:
        """RegisterWorker; remembered, because a broker forgets the workers registered
        on a connection that closes: a heartbeat then registers it again."""
        fields = {
            "workerId": worker_id,
            "name": name,
            "queues": list(queues),
            "concurrency": concurrency,
        }
        await self._call("RegisterWorker", fields)
        self._workers[worker_id] = fields

    async def worker_heartbeat(
        self, worker_id: str, active: int, processed: int, failed: int
    ) -> None:
        fields = {"id": worker_id, "activeJobs": active, "processed": processed, "failed": failed}
        try:
            await self._call("Heartbeat", fields)
        except JobNotFound:
            registration = self._workers.get(worker_id)
            if registration is None:
                raise
            await self._call("RegisterWorker", registration)
            await self._call("Heartbeat", fields)

    async def unregister_worker(self, worker_id: str) -> None:
        self._workers.pop(worker_id, None)
        with contextlib.suppress(JobNotFound):
            await self._call("UnregisterWorker", {"workerId": worker_id})

    # -- queries -----------------------------------------------------------------

    async def get_job(self, job_id: str) -> dict[str, Any] | None:
        try:
            answer = await self._call("GetJob", {"id": job_id}, read=True, job_id=job_id)
        except JobNotFound:
            return None
        job: dict[str, Any] = answer["job"]
        return job

    async def get_state(self, job_id: str) -> str:
        return str((await self._call("GetState", {"id": job_id}, read=True))["state"])

    async def get_result(self, job_id: str) -> tuple[bool, Any]:
        answer = await self._call("GetResult", {"id": job_id}, read=True, job_id=job_id)
        return ("result" in answer, answer.get("result"))

    async def get_counts(self, queue: str) -> dict[str, int]:
        counts = dict((await self._call("GetJobCounts", {"queue": queue}, read=True))["counts"])
        ready_when_paused = int(counts.pop("paused", 0) or 0)
        body = {key: int(counts.get(key) or 0) for key in JOB_STATES}
        if ready_when_paused:
            body["waiting"] += ready_when_paused
            paused = True
        elif body["waiting"] or body["prioritized"]:
            paused = False
        else:
            paused = await self.is_paused(queue)
        body["paused"] = int(paused)
        return body

    async def get_jobs(
        self, queue: str, states: Sequence[str] | None, offset: int, limit: int, asc: bool
    ) -> list[dict[str, Any]]:
        fields: dict[str, Any] = {"queue": queue, "offset": offset, "limit": limit, "asc": asc}
        if states:
            fields["state"] = list(states)
        return list((await self._call("GetJobs", fields, read=True))["jobs"])

    async def get_children_values(self, job_id: str) -> dict[str, Any]:
        answer = await self._call("GetChildrenValues", {"id": job_id}, read=True, job_id=job_id)
        return dict(answer["data"]["values"])

    async def get_children_failures(self, job_id: str, *, ignored: bool) -> dict[str, str]:
        cmd = "GetIgnoredChildrenFailures" if ignored else "GetFailedChildrenValues"
        answer = await self._call(cmd, {"id": job_id}, read=True, job_id=job_id)
        return {str(key): str(value) for key, value in answer["values"].items()}

    async def get_logs(self, job_id: str, start: int, end: int) -> list[dict[str, Any]]:
        fields = {"id": job_id, "start": start, "end": end}
        answer = await self._call("GetLogs", fields, read=True, job_id=job_id)
        return list(answer["data"]["logs"])

    # -- control ---------------------------------------------------------------------

    async def pause(self, queue: str) -> None:
        await self._call("Pause", {"queue": queue})

    async def resume(self, queue: str) -> None:
        await self._call("Resume", {"queue": queue})

    async def is_paused(self, queue: str) -> bool:
        return bool((await self._call("IsPaused", {"queue": queue}, read=True))["paused"])

    async def limits(self, op: str, queue: str, args: Sequence[Any]) -> Any:
        spec = LIMIT_OPS[op]
        answer = await self._call(
            spec.command, wire_fields(spec, queue, args), read=op.startswith(("get_", "is_"))
        )
        return None if spec.answer is None else answer["data"][spec.answer]

    async def drain(self, queue: str, include_delayed: bool) -> int:
        answer = await self._call("Drain", {"queue": queue, "delayed": include_delayed})
        return int(answer.get("count") or 0)

    async def clean(self, queue: str, grace_ms: int, state: str, limit: int) -> list[str]:
        fields = {"queue": queue, "grace": grace_ms, "state": state, "limit": limit}
        return [str(i) for i in (await self._call("Clean", fields)).get("ids") or []]

    async def obliterate(self, queue: str, force: bool) -> None:
        await self._call("Obliterate", {"queue": queue, "force": force})

    async def remove(self, job_id: str) -> None:
        await self._call("Cancel", {"id": job_id}, job_id=job_id)

    async def promote(self, job_id: str) -> None:
        await self._call("Promote", {"id": job_id}, job_id=job_id)

    async def retry_job(self, job_id: str) -> None:
        """RetryDlq of the job's queue (nothing happens for a job that is not
        dead-lettered, as in the engine)."""
        job = await self.get_job(job_id)
        if job is None:
            return
        await self._call("RetryDlq", {"queue": job["queue"], "jobId": job_id}, job_id=job_id)

    async def update_data(self, job_id: str, data: Any) -> None:
        await self._call("Update", {"id": job_id, "data": data}, job_id=job_id)

    async def change_priority(self, job_id: str, priority: int, lifo: bool | None) -> None:
        fields: dict[str, Any] = {"id": job_id, "priority": priority}
        if lifo is not None:
            fields["lifo"] = lifo
        await self._call("ChangePriority", fields, job_id=job_id)

    async def change_delay(self, job_id: str, delay_ms: int, token: str | None) -> None:
        await self._call("ChangeDelay", _with_token(job_id, token, delay=delay_ms), job_id=job_id)

    async def move_to_delayed(self, job_id: str, delay_ms: int, token: str | None) -> None:
        fields = _with_token(job_id, token, delay=delay_ms)
        await self._call("MoveToDelayed", fields, job_id=job_id)

    async def discard(self, job_id: str, token: str | None) -> None:
        await self._call("Discard", _with_token(job_id, token), job_id=job_id)

    async def remove_child_dependency(self, job_id: str) -> bool:
        answer = await self._call("RemoveChildDependency", {"id": job_id}, job_id=job_id)
        return bool(answer.get("removed"))

    async def remove_unprocessed_children(self, job_id: str) -> None:
        await self._call("RemoveUnprocessedChildren", {"id": job_id}, job_id=job_id)

    async def get_deduplication_job_id(self, queue: str, key: str) -> str | None:
        fields = {"queue": queue, "deduplicationId": key}
        owner = (await self._call("GetDeduplicationJobId", fields, read=True))["data"]["jobId"]
        return None if owner is None else str(owner)

    async def remove_deduplication_key(self, queue: str, key: str) -> int:
        fields = {"queue": queue, "deduplicationId": key}
        return int((await self._call("RemoveDeduplicationKey", fields))["data"]["count"])

    async def remove_job_deduplication_key(self, job_id: str) -> bool:
        answer = await self._call("RemoveJobDeduplicationKey", {"id": job_id}, job_id=job_id)
        return bool(answer["data"]["removed"])

    async def get_dlq(
        self, queue: str, limit: int, offset: int, *, reason: str | None = None
    ) -> list[dict[str, Any]]:
        selection: dict[str, Any] = {"limit": limit, "offset": offset}
        if reason is not None:
            selection["reason"] = reason
        fields = {"queue": queue, "count": limit, "filter": selection}
        return list((await self._call("Dlq", fields, read=True))["entries"])

    async def retry_dlq(
        self, queue: str, job_id: str | None, redrive: DlqRedrive = DlqRedrive()
    ) -> int:
        fields: dict[str, Any] = {"queue": queue}
        if job_id is not None:
            fields["jobId"] = job_id
        if redrive.limit is not None:
            fields["count"] = redrive.limit
        if redrive.reason is not None:
            fields["filter"] = {"reason": redrive.reason}
        if redrive.why is not None:
            fields["why"] = redrive.why
        return int((await self._call("RetryDlq", fields)).get("count") or 0)

    async def purge_dlq(
        self, queue: str, *, reason: str | None = None, why: str | None = None
    ) -> int:
        fields: dict[str, Any] = {"queue": queue}
        if reason is not None:
            fields["reason"] = reason
        if why is not None:
            fields["why"] = why
        return int((await self._call("PurgeDlq", fields)).get("count") or 0)

    async def get_dlq_stats(self, queue: str | None) -> dict[str, Any]:
        fields = {} if queue is None else {"queue": queue}
        return dict((await self._call("GetDlqStats", fields, read=True))["data"]["stats"])

    async def get_dlq_audit(self, queue: str | None, limit: int) -> list[dict[str, Any]]:
        fields: dict[str, Any] = {"limit": limit}
        if queue is not None:
            fields["queue"] = queue
        return list((await self._call("DlqAudit", fields, read=True))["records"])

    # -- schedulers ----------------------------------------------------------------------

    async def upsert_scheduler(
        self, name: str, queue: str, request: SchedulerInput
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "name": name,
            "queue": queue,
            "jobName": request.job_name,
            "data": request.data,
            "schedule": request.pattern,
            "repeatEvery": request.every_ms,
            "timezone": request.timezone,
            "immediately": request.immediately,
            "maxLimit": request.limit,
            "startDate": request.start_date,
            "endDate": request.end_date,
            "preventOverlap": request.prevent_overlap,
            "skipMissedOnRestart": request.skip_missed_on_restart,
            "skipIfNoWorker": request.skip_if_no_worker,
            "priority": request.priority,
            "uniqueKey": request.unique_key,
            "dedup": None if request.dedup is None else dict(request.dedup),
            "jobOptions": wire_options(request.job_options, custom_id_key="jobId") or None,
        }
        message = {k: v for k, v in fields.items() if v is not None or k == "data"}
        return dict((await self._call("Cron", message))["cron"])

    async def get_scheduler(self, name: str) -> dict[str, Any] | None:
        cron = (await self._call("CronGet", {"name": name}, read=True))["cron"]
        return None if cron is None else dict(cron)

    async def list_schedulers(self, queue: str | None) -> list[dict[str, Any]]:
        fields = {} if queue is None else {"queue": queue}
        return [dict(c) for c in (await self._call("CronList", fields, read=True))["crons"]]

    async def remove_scheduler(self, name: str) -> bool:
        try:
            await self._call("CronDelete", {"name": name})
        except JobNotFound:
            return False
        return True

    # -- the namespace as a whole ----------------------------------------------------------

    async def list_queues(self) -> list[str]:
        return [str(q) for q in (await self._call("ListQueues", {}, read=True))["queues"]]

    async def list_workers(self) -> list[dict[str, Any]]:
        workers = (await self._call("ListWorkers", {}, read=True))["data"]["workers"]
        return [{k: v for k, v in w.items() if k != "id"} for w in workers]

    async def add_webhook(
        self, url: str, events: Sequence[str], queue: str | None, secret: str | None
    ) -> str:
        fields: dict[str, Any] = {"url": url, "events": list(events)}
        if queue is not None:
            fields["queue"] = queue
        if secret is not None:
            fields["secret"] = secret
        return str((await self._call("AddWebhook", fields))["data"]["webhookId"])

    async def remove_webhook(self, webhook_id: str) -> bool:
        try:
            await self._call("RemoveWebhook", {"webhookId": webhook_id})
        except (JobNotFound, ValidationError):  # "Webhook not found"
            return False
        return True

    async def list_webhooks(self) -> list[dict[str, Any]]:
        return list((await self._call("ListWebhooks", {}, read=True))["data"]["webhooks"])

    async def list_brokers(self) -> list[dict[str, Any]]:
        return list((await self._call("ListBrokers", {}, read=True))["brokers"])

    async def alert_figures(self, queue: str | None) -> list[dict[str, Any]]:
        fields = {} if queue is None else {"queue": validate_queue_name(queue)}
        return list((await self._call("AlertFigures", fields, read=True))["queues"])

    # -- events --------------------------------------------------------------------------

    def events(self, queue: str, after: str | None) -> AsyncIterator[TransportEvent]:
        validate_queue_name(queue)
        return self.feeds.stream(queue, after)
