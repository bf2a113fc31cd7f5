"""Stopping a periodic maintenance service lets a pass in progress finish (for a
while) instead of cutting it mid-statement: a cancelled pass left its transaction
open on a pooled connection, which asyncpg then reset with a "Resetting connection
with an active transaction" error at every close that caught the cron ticker's
transaction."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import cast

import pytest

from pgqueue.maintenance import periodic
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.periodic import Periodic
from pgqueue.manager.context import EngineContext
from pgqueue.service import stop_together
from pgqueue.testing import eventually


class HeldPass(Periodic[int]):
    """A pass that runs until ``release`` is set (on every broker, no leader needed)."""

    leader_only = False

    def __init__(self) -> None:
        ctx = SimpleNamespace(session=SimpleNamespace(fenced=asyncio.Event()))
        super().__init__(cast(EngineContext, ctx), cast(LeaderElector, None), 10, 0)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.finished = 0
        self.cancelled = 0

    async def pass_once(self) -> int:
        self.entered.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.finished += 1
        return self.finished


async def test_stop_lets_a_pass_in_progress_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(periodic, "STOP_GRACE_S", 3600)  # the release, not the grace, ends it
    service = HeldPass()
    await service.start()
    await asyncio.wait_for(service.entered.wait(), timeout=10)
    stopping = asyncio.create_task(service.stop())
    for _ in range(3):
        await asyncio.sleep(0)  # loop steps: stop() is under way, the pass still held
    service.release.set()
    await asyncio.wait_for(stopping, timeout=10)
    assert (service.finished, service.cancelled) == (1, 0)
    assert service.state == "stopped"


async def test_stop_cancels_a_pass_that_outlasts_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(periodic, "STOP_GRACE_S", 0.05)
    service = HeldPass()
    await service.start()
    await asyncio.wait_for(service.entered.wait(), timeout=10)
    await asyncio.wait_for(service.stop(), timeout=10)
    assert (service.finished, service.cancelled) == (0, 1)
    assert service.state == "stopped"


async def test_stop_between_passes_starts_no_other_pass() -> None:
    service = HeldPass()
    service.release.set()
    await service.start()
    await asyncio.wait_for(service.done.wait(), timeout=10)
    await asyncio.wait_for(service.stop(), timeout=10)
    assert service.cancelled == 0 and service.finished >= 1
    assert service.state == "stopped"


async def test_services_stopped_together_wait_for_their_passes_side_by_side(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broker's upkeep stops in one grace, not one per service: a database that
    stopped answering would otherwise hold every pass in turn."""
    monkeypatch.setattr(periodic, "STOP_GRACE_S", 3600)
    first, second = HeldPass(), HeldPass()
    for service in (first, second):
        await service.start()
        await asyncio.wait_for(service.entered.wait(), timeout=10)
    stopping = asyncio.create_task(stop_together([first, second]))
    second.release.set()  # the one a stop in turn would come to last
    await eventually(lambda: second.state == "stopped", message="the second stopped first")
    assert not stopping.done() and first.state == "running"
    first.release.set()
    await asyncio.wait_for(stopping, timeout=10)
    assert (first.finished, second.finished, first.cancelled, second.cancelled) == (1, 1, 0, 0)
