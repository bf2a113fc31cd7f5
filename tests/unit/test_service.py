"""Supervision of long-lived services: a service that fails after it started is
restarted with backoff and counted; one that fails before it started fails start()."""

from __future__ import annotations

import asyncio

import pytest

from pgqueue.service import Service
from pgqueue.testing import eventually


class Flaky(Service):
    """Starts, then fails its first ``failures`` runs; the next one keeps running."""

    name = "flaky"

    def __init__(self, failures: int, *, before_start: bool = False) -> None:
        super().__init__()
        self.failures = failures
        self.before_start = before_start
        self.runs = 0
        self.healthy = asyncio.Event()

    async def run(self) -> None:
        self.runs += 1
        if self.before_start:
            raise RuntimeError("cannot start")
        self.started.set()
        if self.runs <= self.failures:
            raise RuntimeError(f"run {self.runs} failed")
        self.healthy.set()
        await asyncio.Event().wait()


async def test_a_service_that_fails_after_starting_is_restarted_and_counted() -> None:
    service = Flaky(failures=2)
    await service.start()
    try:
        await asyncio.wait_for(service.healthy.wait(), timeout=10)
        assert service.runs == 3
        assert service.restarts == 2
        assert service.state == "running"
        assert isinstance(service.failure, RuntimeError)
    finally:
        await service.stop()
    assert service.state == "stopped"


async def test_a_failing_service_reports_that_it_is_restarting() -> None:
    service = Flaky(failures=1_000)
    await service.start()
    try:
        await eventually(lambda: service.state == "restarting", timeout=10)
        assert not service.healthy.is_set()
    finally:
        await service.stop()


async def test_a_service_that_fails_before_it_started_fails_start_and_is_not_restarted() -> None:
    service = Flaky(failures=0, before_start=True)
    with pytest.raises(RuntimeError, match="cannot start"):
        await service.start()
    assert service.runs == 1
    assert service.restarts == 0
    assert service.state == "failed"
