"""Queue's job schedulers (upsert_job_scheduler, get_job_scheduler(s),
remove_job_scheduler, add_cron, every, the repeat option) on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import uuid
from typing import Any

import pytest

from pgqueue.client import JobScheduler
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


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_a_scheduler_pushes_its_template_at_each_tick(sdk: SDK) -> None:
    queue = sdk.queue(default_job_options={"attempts": 6})
    name = _id("beat")
    made = await queue.upsert_job_scheduler(
        name,
        {"every": 300, "immediately": True, "limit": 2},
        {"name": "tick", "data": {"b": 1, "a": 2}, "opts": {"timeout": 9_000}},
    )
    assert isinstance(made, JobScheduler)
    assert (made.id, made.name, made.every, made.limit, made.executions) == (
        name,
        "tick",
        300,
        2,
        0,
    )
    seen: list[dict[str, Any]] = []

    async def handler(job: Any) -> None:
        seen.append({"name": job.name, "data": job.data, "attempts": job.max_attempts})

    sdk.worker(handler)
    await eventually(lambda: len(seen) >= 2, timeout=20, message="two scheduled jobs")
    assert all(j == {"name": "tick", "data": {"b": 1, "a": 2}, "attempts": 6} for j in seen)

    async def spent() -> JobScheduler | None:
        got = await queue.get_job_scheduler(name)
        return got if got is not None and got.next_run is None else None

    done = await eventually(spent, timeout=20, message="the scheduler spent")
    assert done.executions == 2 and len(seen) == 2


async def test_schedulers_are_read_listed_and_removed(sdk: SDK) -> None:
    queue = sdk.queue()
    other = sdk.queue(f"{sdk.queue_name}-other")
    nightly, beat = _id("nightly"), _id("beat")
    cron = await queue.add_cron(nightly, "0 3 * * *", {"kind": "daily"}, tz="Europe/Rome")
    assert cron.pattern == "0 3 * * *" and cron.timezone == "Europe/Rome"
    assert cron.next_run is not None and cron.name == nightly
    await queue.every(beat, 3_600_000, [1, 2])
    await other.every(_id("elsewhere"), 3_600_000)
    got = await queue.get_job_scheduler(nightly)
    assert got is not None and got.data == {"kind": "daily"}
    assert sorted(s.id for s in await queue.get_job_schedulers()) == sorted([nightly, beat])
    assert await queue.get_job_scheduler(_id("missing")) is None
    assert await other.get_job_scheduler(nightly) is None, "another queue's scheduler"
    assert await other.remove_job_scheduler(nightly) is False
    assert await queue.remove_job_scheduler(nightly) is True
    assert await queue.get_job_scheduler(nightly) is None
    assert await queue.remove_job_scheduler(nightly) is False


@pytest.mark.parametrize(
    ("repeat", "template", "message"),
    [
        ({"pattern": "not a cron"}, None, "Invalid cron expression"),
        ({"pattern": "* * * * *", "tz": "Nowhere/Land"}, None, "Invalid timezone"),
        ({"every": -1}, None, "repeatEvery"),
        ({"every": 1000, "cron": "x"}, None, "unknown keys: cron"),
        ({"every": 1000}, {"opts": {"atempts": 3}}, "unknown job option"),
    ],
)
async def test_bad_scheduler_input_raises_before_anything_is_written(
    sdk: SDK, repeat: Any, template: Any, message: str
) -> None:
    queue = sdk.queue()
    name = _id("bad")
    with pytest.raises(ValidationError, match=message):
        await queue.upsert_job_scheduler(name, repeat, template)
    assert await queue.get_job_scheduler(name) is None


async def test_a_repeat_job_is_the_first_run_of_its_scheduler(sdk: SDK) -> None:
    queue = sdk.queue()
    job = await queue.add("poll", {"p": 1}, repeat={"every": 3_600_000, "limit": 5})
    assert await queue.get_state(job.id) == "delayed"
    [scheduler] = await queue.get_job_schedulers()
    assert scheduler.executions == 1 and scheduler.every == 3_600_000
    assert scheduler.raw["source"] == "repeat"
