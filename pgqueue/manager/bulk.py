"""A bulk push's jobs, read and validated into specs (nothing is written here).

``[{"name", "data", **opts}, ...]``: options may also sit under an ``"opts"``
key; every message names the job's index (``jobs[3]: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pgqueue.errors import ValidationError
from pgqueue.manager.options import JobSpec, build_job_spec, plain_specs
from pgqueue.vocabulary.names import validate_queue_name

__all__ = ["bulk_specs", "entry_spec"]


_PLAIN_KEYS = frozenset({"name", "data"})
"""The keys of a job without options."""


def bulk_specs(
    queue: str, jobs: Sequence[Mapping[str, Any]], *, max_payload_bytes: int
) -> Sequence[JobSpec]:
    """One validated spec per job of ``queue``, in order: jobs without options checked
    for the whole batch at once (:func:`plain_specs`, which leaves a doubtful one to the
    per-job check that names it)."""
    validate_queue_name(queue)
    if type(jobs) in (list, tuple) and all(
        type(job) is dict and _PLAIN_KEYS.issuperset(job) for job in jobs
    ):
        plain = plain_specs(
            queue,
            [job.get("name", "default") for job in jobs],
            [job.get("data") for job in jobs],
            max_payload_bytes=max_payload_bytes,
        )
        if plain is not None:
            return plain
    specs = []
    for i, job in enumerate(jobs):
        if not isinstance(job, Mapping):
            raise ValidationError(f"jobs[{i}]: must be a map", field="jobs")
        opts = {k: v for k, v in job.items() if k not in ("name", "data", "opts")}
        nested = job.get("opts")
        if nested is not None:
            if not isinstance(nested, Mapping):
                raise ValidationError(f"jobs[{i}]: opts must be a map", field="opts")
            opts.update(nested)
        specs.append(entry_spec(queue, job, opts, f"jobs[{i}]", max_payload_bytes))
    return specs


def entry_spec(
    queue: str, job: Mapping[str, Any], opts: Mapping[str, Any], where: str, max_payload_bytes: int
) -> JobSpec:
    """The spec of one job given as a map (``name``, ``data``) with its ``opts``, of a
    checked ``queue``; an error names the job by ``where``."""
    name, data = job.get("name", "default"), job.get("data")
    return build_job_spec(
        queue,
        name,
        data,
        opts,
        max_payload_bytes=max_payload_bytes,
        prefix=f"{where}: ",
        queue_checked=True,
    )
