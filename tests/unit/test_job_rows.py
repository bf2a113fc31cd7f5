"""PULLB's jobs as rows (capability ``job-rows``): the SDK makes the same jobs of them."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from pgqueue.client.job import Job
from pgqueue.client.tcp import _HEAD, _pulled
from pgqueue.errors import ConnectionLost
from pgqueue.manager.rows import ClaimedJob
from pgqueue.protocol import pack, unpack
from pgqueue.server.commands.consuming import _job_rows
from pgqueue.server.pulled_view import pulled_view
from tests.unit.test_claimed_job import claim_row

AT = datetime.datetime(2026, 12, 3, 9, 0, 46, 333903, tzinfo=datetime.UTC)

SHAPES: list[dict[str, Any]] = [
    {},
    {"data": '{"n": 9007199254740993, "s": "é", "z": [1, {"b": 2, "a": 1}]}'},
    {"opts": '{"depends_on": ["a"], "tags": ["t"]}'},  # through job_view
    {"attempt_log": json.dumps([{"attempt": 1, "startedAt": 1.0e12, "failedAt": 1.1e12}])},
    {"started_at": None, "progress": None, "stacktrace": None, "last_heartbeat_at": None},
    {"timeout_ms": None, "parent_id": None, "stall_timeout_ms": None, "custom_id": "c"},
]


def _views() -> list[dict[str, Any]]:
    claims = [ClaimedJob(claim_row(id=f"j{i}", **shape)) for i, shape in enumerate(SHAPES)]
    return [pulled_view(claim) for claim in claims]


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    tokens = [f"{i + 1}:t{i}" for i in range(len(SHAPES))]
    return unpack(pack({"ok": True, **body, "tokens": tokens}, int64=True))


def _public(job: Job) -> dict[str, Any]:
    return {name: getattr(job, name) for name in Job.__slots__ if not name.startswith("_")}


def test_rows_make_the_same_jobs_as_job_dicts() -> None:
    views = _views()
    rows = _job_rows(views)
    assert rows is not None and rows["columns"] == list(views[0])
    as_dicts = _pulled(_answer({"jobs": views}))
    as_rows = _pulled(_answer(rows))
    assert all(view is None for _, view in as_dicts)
    for (whole, _), (head, view) in zip(as_dicts, as_rows, strict=True):
        assert list(head) == list(_HEAD)
        old = Job.from_wire(None, whole, token="1:t", fence=1)  # type: ignore[arg-type]
        new = Job.from_wire(None, head, token="1:t", fence=1, view=view)  # type: ignore[arg-type]
        assert _public(new) == _public(old)
        assert new.data is new.raw["data"]  # one object, as the whole dict's
        assert list(new.raw.items()) == list(old.raw.items())  # keys, order, values


def test_jobs_whose_keys_differ_go_as_dicts() -> None:
    views = _views()
    odd = dict(views[1])
    odd["extra"] = 1
    assert _job_rows([views[0], odd]) is None
    reordered = dict(reversed(list(views[1].items())))
    assert _job_rows([views[0], reordered]) is None
    assert _job_rows([]) is None


def test_a_broker_without_a_key_the_job_reads_gives_whole_dicts() -> None:
    views = [{k: v for k, v in view.items() if k != "stallTimeout"} for view in _views()]
    rows = _job_rows(views)
    assert rows is not None
    pulled = _pulled(_answer(rows))
    assert [job for job, _ in pulled] == views and all(view is None for _, view in pulled)


@pytest.mark.parametrize(
    "body",
    [
        {"rows": [[1, 2]]},
        {"rows": [[1, 2]], "columns": "id"},
        {"rows": [[1, 2], [1]], "columns": ["id", "name"]},
        {"rows": ["x"], "columns": ["id"]},
    ],
)
def test_rows_that_do_not_fit_their_columns_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ConnectionLost):
        _pulled(body)
