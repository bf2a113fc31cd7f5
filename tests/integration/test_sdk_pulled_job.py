"""The embedded transport's pulled jobs: the SDK ``Job`` is made from a few columns
of the claim row, its whole wire dict (``Job.raw``) only when read.  What a
handler sees must be what the whole view gives, for every kind of claim."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pgqueue.client import Job, open_transport
from pgqueue.client.embedded import EmbeddedTransport
from pgqueue.client.transport import Lease
from tests.helpers import with_query

ATTRIBUTES = [*(name for name in Job.__slots__ if not name.startswith("_")), "stacktrace"]


@pytest.fixture
async def transport(db_dsn: str, namespace: str) -> AsyncIterator[EmbeddedTransport]:
    opened = open_transport(with_query(db_dsn, namespace=namespace, pool_max_size=4))
    assert isinstance(opened, EmbeddedTransport)
    await opened.start()
    yield opened
    await opened.close()


async def pull(transport: EmbeddedTransport, queue: str, count: int) -> list[Lease]:
    return await transport.pull(queue, count, owner="w", lock_ttl_ms=30_000, timeout_ms=0)


def seen(job: Job) -> dict[str, Any]:
    return {name: getattr(job, name) for name in ATTRIBUTES if name != "_transport"}


async def varied_claims(transport: EmbeddedTransport, queue: str) -> list[Lease]:
    """Claims of jobs with options, a retried job with progress and a heartbeat, a flow child."""
    manager = transport.manager
    await manager.push(queue, "plain", {"k": [1, 2]})
    await manager.push(queue, "opts", "text", priority=7, timeout=9_000, stall_timeout=5_000)
    await manager.push(queue, "tries", None, attempts=5, backoff=0)
    await manager.push_flow(
        {"name": "parent", "queue": f"{queue}-p", "children": [{"name": "kid", "queue": queue}]}
    )
    first = {lease.job["name"]: lease for lease in await pull(transport, queue, 10)}
    retried = first["tries"]
    await transport.update_progress(retried.job["id"], retried.token, {"step": 2}, "half")
    await transport.extend([(retried.job["id"], retried.token)], 30_000)
    await manager.fail(retried.job["id"], retried.token, "boom", stacktrace=["at x"])
    again = await pull(transport, queue, 10)
    assert [lease.job["name"] for lease in again] == ["tries"]
    return [*first.values(), *again]


async def test_a_pulled_job_is_the_job_its_whole_view_makes(
    transport: EmbeddedTransport,
) -> None:
    leases = await varied_claims(transport, "pulled")
    assert {lease.job["name"] for lease in leases} == {"plain", "opts", "tries", "kid"}
    for lease in leases:
        assert lease.view is not None
        whole = lease.view()
        assert {key: whole[key] for key in lease.job} == lease.job  # the head: the same values
        assert {key: type(whole[key]) for key in lease.job} == {
            key: type(value) for key, value in lease.job.items()
        }  # of the same types
        assert type(lease) is Lease
        lazy = Job.from_wire(
            transport, lease.job, token=lease.token, fence=lease.fence, view=lease.view
        )
        eager = Job.from_wire(transport, whole, token=lease.token, fence=lease.fence)
        assert seen(lazy) == seen(eager)
        assert lazy.raw == eager.raw and list(lazy.raw) == list(eager.raw)  # keys in order
        assert lazy.raw["data"] is lazy.data  # one object, as when raw came first


async def test_the_retried_job_shows_its_attempts_progress_and_heartbeat(
    transport: EmbeddedTransport,
) -> None:
    leases = await varied_claims(transport, "retried")
    lease = leases[-1]
    job = Job.from_wire(transport, lease.job, token=lease.token, fence=lease.fence, view=lease.view)
    assert (job.attempts_made, job.max_attempts, job.progress) == (1, 5, {"step": 2})
    assert job.last_heartbeat is not None and job.processed_on is not None
    assert job.last_heartbeat >= job.processed_on
    assert job.raw["attemptLog"][0]["error"] == "boom"
    opts = next(lease for lease in leases if lease.job["name"] == "opts")
    shown = Job.from_wire(transport, opts.job, token=opts.token, fence=opts.fence, view=opts.view)
    assert (shown.priority, shown.timeout, shown.stall_timeout) == (7, 9_000, 5_000)
    kid = next(lease for lease in leases if lease.job["name"] == "kid")
    assert kid.job["parentId"] is not None


async def test_raw_assigned_replaces_the_lazy_view(transport: EmbeddedTransport) -> None:
    await transport.manager.push("assigned", "n", 1)
    [lease] = await pull(transport, "assigned", 1)
    job = Job.from_wire(transport, lease.job, token=lease.token, fence=lease.fence, view=lease.view)
    job.raw = {"id": "x"}
    assert job.raw == {"id": "x"}
