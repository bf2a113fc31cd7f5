"""Database rows to engine objects (one place that knows the column names)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pgqueue import jsontext
from pgqueue.db.executor import Row
from pgqueue.vocabulary.job_record import Job, new_job

__all__ = [
    "ClaimedJob",
    "claimed_from_row",
    "job_from_row",
    "json_or_none",
    "ms",
    "reported_state",
]

_UNSET: Any = object()


def ms(value: datetime | None) -> float | None:
    """A timestamp as milliseconds since the epoch (what the wire carries)."""
    return None if value is None else value.timestamp() * 1000.0


def json_or_none(text: str | None) -> Any:
    return None if text is None else jsontext.loads(text)


def reported_state(stored: str, run_at: datetime, priority: int, now: datetime) -> str:
    """The state a client sees: pending splits into delayed / prioritized / waiting."""
    if stored != "pending":
        return stored
    if run_at > now:
        return "delayed"
    return "prioritized" if priority > 0 else "waiting"


def job_from_row(row: Row, *, state: str | None = None, data: Any = _UNSET) -> Job:
    """The job of ``row``; ``data``: its decoded data when the caller has it already."""
    stored = row["state"]
    now = row.get("now")
    if state is None:
        state = reported_state(stored, row["run_at"], row["priority"], now) if now else stored
    return new_job(
        id=row["id"],
        queue=row["queue"],
        name=row["name"],
        data=json_or_none(row["data"]) if data is _UNSET else data,
        state=state,
        priority=row["priority"],
        lifo=row["lifo"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        created_at=row["created_at"].timestamp() * 1000.0,
        run_at=row["run_at"].timestamp() * 1000.0,
        started_at=ms(row["started_at"]),
        finished_at=ms(row.get("finished_at")),
        progress=json_or_none(row["progress"]),
        progress_message=row["progress_message"],
        result=json_or_none(row.get("result")),
        failed_reason=row.get("failed_reason"),
        error=row.get("error", row.get("last_error")),
        stacktrace=json_or_none(row["stacktrace"]),
        custom_id=row["custom_id"],
        unique_key=row["unique_key"],
        parent_id=row["parent_id"],
        parent_queue=row["parent_queue"],
        group_id=row["group_id"],
        fence=row["fence"],
        stall_count=row["stall_count"],
        timeout_ms=row["timeout_ms"],
        ttl_ms=row["ttl_ms"],
        remove_on_complete=row["remove_on_complete"],
        remove_on_fail=row["remove_on_fail"],
        backoff={
            "type": row["backoff_type"],
            "delay": row["backoff_ms"],
            "maxDelay": row["backoff_max_ms"],
        },
        attempt_log=json_or_none(row["attempt_log"]) or [],
        options=json_or_none(row["opts"]) or {},
        pending_dependencies=row.get("pending_deps") or 0,
        lease_until=ms(row.get("lease_until")),
        lease_owner=row.get("lease_owner"),
        stall_timeout_ms=row.get("stall_timeout_ms"),
        last_heartbeat_at=ms(row.get("last_heartbeat_at")),
    )


class ClaimedJob:
    """A job this caller now holds a lease on.

    ``token`` is the lock token (it encodes ``fence``, the per-job claim
    counter); ack, fail and heartbeat must present it.  ``attempts`` counts the
    failures consumed before this delivery.  ``lease_until`` is milliseconds on
    the database clock.

    Built from the claim's row: :attr:`job` (the whole record) is made on first
    use, so a caller that needs a few columns only (the SDK's embedded worker)
    reads them from the row without it.  The column properties give what
    ``job``'s fields of the same names hold.
    """

    __slots__ = ("_data", "_job", "_row", "fence", "lease_until", "token")

    def __init__(self, row: Row) -> None:
        self._row = row
        self._job: Job | None = None
        self._data: Any = _UNSET
        self.token: str = row["lease_token"]
        self.fence: int = row["fence"]
        self.lease_until: float = row["lease_until"].timestamp() * 1000.0

    @property
    def row(self) -> Row:
        """The claim's row, as the database returned it (read, never changed)."""
        return self._row

    @property
    def job(self) -> Job:
        if self._job is None:
            self._job = job_from_row(self._row, state="active", data=self.data)
        return self._job

    def __repr__(self) -> str:
        return f"ClaimedJob(id={self.id!r}, token={self.token!r}, lease_until={self.lease_until!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClaimedJob):
            return NotImplemented
        return (self.job, self.token, self.fence, self.lease_until) == (
            other.job,
            other.token,
            other.fence,
            other.lease_until,
        )

    __hash__ = None  # type: ignore[assignment]  # as before: a record with dicts

    # -- columns, read from the row ---------------------------------------------------

    @property
    def id(self) -> str:
        return str(self._row["id"])

    @property
    def name(self) -> str:
        return str(self._row["name"])

    @property
    def queue(self) -> str:
        return str(self._row["queue"])

    @property
    def data(self) -> Any:
        if self._data is _UNSET:
            self._data = json_or_none(self._row["data"])
        return self._data

    @property
    def attempts(self) -> int:
        return int(self._row["attempts"])

    @property
    def max_attempts(self) -> int:
        return int(self._row["max_attempts"])

    @property
    def priority(self) -> int:
        return int(self._row["priority"])

    @property
    def progress(self) -> Any:
        return json_or_none(self._row["progress"])

    @property
    def stacktrace(self) -> list[str] | None:
        return json_or_none(self._row["stacktrace"])  # type: ignore[no-any-return]

    @property
    def created_at(self) -> float:
        return float(self._row["created_at"].timestamp() * 1000.0)

    @property
    def started_at(self) -> float | None:
        return ms(self._row["started_at"])

    @property
    def last_heartbeat_at(self) -> float | None:
        return ms(self._row.get("last_heartbeat_at"))

    @property
    def parent_id(self) -> str | None:
        return self._row["parent_id"]  # type: ignore[no-any-return]

    @property
    def timeout_ms(self) -> int | None:
        return self._row["timeout_ms"]  # type: ignore[no-any-return]

    @property
    def stall_timeout_ms(self) -> int | None:
        return self._row.get("stall_timeout_ms")  # type: ignore[no-any-return]


def claimed_from_row(row: Row) -> ClaimedJob:
    return ClaimedJob(row)
