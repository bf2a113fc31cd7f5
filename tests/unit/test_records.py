"""Typed records to the wire: each field by its camelCase name, in field order."""

from __future__ import annotations

from dataclasses import dataclass

from pgqueue.db.records import record_as_wire
from pgqueue.manager.models import JobCounts


@dataclass(frozen=True, slots=True)
class _Entry:
    job_id: str
    entered_at: float
    last_retry_at: float | None
    ids: list[str]
    secret: str


def test_a_record_goes_out_by_camelcase_names_in_field_order() -> None:
    entry = _Entry("j1", 1.0, None, ["a"], "s")
    wire = record_as_wire(entry, omit=("secret",), names={"ids": "jobIds"}, ids=["b"])
    assert list(wire.items()) == [
        ("jobId", "j1"),
        ("enteredAt", 1.0),
        ("lastRetryAt", None),
        ("jobIds", ["b"]),
    ]


def test_job_counts_keep_bunqueues_state_names_and_leave_paused_out() -> None:
    counts = JobCounts(waiting=1, waiting_children=2, failed=3, paused=True).as_dict()
    assert list(counts) == [
        "waiting", "prioritized", "delayed", "active", "waiting-children", "completed", "failed",
    ]  # fmt: skip
    assert counts["waiting-children"] == 2 and counts["failed"] == 3
