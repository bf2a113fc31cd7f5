"""``pgqueue dlq list|stats|redrive|purge|audit``, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import pytest

from pgqueue.client import Job, Queue
from pgqueue.errors import JobFailed
from pgqueue.testing import eventually
from tests.acceptance.cli_support import run_cli
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)


async def dead_letter(sdk: SDK, queue: Queue, count: int) -> list[Job]:
    """``count`` jobs of ``queue`` failed for good (a worker that always raises)."""

    async def broken(job: Job) -> None:
        raise ValueError(f"bad payload {job.data}")

    worker = sdk.worker(broken, queue.name, concurrency=8)
    jobs = await queue.add_bulk(
        [{"name": "x", "data": i, "opts": {"attempts": 1}} for i in range(count)]
    )
    for job in jobs:
        with pytest.raises(JobFailed):
            await queue.wait_for(job, timeout=30)
    await worker.close()
    return jobs


async def test_dlq_list_and_stats_show_the_dead_lettered_jobs(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    jobs = await dead_letter(sdk, queue, 3)
    listed = await run_cli(
        "dlq", "list", queue_name, "--page-size", "2", "--json", connection=connection
    )
    assert listed.code == 0, listed.err
    page = [e["job"]["id"] for e in listed.json()["entries"]]
    assert len(page) == 2 and set(page) <= {j.id for j in jobs}  # oldest entries first
    assert listed.json()["more"] is True
    assert listed.json()["entries"][0]["reason"] == "max_attempts_exceeded"

    stats = await run_cli("dlq", "stats", queue_name, "--json", connection=connection)
    assert stats.json()["total"] == 3
    assert stats.json()["byReason"]["max_attempts_exceeded"] == 3
    every = await run_cli("dlq", "stats", "--json", connection=connection)
    assert every.json()["byQueue"][queue_name] == 3
    shown = await run_cli("dlq", "list", queue_name, connection=connection)
    assert "bad payload 0" in shown.out


async def test_dlq_redrive_moves_the_entries_back_in_chunks_and_is_audited(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    await dead_letter(sdk, queue, 12)
    some = await run_cli(
        "dlq",
        "redrive",
        queue_name,
        "--limit",
        "5",
        "--why",
        "first five",
        "--json",
        connection=connection,
    )
    assert some.code == 0, some.err
    assert some.json() == {"redriven": {queue_name: 5}, "total": 5}
    rest = await run_cli(
        "dlq", "redrive", "--all", "--why", "the rest", "--json", connection=connection
    )
    assert rest.json()["redriven"][queue_name] == 7
    counts = await queue.get_counts()
    assert counts["waiting"] == 12 and counts["failed"] == 0

    audit = await run_cli("dlq", "audit", queue_name, "--json", connection=connection)
    records = audit.json()["records"]
    assert [(r["action"], r["count"], r["reason"]) for r in records[:2]] == [
        ("redrive", 7, "the rest"),
        ("redrive", 5, "first five"),
    ]
    table = await run_cli("dlq", "audit", connection=connection)
    assert "the rest" in table.out


async def test_dlq_redrive_of_one_job(sdk: SDK, connection: str, queue_name: str) -> None:
    queue = sdk.queue()
    jobs = await dead_letter(sdk, queue, 2)
    ran = await run_cli("dlq", "redrive", queue_name, "--job", jobs[1].id, connection=connection)
    assert ran.code == 0, ran.err
    assert await queue.get_state(jobs[1].id) == "waiting"
    assert await queue.get_state(jobs[0].id) == "failed"


async def test_dlq_purge_asks_for_yes_and_then_deletes(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    await dead_letter(sdk, queue, 4)
    refused = await run_cli("dlq", "purge", queue_name, connection=connection)
    assert refused.code == 2 and "pass --yes" in refused.err
    assert (await queue.get_dlq_stats())["total"] == 4
    ran = await run_cli(
        "dlq", "purge", queue_name, "--yes", "--why", "junk", "--json", connection=connection
    )
    assert ran.code == 0, ran.err
    assert ran.json()["total"] == 4
    assert (await queue.get_dlq_stats())["total"] == 0
    await eventually(lambda: _purged(queue), timeout=10)


async def _purged(queue: Queue) -> bool:
    return (await queue.get_dlq_audit(1))[0]["action"] == "purge"


async def test_dlq_redrive_needs_a_queue_or_all(connection: str) -> None:
    ran = await run_cli("dlq", "redrive", connection=connection)
    assert ran.code == 2 and "--all" in ran.err
