"""A pulled job's wire object read from the claim's row is the one ``job_view`` renders."""

from __future__ import annotations

import datetime
import itertools
import json
from typing import Any

from pgqueue.manager.rows import ClaimedJob, job_from_row
from pgqueue.protocol.job_view import job_view
from pgqueue.server.pulled_view import pulled_view
from tests.unit.test_claimed_job import claim_row

AT = datetime.datetime(2026, 12, 3, 9, 0, 46, 333903, tzinfo=datetime.UTC)
MS = datetime.timedelta(milliseconds=1)

SHAPES: dict[str, list[Any]] = {
    "started_at": [AT + 5 * MS, AT, AT - 5 * MS, None],
    "progress": ['{"step":2}', None, "null", "0", "7"],
    "stacktrace": ['["at x"]', None],
    "last_heartbeat_at": [AT + 1000 * MS, AT - 1000 * MS, None],
    "opts": ["{}", None, "null", '{"depends_on":["a","b"]}', '{"children_ids":["c"]}'],
    "attempt_log": [
        "[]",
        None,
        json.dumps([{"attempt": 1, "startedAt": 1.0e12, "failedAt": 1.1e12, "error": "x"}]),
    ],
    "pending_deps": [0, None, 2],
}


def old_view(row: dict[str, Any]) -> dict[str, Any]:
    return job_view(job_from_row(row, state="active"))


def test_every_shape_of_claim_gives_the_same_keys_in_the_same_order_with_the_same_values() -> None:
    names = list(SHAPES)
    checked = 0
    for values in itertools.product(*SHAPES.values()):
        shape = dict(zip(names, values, strict=True))
        row = claim_row(**shape)
        view = pulled_view(ClaimedJob(row))
        assert list(view.items()) == list(old_view(row).items()), shape
        checked += 1
    assert checked == 4 * 5 * 2 * 3 * 5 * 3 * 3


def test_other_columns_pass_through_as_they_are() -> None:
    row = claim_row(
        lifo=True, custom_id="c1", unique_key="u1", group_id="g", ttl_ms=5, timeout_ms=None,
        stall_timeout_ms=None, remove_on_complete=True, remove_on_fail=True, stall_count=2,
        backoff_type="fixed", backoff_ms=7, backoff_max_ms=None, progress_message=None,
    )  # fmt: skip
    assert list(pulled_view(ClaimedJob(row)).items()) == list(old_view(row).items())
    finished = claim_row(finished_at=AT + 9 * MS)
    assert pulled_view(ClaimedJob(finished)) == job_view(job_from_row(finished, state="active"))


def test_a_view_shares_its_data_with_the_claim_and_owns_its_lists() -> None:
    claim = ClaimedJob(claim_row())
    first, second = pulled_view(claim), pulled_view(claim)
    assert first["data"] is claim.data
    for key, value in first.items():
        if isinstance(value, list | dict) and key != "data":
            assert value is not second[key], key
