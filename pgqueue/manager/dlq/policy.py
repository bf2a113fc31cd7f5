"""DLQ policy: per-queue DLQ and stall settings, filters, the auto-retry schedule.

Pure functions, no I/O.  Settings use the wire's camelCase names (what
``SetDlqConfig`` / ``SetStallConfig`` carry); snake_case spellings are
accepted too.  A setter takes a *patch*: the fields given replace the stored
ones, the others keep their value (as bunqueue does).  Bad input raises
:class:`~pgqueue.errors.ValidationError` naming the field, before anything is
written.

The auto-retry schedule (also computed in SQL by ``pgqueue_dlq_next_retry_at``,
migration 0002): the first auto-retry of an entry is due ``autoRetryInterval``
after it entered the DLQ; after retry *n* the next is due
``autoRetryInterval * 2^(n-1)`` later (the exponent stops growing at 16);
none after ``maxAutoRetries``.  An entry expires ``maxAge`` after it entered
(``maxAge: null``: never).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict, Unpack

from pgqueue.errors import ValidationError
from pgqueue.vocabulary.checks import DAY_MS, MAX_EPOCH_MS, check_integer, number_fault
from pgqueue.vocabulary.names import validate_job_id
from pgqueue.vocabulary.states import FAILURE_REASONS

__all__ = [
    "DEFAULT_DLQ_CONFIG",
    "DLQ_REASONS",
    "MAX_BACKOFF_EXPONENT",
    "DlqConfig",
    "DlqFilter",
    "DlqSelection",
    "StallConfig",
    "auto_retry_delay_ms",
    "build_filter",
    "complete_dlq_config",
    "complete_stall_config",
    "default_stall_config",
    "validate_actor",
    "validate_dlq_config_patch",
    "validate_stall_config_patch",
    "validate_why",
]

MAX_BACKOFF_EXPONENT = 16
MAX_WHY_LENGTH = 4096
MAX_FILTER_IDS = 100_000
MAX_LIST_LIMIT = 10_000

DLQ_REASONS = FAILURE_REASONS
"""Every reason a DLQ entry can carry (the CHECK of pgqueue_dlq), wire order first."""


class DlqConfig(TypedDict):
    """A queue's DLQ settings (wire names)."""

    autoRetry: bool
    autoRetryInterval: int
    maxAutoRetries: int
    maxAge: int | None
    maxEntries: int


class StallConfig(TypedDict):
    """A queue's stall-detection settings (wire names)."""

    enabled: bool
    stallInterval: int
    maxStalls: int
    gracePeriod: int


DEFAULT_DLQ_CONFIG = DlqConfig(
    autoRetry=False,
    autoRetryInterval=3_600_000,
    maxAutoRetries=3,
    maxAge=7 * DAY_MS,
    maxEntries=10_000,
)


def default_stall_config(max_stalls: int = 3) -> StallConfig:
    """The stall settings of a queue nobody configured (``max_stalls``: the engine's)."""
    return StallConfig(enabled=True, stallInterval=30_000, maxStalls=max_stalls, gracePeriod=5_000)


# field: (snake_case alias, kind, minimum, maximum, nullable)
_DLQ_FIELDS: dict[str, tuple[str, str, int, int, bool]] = {
    "autoRetry": ("auto_retry", "bool", 0, 0, False),
    "autoRetryInterval": ("auto_retry_interval", "int", 1, 30 * DAY_MS, False),
    "maxAutoRetries": ("max_auto_retries", "int", 0, 1000, False),
    "maxAge": ("max_age", "int", 1, 3650 * DAY_MS, True),
    "maxEntries": ("max_entries", "int", 1, 10_000_000, False),
}
_STALL_FIELDS: dict[str, tuple[str, str, int, int, bool]] = {
    "enabled": ("enabled", "bool", 0, 0, False),
    "stallInterval": ("stall_interval", "int", 1, DAY_MS, False),
    "maxStalls": ("max_stalls", "int", 0, 1000, False),
    "gracePeriod": ("grace_period", "int", 0, DAY_MS, False),
}


def _patch(
    what: str, patch: object, fields: Mapping[str, tuple[str, str, int, int, bool]]
) -> dict[str, Any]:
    if not isinstance(patch, Mapping):
        raise ValidationError(f"{what} must be a map", field="config")
    aliases = {alias: name for name, (alias, *_rest) in fields.items()}
    out: dict[str, Any] = {}
    for key, value in patch.items():
        name = key if key in fields else aliases.get(key) if isinstance(key, str) else None
        if name is None:
            raise ValidationError(f"unknown {what} field: {key}", field=str(key))
        if name in out:
            raise ValidationError(f"{what} field {name} given twice", field=name)
        _, kind, lo, hi, nullable = fields[name]
        if value is None and nullable:
            out[name] = None
        elif kind == "bool":
            if not isinstance(value, bool):
                raise ValidationError(f"{name} must be a boolean", field=name)
            out[name] = value
        else:
            out[name] = check_integer(value, name, lo, hi)
    return out


def validate_dlq_config_patch(patch: object) -> dict[str, Any]:
    """The validated DLQ config fields of ``patch``, under their wire names."""
    return _patch("DLQ config", patch, _DLQ_FIELDS)


def validate_stall_config_patch(patch: object) -> dict[str, Any]:
    """The validated stall config fields of ``patch``, under their wire names."""
    return _patch("stall config", patch, _STALL_FIELDS)


def complete_dlq_config(stored: Mapping[str, Any] | None) -> DlqConfig:
    """A stored DLQ config with the defaults filled in (unknown keys dropped)."""
    merged = {**DEFAULT_DLQ_CONFIG, **{k: v for k, v in (stored or {}).items() if k in _DLQ_FIELDS}}
    return DlqConfig(
        autoRetry=bool(merged["autoRetry"]),
        autoRetryInterval=int(merged["autoRetryInterval"]),
        maxAutoRetries=int(merged["maxAutoRetries"]),
        maxAge=None if merged["maxAge"] is None else int(merged["maxAge"]),
        maxEntries=int(merged["maxEntries"]),
    )


def complete_stall_config(stored: Mapping[str, Any] | None, max_stalls: int = 3) -> StallConfig:
    """A stored stall config with the defaults filled in (unknown keys dropped)."""
    defaults = default_stall_config(max_stalls)
    merged = {**defaults, **{k: v for k, v in (stored or {}).items() if k in _STALL_FIELDS}}
    return StallConfig(
        enabled=bool(merged["enabled"]),
        stallInterval=int(merged["stallInterval"]),
        maxStalls=int(merged["maxStalls"]),
        gracePeriod=int(merged["gracePeriod"]),
    )


def auto_retry_delay_ms(config: DlqConfig, retry_count: int) -> int | None:
    """How long after the entry (``retry_count`` 0) or after the last auto-retry the
    next auto-retry is due; ``None`` when auto-retry is off or spent."""
    if not config["autoRetry"] or retry_count >= config["maxAutoRetries"]:
        return None
    exponent = min(max(retry_count - 1, 0), MAX_BACKOFF_EXPONENT)
    return int(config["autoRetryInterval"]) << exponent


def validate_actor(actor: object) -> str:
    """Who asks (the auth token's name, or a service name): required."""
    if not isinstance(actor, str) or not actor or len(actor) > 256 or not actor.isprintable():
        raise ValidationError(
            "actor must be a non-empty string of at most 256 printable characters", field="actor"
        )
    return actor


def validate_why(why: object) -> str | None:
    """The operator's optional reason text."""
    if why is None:
        return None
    if not isinstance(why, str):
        raise ValidationError("why must be a string", field="why")
    if len(why) > MAX_WHY_LENGTH:
        raise ValidationError(f"why must be at most {MAX_WHY_LENGTH} characters", field="why")
    if "\x00" in why:
        raise ValidationError("why must not contain NUL characters", field="why")
    return why


@dataclass(frozen=True, slots=True)
class DlqFilter:
    """Which entries an operation selects; every field ``None`` means *any*.

    ``older_than_ms`` / ``newer_than_ms`` are instants in milliseconds since
    the epoch (the wire's ``olderThan`` / ``newerThan``): entries that entered
    at or before / at or after them.  ``retriable``: due for an auto-retry now
    under the queue's config (bunqueue's ``canAutoRetry``); ``expired``: past
    ``maxAge``.  ``limit``: at most this many, oldest entries first.
    ``now``: the instant ``retriable`` and ``expired`` are judged at (``None``:
    the database clock; the upkeep's test clock, never recorded).
    """

    job_ids: tuple[str, ...] | None = None
    reason: str | None = None
    older_than_ms: float | None = None
    newer_than_ms: float | None = None
    retriable: bool | None = None
    expired: bool | None = None
    limit: int | None = None
    now: datetime | None = None

    def record(self) -> dict[str, Any]:
        """The filter as the audit trail stores it (wire names, set fields only)."""
        fields = {
            "jobIds": list(self.job_ids) if self.job_ids is not None else None,
            "reason": self.reason,
            "olderThan": self.older_than_ms,
            "newerThan": self.newer_than_ms,
            "retriable": self.retriable,
            "expired": self.expired,
            "limit": self.limit,
        }
        return {key: value for key, value in fields.items() if value is not None}

    def args(self) -> tuple[Any, ...]:
        """The selection parameters of the DLQ queries (``SELECTION_PARAMS``)."""
        return (
            list(self.job_ids) if self.job_ids is not None else None,
            self.reason,
            self.older_than_ms,
            self.newer_than_ms,
            self.retriable,
            self.expired,
            self.limit,
            self.now,
        )


def _instant(label: str, value: object) -> float | None:
    if value is None:
        return None
    fault = number_fault(value, 0, MAX_EPOCH_MS)
    if fault is None:
        return float(value)  # type: ignore[arg-type]
    if fault.startswith("must be at"):
        raise ValidationError(f"{label} must be a time in ms since the epoch", field=label)
    raise ValidationError(f"{label} must be a finite number (ms since the epoch)", field=label)


def _flag(label: str, value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValidationError(f"{label} must be a boolean", field=label)


class DlqSelection(TypedDict, total=False):
    """Which dead-letter entries an operation takes: of one ``reason``, dead-lettered
    before ``older_than_ms`` / after ``newer_than_ms`` (instants, ms since the epoch,
    like the wire's ``olderThan`` / ``newerThan``), due for an auto-retry now
    (``retriable``), past ``maxAge`` (``expired``)."""

    reason: str | None
    older_than_ms: float | None
    newer_than_ms: float | None
    retriable: bool | None
    expired: bool | None


def build_filter(
    *,
    job_ids: Sequence[str] | None = None,
    limit: int | None = None,
    max_limit: int | None = None,
    **selection: Unpack[DlqSelection],
) -> DlqFilter:
    """Validate a selection of DLQ entries."""
    unknown = selection.keys() - DlqSelection.__optional_keys__
    if unknown:
        raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r}")
    reason = selection.get("reason")
    ids: tuple[str, ...] | None = None
    if job_ids is not None:
        if isinstance(job_ids, str) or not isinstance(job_ids, Sequence):
            raise ValidationError("jobIds must be a list of job ids", field="jobIds")
        if len(job_ids) > MAX_FILTER_IDS:
            raise ValidationError(f"jobIds must hold at most {MAX_FILTER_IDS} ids", field="jobIds")
        ids = tuple(dict.fromkeys(validate_job_id(job_id, "jobIds") for job_id in job_ids))
    if reason is not None and reason not in DLQ_REASONS:
        raise ValidationError(f"reason must be one of {', '.join(DLQ_REASONS)}", field="reason")
    if limit is not None:
        limit = check_integer(limit, "limit", 1, max_limit or 2**31 - 1)
    return DlqFilter(
        job_ids=ids,
        reason=reason,
        older_than_ms=_instant("olderThan", selection.get("older_than_ms")),
        newer_than_ms=_instant("newerThan", selection.get("newer_than_ms")),
        retriable=_flag("retriable", selection.get("retriable")),
        expired=_flag("expired", selection.get("expired")),
        limit=limit,
    )
