"""``pgqueue queues`` and the queue controls, as real processes, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

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


async def test_queues_shows_each_queues_counts_per_state_and_whether_it_is_paused(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    await queue.add("a", {})
    await queue.add("b", {}, delay=60_000)
    await queue.pause()

    ran = await run_cli("queues", "--json", connection=connection)
    assert ran.code == 0, ran.err
    [mine] = [q for q in ran.json() if q["name"] == queue_name]
    assert mine["paused"] is True
    assert mine["counts"]["waiting"] == 1
    assert mine["counts"]["delayed"] == 1
    assert mine["dlq"] == 0

    table = await run_cli("queues", connection=connection)
    assert table.code == 0
    [row] = [line for line in table.out.splitlines() if queue_name in line]
    assert "paused" in row


async def test_pause_and_resume_change_the_queue_for_every_worker(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    assert (await run_cli("pause", queue_name, connection=connection)).code == 0
    assert await queue.is_paused()
    ran = await run_cli("resume", queue_name, connection=connection)
    assert ran.code == 0 and f"queue {queue_name} resumed" in ran.out
    assert not await queue.is_paused()


async def test_a_destructive_command_without_yes_and_without_a_terminal_refuses_and_changes_nothing(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    await queue.add_bulk([{"name": "x"}, {"name": "y"}])
    for command in (["drain", queue_name], ["obliterate", queue_name], ["clean", queue_name]):
        ran = await run_cli(*command, connection=connection)
        assert ran.code == 2, (command, ran.out, ran.err)
        assert "pass --yes" in ran.err
        assert "Traceback" not in ran.err
    assert (await queue.get_counts())["waiting"] == 2


async def test_drain_with_yes_removes_the_waiting_jobs(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    await queue.add_bulk([{"name": "x"}, {"name": "y"}, {"name": "z"}])
    delayed = await queue.add("later", {}, delay=60_000)
    ran = await run_cli("drain", queue_name, "--yes", connection=connection)
    assert ran.code == 0, ran.err
    assert "removed 3 job(s)" in ran.out
    counts = await queue.get_counts()
    assert counts["waiting"] == 0 and counts["delayed"] == 1
    assert await queue.get_state(delayed.id) == "delayed"


async def test_clean_removes_finished_jobs_of_the_state_asked_for(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    sdk.worker(lambda job: job.data)
    jobs = await queue.add_bulk([{"name": "n", "data": i} for i in range(3)])
    for job in jobs:
        await queue.wait_for(job, timeout=20)
    ran = await run_cli(
        "clean", queue_name, "--state", "completed", "--limit", "2", "-y", connection=connection
    )
    assert ran.code == 0, ran.err
    assert "removed 2 completed job(s)" in ran.out
    assert (await queue.get_counts())["completed"] == 1


async def test_obliterate_with_yes_removes_the_queue(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    await queue.add("x", {})
    ran = await run_cli("obliterate", queue_name, "--yes", connection=connection)
    assert ran.code == 0, ran.err
    assert sum((await queue.get_counts()).values()) == 0
    listed = await run_cli("queues", "--json", connection=connection)
    assert queue_name not in [q["name"] for q in listed.json()]


async def test_a_usage_error_exits_2_and_a_failure_exits_1_with_one_line(
    connection: str,
) -> None:
    usage = await run_cli("jobs", connection=connection)  # QUEUE missing
    assert usage.code == 2 and "Missing argument" in usage.err
    unknown = await run_cli("no-such-command")
    assert unknown.code == 2
    missing = await run_cli("job", "01a00000-0000-7000-8000-000000000000", connection=connection)
    assert missing.code == 1
    assert missing.err.strip().splitlines() == [
        "pgqueue: no job 01a00000-0000-7000-8000-000000000000"
    ]


async def test_a_connection_with_a_wrong_scheme_is_refused_in_one_line() -> None:
    ran = await run_cli("queues", connection="redis://localhost:6379")
    assert ran.code == 1
    assert len(ran.err.strip().splitlines()) == 1
    assert "postgresql://" in ran.err and "pgqueue://" in ran.err


async def test_a_flag_of_the_other_transport_is_refused_in_one_line(
    connection: str, transport_kind: str
) -> None:
    wrong = "--token" if transport_kind == "embedded" else "--namespace"
    ran = await run_cli("queues", wrong, "x", connection=connection)
    assert ran.code == 1
    assert len(ran.err.strip().splitlines()) == 1 and "Traceback" not in ran.err
