"""Typed job options, checked before anything is sent.

:class:`JobOptions` (declared with the options, in
:mod:`pgqueue.vocabulary.job_options`) lists the options
``Queue.add(name, data, **opts)`` accepts, in Python's snake_case (BullMQ /
bunqueue meaning; durations in milliseconds).  :func:`check_job` validates a
job with the engine's own rules (:func:`pgqueue.manager.options.build_job_spec`),
so a typo or a bad value is a :class:`~pgqueue.errors.ValidationError` naming the
field, raised before a byte goes to PostgreSQL or to a broker, whichever the
transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pgqueue.config import MAX_PAYLOAD_BYTES_DEFAULT
from pgqueue.errors import ValidationError
from pgqueue.manager.options import JOB_OPTIONS, JobSpec, build_job_spec
from pgqueue.vocabulary.job_options import JOB_OPTIONS as JOB_OPTIONS_DECLARED
from pgqueue.vocabulary.job_options import (
    BackoffOptions,
    DeduplicationOptions,
    DedupOptions,
    JobOptions,
    KeepJobs,
    RepeatOptions,
    camel_hints,
)
from pgqueue.vocabulary.names import validate_queue_name

__all__ = [
    "BackoffOptions",
    "DedupOptions",
    "DeduplicationOptions",
    "JobOptions",
    "KeepJobs",
    "RateLimit",
    "RepeatOptions",
    "check_job",
    "merge_options",
]


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``max`` jobs started per ``duration_ms`` (a worker's own limit)."""

    max: int
    duration_ms: int = 1_000

    def __post_init__(self) -> None:
        if isinstance(self.max, bool) or not isinstance(self.max, int) or self.max < 1:
            raise ValidationError("limiter.max must be a positive integer", field="limiter.max")
        if (
            isinstance(self.duration_ms, bool)
            or not isinstance(self.duration_ms, int)
            or self.duration_ms < 1
        ):
            raise ValidationError(
                "limiter.duration_ms must be a positive integer", field="limiter.duration_ms"
            )


# Names users bring from BullMQ / bunqueue's JavaScript API, for a helpful error.
_CAMEL_HINTS = camel_hints()

# Set by the SDK itself (flows), not by callers of Queue.add.
_INTERNAL = frozenset(
    name
    for option in JOB_OPTIONS_DECLARED
    if option.python is not None
    for name in (option.python, *option.python_aliases)
    if "sdk" not in option.transports or name != option.python
)


def merge_options(
    defaults: Mapping[str, Any] | None, options: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Per-job options over a queue's defaults (``backoff``/``dedup`` maps replace whole)."""
    merged = dict(defaults or {})
    merged.update(options or {})
    return merged


def check_job(
    queue: str,
    name: object,
    data: Any,
    options: Mapping[str, Any] | None,
    *,
    prefix: str = "",
    allow_internal: bool = False,
    max_payload_bytes: int = MAX_PAYLOAD_BYTES_DEFAULT,
    queue_checked: bool = False,
) -> JobSpec:
    """Raise :class:`ValidationError` (naming the field) unless the job is valid;
    return the engine's spec of it (which a transport may reuse).  ``queue_checked``:
    the caller validated the queue name already."""
    if not queue_checked:
        validate_queue_name(queue)
    if options:
        unknown = set(options) - JOB_OPTIONS
        if not allow_internal:
            unknown |= set(options) & _INTERNAL
        if unknown:
            hints = [
                f"{key} (use {_CAMEL_HINTS[key]})" if key in _CAMEL_HINTS else key
                for key in sorted(unknown)
            ]
            raise ValidationError(
                f"{prefix}unknown job option: {', '.join(hints)}", field=min(unknown)
            )
    return build_job_spec(
        queue,
        name,
        data,
        options,
        max_payload_bytes=max_payload_bytes,
        prefix=prefix,
        queue_checked=True,
    )
