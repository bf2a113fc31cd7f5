"""A combined random run with a seed: every kind of fault, one after another."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from tests.fault_proxy import FaultProxy
from tests.faults.harness import FaultRun, assert_safe
from tests.faults.nemesis import combined_run

pytestmark = pytest.mark.timeout(400)

SEED = int(os.environ.get("PGQUEUE_CHAOS_SEED", "4711"))


async def test_a_seeded_combination_of_faults_loses_nothing_and_accepts_no_stale_ack(
    fault_run: Callable[..., FaultRun], proxy: FaultProxy
) -> None:
    run = fault_run(label=f"combined seed={SEED}", client_options="timeout=5")
    nemesis = await combined_run(
        run, seed=SEED, seconds=10, queue="q-combined", proxy=proxy, min_steps=6
    )
    report = await run.finish(backoff_ms=100)
    print("steps:", nemesis.steps)
    assert_safe(report)
    assert len(nemesis.steps) >= 6 and sum(report.faults.values()) >= 1
