"""A connection string with a wrong scheme is refused when the object is built."""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.client import Admin, FlowProducer, Queue, QueueEvents, Worker
from pgqueue.errors import ConfigError


def handler(job: Any) -> None:
    return None


BUILDERS = {
    "Queue": lambda url: Queue("emails", url),
    "Worker": lambda url: Worker("emails", handler, url, autorun=False),
    "QueueEvents": lambda url: QueueEvents("emails", url, autorun=False),
    "FlowProducer": lambda url: FlowProducer(url),
    "Admin": lambda url: Admin(url),
}


@pytest.mark.parametrize("kind", sorted(BUILDERS))
@pytest.mark.parametrize("url", ["redis://localhost:6379", "localhost:6789", "http://h:6790"])
def test_a_wrong_scheme_raises_config_error_at_construction(kind: str, url: str) -> None:
    with pytest.raises(ConfigError, match=r"postgresql:// .* or pgqueue://"):
        BUILDERS[kind](url)


def test_a_broker_url_with_a_bad_setting_raises_at_construction() -> None:
    with pytest.raises(ConfigError):
        Queue("emails", "pgqueue://127.0.0.1:6789?pool=lots")
