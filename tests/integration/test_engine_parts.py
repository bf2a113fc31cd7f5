"""The parts ``start()`` builds come from factories a test can replace."""

from __future__ import annotations

from dataclasses import replace

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.manager.context import EngineContext
from pgqueue.manager.notifier import Notifier
from pgqueue.manager.parts import EngineParts
from pgqueue.runtime import PostgresQueueManager
from pgqueue.service import Service
from tests.conftest import MANAGER_DEFAULTS


class CountingNotifier(Notifier):
    """A notifier of the test's own (it remembers being built)."""

    built: list[CountingNotifier] = []

    def __init__(self, db: Database, config: Config) -> None:
        super().__init__(db, config)
        self.built.append(self)


class RecordingMaintenance:
    """Maintenance that only records what the engine asked of it."""

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx
        self.calls: list[str] = []

    def services(self) -> list[Service]:
        return []

    async def start(self) -> None:
        self.calls.append("start")

    async def stop(self) -> None:
        self.calls.append("stop")


def _config(dsn: str, namespace: str) -> Config:
    return Config(dsn=dsn, namespace=namespace, broker_id="parts", **MANAGER_DEFAULTS)


async def test_a_replaced_notifier_and_maintenance_are_the_ones_the_engine_runs(
    db_dsn: str, namespace: str
) -> None:
    built: list[RecordingMaintenance] = []

    def maintenance(ctx: EngineContext) -> RecordingMaintenance:
        built.append(RecordingMaintenance(ctx))
        return built[-1]

    parts = EngineParts(notifier=CountingNotifier, maintenance=maintenance)
    manager = PostgresQueueManager(_config(db_dsn, namespace), parts=parts)
    await manager.start()
    try:
        [upkeep] = built
        assert manager.notifier is CountingNotifier.built[-1]
        assert upkeep.ctx is manager.ctx and upkeep.calls == ["start"]
        assert manager.maintenance is upkeep
        assert manager.elector is None  # not the standard maintenance services
        job_id = await manager.push("q", "n", 1)
        [claim] = await manager.pull_batch("q", 1)
        assert claim.id == job_id
    finally:
        await manager.close()
    assert upkeep.calls == ["start", "stop"]


async def test_by_default_the_runtime_starts_maintenance_only_when_asked(
    db_dsn: str, namespace: str
) -> None:
    quiet = PostgresQueueManager(_config(db_dsn, namespace))
    assert quiet.parts.maintenance is None
    busy = PostgresQueueManager(replace(_config(db_dsn, namespace), run_maintenance=True))
    await busy.start()
    try:
        assert busy.elector is not None and busy.reaper is not None
        assert busy.elector in busy.services() and busy.reaper in busy.services()
    finally:
        await busy.close()
