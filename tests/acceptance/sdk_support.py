"""Fixtures of the SDK suite: one behavioural suite, run on both transports.

``connection`` is a connection string: ``postgresql://...?namespace=...``
(embedded: the engine in the test process) or ``pgqueue://a,b`` (TCP through
two real brokers, ``python -m pgqueue serve``, started once per test module
and shared by its tests; every test uses queues of its own).  Test modules
import the fixtures they use from here.
"""

from __future__ import annotations

import importlib.util
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pgqueue.client import FlowProducer, Queue, QueueEvents, Worker
from tests.acceptance.conftest import BrokerFactory
from tests.helpers import with_query

TCP_AVAILABLE = importlib.util.find_spec("pgqueue.client.tcp") is not None
TCP_SKIP = "pgqueue.client.tcp (the TCP transport) is not importable yet"

TRANSPORTS = [
    pytest.param("embedded", id="embedded"),
    pytest.param("tcp", id="tcp", marks=pytest.mark.skipif(not TCP_AVAILABLE, reason=TCP_SKIP)),
]


def embedded_url(dsn: str, namespace: str) -> str:
    return with_query(dsn, namespace=namespace, pool_max_size=4, poll_interval_ms=50)


@pytest.fixture(scope="module")
def module_namespace() -> str:
    return f"s{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module", params=TRANSPORTS)
def transport_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def shared_brokers(
    transport_kind: str, db_dsn: str, module_namespace: str
) -> Iterator[BrokerFactory | None]:
    """Two brokers for the module's TCP tests (none for embedded)."""
    if transport_kind != "tcp":
        yield None
        return
    factory = BrokerFactory(
        db_dsn, module_namespace, Path(tempfile.mkdtemp(prefix="pgqueue-sdk-brokers-"))
    )
    try:
        factory.start("sdk-a", "--poll-interval-ms", "50")
        factory.start("sdk-b", "--poll-interval-ms", "50")
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture
def connection(
    transport_kind: str,
    shared_brokers: BrokerFactory | None,
    db_dsn: str,
    module_namespace: str,
) -> str:
    """The connection string of this run's transport."""
    if shared_brokers is None:
        return embedded_url(db_dsn, module_namespace)
    addresses = ",".join(b.address for b in shared_brokers.started)
    return f"pgqueue://{addresses}"


@pytest.fixture
def queue_name() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


Factory = Callable[..., Any]


@pytest.fixture
async def sdk(connection: str, queue_name: str) -> AsyncIterator[SDK]:
    """Builds SDK objects on this run's connection and closes them after the test."""
    async with AsyncExitStack() as stack:
        yield SDK(connection, queue_name, stack)


class SDK:
    """``sdk.queue()``, ``sdk.worker(fn)``, ... on the test's connection and queue."""

    def __init__(self, connection: str, queue_name: str, stack: AsyncExitStack) -> None:
        self.connection = connection
        self.queue_name = queue_name
        self._stack = stack

    def _closing(self, thing: Any) -> Any:
        self._stack.push_async_callback(thing.close)
        return thing

    def queue(self, name: str | None = None, **options: Any) -> Queue:
        return self._closing(Queue(name or self.queue_name, self.connection, **options))

    def worker(self, processor: Any, name: str | None = None, **options: Any) -> Worker:
        options.setdefault("poll_timeout", 0.2)
        return self._closing(Worker(name or self.queue_name, processor, self.connection, **options))

    def events(self, name: str | None = None, **options: Any) -> QueueEvents:
        return self._closing(QueueEvents(name or self.queue_name, self.connection, **options))

    def flows(self) -> FlowProducer:
        return self._closing(FlowProducer(self.connection))
