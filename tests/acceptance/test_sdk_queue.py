"""Queue: producing, reading and controlling, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import uuid
from typing import Any

import pytest

from pgqueue.client import Job
from pgqueue.errors import ValidationError
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


async def test_add_returns_a_job_whose_id_reads_back_the_stored_job(sdk: SDK) -> None:
    queue = sdk.queue()
    job = await queue.add("welcome", {"to": "ada@example.com"}, attempts=5, priority=3)
    assert isinstance(job.id, str) and job.id
    assert (job.name, job.data, job.queue_name) == (
        "welcome",
        {"to": "ada@example.com"},
        sdk.queue_name,
    )
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.id, stored.name, stored.data) == (job.id, "welcome", {"to": "ada@example.com"})
    assert stored.max_attempts == 5
    assert stored.priority == 3
    assert stored.state == "prioritized"
    assert await queue.get_state(job.id) == "prioritized"


async def test_a_job_id_names_one_live_job_however_often_it_is_added(sdk: SDK) -> None:
    queue = sdk.queue()
    order = f"order-{uuid.uuid4().hex[:8]}"  # job ids are unique across every queue
    first = await queue.add("charge", {"order": 1}, job_id=order)
    again = await queue.add("charge", {"order": 1}, job_id=order)
    assert first.id == again.id == order
    counts = await queue.get_counts()
    assert counts["waiting"] == 1


async def test_add_bulk_adds_every_job_in_order(sdk: SDK) -> None:
    queue = sdk.queue()
    jobs = await queue.add_bulk(
        [
            {"name": "a", "data": 1},
            {"name": "b", "data": {"x": 2}, "opts": {"priority": 5}},
            {"name": "c", "opts": {"delay": 60_000}},
        ]
    )
    assert [job.name for job in jobs] == ["a", "b", "c"]
    assert len({job.id for job in jobs}) == 3
    states = [await queue.get_state(job.id) for job in jobs]
    assert states == ["waiting", "prioritized", "delayed"]
    counts = await queue.get_counts()
    assert (counts["waiting"], counts["prioritized"], counts["delayed"]) == (1, 1, 1)


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"jobId": "x"}, "jobId", "use job_id"),
        ({"priority": 10_000_000}, "priority", "priority must be at most"),
        ({"attempts": 0}, "attempts", "attempts must be at least 1"),
        ({"backoff": {"type": "linear"}}, "backoff", "backoff.type must be"),
        ({"delay": "soon"}, "delay", "delay must be a number"),
    ],
)
async def test_bad_options_are_refused_before_anything_is_written(
    sdk: SDK, options: dict[str, Any], field: str, words: str
) -> None:
    queue = sdk.queue()
    with pytest.raises(ValidationError) as caught:
        await queue.add("job", {}, **options)
    assert caught.value.field == field
    assert words in caught.value.message
    with pytest.raises(ValidationError, match=r"^jobs\[1\]: "):
        await queue.add_bulk([{"name": "ok"}, {"name": "bad", "opts": options}])
    counts = await queue.get_counts()
    assert sum(counts.values()) == 0


async def test_data_that_is_not_json_is_refused_naming_the_field(sdk: SDK) -> None:
    queue = sdk.queue()
    with pytest.raises(ValidationError) as caught:
        await queue.add("job", {"when": object()})
    assert caught.value.field == "data"
    with pytest.raises(ValidationError) as caught:
        await queue.add("", {})
    assert caught.value.field == "name"


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        ({"name": "", "data": 1}, "name", "Job name"),
        ({"name": "n", "data": {"x": float("nan")}}, "data", "NaN and Infinity"),
        ({"name": "n", "data": {"when": object()}}, "data", "object values"),
        ({"name": "n", "data": "é" * 6_000_000}, "data", "too large"),  # 12 MB of UTF-8
    ],
)
async def test_add_bulk_without_options_names_the_entry_it_refuses(
    sdk: SDK, entry: dict[str, Any], field: str, words: str
) -> None:
    """Entries without options are checked for the whole list at once; a refused one
    is named as the per-entry check names it, and nothing is written."""
    queue = sdk.queue()
    with pytest.raises(ValidationError, match=r"^jobs\[1\]: ") as caught:
        await queue.add_bulk([{"name": "ok", "data": {"i": 0}}, entry])
    assert caught.value.field == field
    assert words in caught.value.message
    assert sum((await queue.get_counts()).values()) == 0
    [job] = await queue.add_bulk([{"name": "ok", "data": {"i": 1, "t": 2.5}}])
    assert (job.name, job.data, job.queue_name, job.opts) == (
        "ok",
        {"i": 1, "t": 2.5},
        queue.name,
        {},
    )


async def test_an_unknown_id_has_no_job_no_result_and_the_state_unknown(sdk: SDK) -> None:
    queue = sdk.queue()
    assert await queue.get_job("no-such-job") is None
    assert await queue.get_state("no-such-job") == "unknown"
    assert await queue.get_result("no-such-job") is None


async def test_a_paused_queue_gives_no_jobs_to_workers_until_resumed(sdk: SDK) -> None:
    queue = sdk.queue()
    await queue.pause()
    assert await queue.is_paused()
    ran: list[str] = []

    async def handler(job: Job) -> None:
        ran.append(job.id)

    job = await queue.add("later", {})
    sdk.worker(handler)
    assert (await queue.get_counts())["paused"] == 1
    assert await queue.get_state(job.id) == "waiting"
    await queue.resume()
    assert not await queue.is_paused()
    await eventually(lambda: ran == [job.id], message="job ran after resume")


async def test_drain_removes_waiting_jobs_and_keeps_delayed_ones_unless_asked(sdk: SDK) -> None:
    queue = sdk.queue()
    await queue.add_bulk(
        [{"name": "now"}, {"name": "now"}, {"name": "later", "opts": {"delay": 60_000}}]
    )
    assert await queue.drain() == 2
    counts = await queue.get_counts()
    assert (counts["waiting"], counts["delayed"]) == (0, 1)
    assert await queue.drain(delayed=True) == 1
    assert (await queue.get_counts())["delayed"] == 0


async def test_a_delayed_job_can_be_promoted_and_a_waiting_one_removed(sdk: SDK) -> None:
    queue = sdk.queue()
    delayed = await queue.add("later", {}, delay=3_600_000)
    assert await queue.get_state(delayed.id) == "delayed"
    await queue.promote(delayed.id)
    assert await queue.get_state(delayed.id) == "waiting"
    await queue.remove(delayed.id)
    assert await queue.get_job(delayed.id) is None


async def test_clean_removes_finished_jobs_older_than_the_grace_period(sdk: SDK) -> None:
    queue = sdk.queue()
    jobs = await queue.add_bulk([{"name": "a"}, {"name": "b"}])

    async def handler(job: Job) -> str:
        return job.name

    sdk.worker(handler, concurrency=2)
    for job in jobs:
        assert await queue.wait_for(job, timeout=10) == job.name
    assert await queue.clean(3_600_000) == []
    removed = await queue.clean(0, limit=10, state="completed")
    assert sorted(removed) == sorted(job.id for job in jobs)
    assert (await queue.get_counts())["completed"] == 0


async def test_obliterate_removes_the_queue_and_all_its_jobs(sdk: SDK) -> None:
    queue = sdk.queue()
    await queue.add_bulk([{"name": "a"}, {"name": "b", "opts": {"delay": 60_000}}])
    await queue.pause()
    await queue.obliterate()
    counts = await queue.get_counts()
    assert sum(counts.values()) == 0
    assert not await queue.is_paused()


async def test_a_dead_lettered_job_is_listed_and_can_be_retried_or_purged(sdk: SDK) -> None:
    queue = sdk.queue()
    first = await queue.add("boom", {}, attempts=1)
    second = await queue.add("boom", {}, attempts=1)
    calls: dict[str, int] = {}

    async def handler(job: Job) -> str:
        calls[job.id] = calls.get(job.id, 0) + 1
        if calls[job.id] == 1:
            raise RuntimeError("first try fails")
        return "second try works"

    sdk.worker(handler, concurrency=2)
    await eventually(
        lambda: _dlq_ids(queue, {first.id, second.id}), message="both jobs dead-lettered"
    )
    entries = await queue.get_dlq()
    assert {e["job"]["id"] for e in entries} == {first.id, second.id}
    assert all("first try fails" in str(e["error"]) for e in entries)
    await queue.retry_job(first.id)
    assert await queue.wait_for(first, timeout=10) == "second try works"
    assert await queue.purge_dlq() == 1
    assert await queue.get_dlq() == []
    assert await queue.get_state(second.id) == "unknown"  # purged with its entry


async def _dlq_ids(queue: Any, wanted: set[str]) -> bool:
    return {e["job"]["id"] for e in await queue.get_dlq()} == wanted


async def test_retry_dlq_sends_every_dead_lettered_job_back(sdk: SDK) -> None:
    queue = sdk.queue()
    jobs = await queue.add_bulk([{"name": "x", "opts": {"attempts": 1}} for _ in range(3)])
    failing = True

    async def handler(job: Job) -> str:
        if failing:
            raise RuntimeError("down")
        return "up"

    sdk.worker(handler, concurrency=3)
    await eventually(lambda: _dlq_ids(queue, {j.id for j in jobs}), message="dead-lettered")
    failing = False
    assert await queue.retry_dlq() == 3
    for job in jobs:
        assert await queue.wait_for(job, timeout=10) == "up"


async def test_a_deduplication_key_is_found_and_freed(sdk: SDK) -> None:
    queue = sdk.queue()
    owner = await queue.add("sync", {"v": 1}, unique_key="account-9")
    assert (await queue.add("sync", {"v": 2}, unique_key="account-9")).id == owner.id
    assert await queue.get_deduplication_job_id("account-9") == owner.id
    assert await queue.remove_deduplication_key("account-9") == 1
    assert await queue.get_deduplication_job_id("account-9") is None
    second = await queue.add("sync", {"v": 3}, unique_key="account-9")
    assert second.id != owner.id
    assert await second.remove_deduplication_key() is True
    assert await second.remove_deduplication_key() is False
    assert (await queue.get_counts())["waiting"] == 2
