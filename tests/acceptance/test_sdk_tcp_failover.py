"""The TCP transport when connections break and brokers die (SIGTERM, kill -9),
come back on the same port, or never answer; over real sockets and processes.

A push that may have been committed is never reported as failed: it raises
IndeterminateCommit (or, when every job has a custom id, is re-sent
transparently); reads are retried on another connection; other writes raise
ConnectionLost.
"""

from __future__ import annotations

import asyncio
import signal
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from pgqueue.client.tcp import TcpTransport
from pgqueue.client.transport import AckRequest, JobInput, TransportEvent
from pgqueue.errors import AuthError, CommandTimeout, ConnectionLost, IndeterminateCommit
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess, free_port
from tests.fault_proxy import FaultProxy
from tests.helpers import sql_value


def new_queue() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


async def jobs_in(dsn: str, namespace: str, queue: str) -> int:
    query = (
        "SELECT (SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND queue = $2)"
        " + (SELECT count(*) FROM pgqueue_finished WHERE namespace = $1 AND queue = $2)"
    )
    return int(await sql_value(dsn, query, namespace, queue))


async def open_transport(url: str, **options: Any) -> TcpTransport:
    transport = TcpTransport.from_url(url, **options)
    await transport.start()
    return transport


def only_connection(transport: TcpTransport) -> Connection:
    [conn] = transport.pool.connections
    return conn


# -- a connection cut between request and answer (a proxy in front of a broker) -------


@pytest.fixture(scope="module")
def single(db_dsn: str) -> Iterator[tuple[BrokerProcess, str]]:
    namespace = f"f{uuid.uuid4().hex[:10]}"
    factory = BrokerFactory(db_dsn, namespace, Path(tempfile.mkdtemp(prefix="pgqueue-cut-")))
    try:
        yield factory.start("a", http=False), namespace
    finally:
        factory.stop_all()


@pytest.fixture
async def proxied(
    single: tuple[BrokerProcess, str],
) -> AsyncIterator[tuple[FaultProxy, TcpTransport]]:
    proxy = FaultProxy(f"postgresql://127.0.0.1:{single[0].tcp_port}/broker")
    await proxy.start()
    transport = await open_transport(f"pgqueue://127.0.0.1:{proxy.port}", pool=1, timeout=10)
    try:
        yield proxy, transport
    finally:
        await transport.close()
        await proxy.close()


async def test_a_push_cut_after_it_reached_the_broker_is_indeterminate_not_failed(
    proxied: tuple[FaultProxy, TcpTransport], single: tuple[BrokerProcess, str], db_dsn: str
) -> None:
    proxy, transport = proxied
    queue = new_queue()
    proxy.arm(lambda data: b"PUSHB" in data)
    with pytest.raises(IndeterminateCommit, match="re-push with the same custom id"):
        await transport.push(queue, JobInput("n", 1))
    assert proxy.cut.is_set()
    assert await jobs_in(db_dsn, single[1], queue) == 1  # it was committed
    assert await transport.push(queue, JobInput("n", 2))  # the pool reconnected
    assert transport.frames_sent["PUSHB"] == 2


async def test_a_push_whose_jobs_all_have_custom_ids_is_sent_again_transparently(
    proxied: tuple[FaultProxy, TcpTransport], single: tuple[BrokerProcess, str], db_dsn: str
) -> None:
    proxy, transport = proxied
    queue = new_queue()
    proxy.arm(lambda data: b"PUSHB" in data)
    assert await transport.push(queue, JobInput("n", 1, {"job_id": "order-1"})) == "order-1"
    assert proxy.cut.is_set()
    assert transport.frames_sent["PUSHB"] == 2
    assert await jobs_in(db_dsn, single[1], queue) == 1
    proxy.arm(lambda data: b"PUSHB" in data)
    jobs = [JobInput("n", i, {"job_id": f"bulk-{i}"}) for i in range(3)]
    assert await transport.push_bulk(queue, jobs) == ["bulk-0", "bulk-1", "bulk-2"]
    assert await jobs_in(db_dsn, single[1], queue) == 4


async def test_a_cut_read_is_retried_and_a_cut_write_is_connection_lost(
    proxied: tuple[FaultProxy, TcpTransport],
) -> None:
    proxy, transport = proxied
    queue = new_queue()
    job_id = await transport.push(queue, JobInput("n", 1))
    proxy.arm(lambda data: b"GetState" in data)
    assert await transport.get_state(job_id) == "waiting"
    assert transport.frames_sent["GetState"] == 2
    proxy.arm(lambda data: b"Pause" in data)
    with pytest.raises(ConnectionLost, match="lost before the answer"):
        await transport.pause(queue)
    assert transport.frames_sent["Pause"] == 1
    assert await transport.is_paused(queue)  # it did happen: never re-sent blindly


# -- brokers that die, and come back ----------------------------------------------------


def signal_broker(broker: BrokerProcess, signum: signal.Signals) -> None:
    broker.process.send_signal(signum)


async def test_kill_9_fails_in_flight_calls_by_kind_and_later_calls_use_the_other_broker(
    brokers: BrokerFactory,
) -> None:
    a, b = brokers.start("a", http=False), brokers.start("b", http=False)
    transport = await open_transport(f"pgqueue://{a.address},{b.address}", pool=1, timeout=10)
    try:
        queue = new_queue()
        job_id = await transport.push(queue, JobInput("n", 1))
        [lease] = await transport.pull(queue, 1, owner="w", lock_ttl_ms=60_000, timeout_ms=0)
        conn = only_connection(transport)
        assert conn.address == a.address
        signal_broker(a, signal.SIGSTOP)  # requests reach its socket, no answer comes back
        calls = [
            asyncio.ensure_future(transport.push(queue, JobInput("n", 2))),
            asyncio.ensure_future(transport.get_state(job_id)),
            asyncio.ensure_future(transport.ack([AckRequest(job_id, lease.token)])),
        ]
        await eventually(lambda: conn.in_flight == 3)
        a.kill()
        pushed, state, acked = await asyncio.gather(*calls, return_exceptions=True)
        assert isinstance(pushed, IndeterminateCommit)
        assert state == "active"  # the read went again, to b
        assert isinstance(acked, ConnectionLost)
        assert only_connection(transport).address == b.address
        assert await transport.ack([AckRequest(job_id, lease.token, "ok")]) == [True]
        assert await transport.push(queue, JobInput("n", 3))
    finally:
        await transport.close()


async def test_sigterm_drains_in_flight_calls_and_later_calls_use_the_other_broker(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    a, b = brokers.start("a", http=False), brokers.start("b", http=False)
    transport = await open_transport(f"pgqueue://{a.address},{b.address}", pool=1, timeout=10)
    try:
        queue, other_queue = new_queue(), new_queue()
        conn = only_connection(transport)
        assert conn.address == a.address
        signal_broker(a, signal.SIGSTOP)
        calls = [
            asyncio.ensure_future(transport.push(queue, JobInput("n", 1, {"job_id": "keep-1"}))),
            asyncio.ensure_future(transport.push(other_queue, JobInput("n", 2))),
            asyncio.ensure_future(transport.pause(queue)),
        ]
        await eventually(lambda: conn.in_flight == 3)
        signal_broker(a, signal.SIGTERM)
        signal_broker(a, signal.SIGCONT)
        custom, plain, paused = await asyncio.gather(*calls, return_exceptions=True)
        assert custom == "keep-1"
        assert isinstance(plain, str | IndeterminateCommit)  # never a false failure
        assert paused is None or isinstance(paused, ConnectionLost)
        assert a.process.wait(30) == 0
        await eventually(lambda: [c.address for c in transport.pool.connections] == [b.address])
        assert await transport.push(queue, JobInput("n", 3))
        assert await jobs_in(db_dsn, namespace, queue) == 2
        if isinstance(plain, str):
            assert await jobs_in(db_dsn, namespace, other_queue) == 1
    finally:
        await transport.close()


async def test_with_every_broker_down_calls_fail_after_the_timeout_and_the_pool_recovers(
    brokers: BrokerFactory,
) -> None:
    a = brokers.start("a", http=False)
    port = a.tcp_port
    transport = await open_transport(f"pgqueue://{a.address}", pool=2, timeout=1)
    try:
        queue = new_queue()
        await transport.push(queue, JobInput("n", 1))
        a.kill()
        await eventually(lambda: not transport.pool.connections)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(ConnectionLost, match="no broker reachable"):
            await transport.get_state("x")
        assert 0.9 <= loop.time() - started < 3
        with pytest.raises(ConnectionLost, match="was not sent"):
            await transport.push(queue, JobInput("n", 2))  # not indeterminate: never sent
        brokers.start("a2", http=False, tcp_port=port)
        await eventually(lambda: len(transport.pool.connections) == 2, timeout=15)
        assert await transport.push(queue, JobInput("n", 3))
        assert transport.frames_sent["PUSHB"] == 2
    finally:
        await transport.close()


async def test_a_dead_broker_listed_first_is_skipped(brokers: BrokerFactory) -> None:
    b = brokers.start("b", http=False)
    dead = f"127.0.0.1:{free_port()}"
    transport = await open_transport(f"pgqueue://{dead},{b.address}", pool=3)
    try:
        await eventually(lambda: len(transport.pool.connections) == 3)
        assert {c.address for c in transport.pool.connections} == {b.address}
        assert await transport.push(new_queue(), JobInput("n", 1))
    finally:
        await transport.close()


async def test_start_fails_clearly_without_a_broker_or_with_a_refused_token(
    brokers: BrokerFactory,
) -> None:
    with pytest.raises(ConnectionLost, match="cannot connect"):
        await open_transport(f"pgqueue://127.0.0.1:{free_port()}")
    a = brokers.start("a", "--auth-token", "ops=s3cret", http=False)
    with pytest.raises(AuthError, match="Invalid token"):
        await open_transport(f"pgqueue://{a.address}?token=wrong")
    with pytest.raises(AuthError, match="Not authenticated: this broker wants a token"):
        await open_transport(f"pgqueue://{a.address}")
    transport = await open_transport(f"pgqueue://{a.address}?token=s3cret")
    try:
        assert await transport.push(new_queue(), JobInput("n", 1))
    finally:
        await transport.close()


async def test_a_broker_that_stops_answering_is_dropped_and_replaced(
    brokers: BrokerFactory,
) -> None:
    a, b = brokers.start("a", http=False), brokers.start("b", http=False)
    transport = await open_transport(
        f"pgqueue://{a.address},{b.address}", pool=1, timeout=0.5, connect_timeout=0.5
    )
    try:
        assert only_connection(transport).address == a.address
        signal_broker(a, signal.SIGSTOP)  # it still accepts connections (the kernel does)
        with pytest.raises(CommandTimeout):
            await transport.get_state("x")
        await eventually(lambda: [c.address for c in transport.pool.connections] == [b.address])
        assert await transport.get_state("x") == "unknown"
    finally:
        a.kill()
        await transport.close()


async def test_requests_to_a_paused_broker_end_at_the_liveness_timeout_not_the_request_timeout(
    brokers: BrokerFactory,
) -> None:
    # The request timeout stays 30 s; a connection whose requests hear nothing
    # for liveness_timeout (1 s) is dropped: a read is sent again to b, a push
    # without a custom id ends indeterminate, both within a few seconds.
    a, b = brokers.start("a", http=False), brokers.start("b", http=False)
    transport = await open_transport(
        f"pgqueue://{a.address},{b.address}", pool=1, liveness_timeout=1, connect_timeout=0.5
    )
    loop = asyncio.get_running_loop()
    try:
        assert transport.settings.timeout == 30
        assert only_connection(transport).address == a.address
        signal_broker(a, signal.SIGSTOP)
        began = loop.time()
        assert await transport.get_state("x") == "unknown"  # answered by b
        assert loop.time() - began < 10
        assert only_connection(transport).address == b.address
        signal_broker(b, signal.SIGSTOP)
        began = loop.time()
        with pytest.raises(IndeterminateCommit):
            await transport.push(new_queue(), JobInput("n", 1))
        assert loop.time() - began < 10
    finally:
        signal_broker(b, signal.SIGCONT)
        a.kill()
        await transport.close()


async def test_an_event_stream_whose_broker_stops_answering_moves_to_another(
    brokers: BrokerFactory,
) -> None:
    started = {"a": brokers.start("a", http=False), "b": brokers.start("b", http=False)}
    consumer = await open_transport(
        f"pgqueue://{started['a'].address},{started['b'].address}",
        connect_timeout=0.5,
        ping_interval=0.2,
    )
    queue = new_queue()
    events: list[TransportEvent] = []
    stream = consumer.events(queue, None)
    reader = asyncio.create_task(collect(stream, events))
    stopped: BrokerProcess | None = None
    try:
        await eventually(lambda: consumer.feeds.subscriptions == 1)
        [conn] = consumer.feeds._active
        stopped = next(b for b in started.values() if b.address == conn.address)
        other = next(b for b in started.values() if b is not stopped)
        signal_broker(stopped, signal.SIGSTOP)
        await eventually(lambda: consumer.feeds.subscriptions == 2)
        producer = await open_transport(f"pgqueue://{other.address}")
        try:
            job_id = await producer.push(queue, JobInput("n", 1))
        finally:
            await producer.close()
        await eventually(lambda: [(e.event_type, e.job_id) for e in events] == [("pushed", job_id)])
    finally:
        if stopped is not None:
            stopped.kill()
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await stream.aclose()  # type: ignore[attr-defined]
        await consumer.close()


# -- events across broker restarts ------------------------------------------------------


async def collect(stream: AsyncIterator[TransportEvent], into: list[TransportEvent]) -> None:
    async for event in stream:
        if event.event_type != "subscribed":  # the marker: the subscription exists
            into.append(event)


async def test_events_resume_across_broker_deaths_and_restarts_without_gaps_or_duplicates(
    brokers: BrokerFactory,
) -> None:
    started = {"a": brokers.start("a", http=False), "b": brokers.start("b", http=False)}
    consumer = await open_transport(
        f"pgqueue://{started['a'].address},{started['b'].address}", timeout=10
    )
    via = {
        name: await open_transport(f"pgqueue://{b.address}", pool=1) for name, b in started.items()
    }
    queue = new_queue()
    events: list[TransportEvent] = []
    stream = consumer.events(queue, None)
    reader = asyncio.create_task(collect(stream, events))
    pushed: list[str] = []

    async def push_some(name: str, tag: str) -> None:
        for i in range(5):
            job = JobInput("n", i, {"job_id": f"{tag}-{i}"})
            pushed.append(await via[name].push(queue, job))

    def serving_events() -> str:
        [conn] = consumer.feeds._active
        return next(name for name, b in started.items() if b.address == conn.address)

    try:
        await eventually(lambda: consumer.feeds.subscriptions == 1)
        first = serving_events()
        second = "b" if first == "a" else "a"
        await push_some(second, "before")
        await eventually(lambda: len(events) == 5)
        # The events of these pushes cannot reach the consumer through a stopped broker:
        # they are committed, then that broker dies, and the stream must replay them.
        signal_broker(started[first], signal.SIGSTOP)
        await push_some(second, "unseen")
        port = started[first].tcp_port
        started[first].kill()
        await eventually(lambda: len(events) == 10)
        # The stream may be between brokers when the last event arrives: wait for it to
        # settle on one, then check which.
        await eventually(
            lambda: consumer.feeds.subscriptions == 2 and len(consumer.feeds._active) == 1,
            timeout=15,
            message="the stream resubscribed",
        )
        assert serving_events() == second
        started[first] = brokers.start(f"{first}2", http=False, tcp_port=port)
        await eventually(lambda: len(via[first].pool.connections) == 1, timeout=15)
        # Now the other broker stops, then drains (SIGTERM): the stream moves back to the
        # restarted broker, on the same port as before.
        signal_broker(started[second], signal.SIGSTOP)
        await push_some(first, "restarted")
        signal_broker(started[second], signal.SIGTERM)
        signal_broker(started[second], signal.SIGCONT)
        await eventually(lambda: len(events) == 15, timeout=15)
        # The stream may be between brokers when the last event arrives: wait for it to
        # settle on one, then check which.
        await eventually(
            lambda: consumer.feeds.subscriptions == 3 and len(consumer.feeds._active) == 1,
            timeout=15,
            message="the stream resubscribed",
        )
        assert serving_events() == first
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await stream.aclose()  # type: ignore[attr-defined]
        for transport in (*via.values(), consumer):
            await transport.close()
    assert [(e.event_type, e.job_id) for e in events] == [("pushed", i) for i in pushed]


async def test_a_pull_answer_that_arrives_after_the_sdk_gave_up_gives_its_jobs_back(
    single: tuple[BrokerProcess, str], db_dsn: str
) -> None:
    broker, namespace = single
    proxy = FaultProxy(f"postgresql://127.0.0.1:{broker.tcp_port}/broker")
    await proxy.start()
    transport = await open_transport(f"pgqueue://127.0.0.1:{proxy.port}", pool=1, timeout=1)
    try:
        queue = new_queue()
        job_id = await transport.push(queue, JobInput("n", 1))
        proxy.hold(lambda data: b"tokens" in data)  # PULLB's answer is slow to come back
        with pytest.raises(CommandTimeout):
            await transport.pull(queue, 1, owner="w", lock_ttl_ms=600_000, timeout_ms=0)
        assert proxy.holding.is_set(), "the broker did answer: the job was claimed"
        proxy.let_through()

        # Nobody runs the late-claimed job: it must not stay leased to nobody until
        # its lease ends and then count as a stall.
        async def waiting() -> bool:
            return await transport.get_state(job_id) == "waiting"

        await eventually(waiting, message="the late-claimed job was given back")
        counts = await sql_value(
            db_dsn,
            "SELECT array[attempts, stall_count] FROM pgqueue_jobs"
            " WHERE namespace = $1 AND id = $2",
            namespace,
            job_id,
        )
        assert list(counts) == [0, 0]
        [lease] = await transport.pull(queue, 1, owner="w2", lock_ttl_ms=60_000, timeout_ms=5000)
        assert lease.job["id"] == job_id
    finally:
        await transport.close()
        await proxy.close()
