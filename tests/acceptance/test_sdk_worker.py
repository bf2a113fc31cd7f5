"""Worker: handlers, outcomes, retries, concurrency, leases and closing, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from pgqueue.client import Job, Worker, open_transport
from pgqueue.client.transport import AckRequest
from pgqueue.errors import JobFailed, LeaseLost, UnrecoverableError
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


async def test_the_handlers_return_value_is_the_jobs_result(sdk: SDK) -> None:
    queue = sdk.queue()

    async def double(job: Job) -> dict[str, int]:
        return {"doubled": job.data["x"] * 2}

    sdk.worker(double)
    job = await queue.add("double", {"x": 21})
    assert await queue.wait_for(job, timeout=10) == {"doubled": 42}
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "completed"
    assert stored.returnvalue == {"doubled": 42}
    assert await queue.get_result(job.id) == {"doubled": 42}


async def test_the_handler_gets_the_job_with_its_claim(sdk: SDK) -> None:
    queue = sdk.queue()
    seen: list[Job] = []

    async def handler(job: Job) -> None:
        seen.append(job)

    sdk.worker(handler)
    added = await queue.add("inspect", {"k": "v"}, attempts=4)
    await queue.wait_for(added, timeout=10)
    [job] = seen
    assert (job.id, job.name, job.data, job.queue_name) == (
        added.id,
        "inspect",
        {"k": "v"},
        sdk.queue_name,
    )
    assert isinstance(job.token, str) and job.token
    assert isinstance(job.fence, int)
    assert job.attempts_made == 0
    assert job.max_attempts == 4


async def test_each_new_claim_of_a_job_carries_a_higher_fence(sdk: SDK) -> None:
    queue = sdk.queue()
    fences: list[int] = []
    tokens: list[str] = []

    async def handler(job: Job) -> str:
        assert job.fence is not None and job.token is not None
        fences.append(job.fence)
        tokens.append(job.token)
        if len(fences) == 1:
            raise RuntimeError("again")
        return "done"

    sdk.worker(handler)
    job = await queue.add("fenced", {}, attempts=2, backoff=0)
    assert await queue.wait_for(job, timeout=10) == "done"
    assert len(fences) == 2 and fences[1] > fences[0]
    assert tokens[0] != tokens[1]


async def test_a_plain_function_runs_in_a_thread_and_its_job_calls_block(sdk: SDK) -> None:
    queue = sdk.queue()
    threads: list[str] = []

    def handler(job: Any) -> str:
        threads.append(threading.current_thread().name)
        job.update_progress(50, "half way")
        job.log("from a thread")
        return f"hello {job.data['who']}"

    sdk.worker(handler)
    job = await queue.add("greet", {"who": "ada"})
    assert await queue.wait_for(job, timeout=10) == "hello ada"
    assert threads and threads[0] != threading.main_thread().name
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.progress == 50
    logs = await queue.get_logs(job.id)
    assert [entry["message"] for entry in logs] == ["from a thread"]


async def test_progress_and_logs_of_an_async_handler_are_recorded(sdk: SDK) -> None:
    queue = sdk.queue()

    async def handler(job: Job) -> None:
        await job.update_progress({"step": 1, "of": 2})
        await job.log("step one", level="info")
        await job.log("careful", level="warn")

    sdk.worker(handler)
    job = await queue.add("steps", {})
    await queue.wait_for(job, timeout=10)
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.progress == {"step": 1, "of": 2}
    logs = await queue.get_logs(job.id)
    assert [(e["level"], e["message"]) for e in logs] == [("info", "step one"), ("warn", "careful")]


async def test_an_exception_retries_the_job_per_its_backoff(sdk: SDK) -> None:
    queue = sdk.queue()
    failures: list[tuple[str, str]] = []

    async def flaky(job: Job) -> str:
        if job.attempts_made < 2:
            raise ConnectionError(f"try {job.attempts_made} failed")
        return f"ok after {job.attempts_made}"

    worker = sdk.worker(flaky)
    worker.on("failed", lambda job, exc: failures.append((job.id, str(exc))))
    job = await queue.add("flaky", {}, attempts=3, backoff={"type": "fixed", "delay": 10})
    assert await queue.wait_for(job, timeout=10) == "ok after 2"
    assert failures == [(job.id, "try 0 failed"), (job.id, "try 1 failed")]
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.attempts_made == 2


async def test_a_spent_job_fails_with_the_error_and_the_stack(sdk: SDK) -> None:
    queue = sdk.queue()

    async def broken(job: Job) -> None:
        raise ValueError("bad input: 42")

    sdk.worker(broken)
    job = await queue.add("broken", {}, attempts=1)
    with pytest.raises(JobFailed) as caught:
        await queue.wait_for(job, timeout=10)
    assert caught.value.failed_reason == "bad input: 42"
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "failed"
    assert stored.failed_reason == "bad input: 42"
    assert any("in broken" in line for line in stored.stacktrace)
    assert any("ValueError: bad input: 42" in line for line in stored.stacktrace)


async def test_a_stored_stack_trace_keeps_its_indentation(sdk: SDK) -> None:
    queue = sdk.queue()

    async def broken(job: Job) -> None:
        raise ValueError("indented")

    sdk.worker(broken)
    job = await queue.add("broken", {}, attempts=1)
    with pytest.raises(JobFailed):
        await queue.wait_for(job, timeout=10)
    stored = await queue.get_job(job.id)
    assert stored is not None
    frames = [line for line in stored.stacktrace if "File " in line]
    assert frames, stored.stacktrace
    assert all(line.startswith("  File ") for line in frames), stored.stacktrace
    code = stored.stacktrace[stored.stacktrace.index(frames[-1]) + 1]
    assert code.startswith("    raise ValueError"), stored.stacktrace


async def test_a_long_stack_trace_keeps_its_innermost_frames_and_the_error(sdk: SDK) -> None:
    queue = sdk.queue()

    def deep(n: int) -> None:
        if n == 0:
            raise ValueError("at the bottom")
        deep(n - 1)

    def broken(job: Job) -> None:  # a plain function: run in a thread, a longer trace
        deep(8)

    sdk.worker(broken)
    job = await queue.add("broken", {}, attempts=1)
    with pytest.raises(JobFailed):
        await queue.wait_for(job, timeout=10)
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.stacktrace[-1] == "ValueError: at the bottom", stored.stacktrace
    assert "raise ValueError" in stored.stacktrace[-2]


async def test_an_unrecoverable_error_dead_letters_the_job_at_once(sdk: SDK) -> None:
    queue = sdk.queue()
    calls = 0

    async def refuse(job: Job) -> None:
        nonlocal calls
        calls += 1
        raise UnrecoverableError("card declined")

    sdk.worker(refuse)
    job = await queue.add("charge", {}, attempts=10)
    with pytest.raises(JobFailed, match="card declined"):
        await queue.wait_for(job, timeout=10)
    assert calls == 1
    [entry] = await queue.get_dlq()
    assert entry["job"]["id"] == job.id


async def test_a_result_that_is_not_json_fails_the_job_instead_of_the_batch(sdk: SDK) -> None:
    queue = sdk.queue()

    async def handler(job: Job) -> Any:
        return object() if job.name == "bad" else "fine"

    sdk.worker(handler, concurrency=2)
    bad = await queue.add("bad", {}, attempts=1)
    good = await queue.add("good", {})
    assert await queue.wait_for(good, timeout=10) == "fine"
    with pytest.raises(JobFailed, match="JSON"):
        await queue.wait_for(bad, timeout=10)


async def test_no_more_handlers_run_at_once_than_the_concurrency(sdk: SDK) -> None:
    queue = sdk.queue()
    running = 0
    peak = 0
    gate = asyncio.Event()

    async def handler(job: Job) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await gate.wait()
        running -= 1

    jobs = await queue.add_bulk([{"name": "n", "data": i} for i in range(12)])
    sdk.worker(handler, concurrency=5)
    await eventually(lambda: running == 5, message="five handlers running")
    counts = await queue.get_counts()
    assert counts["active"] == 5
    gate.set()
    for job in jobs:
        await queue.wait_for(job, timeout=10)
    assert peak == 5


async def test_a_rate_limited_worker_starts_at_most_max_jobs_per_window(sdk: SDK) -> None:
    queue = sdk.queue()
    loop = asyncio.get_running_loop()
    starts: list[float] = []

    async def handler(job: Job) -> None:
        starts.append(loop.time())

    jobs = await queue.add_bulk([{"name": "n"} for _ in range(7)])
    sdk.worker(handler, concurrency=10, limiter={"max": 3, "duration": 300})
    for job in jobs:
        await queue.wait_for(job, timeout=10)
    starts.sort()
    assert len(starts) == 7
    for first, fourth in zip(starts, starts[3:], strict=False):
        assert fourth - first >= 0.29


async def test_leases_of_a_long_handler_are_renewed_so_it_runs_once(sdk: SDK) -> None:
    queue = sdk.queue()
    runs = 0
    errors: list[BaseException] = []

    async def slow(job: Job) -> str:
        nonlocal runs
        runs += 1
        await asyncio.sleep(2.5)  # the work: longer than the 1 s lock
        return "finished"

    worker = sdk.worker(slow, concurrency=2, lock_duration_ms=1_000, heartbeat_interval=0.2)
    worker.on("error", errors.append)
    job = await queue.add("slow", {})
    assert await queue.wait_for(job, timeout=15) == "finished"
    assert runs == 1
    assert not [e for e in errors if isinstance(e, LeaseLost)]


async def test_close_lets_running_handlers_finish_and_acks_them(sdk: SDK) -> None:
    queue = sdk.queue()
    gate = asyncio.Event()
    started = asyncio.Event()

    async def handler(job: Job) -> str:
        started.set()
        await gate.wait()
        return "finished during close"

    worker = sdk.worker(handler)
    job = await queue.add("slow", {})
    await asyncio.wait_for(started.wait(), 10)
    closing = asyncio.ensure_future(worker.close())
    await eventually(lambda: worker._closing, message="close began")
    assert not closing.done()
    assert await queue.get_state(job.id) == "active"
    gate.set()
    await asyncio.wait_for(closing, 10)
    assert not worker.running
    assert await queue.get_state(job.id) == "completed"
    assert await queue.get_result(job.id) == "finished during close"


async def test_callbacks_report_active_completed_and_drained(sdk: SDK) -> None:
    queue = sdk.queue()
    happened: list[tuple[str, Any]] = []

    async def handler(job: Job) -> int:
        return int(job.data)

    worker = sdk.worker(handler)
    worker.on("active", lambda job: happened.append(("active", job.data)))
    worker.on("completed", lambda job, result: happened.append(("completed", result)))

    @worker.on("drained")
    async def drained() -> None:
        happened.append(("drained", None))

    job = await queue.add("n", 7)
    await queue.wait_for(job, timeout=10)
    await eventually(lambda: ("drained", None) in happened, message="drained")
    assert happened[:2] == [("active", 7), ("completed", 7)]


async def test_a_worker_created_with_autorun_false_waits_for_run(sdk: SDK) -> None:
    queue = sdk.queue()
    ran: list[str] = []

    async def handler(job: Job) -> None:
        ran.append(job.id)

    worker = sdk.worker(handler, autorun=False)
    job = await queue.add("n", {})
    assert not worker.running
    assert await queue.get_state(job.id) == "waiting"
    runner = asyncio.ensure_future(worker.run())
    await queue.wait_for(job, timeout=10)
    assert ran == [job.id]
    await worker.close()
    await asyncio.wait_for(runner, 10)


class CountingAcks:
    """A transport whose ack calls are counted (the worker's batching is visible)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def ack(self, items: Sequence[AckRequest]) -> list[bool]:
        self.batches.append(len(items))
        result: list[bool] = await self.inner.ack(items)
        return result


async def test_completions_are_acked_in_batches(sdk: SDK) -> None:
    queue = sdk.queue()
    jobs = await queue.add_bulk([{"name": "n", "data": i} for i in range(120)])
    transport = CountingAcks(open_transport(sdk.connection))
    await transport.start()
    try:

        async def handler(job: Job) -> int:
            return int(job.data)

        worker = Worker(sdk.queue_name, handler, transport, concurrency=50, poll_timeout=0.2)
        for job in jobs:
            await queue.wait_for(job, timeout=20)
        await worker.close()
    finally:
        await transport.close()
    assert sum(transport.batches) == 120
    assert max(transport.batches) <= 50
    assert len(transport.batches) < 40


# -- cancellation and timeouts --------------------------------------------------------


async def test_cancelling_an_active_job_reaches_its_handler(sdk: SDK) -> None:
    queue = sdk.queue()
    started = asyncio.Event()
    seen: dict[str, Any] = {}

    async def handler(job: Job) -> str:
        started.set()
        try:
            await asyncio.Event().wait()  # works until told to stop
        except asyncio.CancelledError:
            seen["cancelled_error"] = True
            seen["signal"] = job.cancelled.is_set() and job.is_cancelled()
            raise
        return "never"

    worker = sdk.worker(handler, lock_duration_ms=2_000, heartbeat_interval=0.1)
    reported: list[Job] = []
    worker.on("cancelled", reported.append)
    completed: list[Any] = []
    worker.on("completed", lambda job, result: completed.append(result))
    job = await queue.add("long", {})
    await asyncio.wait_for(started.wait(), 10)
    await queue.remove(job.id)
    await eventually(lambda: worker.cancelled == 1, timeout=10, message="the handler stopped")
    assert seen == {"cancelled_error": True, "signal": True}
    assert [j.id for j in reported] == [job.id]
    assert await queue.get_state(job.id) == "unknown"
    assert (worker.processed, worker.failed, worker.lost, completed) == (0, 0, 0, [])
    assert worker.active == 0


async def test_a_plain_handler_checks_the_cancellation_and_its_result_is_dropped(
    sdk: SDK,
) -> None:
    queue = sdk.queue()
    started = threading.Event()

    def handler(job: Any) -> str:
        started.set()
        deadline = time.monotonic() + 20
        while not job.is_cancelled() and time.monotonic() < deadline:
            time.sleep(0.01)  # the thread's own work loop, checking the signal
        return "late result"

    worker = sdk.worker(handler, lock_duration_ms=2_000, heartbeat_interval=0.1)
    job = await queue.add("long", {})
    await eventually(started.is_set, timeout=10, message="the handler started")
    await queue.cancel(job.id)
    await eventually(lambda: worker.cancelled == 1, timeout=10, message="the handler returned")
    assert worker.processed == 0 and worker.lost == 0
    assert await queue.get_state(job.id) == "unknown"
    assert await queue.get_result(job.id) is None


async def test_an_async_handler_past_its_timeout_is_interrupted_and_the_job_fails(
    sdk: SDK,
) -> None:
    queue = sdk.queue()
    interrupted = asyncio.Event()

    async def handler(job: Job) -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            interrupted.set()
            raise
        return "never"

    worker = sdk.worker(handler)
    failures: list[BaseException] = []
    worker.on("failed", lambda job, error: failures.append(error))
    job = await queue.add("slow", {}, timeout=300, attempts=1)
    with pytest.raises(JobFailed, match="timed out after 300 ms"):
        await queue.wait_for(job, timeout=10)
    assert interrupted.is_set()
    [entry] = await queue.get_dlq()
    assert entry["reason"] == "timeout"
    # The worker's FAIL records it at once; when a broker's reaper got there first
    # (same outcome, same text), the FAIL is already-finalized and counts as lost.
    await eventually(lambda: worker.failed + worker.lost == 1, message="the FAIL answered")
    assert all(isinstance(error, TimeoutError) for error in failures)


async def test_a_plain_handler_past_its_timeout_fails_the_job_and_its_result_is_rejected(
    sdk: SDK,
) -> None:
    queue = sdk.queue()
    gate = threading.Event()
    returned = threading.Event()

    def handler(job: Any) -> str:
        gate.wait(20)  # cannot be interrupted
        returned.set()
        return "too late"

    worker = sdk.worker(handler)
    job = await queue.add("slow", {}, timeout=300, attempts=2, backoff=60_000)
    await eventually(
        lambda: worker.failed + worker.lost == 1, timeout=10, message="failed as a timeout"
    )
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.state == "delayed"  # retried after the backoff
    assert stored.raw["attemptLog"][-1]["error"] == "job timed out after 300 ms"
    assert worker.active == 1, "the thread still holds its slot"
    gate.set()
    await eventually(lambda: worker.active == 0, timeout=10, message="the thread returned")
    assert returned.is_set()
    assert await queue.get_state(job.id) == "delayed"
    assert worker.processed == 0
