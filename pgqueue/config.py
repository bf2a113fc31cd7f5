"""One frozen :class:`Config` for the engine, with named defaults and validation.

The environment is read only at the edge (the CLI); everything inside takes a
``Config``.  :meth:`Config.validate` names the field that is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from pgqueue.errors import ConfigError

__all__ = [
    "HEARTBEAT_INTERVAL_MS_DEFAULT",
    "LEASE_MS_DEFAULT",
    "MAX_PAYLOAD_BYTES_DEFAULT",
    "NAMESPACE_PATTERN",
    "POLL_INTERVAL_MS_DEFAULT",
    "REAPER_INTERVAL_MS_DEFAULT",
    "SESSION_STALE_MS_DEFAULT",
    "Config",
    "at_least",
]

NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

LEASE_MS_DEFAULT = 30_000
LEASE_MS_MIN = 100
POLL_INTERVAL_MS_DEFAULT = 250
POLL_INTERVAL_MS_MIN = 5
HEARTBEAT_INTERVAL_MS_DEFAULT = 10_000
SESSION_STALE_MS_DEFAULT = 30_000
REAPER_INTERVAL_MS_DEFAULT = 1_000
LEADER_TTL_MS_DEFAULT = 15_000
MAX_PAYLOAD_BYTES_DEFAULT = 10 * 1024 * 1024
POOL_SIZE_DEFAULT = 10
STATEMENT_TIMEOUT_MS_DEFAULT = 30_000
LOCK_TIMEOUT_MS_DEFAULT = 5_000
IDLE_IN_TX_TIMEOUT_MS_DEFAULT = 30_000
MAX_STALLS_DEFAULT = 3
REAPER_BATCH_DEFAULT = 500
EVENT_BATCH_DEFAULT = 1_000


@dataclass(frozen=True, slots=True)
class Config:
    """Settings of one :class:`~pgqueue.runtime.PostgresQueueManager`.

    Every duration is in milliseconds.  ``lease_ms`` is the default lock TTL of
    a claim; ``session_heartbeat_ms`` and ``session_stale_ms`` drive broker
    sessions; ``reaper_interval_ms`` is how often every broker looks for
    expired leases; ``poll_interval_ms`` bounds how long a long-poll or the
    outbox reader waits without a NOTIFY; ``poll_only`` turns LISTEN off
    (PgBouncer in transaction mode).  ``webhook_allow_private`` lets webhooks
    reach private, loopback and link-local addresses (the SSRF guard refuses
    them by default; see docs/webhooks.md).  ``cron_interval_ms`` is how often
    every broker looks for due scheduler ticks; ``cron_catch_up_max`` bounds the
    missed ticks a scheduler with ``skipMissedOnRestart: false`` catches up.
    ``vacuum_jobs`` lets the leader VACUUM the jobs table (looking every
    ``vacuum_interval_ms``) once it has drained: at least ``vacuum_min_dead`` dead
    tuples, and ``vacuum_dead_ratio`` times more dead than live ones (see
    :mod:`pgqueue.maintenance.jobs_vacuum`).
    ``claim_events``: a broker server's projection wants every claim's ``active``
    event (for a history checker reading the outbox); by default it counts the
    claims from one ``claimed`` tally row per claim statement instead
    (:mod:`pgqueue.manager.interest`).
    """

    dsn: str
    namespace: str = "default"
    broker_id: str | None = None
    pool_min_size: int = 2
    pool_max_size: int = POOL_SIZE_DEFAULT
    lease_ms: int = LEASE_MS_DEFAULT
    poll_interval_ms: int = POLL_INTERVAL_MS_DEFAULT
    poll_only: bool = False
    session_heartbeat_ms: int = HEARTBEAT_INTERVAL_MS_DEFAULT
    session_stale_ms: int = SESSION_STALE_MS_DEFAULT
    leader_ttl_ms: int = LEADER_TTL_MS_DEFAULT
    reaper_interval_ms: int = REAPER_INTERVAL_MS_DEFAULT
    reaper_batch: int = REAPER_BATCH_DEFAULT
    max_payload_bytes: int = MAX_PAYLOAD_BYTES_DEFAULT
    max_stalls_default: int = MAX_STALLS_DEFAULT
    statement_timeout_ms: int = STATEMENT_TIMEOUT_MS_DEFAULT
    lock_timeout_ms: int = LOCK_TIMEOUT_MS_DEFAULT
    idle_in_transaction_timeout_ms: int = IDLE_IN_TX_TIMEOUT_MS_DEFAULT
    event_batch: int = EVENT_BATCH_DEFAULT
    retention_interval_ms: int = 60_000
    retention_completed_ms: int = 86_400_000
    retention_failed_ms: int = 7 * 86_400_000
    retention_events_ms: int = 86_400_000
    retention_events_per_queue: int = 100_000
    worker_stale_ms: int = 90_000
    cron_interval_ms: int = 200
    cron_catch_up_max: int = 1_000
    vacuum_jobs: bool = True
    vacuum_interval_ms: int = 1_000
    vacuum_min_dead: int = 2_000
    vacuum_dead_ratio: int = 10
    run_maintenance: bool = True
    webhook_allow_private: bool = False
    unsafe_durability: bool = False
    claim_events: bool = False
    statement_cache_size: int = 256
    server_settings: dict[str, str] = field(default_factory=dict)

    def with_changes(self, **changes: Any) -> Config:
        """A copy with some fields changed, validated."""
        return replace(self, **changes).validate()

    def validate(self) -> Config:
        """Return ``self`` when every field is valid, else raise :class:`ConfigError`."""
        if not self.dsn:
            raise ConfigError("dsn is required")
        if not NAMESPACE_PATTERN.match(self.namespace):
            raise ConfigError(
                "namespace must be 1-64 characters of letters, digits, '_', '.', ':' or '-'"
            )
        if self.broker_id is not None and not (
            0 < len(self.broker_id) <= 200 and self.broker_id.isprintable()
        ):
            raise ConfigError("broker_id must be 1-200 printable characters")
        at_least("pool_min_size", self.pool_min_size, 1)
        at_least("pool_max_size", self.pool_max_size, self.pool_min_size)
        at_least("lease_ms", self.lease_ms, LEASE_MS_MIN)
        at_least("poll_interval_ms", self.poll_interval_ms, POLL_INTERVAL_MS_MIN)
        at_least("session_heartbeat_ms", self.session_heartbeat_ms, 50)
        at_least("session_stale_ms", self.session_stale_ms, 2 * self.session_heartbeat_ms)
        at_least("leader_ttl_ms", self.leader_ttl_ms, 2 * self.reaper_interval_ms)
        at_least("reaper_interval_ms", self.reaper_interval_ms, 10)
        at_least("reaper_batch", self.reaper_batch, 1)
        at_least("max_payload_bytes", self.max_payload_bytes, 1024)
        at_least("max_stalls_default", self.max_stalls_default, 1)
        at_least("statement_timeout_ms", self.statement_timeout_ms, 0)
        at_least("lock_timeout_ms", self.lock_timeout_ms, 0)
        at_least("idle_in_transaction_timeout_ms", self.idle_in_transaction_timeout_ms, 0)
        at_least("event_batch", self.event_batch, 1)
        at_least("retention_interval_ms", self.retention_interval_ms, 10)
        at_least("retention_completed_ms", self.retention_completed_ms, 0)
        at_least("retention_failed_ms", self.retention_failed_ms, 0)
        at_least("retention_events_ms", self.retention_events_ms, 1_000)
        at_least("retention_events_per_queue", self.retention_events_per_queue, 1)
        at_least("worker_stale_ms", self.worker_stale_ms, 1_000)
        at_least("cron_interval_ms", self.cron_interval_ms, 10)
        at_least("cron_catch_up_max", self.cron_catch_up_max, 1)
        at_least("vacuum_interval_ms", self.vacuum_interval_ms, 10)
        at_least("vacuum_min_dead", self.vacuum_min_dead, 1)
        at_least("vacuum_dead_ratio", self.vacuum_dead_ratio, 1)
        at_least("statement_cache_size", self.statement_cache_size, 0)
        return self


def at_least(name: str, value: int, minimum: int) -> None:
    """Refuse a setting that is not an integer of at least ``minimum``, naming it."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer")
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}")
