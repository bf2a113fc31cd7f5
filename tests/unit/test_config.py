"""Config: named defaults, and validation that names the field that is wrong."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pgqueue.config import Config
from pgqueue.errors import ConfigError


def test_the_defaults_are_valid() -> None:
    config = Config(dsn="postgresql://localhost/x")
    assert config.validate() is config
    assert (config.namespace, config.lease_ms, config.poll_only) == ("default", 30_000, False)


INVALID: list[tuple[str, Any, str]] = [
    ("dsn", "", "dsn is required"),
    ("namespace", "", "namespace must be 1-64 characters"),
    ("namespace", "a b", "namespace must be 1-64 characters"),
    ("namespace", "n" * 65, "namespace must be 1-64 characters"),
    ("broker_id", "", "broker_id must be 1-200 printable characters"),
    ("broker_id", "b\n", "broker_id must be 1-200 printable characters"),
    ("broker_id", "b" * 201, "broker_id must be 1-200 printable characters"),
    ("pool_min_size", 0, "pool_min_size must be at least 1"),
    ("pool_max_size", 1, "pool_max_size must be at least 2"),
    ("lease_ms", 99, "lease_ms must be at least 100"),
    ("poll_interval_ms", 4, "poll_interval_ms must be at least 5"),
    ("session_heartbeat_ms", 49, "session_heartbeat_ms must be at least 50"),
    ("session_stale_ms", 19_999, "session_stale_ms must be at least 20000"),
    ("leader_ttl_ms", 1_999, "leader_ttl_ms must be at least 2000"),
    ("reaper_batch", 0, "reaper_batch must be at least 1"),
    ("max_payload_bytes", 1023, "max_payload_bytes must be at least 1024"),
    ("max_stalls_default", 0, "max_stalls_default must be at least 1"),
    ("statement_timeout_ms", -1, "statement_timeout_ms must be at least 0"),
    ("lock_timeout_ms", -1, "lock_timeout_ms must be at least 0"),
    ("idle_in_transaction_timeout_ms", -1, "idle_in_transaction_timeout_ms must be at least 0"),
    ("event_batch", 0, "event_batch must be at least 1"),
    ("statement_cache_size", -1, "statement_cache_size must be at least 0"),
    ("lease_ms", 1.5, "lease_ms must be an integer"),
    ("lease_ms", True, "lease_ms must be an integer"),
    ("event_batch", "10", "event_batch must be an integer"),
]


@pytest.mark.parametrize(("name", "value", "message"), INVALID)
def test_an_invalid_setting_is_refused_by_name(name: str, value: Any, message: str) -> None:
    base = {"pool_min_size": 2} if name == "pool_max_size" else {}
    config = dataclasses.replace(Config(dsn="postgresql://localhost/x", **base), **{name: value})
    with pytest.raises(ConfigError) as info:
        config.validate()
    assert info.value.message.startswith(message)
    assert info.value.message.startswith(name)


INTEGER_SETTINGS = sorted(f.name for f in dataclasses.fields(Config) if f.type == "int")


@pytest.mark.parametrize("name", INTEGER_SETTINGS)
def test_every_integer_setting_is_validated_by_name(name: str) -> None:
    config = Config(dsn="postgresql://localhost/x")
    with pytest.raises(ConfigError, match=rf"^{name} must be at least -?\d+$"):
        dataclasses.replace(config, **{name: -(10**9)}).validate()
    with pytest.raises(ConfigError, match=rf"^{name} must be an integer$"):
        dataclasses.replace(config, **{name: True}).validate()


def test_the_reaper_interval_has_a_floor_and_bounds_the_leader_ttl() -> None:
    with pytest.raises(ConfigError, match=r"^reaper_interval_ms must be at least 10$"):
        Config(dsn="x", reaper_interval_ms=9).validate()
    with pytest.raises(ConfigError, match=r"^leader_ttl_ms must be at least 20000$"):
        Config(dsn="x", reaper_interval_ms=10_000).validate()


def test_with_changes_returns_a_validated_copy() -> None:
    config = Config(dsn="x")
    changed = config.with_changes(lease_ms=5000)
    assert (changed.lease_ms, config.lease_ms) == (5000, 30_000)
    with pytest.raises(ConfigError, match=r"^lease_ms must be at least 100$"):
        config.with_changes(lease_ms=1)


def test_a_config_is_frozen() -> None:
    config = Config(dsn="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.lease_ms = 1  # type: ignore[misc]
