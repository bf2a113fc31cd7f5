"""Fixtures of the fault tier: a :class:`FaultRun` per test, aborted if the test fails."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from pgqueue.db.schema import migrate
from pgqueue.embedded import EmbeddedPostgres, dsn_for_database
from tests.fault_proxy import FaultProxy
from tests.faults.harness import FaultRun


@pytest.fixture
async def fault_run(
    db_dsn: str, namespace: str, tmp_path: Path
) -> AsyncIterator[Callable[..., FaultRun]]:
    """A factory of runs on this test's namespace (``fault_run(broken=..., label=...)``)."""
    runs: list[FaultRun] = []

    def make(**options: object) -> FaultRun:
        run = FaultRun(db_dsn, namespace, tmp_path / f"run{len(runs)}", **options)  # type: ignore[arg-type]
        runs.append(run)
        return run

    yield make
    for run in runs:
        await run.abort()


@pytest.fixture
def own_postgres() -> Iterator[tuple[EmbeddedPostgres, str]]:
    """A PostgreSQL server of this test's own (so it may restart it), migrated."""
    data_dir = Path(tempfile.mkdtemp(prefix="pgqueue-faults-pg-")) / "data"
    server = EmbeddedPostgres(data_dir, cleanup="delete")
    try:
        admin = server.start()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("CREATE DATABASE faults")
        dsn = dsn_for_database(admin, "faults")
        migrate(dsn)
        yield server, dsn
    finally:
        server.stop()


@pytest.fixture
async def proxy(db_dsn: str) -> AsyncIterator[FaultProxy]:
    """A TCP proxy in front of this module's database (tests/fault_proxy.py)."""
    fault_proxy = FaultProxy(db_dsn)
    await fault_proxy.start()
    yield fault_proxy
    await fault_proxy.close()
