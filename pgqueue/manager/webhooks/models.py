"""What the webhook operations return: registrations, their stats, the delivery log.

Times are milliseconds since the epoch (the wire's unit).  ``as_wire()`` gives
bunqueue's field names (``ListWebhooks``); a secret is never returned, only
whether one is set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pgqueue.db.executor import Row
from pgqueue.db.records import record_as_wire, record_from_row

__all__ = ["Webhook", "WebhookDelivery", "WebhookStats"]


@dataclass(frozen=True, slots=True)
class Webhook:
    """One registered webhook, with the counts of its kept deliveries."""

    id: str
    url: str
    events: list[str]
    queue: str | None
    has_secret: bool
    enabled: bool
    created_at: float
    last_triggered_at: float | None = None
    success_count: int = 0
    failure_count: int = 0
    pending: int = 0
    delivered: int = 0
    failed: int = 0

    @classmethod
    def from_row(cls, row: Row) -> Webhook:
        """From a registration row; the counts are optional (0 when absent)."""
        counts = {name: int(row.get(name) or 0) for name in _COUNTS}
        return record_from_row(
            cls,
            row,
            events=list(row["events"]),
            last_triggered_at=row.get("last_triggered_at"),
            **counts,
        )

    def as_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "events": list(self.events),
            "queue": self.queue,
            "createdAt": self.created_at,
            "lastTriggered": self.last_triggered_at,
            "successCount": self.success_count,
            "failureCount": self.failure_count,
            "enabled": self.enabled,
            "hasSecret": self.has_secret,
            "deliveries": {
                "pending": self.pending,
                "delivered": self.delivered,
                "failed": self.failed,
            },
        }


_COUNTS = ("success_count", "failure_count", "pending", "delivered", "failed")


@dataclass(frozen=True, slots=True)
class WebhookStats:
    """Totals over a namespace's webhooks (``ListWebhooks.stats``)."""

    total: int = 0
    enabled: int = 0
    pending: int = 0
    delivered: int = 0
    failed: int = 0

    @classmethod
    def of(cls, webhooks: list[Webhook]) -> WebhookStats:
        return cls(
            total=len(webhooks),
            enabled=sum(w.enabled for w in webhooks),
            pending=sum(w.pending for w in webhooks),
            delivered=sum(w.delivered for w in webhooks),
            failed=sum(w.failed for w in webhooks),
        )

    def as_wire(self) -> dict[str, int]:
        return record_as_wire(self, names=_STATS_NAMES)


_STATS_NAMES = {s: f"{s}Deliveries" for s in ("pending", "delivered", "failed")}


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One (webhook, event) delivery: its status and its last attempt."""

    id: str
    webhook_id: str
    event_id: int
    event: str
    queue: str
    job_id: str | None
    status: str
    attempts: int
    max_attempts: int
    last_status_code: int | None
    last_error: str | None
    body: str
    event_at: float
    created_at: float
    last_attempt_at: float | None
    next_attempt_at: float | None
    delivered_at: float | None

    @classmethod
    def from_row(cls, row: Row) -> WebhookDelivery:
        pending = row["status"] == "pending"
        return record_from_row(
            cls, row, next_attempt_at=row["next_attempt_at"] if pending else None
        )

    def as_wire(self) -> dict[str, Any]:
        return record_as_wire(self, omit=("body", "event_at"))
