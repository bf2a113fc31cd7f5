"""``pgqueue worker module:function``: a real process, stopped by a signal, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

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

HANDLERS = textwrap.dedent(
    """
    import asyncio
    import os

    async def handle(job):
        if job.data.get("work"):
            print("handler started", job.id, flush=True)
            await asyncio.sleep(job.data["work"])  # the job's work takes a while
        return {"pid": os.getpid(), "echo": job.data}

    def plain(job):
        return job.data["n"] + 1
    """
)


class WorkerProcess:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    async def read_until(self, words: str, timeout: float = 30) -> str:
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                raw = await self.process.stdout.readline()
                if not raw:
                    raise AssertionError(f"worker exited before {words!r}: {self.lines}")
                line = raw.decode(errors="replace").rstrip()
                self.lines.append(line)
                if words in line:
                    return line

    async def finish(self, timeout: float = 30) -> int:
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            rest = await self.process.stdout.read()
            self.lines += rest.decode(errors="replace").splitlines()
            return await self.process.wait()


Starter = Callable[..., Awaitable[WorkerProcess]]


@pytest.fixture
async def start_worker(tmp_path: Path, connection: str, queue_name: str) -> AsyncIterator[Starter]:
    (tmp_path / "sdk_cli_tasks.py").write_text(HANDLERS)
    started: list[WorkerProcess] = []

    async def start(target: str, *extra: str) -> WorkerProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "pgqueue",
            "worker",
            target,
            "--queue",
            queue_name,
            "--connection",
            connection,
            *extra,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        worker = WorkerProcess(process)
        started.append(worker)
        await worker.read_until("processing queue")
        return worker

    yield start
    for worker in started:
        if worker.process.returncode is None:
            worker.process.kill()
            await worker.process.wait()


async def test_the_worker_command_runs_the_named_handler(sdk: SDK, start_worker: Starter) -> None:
    worker = await start_worker("sdk_cli_tasks:handle", "--concurrency", "4")
    queue = sdk.queue()
    job = await queue.add("echo", {"x": 1})
    result = await queue.wait_for(job, timeout=20)
    assert result["echo"] == {"x": 1}
    assert result["pid"] == worker.process.pid != os.getpid()
    worker.process.send_signal(signal.SIGTERM)
    assert await worker.finish() == 0


async def test_a_plain_function_handler_works_from_the_command(
    sdk: SDK, start_worker: Starter
) -> None:
    worker = await start_worker("sdk_cli_tasks:plain")
    queue = sdk.queue()
    job = await queue.add("inc", {"n": 41})
    assert await queue.wait_for(job, timeout=20) == 42
    worker.process.send_signal(signal.SIGINT)
    assert await worker.finish() == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_lets_the_running_job_finish_and_exits_cleanly(
    sdk: SDK, start_worker: Starter, signum: signal.Signals
) -> None:
    worker = await start_worker("sdk_cli_tasks:handle")
    queue = sdk.queue()
    job = await queue.add("slow", {"work": 1.5})

    await worker.read_until(f"handler started {job.id}")  # the handler is running it
    worker.process.send_signal(signum)
    await worker.read_until("closing; waiting for 1 running job")
    assert await worker.finish() == 0
    assert await queue.get_state(job.id) == "completed"
    assert (await queue.get_result(job.id))["echo"] == {"work": 1.5}
    assert any("closed (1 completed, 0 failed)" in line for line in worker.lines)


async def test_a_bad_target_is_refused_with_a_clear_message(
    tmp_path: Path, connection: str, queue_name: str
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pgqueue",
        "worker",
        "no_such_module:handle",
        "--queue",
        queue_name,
        "--connection",
        connection,
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 1
    assert "cannot import 'no_such_module'" in output.decode()
