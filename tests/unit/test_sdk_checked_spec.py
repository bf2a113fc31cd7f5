"""A transport reuses the spec ``Queue`` validated only when it is what it would build;
a job without options gets the dataclass's default spec, built the fast way."""

from __future__ import annotations

from dataclasses import MISSING, FrozenInstanceError, fields

import pytest

from pgqueue.client.options import check_job
from pgqueue.client.transport import JobInput, checked_spec
from pgqueue.client.wire_options import job_entry
from pgqueue.errors import ValidationError
from pgqueue.manager.options import JobSpec, build_job_spec, plain_spec


def _input(queue: str, data: object, **opts: object) -> JobInput:
    return JobInput("n", data, opts, check_job(queue, "n", data, opts))


def test_the_validated_spec_is_the_one_the_transport_would_build() -> None:
    job = _input("q", {"b": 1, "a": [2**70, "é"]}, priority=3, job_id="c1")
    built = build_job_spec("q", "n", job.data, dict(job.opts), max_payload_bytes=1 << 20)
    assert checked_spec(job, "q", 1 << 20) == built
    assert checked_spec(job, "q", 1 << 20) is job.spec


def test_no_reuse_for_another_queue_or_without_a_spec() -> None:
    job = _input("q", {"a": 1})
    assert checked_spec(job, "other", 1 << 20) is None
    assert checked_spec(JobInput("n", {"a": 1}), "q", 1 << 20) is None


def test_a_smaller_limit_checks_again() -> None:
    """The data's UTF-8 size decides: the spec was checked against the default limit."""
    data = {"s": "é" * 10}  # 20 bytes of text inside, 29 bytes of JSON
    job = _input("q", data)
    assert job.spec is not None
    size = len(job.spec.data_json.encode())
    assert checked_spec(job, "q", size) is job.spec
    assert checked_spec(job, "q", size - 1) is None
    with pytest.raises(ValidationError, match="too large"):
        job_entry("q", job, custom_id_key="jobId", max_payload_bytes=size - 1)


def test_a_plain_spec_is_the_dataclass_default() -> None:
    """plain_spec shares its defaults between specs: none may be a mutable default_factory."""
    assert all(f.default_factory is MISSING for f in fields(JobSpec))
    spec = plain_spec("q", "n", "{}")
    assert spec == JobSpec(queue="q", name="n", data_json="{}")
    assert repr(spec) == repr(JobSpec(queue="q", name="n", data_json="{}"))
    assert hash(spec) == hash(JobSpec(queue="q", name="n", data_json="{}"))
    with pytest.raises(FrozenInstanceError):
        spec.queue = "other"  # type: ignore[misc]
    assert build_job_spec("q", "n", None, {}, max_payload_bytes=10) == spec.__class__(
        queue="q", name="n", data_json="null"
    )
