"""Webhook policy without I/O: event names, registration checks, bodies, signatures, backoff.

Event names (bunqueue's five, then pgqueue's extensions) and the outbox
event each one is made from:

==================  ==============  ==============================================
webhook event       outbox type     body fields besides event/timestamp/jobId/queue
==================  ==============  ==============================================
``job.pushed``      ``pushed``      ``data`` {name, state, delay}
``job.started``     ``active``      ``data`` {attempt, broker}
``job.completed``   ``completed``   ``data`` = the job's result
``job.failed``      ``failed``      ``error``; ``data`` {attemptsMade, terminal, reason}
``job.progress``    ``progress``    ``progress``; ``data`` {progress, message}
``job.stalled``     ``stalled``     ``data`` {stallCount, owner, reason}
``job.dlq``         ``dlq``         ``data`` {reason}
``job.redriven``    ``redriven``    ``data`` {prev, state, action, ...}
==================  ==============  ==============================================

``job.failed`` fires for every failed attempt, as bunqueue does; ``data.terminal``
tells a final failure from one that will be retried (a final failure is also
followed by ``job.dlq`` unless the job was removed on fail).

Every body also carries ``deliveryId`` and ``eventId``: the signature covers
them, so a receiver can de-duplicate on a signed value.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from pgqueue import jsontext
from pgqueue.errors import ValidationError
from pgqueue.vocabulary.names import validate_queue_name

__all__ = [
    "EVENT_OF_OUTBOX_TYPE",
    "WEBHOOK_EVENTS",
    "backoff_ms",
    "build_body",
    "outbox_types_and_events",
    "sign",
    "validate_events",
    "validate_queue_filter",
    "validate_secret",
]

EVENT_OF_OUTBOX_TYPE: Mapping[str, str] = {
    "pushed": "job.pushed",
    "active": "job.started",
    "completed": "job.completed",
    "failed": "job.failed",
    "progress": "job.progress",
    "stalled": "job.stalled",
    "dlq": "job.dlq",
    "redriven": "job.redriven",
}
WEBHOOK_EVENTS: tuple[str, ...] = tuple(EVENT_OF_OUTBOX_TYPE.values())

MAX_SECRET_LENGTH = 1024


def validate_events(events: object) -> list[str]:
    """A non-empty list of known event names, duplicates dropped, order kept."""
    if not isinstance(events, list | tuple) or not events:
        raise ValidationError("events must be a non-empty array of event names", field="events")
    seen: list[str] = []
    for event in events:
        if not isinstance(event, str) or event not in WEBHOOK_EVENTS:
            raise ValidationError(
                f"Unknown webhook event: {str(event)[:100]} "
                f"(expected one of {', '.join(WEBHOOK_EVENTS)})",
                field="events",
            )
        if event not in seen:
            seen.append(event)
    return seen


def validate_queue_filter(queue: object) -> str | None:
    return None if queue is None else validate_queue_name(queue)


def validate_secret(secret: object) -> str | None:
    """An optional signing secret: a non-empty string of at most 1024 characters."""
    if secret is None:
        return None
    if not isinstance(secret, str) or not secret:
        raise ValidationError("secret must be a non-empty string", field="secret")
    if len(secret) > MAX_SECRET_LENGTH or "\x00" in secret:
        raise ValidationError(
            f"secret must be at most {MAX_SECRET_LENGTH} characters without NUL", field="secret"
        )
    return secret


def build_body(
    event: str,
    *,
    delivery_id: str,
    event_id: int,
    timestamp_ms: float,
    job_id: str | None,
    queue: str,
    payload: Mapping[str, Any],
) -> str:
    """The JSON body POSTed for one delivery (see the module docstring)."""
    body: dict[str, Any] = {
        "event": event,
        "timestamp": round(timestamp_ms),
        "jobId": job_id,
        "queue": queue,
    }
    if event == "job.completed":
        if "returnvalue" in payload:
            body["data"] = payload["returnvalue"]
        if payload.get("returnvalueTruncated"):
            body["dataTruncated"] = True
    elif event == "job.failed":
        body["error"] = payload.get("failedReason") or "Job failed"
        body["data"] = {
            "attemptsMade": payload.get("attemptsMade"),
            "terminal": bool(payload.get("terminal")),
            "reason": payload.get("reason"),
        }
    elif event == "job.progress":
        body["progress"] = payload.get("progress")
        body["data"] = payload.get("data") or {"progress": payload.get("progress")}
    else:
        body["data"] = dict(payload)
    body["deliveryId"] = delivery_id
    body["eventId"] = event_id
    return jsontext.dumps(body)


def sign(body: bytes, secret: str) -> str:
    """``X-Webhook-Signature``: hex HMAC-SHA256 of the exact body bytes."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def backoff_ms(attempt: int, *, base_ms: int, max_ms: int) -> int:
    """Delay before attempt ``attempt + 1`` after attempt ``attempt`` failed:
    ``base * 2^(attempt-1)``, capped at ``max_ms``."""
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    return int(min(max_ms, base_ms * 2 ** min(attempt - 1, 40)))


def outbox_types_and_events() -> tuple[list[str], list[str]]:
    """The mapping as two aligned arrays (the fan-out query's parameters)."""
    return list(EVENT_OF_OUTBOX_TYPE), list(EVENT_OF_OUTBOX_TYPE.values())
