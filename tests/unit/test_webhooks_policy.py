"""Webhook policy: event names, bodies, signatures, backoff and the attempt decision."""

from __future__ import annotations

import hashlib
import hmac
import json
from types import SimpleNamespace
from typing import Any

import pytest

from pgqueue.errors import ConfigError, ValidationError
from pgqueue.maintenance.webhook_delivery import Claim, DeliverySettings, decide
from pgqueue.maintenance.webhook_sender import AttemptResult
from pgqueue.manager.webhooks.ops import allow_private_of
from pgqueue.manager.webhooks.policy import (
    EVENT_OF_OUTBOX_TYPE,
    WEBHOOK_EVENTS,
    backoff_ms,
    build_body,
    sign,
    validate_events,
    validate_secret,
)


def test_bunqueues_five_events_come_first_then_the_extensions() -> None:
    assert WEBHOOK_EVENTS[:5] == (
        "job.pushed",
        "job.started",
        "job.completed",
        "job.failed",
        "job.progress",
    )
    assert set(WEBHOOK_EVENTS[5:]) == {"job.stalled", "job.dlq", "job.redriven"}
    assert EVENT_OF_OUTBOX_TYPE["active"] == "job.started"


def test_events_are_validated_and_deduplicated_in_order() -> None:
    assert validate_events(["job.failed", "job.pushed", "job.failed"]) == [
        "job.failed",
        "job.pushed",
    ]
    for bad in ([], None, "job.pushed", {"job.pushed": 1}):
        with pytest.raises(ValidationError, match="events must be a non-empty array"):
            validate_events(bad)
    with pytest.raises(ValidationError, match=r"^Unknown webhook event: job\.done \(expected one"):
        validate_events(["job.pushed", "job.done"])
    with pytest.raises(ValidationError, match="Unknown webhook event: 3"):
        validate_events([3])


def test_secrets_are_optional_non_empty_and_bounded() -> None:
    assert validate_secret(None) is None
    assert validate_secret("s") == "s"
    for bad in ("", 5, "x" * 1025, "a\x00b"):
        with pytest.raises(ValidationError) as caught:
            validate_secret(bad)
        assert caught.value.field == "secret"


def _body(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    text = build_body(
        event,
        delivery_id="d-1",
        event_id=7,
        timestamp_ms=1700000000123.6,
        job_id="j-1",
        queue="q",
        payload=payload,
    )
    return dict(json.loads(text))


def test_every_body_has_bunqueues_fields_and_the_signed_ids() -> None:
    body = _body("job.pushed", {"name": "n", "state": "waiting", "delay": 0})
    assert body == {
        "event": "job.pushed",
        "timestamp": 1700000000124,
        "jobId": "j-1",
        "queue": "q",
        "data": {"name": "n", "state": "waiting", "delay": 0},
        "deliveryId": "d-1",
        "eventId": 7,
    }


def test_completed_failed_and_progress_bodies_carry_result_error_and_progress() -> None:
    assert _body("job.completed", {"returnvalue": {"ok": 1}})["data"] == {"ok": 1}
    assert _body("job.completed", {"returnvalue": None})["data"] is None
    truncated = _body("job.completed", {"returnvalueTruncated": True})
    assert "data" not in truncated and truncated["dataTruncated"] is True
    failed = _body(
        "job.failed",
        {"failedReason": "boom", "attemptsMade": 2, "terminal": False, "reason": "error"},
    )
    assert failed["error"] == "boom"
    assert failed["data"] == {"attemptsMade": 2, "terminal": False, "reason": "error"}
    progress = _body("job.progress", {"progress": 40, "data": {"progress": 40, "message": "m"}})
    assert (progress["progress"], progress["data"]) == (40, {"progress": 40, "message": "m"})


def test_the_signature_is_the_hex_hmac_sha256_of_the_exact_body() -> None:
    body = b'{"event":"job.pushed"}'
    expected = hmac.new(b"k3y", body, hashlib.sha256).hexdigest()
    assert sign(body, "k3y") == expected
    assert sign(body + b" ", "k3y") != expected


def test_backoff_doubles_from_the_base_and_stops_at_the_cap() -> None:
    assert [backoff_ms(n, base_ms=1000, max_ms=10_000) for n in range(1, 7)] == [
        1000,
        2000,
        4000,
        8000,
        10_000,
        10_000,
    ]
    assert backoff_ms(10_000, base_ms=1000, max_ms=600_000) == 600_000
    with pytest.raises(ValueError, match="counts from 1"):
        backoff_ms(0, base_ms=1, max_ms=1)


def _claim(attempt: int, max_attempts: int = 3) -> Claim:
    return Claim("d", "w", "job.pushed", "{}", attempt, max_attempts, "t", 0.0, "http://x/", None)


def test_an_attempt_is_delivered_retried_with_backoff_or_failed_for_good() -> None:
    settings = DeliverySettings(retry_base_ms=500, retry_max_ms=60_000)
    assert decide(_claim(1), AttemptResult(True, 200), settings) == ("delivered", 0)
    assert decide(_claim(1), AttemptResult(False, 500, "HTTP 500"), settings) == ("retry", 500)
    assert decide(_claim(2), AttemptResult(False, error="timed out"), settings) == ("retry", 1000)
    assert decide(_claim(3), AttemptResult(False, 503), settings) == ("failed", 0)
    refused = AttemptResult(False, error="Webhook URL is not allowed: ...", retryable=False)
    assert decide(_claim(1), refused, settings) == ("failed", 0)


def test_delivery_settings_refuse_a_lease_shorter_than_the_timeout() -> None:
    with pytest.raises(ConfigError, match="lease_ms must be longer than timeout_ms"):
        DeliverySettings(timeout_ms=10_000, lease_ms=10_000)
    with pytest.raises(ConfigError, match="max_attempts must be at least 1"):
        DeliverySettings(max_attempts=0)


def test_the_allow_private_setting_defaults_to_off() -> None:
    assert allow_private_of(SimpleNamespace()) is False  # type: ignore[arg-type]
    assert allow_private_of(SimpleNamespace(webhook_allow_private=True)) is True  # type: ignore[arg-type]
