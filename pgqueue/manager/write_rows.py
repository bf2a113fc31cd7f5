"""The rows the batch writers take: one typed record per job, turned into the
statement's aligned column arrays in one place.

``job_finish_many`` (completed or failed, out of the hot table) takes
:class:`FinishRow`; ``job_requeue_many`` (back to pending: retry, stall,
release) takes :class:`RequeueRow`.  A record's field names are the query's
parameter names, and a JSON field says so once, in its declaration (``_JSON``:
an empty list or dict is stored as NULL; ``_JSON_ALWAYS``), so no caller
counts tuple slots or spells ``orjson.dumps``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import orjson

from pgqueue.manager.policy import FailureReason

__all__ = ["FinishRow", "RequeueRow", "column_arrays"]


def _json(value: Any) -> str | None:
    """A JSON column value: NULL for nothing (None, an empty list or dict)."""
    return orjson.dumps(value).decode() if value else None


def _json_always(value: Any) -> str:
    return orjson.dumps(value).decode()


# Field metadata: how a field's value becomes its column's (no metadata: as it is).
_JSON: Mapping[str, Callable[[Any], Any]] = {"encode": _json}
_JSON_ALWAYS: Mapping[str, Callable[[Any], Any]] = {"encode": _json_always}


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
    stacktrace: list[str] | None = field(default=None, metadata=_JSON)
    attempt_entry: dict[str, Any] | None = field(default=None, metadata=_JSON)
    attempts_inc: int = 0
    remove: bool | None = None  # None: the job's own remove-on-complete / -fail option
    # an ACK's count / {age, count}: kept in opts
    keep: dict[str, Any] | None = field(default=None, metadata=_JSON)


@dataclass(frozen=True, slots=True)
class RequeueRow:
    """One job for ``job_requeue_many``: back to pending after ``delay_ms``, with
    its outbox event (``event_type``, ``event_payload``)."""

    id: str
    fence: int | None
    expected_state: str
    event_type: str
    event_payload: dict[str, Any] = field(metadata=_JSON_ALWAYS)
    delay_ms: int = 0
    attempts_inc: int = 0
    stall_inc: int = 0
    error: str | None = None
    stacktrace: list[str] | None = field(default=None, metadata=_JSON)
    attempt_entry: dict[str, Any] | None = field(default=None, metadata=_JSON)
    token: str | None = None  # given: also a compare-and-set on the token and its lease


def column_arrays(
    kind: type[FinishRow] | type[RequeueRow], rows: Sequence[FinishRow] | Sequence[RequeueRow]
) -> dict[str, list[Any] | None]:
    """The aligned arrays of ``rows``, by parameter name (the records' field names).

    A column that is NULL in every row is sent as a NULL array: the statements
    only ``unnest`` their arrays together, which pads a shorter one (a NULL one
    is empty) with NULLs, so the rows are the same, and the driver does not
    encode (and type-check) a NULL per row (an ACK sets 7 of the 13 columns)."""
    columns: dict[str, list[Any] | None] = {}
    for column in fields(kind):
        values = [getattr(row, column.name) for row in rows]
        encode = column.metadata.get("encode")
        if encode is not None:
            values = [encode(v) for v in values]
        columns[column.name] = None if values and all(v is None for v in values) else values
    return columns
