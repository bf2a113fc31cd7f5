"""Admission reads each column of ``job_insert_batch`` from the job's spec by name."""

from __future__ import annotations

from pgqueue.db.queries import Q
from pgqueue.manager import admission
from pgqueue.manager.options import JobSpec


def test_every_insert_column_is_read_from_the_spec_or_the_plan() -> None:
    spec = JobSpec(queue="q", name="n", data_json="1")
    columns = {column: read(spec) for column, read in admission._spec_columns()}
    batch = {p.removesuffix("_batch") for p in Q.job_insert_batch.params if p.endswith("_batch")}
    assert set(columns) | set(admission._FROM_PLAN) == batch
    assert columns["data"] == "1" and columns["backoff_type"] == spec.backoff.type
