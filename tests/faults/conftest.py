"""Fixtures of the fault tier: a :class:`FaultRun` per test, aborted if the test fails."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

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
