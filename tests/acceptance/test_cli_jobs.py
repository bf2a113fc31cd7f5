"""``pgqueue jobs``, ``job``, ``push`` and ``retry``, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgqueue.client import Job
from pgqueue.errors import JobFailed
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


async def test_jobs_pages_through_a_queue_in_the_states_asked_for(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()
    added = await queue.add_bulk([{"name": "n", "data": i} for i in range(5)])
    await queue.add("later", {}, delay=60_000)

    first = await run_cli(
        "jobs",
        queue_name,
        "--state",
        "waiting",
        "--page-size",
        "2",
        "--json",
        connection=connection,
    )
    assert first.code == 0, first.err
    assert [j["id"] for j in first.json()["jobs"]] == [j.id for j in added[:2]]
    assert first.json()["more"] is True
    last = await run_cli(
        "jobs",
        queue_name,
        "--state",
        "waiting",
        "--page-size",
        "2",
        "--page",
        "3",
        "--json",
        connection=connection,
    )
    assert [j["id"] for j in last.json()["jobs"]] == [added[4].id]
    assert last.json()["more"] is False

    shown = await run_cli("jobs", queue_name, "--page-size", "10", connection=connection)
    assert shown.code == 0
    assert all(job.id in shown.out for job in added)
    assert "delayed" in shown.out


async def test_job_shows_data_options_attempts_with_errors_logs_and_timeline(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()

    async def flaky(job: Job) -> None:
        await job.log(f"attempt {job.attempts_made + 1} begins")
        raise RuntimeError(f"upstream said no ({job.attempts_made + 1})")

    sdk.worker(flaky)
    job = await queue.add("sync", {"account": 7}, attempts=2, backoff=1, priority=3)
    with pytest.raises(JobFailed):
        await queue.wait_for(job, timeout=20)

    ran = await run_cli("job", job.id, "--json", connection=connection)
    assert ran.code == 0, ran.err
    shown: dict[str, Any] = ran.json()
    assert shown["job"]["data"] == {"account": 7}
    assert shown["job"]["priority"] == 3 and shown["job"]["maxAttempts"] == 2
    attempts = shown["job"]["attemptLog"]
    assert [a["attempt"] for a in attempts] == [1, 2]
    assert [a["error"] for a in attempts] == ["upstream said no (1)", "upstream said no (2)"]
    assert [line["message"] for line in shown["logs"]] == ["attempt 1 begins", "attempt 2 begins"]
    events = [e["event"] for e in shown["timeline"]]
    assert events[0] == "created" and events[-1] == "failed"
    assert "attempt 1 failed" in events and "attempt 2 failed" in events

    table = await run_cli("job", job.id, connection=connection)
    assert table.code == 0
    for section in ("data", "attempts", "logs", "timeline", "stack trace"):
        assert section in table.out
    assert '"account": 7' in table.out
    assert "upstream said no (2)" in table.out
    assert "  File " in table.out  # the stored stack trace keeps its indentation


async def test_job_shows_the_result_of_a_completed_job(sdk: SDK, connection: str) -> None:
    queue = sdk.queue()
    sdk.worker(lambda job: {"total": sum(job.data)})
    job = await queue.add("sum", [1, 2, 3])
    await queue.wait_for(job, timeout=20)
    ran = await run_cli("job", job.id, "--json", connection=connection)
    assert ran.json()["job"]["returnvalue"] == {"total": 6}
    table = await run_cli("job", job.id, connection=connection)
    assert "result" in table.out and '"total": 6' in table.out


async def test_push_adds_one_job_with_its_data_and_options(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    ran = await run_cli(
        "push",
        queue_name,
        "welcome",
        '{"to": "ada@example.com"}',
        "--opts",
        '{"attempts": 4, "priority": 2}',
        "--json",
        connection=connection,
    )
    assert ran.code == 0, ran.err
    stored = await sdk.queue().get_job(ran.json()["id"])
    assert stored is not None
    assert stored.name == "welcome" and stored.data == {"to": "ada@example.com"}
    assert stored.raw["maxAttempts"] == 4 and stored.raw["priority"] == 2


async def test_push_from_a_jsonl_file_adds_every_line_in_order(
    sdk: SDK, connection: str, queue_name: str, tmp_path: Path
) -> None:
    source = tmp_path / "jobs.jsonl"
    lines = [{"name": "resize", "data": {"n": i}} for i in range(2_500)]
    lines[3]["opts"] = {"priority": 9}
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    ran = await run_cli("push", queue_name, "--from", str(source), "--json", connection=connection)
    assert ran.code == 0, ran.err
    ids = ran.json()["ids"]
    assert len(ids) == 2_500
    counts = await sdk.queue().get_counts()
    assert counts["waiting"] + counts["prioritized"] == 2_500
    third = await sdk.queue().get_job(ids[3])
    assert third is not None and third.data == {"n": 3} and third.raw["priority"] == 9


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "jobs.jsonl:2: not JSON"),
        ('{"data": 1}', "jobs.jsonl:2: each line is"),
        ('{"name": "x", "atempts": 3}', "jobs.jsonl:2: unknown key: atempts"),
        ('{"name": "x", "opts": {"atempts": 3}}', "jobs.jsonl:2: "),
    ],
)
async def test_a_bad_line_in_the_file_is_named_and_nothing_is_pushed(
    sdk: SDK, connection: str, queue_name: str, tmp_path: Path, bad_line: str, message: str
) -> None:
    source = tmp_path / "jobs.jsonl"
    source.write_text('{"name": "fine"}\n' + bad_line + "\n")
    ran = await run_cli("push", queue_name, "--from", str(source), connection=connection)
    assert ran.code == 1
    assert message in ran.err and "Traceback" not in ran.err
    assert sum((await sdk.queue().get_counts()).values()) == 0


async def test_push_refuses_data_that_is_not_json_as_a_usage_error(
    connection: str, queue_name: str
) -> None:
    ran = await run_cli("push", queue_name, "n", "{oops", connection=connection)
    assert ran.code == 2 and "not JSON" in ran.err


async def test_retry_sends_a_failed_job_back_to_waiting(
    sdk: SDK, connection: str, queue_name: str
) -> None:
    queue = sdk.queue()

    async def broken(job: Job) -> None:
        raise ValueError("nope")

    worker = sdk.worker(broken)
    job = await queue.add("x", {}, attempts=1)
    with pytest.raises(JobFailed):
        await queue.wait_for(job, timeout=20)
    await worker.close()

    ran = await run_cli("retry", job.id, connection=connection)
    assert ran.code == 0, ran.err
    assert await queue.get_state(job.id) == "waiting"
    again = await run_cli("retry", job.id, connection=connection)
    assert again.code == 1 and "is waiting, not failed" in again.err
