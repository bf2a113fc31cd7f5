"""``pgqueue serve --set NAME=VALUE``: engine settings from the command line."""

from __future__ import annotations

import pytest

from pgqueue.cli.common import engine_settings
from pgqueue.errors import ConfigError


def test_integers_and_booleans_become_config_fields() -> None:
    assert engine_settings(["retention_events_ms=3600000", "poll_only=true"]) == {
        "retention_events_ms": 3_600_000,
        "poll_only": True,
    }


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("nope=1", "expected NAME=VALUE"),
        ("lease_ms", "expected NAME=VALUE"),
        ("lease_ms=soon", "lease_ms must be an integer"),
        ("poll_only=maybe", "poll_only must be true or false"),
        ("dsn=postgresql://x", "expected NAME=VALUE"),
    ],
)
def test_a_bad_setting_is_refused_with_its_name(pair: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        engine_settings([pair])
