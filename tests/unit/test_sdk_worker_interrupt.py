"""A cancelled job's handler is interrupted the way ``asyncio.timeout`` would do it.

A job without a timeout runs without an ``asyncio.timeout`` scope (its cost per job
is most of the handler's bookkeeping); the interruption cancels the handler's task
once and takes that cancellation back, so the worker carries on, while a
cancellation from outside (the worker closing) still reaches the caller.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pgqueue import Worker
from pgqueue.client.job import Job
from tests.unit.worker_transport import QuietTransport


def _job(timeout: int | None = None) -> Job:
    raw: dict[str, Any] = {"id": "j1", "name": "n", "data": 1, "queue": "q"}
    if timeout is not None:
        raw["timeout"] = timeout
    return Job.from_wire(QuietTransport(), raw, token="1:t", fence=1)  # type: ignore[arg-type]


def _worker(handler: Any) -> Worker:
    return Worker("q", handler, connection=QuietTransport(), autorun=False)  # type: ignore[arg-type]


async def test_an_interrupted_handler_ends_as_cancelled_and_its_task_goes_on() -> None:
    started = asyncio.Event()
    seen: list[str] = []

    async def handler(job: Job) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    worker, job = _worker(handler), _job()

    async def run() -> tuple[tuple[str, Any], int]:
        outcome = await worker._run(job)
        await asyncio.sleep(0)  # the task is not cancelled any more: it can await
        task = asyncio.current_task()
        assert task is not None
        return outcome, task.cancelling()

    task = asyncio.create_task(run())
    await started.wait()
    worker._interrupt(job)
    worker._interrupt(job)  # twice: one cancellation
    assert await task == (("cancelled", None), 0)
    assert seen == ["cancelled"]
    assert job.is_cancelled()
    assert worker._scopes == {}


async def test_a_cancellation_from_outside_still_reaches_the_caller() -> None:
    started = asyncio.Event()

    async def handler(job: Job) -> None:
        started.set()
        await asyncio.Event().wait()

    worker, job = _worker(handler), _job()
    task = asyncio.create_task(worker._run(job))
    await started.wait()
    worker._interrupt(job)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert worker._scopes == {}


async def test_a_handler_that_ends_on_its_own_is_done_and_its_error_propagates() -> None:
    async def handler(job: Job) -> str:
        return "result"

    assert await _worker(handler)._run(_job()) == ("done", "result")

    async def failing(job: Job) -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await _worker(failing)._run(_job())


async def test_a_job_with_a_timeout_still_times_out() -> None:
    async def handler(job: Job) -> None:
        await asyncio.Event().wait()

    assert await _worker(handler)._run(_job(timeout=1)) == ("timeout", None)
