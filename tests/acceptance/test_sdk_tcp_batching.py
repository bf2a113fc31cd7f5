"""Auto-batching over real brokers: many concurrent pushes, far fewer PUSHB frames,
and every caller still gets its own id or its own error."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from pgqueue.client.tcp import TcpTransport
from pgqueue.client.transport import JobInput
from pgqueue.errors import ConnectionLost, DependencyNotFound, ValidationError
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.helpers import live_jobs


@pytest.fixture(scope="module")
def broker(db_dsn: str) -> Iterator[tuple[BrokerProcess, str]]:
    namespace = f"b{uuid.uuid4().hex[:10]}"
    factory = BrokerFactory(db_dsn, namespace, Path(tempfile.mkdtemp(prefix="pgqueue-batch-")))
    try:
        yield factory.start("a", http=False), namespace
    finally:
        factory.stop_all()


@pytest.fixture
async def tcp(broker: tuple[BrokerProcess, str]) -> AsyncIterator[TcpTransport]:
    transport = TcpTransport.from_url(f"pgqueue://{broker[0].address}", timeout=10)
    await transport.start()
    try:
        yield transport
    finally:
        await transport.close()


def new_queue() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


async def test_a_thousand_concurrent_pushes_travel_in_far_fewer_pushb_frames(
    tcp: TcpTransport, broker: tuple[BrokerProcess, str], db_dsn: str
) -> None:
    queue = new_queue()
    ids = await asyncio.gather(*(tcp.push(queue, JobInput("n", i)) for i in range(1000)))
    assert len(set(ids)) == 1000
    assert tcp.frames_sent["PUSH"] == 0
    assert 20 <= tcp.frames_sent["PUSHB"] <= 25
    assert await live_jobs(db_dsn, broker[1], queue) == 1000
    leases = await tcp.pull(queue, 1000, owner="w", lock_ttl_ms=30_000, timeout_ms=0)
    assert sorted(lease.job["data"] for lease in leases) == list(range(1000))
    assert {lease.job["id"] for lease in leases} == set(ids)


async def test_an_invalid_job_fails_alone_and_its_batch_mates_are_admitted(
    tcp: TcpTransport, broker: tuple[BrokerProcess, str], db_dsn: str
) -> None:
    queue = new_queue()
    jobs = [JobInput("n", i) for i in range(10)]
    jobs[3] = JobInput("n", 3, {"priority": "high"})  # refused here, before sending
    jobs[6] = JobInput("n", 6, {"depends_on": ["no-such-job"]})  # refused by the broker
    results = await asyncio.gather(*(tcp.push(queue, job) for job in jobs), return_exceptions=True)
    assert isinstance(results[3], ValidationError)
    assert results[3].message == "priority must be a number"
    assert isinstance(results[6], DependencyNotFound)
    assert results[6].message == "Dependency job not found: no-such-job"
    admitted = [r for i, r in enumerate(results) if i not in (3, 6)]
    assert all(isinstance(r, str) for r in admitted) and len(set(admitted)) == 8
    # job 0 went at once (nothing was on its way); then the batch of the others,
    # the broker's refusal, and the rest again
    assert tcp.frames_sent["PUSHB"] == 3
    assert await live_jobs(db_dsn, broker[1], queue) == 8


async def test_concurrent_pushes_of_one_custom_id_make_one_job(
    tcp: TcpTransport, broker: tuple[BrokerProcess, str], db_dsn: str
) -> None:
    queue = new_queue()
    custom = f"order-{uuid.uuid4().hex[:8]}"
    ids = await asyncio.gather(
        *(tcp.push(queue, JobInput("n", i, {"job_id": custom})) for i in range(5))
    )
    assert ids == [custom] * 5
    assert await live_jobs(db_dsn, broker[1], queue) == 1


async def test_a_lone_push_does_not_wait_for_the_batch_window(
    broker: tuple[BrokerProcess, str],
) -> None:
    transport = TcpTransport.from_url(
        f"pgqueue://{broker[0].address}?batch_delay_ms=1000", timeout=10
    )
    await transport.start()
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        for i in range(5):
            await transport.push(new_queue(), JobInput("n", i))
        assert loop.time() - started < 1.0  # five pushes, none waited for the window
        assert transport.frames_sent["PUSHB"] == 5
    finally:
        await transport.close()


async def test_without_autobatch_every_push_is_one_push_frame(
    broker: tuple[BrokerProcess, str], db_dsn: str
) -> None:
    queue = new_queue()
    transport = TcpTransport.from_url(f"pgqueue://{broker[0].address}?autobatch=false")
    await transport.start()
    try:
        ids = await asyncio.gather(*(transport.push(queue, JobInput("n", i)) for i in range(20)))
        assert len(set(ids)) == 20
        assert (transport.frames_sent["PUSH"], transport.frames_sent["PUSHB"]) == (20, 0)
        with pytest.raises(ValidationError, match="unknown job option: atempts"):
            await transport.push(queue, JobInput("n", 1, {"atempts": 3}))
        assert transport.frames_sent["PUSH"] == 20
    finally:
        await transport.close()
    assert await live_jobs(db_dsn, broker[1], queue) == 20


async def test_closing_the_transport_sends_the_pushes_waiting_in_a_batch_then_refuses_calls(
    broker: tuple[BrokerProcess, str], db_dsn: str
) -> None:
    queue = new_queue()
    transport = TcpTransport.from_url(f"pgqueue://{broker[0].address}")
    await transport.start()
    pushes = [asyncio.ensure_future(transport.push(queue, JobInput("n", i))) for i in range(3)]
    await asyncio.sleep(0)  # one loop step: the first push went at once, two joined a batch
    assert transport.batcher is not None and transport.batcher.waiting == 2
    await transport.close()
    assert len(set(await asyncio.gather(*pushes))) == 3
    assert await live_jobs(db_dsn, broker[1], queue) == 3
    with pytest.raises(ConnectionLost, match="the transport is closed"):
        await transport.get_state("x")
