"""The typed write rows name exactly the array parameters of their statements."""

from __future__ import annotations

from pgqueue.db.queries import Q
from pgqueue.manager.write_rows import FinishRow, RequeueRow, column_arrays


def test_finish_rows_fill_the_arrays_of_job_finish_many() -> None:
    row = FinishRow("j1", None, 3, "active", "failed", stacktrace=[], attempt_entry={"a": 1})
    arrays = column_arrays(FinishRow, [row])
    scalars = {"namespace", "broker_id", "session_id", "skip_with_dependents"}
    assert set(arrays) | scalars == set(Q.job_finish_many.params)
    assert arrays["stacktrace"] is None and arrays["attempt_entry"] == ['{"a":1}']


def test_a_column_null_in_every_row_is_a_null_array() -> None:
    rows = [FinishRow(f"j{i}", f"{i}:t", i, "active", "completed", "null") for i in range(3)]
    arrays = column_arrays(FinishRow, rows)
    nulls = {"failed_reason", "error", "stacktrace", "attempt_entry", "remove", "keep"}
    assert {name for name, column in arrays.items() if column is None} == nulls
    assert arrays["result"] == ["null"] * 3 and arrays["attempts_inc"] == [0, 0, 0]
    mixed = column_arrays(
        FinishRow, [*rows, FinishRow("j9", None, 9, "active", "failed", error="e")]
    )
    assert mixed["error"] == [None, None, None, "e"] and mixed["token"] == [
        "0:t",
        "1:t",
        "2:t",
        None,
    ]


def test_requeue_rows_fill_the_arrays_of_job_requeue_many() -> None:
    row = RequeueRow("j1", 2, "active", "retried", {"reason": "released"}, token="2:x")
    arrays = column_arrays(RequeueRow, [row])
    assert set(arrays) | {"namespace"} == set(Q.job_requeue_many.params)
    assert arrays["event_payload"] == ['{"reason":"released"}'] and arrays["token"] == ["2:x"]


def test_no_rows_are_empty_arrays() -> None:
    assert all(column == [] for column in column_arrays(RequeueRow, []).values())
