"""Concurrent single pushes on the embedded transport are admitted together: far
fewer statements, and every caller still gets what a push of its own would give."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from pgqueue.client.embedded import EmbeddedTransport
from pgqueue.client.transport import JobInput
from pgqueue.errors import DependencyNotFound, ValidationError
from tests.acceptance.command_support import new_queue
from tests.helpers import live_jobs


@pytest.fixture
async def embedded(db_dsn: str) -> AsyncIterator[EmbeddedTransport]:
    transport = EmbeddedTransport(db_dsn, namespace=f"e{uuid.uuid4().hex[:10]}")
    await transport.start()
    try:
        yield transport
    finally:
        await transport.close()


async def test_concurrent_adds_are_admitted_in_few_statements_each_with_its_own_id(
    embedded: EmbeddedTransport, db_dsn: str
) -> None:
    queue = new_queue()
    data = [{"z": i, "a": [3, 2, 1], "n": 2**63 + i} for i in range(300)]
    ids = await asyncio.gather(*(embedded.push(queue, JobInput("n", d)) for d in data))
    assert len(set(ids)) == 300
    assert embedded.batcher.jobs == 300
    assert embedded.batcher.batches <= 12  # one at once, then batches of up to 50
    namespace = embedded.manager.config.namespace
    assert await live_jobs(db_dsn, namespace, queue) == 300
    leases = await embedded.pull(queue, 300, owner="w", lock_ttl_ms=30_000, timeout_ms=0)
    assert {lease.job["id"]: lease.job["data"] for lease in leases} == dict(
        zip(ids, data, strict=True)
    )


async def test_a_lone_add_is_one_statement_of_its_own(embedded: EmbeddedTransport) -> None:
    queue = new_queue()
    for i in range(3):
        await embedded.push(queue, JobInput("n", i))
    assert (embedded.batcher.batches, embedded.batcher.jobs) == (3, 3)


async def test_concurrent_adds_of_one_custom_id_name_one_job(
    embedded: EmbeddedTransport, db_dsn: str
) -> None:
    queue = new_queue()
    ids = await asyncio.gather(
        *(embedded.push(queue, JobInput("n", i, {"job_id": "same"})) for i in range(5)),
        embedded.push(queue, JobInput("n", 9)),
    )
    assert ids[:5] == ["same"] * 5
    assert ids[5] != "same"
    assert await live_jobs(db_dsn, embedded.manager.config.namespace, queue) == 2


async def test_a_refused_add_fails_alone_and_its_batch_mates_are_admitted(
    embedded: EmbeddedTransport, db_dsn: str
) -> None:
    queue = new_queue()
    jobs = [JobInput("n", i) for i in range(10)]
    jobs[3] = JobInput("n", 3, {"priority": "high"})  # refused before it is batched
    jobs[6] = JobInput("n", 6, {"depends_on": ["no-such-job"]})  # refused by the engine
    results = await asyncio.gather(
        *(embedded.push(queue, job) for job in jobs), return_exceptions=True
    )
    assert isinstance(results[3], ValidationError)
    assert isinstance(results[6], DependencyNotFound)
    assert all(isinstance(r, str) for i, r in enumerate(results) if i not in (3, 6))
    assert await live_jobs(db_dsn, embedded.manager.config.namespace, queue) == 8
