"""A bulk push's jobs, read and validated into specs (nothing is written here).

``[{"name", "data", **opts}, ...]``: options may also sit under an ``"opts"``
key; every message names the job's index (``jobs[3]: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pgqueue.errors import ValidationError
from pgqueue.manager.options import JobSpec, build_job_spec
from pgqueue.vocabulary.names import validate_queue_name

__all__ = ["bulk_specs"]


def bulk_specs(
    queue: str, jobs: Sequence[Mapping[str, Any]], *, max_payload_bytes: int
) -> list[JobSpec]:
    """One validated spec per job of ``queue``, in order."""
    validate_queue_name(queue)
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
        specs.append(
            build_job_spec(
                queue,
                job.get("name", "default"),
                job.get("data"),
                opts,
                max_payload_bytes=max_payload_bytes,
                prefix=f"jobs[{i}]: ",
                queue_checked=True,
            )
        )
    return specs
