"""DLQ policy without a database: settings, filters, the auto-retry schedule."""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.errors import ValidationError
from pgqueue.manager.dlq.policy import (
    DEFAULT_DLQ_CONFIG,
    DlqConfig,
    auto_retry_delay_ms,
    build_filter,
    complete_dlq_config,
    complete_stall_config,
    validate_actor,
    validate_dlq_config_patch,
    validate_stall_config_patch,
    validate_why,
)


def test_auto_retry_delay_doubles_after_the_first_retry_and_stops_at_the_limit() -> None:
    config: DlqConfig = {
        **DEFAULT_DLQ_CONFIG,
        "autoRetry": True,
        "autoRetryInterval": 1000,
        "maxAutoRetries": 5,
    }
    assert [auto_retry_delay_ms(config, n) for n in range(6)] == [
        1000,
        1000,
        2000,
        4000,
        8000,
        None,
    ]
    assert auto_retry_delay_ms(DEFAULT_DLQ_CONFIG, 0) is None, "auto-retry is off by default"


def test_auto_retry_exponent_stops_growing() -> None:
    config: DlqConfig = {**DEFAULT_DLQ_CONFIG, "autoRetry": True, "maxAutoRetries": 1000}
    assert auto_retry_delay_ms(config, 500) == 3_600_000 * 2**16


def test_config_patches_accept_wire_and_snake_case_names() -> None:
    assert validate_dlq_config_patch({"autoRetry": True, "max_entries": 5.0, "maxAge": None}) == {
        "autoRetry": True,
        "maxEntries": 5,
        "maxAge": None,
    }
    assert validate_stall_config_patch({"grace_period": 0, "enabled": False}) == {
        "gracePeriod": 0,
        "enabled": False,
    }


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"autoRetry": 1}, "autoRetry"),
        ({"autoRetryInterval": -5}, "autoRetryInterval"),
        ({"maxAutoRetries": 1001}, "maxAutoRetries"),
        ({"maxAge": 0}, "maxAge"),
        ({"maxEntries": float("nan")}, "maxEntries"),
        ({"maxEntries": None}, "maxEntries"),
        ({"nope": 1}, "nope"),
        ({"maxAge": 1, "max_age": 2}, "maxAge"),
    ],
)
def test_a_bad_dlq_config_field_is_named(patch: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_dlq_config_patch(patch)
    assert caught.value.field == field


def test_a_config_that_is_not_a_map_is_refused() -> None:
    with pytest.raises(ValidationError):
        validate_dlq_config_patch([("autoRetry", True)])
    with pytest.raises(ValidationError):
        validate_stall_config_patch("enabled")


def test_stored_configs_are_completed_with_defaults() -> None:
    assert complete_dlq_config(None) == DEFAULT_DLQ_CONFIG
    assert complete_dlq_config({"maxAge": None, "junk": 1})["maxAge"] is None
    assert complete_stall_config({"maxStalls": 0}, max_stalls=7)["maxStalls"] == 0
    assert complete_stall_config(None, max_stalls=7)["maxStalls"] == 7


def test_filters_validate_and_record_what_was_asked() -> None:
    selection = build_filter(job_ids=["a", "b", "a"], reason="timeout", older_than_ms=5, limit=3)
    assert selection.job_ids == ("a", "b")
    assert selection.record() == {
        "jobIds": ["a", "b"],
        "reason": "timeout",
        "olderThan": 5.0,
        "limit": 3,
    }
    assert build_filter().record() == {}
    bad: list[dict[str, Any]] = [
        {"reason": "bored"},
        {"limit": 0},
        {"newer_than_ms": -1},
        {"expired": "no"},
        {"job_ids": "abc"},
    ]
    for kwargs in bad:
        with pytest.raises(ValidationError):
            build_filter(**kwargs)


def test_actor_is_required_and_why_is_bounded() -> None:
    assert validate_actor("ops") == "ops"
    for actor in ("", None, "x" * 300, "tab\there"):
        with pytest.raises(ValidationError):
            validate_actor(actor)
    assert validate_why(None) is None
    with pytest.raises(ValidationError):
        validate_why("nul\x00")
