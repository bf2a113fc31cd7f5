"""The rows the batch writers take: one typed record per job, turned into the
statement's aligned column arrays in one place.

``job_finish_many`` (completed or failed, out of the hot table) takes
:class:`FinishRow`; ``job_requeue_many`` (back to pending: retry, stall,
release) takes :class:`RequeueRow`.  A record's field names are the query's
parameter names, and its JSON fields are encoded here (an empty list or dict is
stored as NULL), so no caller counts tuple slots or spells ``orjson.dumps``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal

import orjson

from pgqueue.manager.policy import FailureReason

__all__ = ["FinishRow", "RequeueRow", "column_arrays"]


def _json(value: Any) -> str | None:
    """A JSON column value: NULL for nothing (None, an empty list or dict)."""
    return orjson.dumps(value).decode() if value else None


@dataclass(frozen=True, slots=True)
class FinishRow:
    """One job for ``job_finish_many``: a compare-and-set on (id, state, fence),
    and on the token with an unexpired lease when ``token`` is given."""

    id: str
    token: str | None
    fence: int | None
    expected_state: str
    outcome: Literal["completed", "failed"]
    result: str | None = None  # the encoded result of a completion
    failed_reason: FailureReason | None = None
    error: str | None = None
    stacktrace: list[str] | None = None
    attempt_entry: dict[str, Any] | None = None
    attempts_inc: int = 0
    remove: bool | None = None  # None: the job's own remove-on-complete / -fail option
    keep: dict[str, Any] | None = None  # an ACK's count / {age, count}: kept in opts

    def column_values(self) -> tuple[Any, ...]:
        return (
            self.id,
            self.token,
            self.fence,
            self.expected_state,
            self.outcome,
            self.result,
            self.failed_reason,
            self.error,
            _json(self.stacktrace),
            _json(self.attempt_entry),
            self.attempts_inc,
            self.remove,
            _json(self.keep),
        )


@dataclass(frozen=True, slots=True)
class RequeueRow:
    """One job for ``job_requeue_many``: back to pending after ``delay_ms``, with
    its outbox event (``event_type``, ``event_payload``)."""

    id: str
    fence: int | None
    expected_state: str
    event_type: str
    event_payload: dict[str, Any]
    delay_ms: int = 0
    attempts_inc: int = 0
    stall_inc: int = 0
    error: str | None = None
    stacktrace: list[str] | None = None
    attempt_entry: dict[str, Any] | None = None
    token: str | None = None  # given: also a compare-and-set on the token and its lease

    def column_values(self) -> tuple[Any, ...]:
        return (
            self.id,
            self.fence,
            self.expected_state,
            self.event_type,
            orjson.dumps(self.event_payload).decode(),
            self.delay_ms,
            self.attempts_inc,
            self.stall_inc,
            self.error,
            _json(self.stacktrace),
            _json(self.attempt_entry),
            self.token,
        )


def column_arrays(
    kind: type[FinishRow] | type[RequeueRow], rows: Sequence[FinishRow] | Sequence[RequeueRow]
) -> dict[str, list[Any]]:
    """The aligned arrays of ``rows``, by parameter name (the records' field names)."""
    names = [f.name for f in fields(kind)]
    columns: list[list[Any]] = [[] for _ in names]
    for row in rows:
        for column, value in zip(columns, row.column_values(), strict=True):
            column.append(value)
    return dict(zip(names, columns, strict=True))
