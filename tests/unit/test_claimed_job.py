"""``ClaimedJob`` reads its columns from the claim row; its ``Job`` record is the same."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from pgqueue.manager.rows import ClaimedJob, claimed_from_row, job_from_row

UTC = datetime.UTC


def claim_row(**changes: Any) -> dict[str, Any]:
    at = datetime.datetime(2026, 12, 3, 9, 0, 46, 333903, tzinfo=UTC)
    row: dict[str, Any] = {
        "session_live": True, "plan_needed": False, "namespace": "n", "id": "j1", "queue": "q",
        "name": "noop", "data": '{"i":0,"z":[1]}', "state": "active", "priority": 3,
        "lifo": False, "lifo_seq": None, "run_at": at, "sort_key": 1, "created_at": at,
        "expires_at": None, "attempts": 2, "max_attempts": 5, "backoff_type": "exponential",
        "backoff_ms": 1000, "backoff_max_ms": 3600000, "timeout_ms": 9000, "ttl_ms": None,
        "stall_timeout_ms": 4000, "remove_on_complete": False, "remove_on_fail": False,
        "custom_id": None, "unique_key": None, "unique_expires_at": None, "group_id": None,
        "parent_id": "p1", "parent_queue": "pq", "pending_deps": 0, "has_dependents": False,
        "stall_count": 0, "fence": 3, "lease_token": "3:abc", "lease_owner": "w",
        "lease_broker": "b", "lease_session": uuid.uuid4(),
        "lease_until": at + datetime.timedelta(seconds=30),
        "started_at": at + datetime.timedelta(milliseconds=5),
        "progress": '{"step":2}', "progress_message": "half", "attempt_log": "[]",
        "last_error": "boom", "stacktrace": '["at x"]', "opts": "{}", "dlq_retry_count": 0,
        "dlq_last_retry_at": None, "dlq_entered_at": None, "token_salt": uuid.uuid4(),
        "last_heartbeat_at": at + datetime.timedelta(seconds=1),
    }  # fmt: skip
    row.update(changes)
    return row


COLUMNS = [
    "id", "name", "queue", "data", "attempts", "max_attempts", "priority", "progress",
    "stacktrace", "created_at", "started_at", "last_heartbeat_at", "parent_id", "timeout_ms",
    "stall_timeout_ms",
]  # fmt: skip


def test_its_columns_are_its_job_s_fields() -> None:
    for row in (claim_row(), claim_row(progress=None, stacktrace=None, last_heartbeat_at=None)):
        claim = claimed_from_row(row)
        job = job_from_row(row, state="active")
        assert {c: getattr(claim, c) for c in COLUMNS} == {c: getattr(job, c) for c in COLUMNS}
        assert (claim.token, claim.fence) == ("3:abc", 3)
        assert claim.lease_until == row["lease_until"].timestamp() * 1000.0
        assert claim.job == job and claim.job is claim.job
        assert claim.job.data is claim.data  # decoded once


def test_claims_of_the_same_row_are_equal_and_unhashable() -> None:
    row = claim_row()
    assert claimed_from_row(row) == ClaimedJob(row)
    assert claimed_from_row(row) != claimed_from_row(claim_row(fence=4, lease_token="4:x"))
    assert ClaimedJob.__hash__ is None
    assert "j1" in repr(claimed_from_row(row))
