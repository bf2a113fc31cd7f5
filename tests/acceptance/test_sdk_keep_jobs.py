"""``remove_on_complete`` / ``remove_on_fail`` as a count or {age, count} through
``Queue.add``, on both transports (retention: one pass of a manager on the
same namespace, as the leader runs it)."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

from pgqueue.client import Job
from pgqueue.testing import eventually
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)
from tests.conftest import start_manager


async def test_a_count_keeps_the_newest_finished_jobs(
    sdk: SDK, db_dsn: str, module_namespace: str
) -> None:
    queue = sdk.queue()
    jobs = [await queue.add("n", i, remove_on_complete=2) for i in range(3)]
    failing = [await queue.add("f", i, attempts=1, remove_on_fail={"count": 1}) for i in range(2)]

    async def handler(job: Job) -> int:
        if job.name == "f":
            raise RuntimeError("broke")
        return int(job.data)

    sdk.worker(handler)
    for job in jobs:
        await queue.wait_for(job, timeout=15)

    async def both_failed() -> bool:
        return (await queue.get_counts())["failed"] == 2

    await eventually(both_failed, timeout=15, message="both failing jobs failed")
    async with start_manager(db_dsn, module_namespace, broker_id="retention-sdk") as m:
        assert (await m.retention_pass()).hidden == 2
    counts = await queue.get_counts()
    assert (counts["completed"], counts["failed"]) == (2, 1)
    assert await queue.get_job(jobs[0].id) is None
    assert await queue.get_job(failing[0].id) is None or await queue.get_job(failing[1].id) is None
