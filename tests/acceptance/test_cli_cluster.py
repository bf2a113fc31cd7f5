"""``pgqueue workers``, ``brokers`` and ``top``, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pgqueue.client import Job
from pgqueue.testing import eventually
from tests.acceptance.cli_support import cli_env, run_cli
from tests.acceptance.conftest import ROOT
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)


async def test_workers_lists_the_registered_workers_of_a_queue(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    worker = sdk.worker(lambda job: None, concurrency=3)

    async def listed() -> dict[str, Any] | None:
        ran = await run_cli("workers", "--queue", queue_name, "--json", connection=connection)
        found = [w for w in ran.json()["workers"] if w["workerId"] == worker.id]
        return found[0] if found else None

    mine = await eventually(listed, timeout=10)
    assert mine["queues"] == [queue_name] and mine["concurrency"] == 3
    table = await run_cli("workers", connection=connection)
    assert worker.id in table.out


async def test_brokers_lists_the_sessions_with_one_leader(
    sdk: SDK, connection: str, transport_kind: str
) -> None:
    await sdk.queue().get_counts()  # an embedded SDK holds a session (and the maintenance)

    async def one_leader() -> list[dict[str, Any]] | None:
        ran = await run_cli("brokers", "--json", connection=connection)
        brokers = ran.json()["brokers"]
        return brokers if sum(b["leader"] for b in brokers) == 1 else None

    brokers = await eventually(one_leader, timeout=20)
    assert all(b["live"] and not b["draining"] for b in brokers)
    assert sum(bool(b["self"]) for b in brokers) == 1
    if transport_kind == "tcp":
        assert {"sdk-a", "sdk-b"} <= {b["brokerId"] for b in brokers}
    table = await run_cli("brokers", connection=connection)
    assert "leader" in table.out and "live" in table.out


async def test_top_follows_the_queues_from_their_events(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    await queue.add("first", {})  # the queue exists when top starts
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pgqueue",
        "top",
        "--json",
        "--interval",
        "0.2",
        "--connection",
        connection,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_env(),
        cwd=str(ROOT),
    )
    assert process.stdout is not None
    try:

        async def frame() -> dict[str, Any]:
            assert process.stdout is not None
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line, (await process.stderr.read()).decode() if process.stderr else ""
            rows = {r["queue"]: r for r in json.loads(line)["queues"]}
            return dict(rows.get(queue_name) or {})

        first = await frame()
        assert first["waiting"] == 1  # the snapshot

        async def work(job: Job) -> int:
            return 1

        sdk.worker(work, concurrency=4)
        await queue.add_bulk([{"name": "n", "data": i} for i in range(20)])
        async with asyncio.timeout(60):
            row = await frame()
            while row.get("completed", 0) < 21:
                row = await frame()
        assert row["waiting"] == 0 and row["active"] == 0
        assert row["donePerSec"] > 0 and row["inPerSec"] > 0
        assert row["runP50Ms"] is not None and row["waitP50Ms"] is not None
    finally:
        process.terminate()
        await process.wait()


async def test_top_shows_the_alert_figures_of_each_queue(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    """The oldest waiting job's age, the DLQ by reason, worker slots (both transports)."""
    queue = sdk.queue()

    async def boom(job: Job) -> None:
        raise RuntimeError("boom")

    await queue.add("dies", {}, attempts=1)
    worker = sdk.worker(boom, concurrency=2)

    async def dead_lettered() -> bool | None:
        return (await queue.get_counts()).get("failed") == 1 or None

    await eventually(dead_lettered, timeout=20)
    await worker.close()
    await queue.add("waits-too", {})

    async def frame() -> dict[str, Any] | None:
        ran = await run_cli("top", "--json", "--frames", "1", connection=connection)
        rows = {r["queue"]: r for r in json.loads(ran.out.splitlines()[-1])["queues"]}
        row = rows.get(queue_name)
        return row if row and row.get("oldestWaitingMs") is not None else None

    row = await eventually(frame, timeout=30)
    assert row["oldestWaitingMs"] > 0
    assert row["dlqTotal"] == 1 and sum(row["dlq"].values()) == 1
    assert row["oldestRetryMs"] is None
    assert row["concurrencyLimit"] is None  # no limit (or no limits schema)
    assert row["workerSlots"] >= 0 and row["workerSlotsBusy"] >= 0
    table = await run_cli("top", "--frames", "1", connection=connection)
    assert "oldest wait" in table.out and "slots busy" in table.out
