"""Negative controls: the checker says ``valid: NO`` when a defect is put back.

Each test runs a scenario against a broker with one defect monkeypatched in
(tests/faults/broken_builds.py, through a sitecustomize on the broker's
PYTHONPATH) and checks that the figure that defect breaks is reported.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.faults.harness import FaultRun
from tests.faults.scenarios import intruder_ack, stale_worker, steady

pytestmark = pytest.mark.timeout(120)


async def test_an_ack_without_the_fence_check_is_reported_as_a_stale_ack_accepted(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(broken="ack-without-fence", label="control ack-without-fence")
    await stale_worker(run, "q-control-fence")
    report = await run.finish()
    assert report.stale_acks_accepted > 0
    assert not report.valid


async def test_a_dropped_event_is_reported_missing_for_its_subscriber(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(broken="drop-event", label="control drop-event")
    await steady(run, "q-control-events")
    report = await run.finish()
    assert report.events_missing["s1"] > 0
    assert not report.valid


async def test_a_token_less_ack_accepted_from_another_connection_is_a_stale_ack(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(broken="borrow-tokens", label="control borrow-tokens")
    assert await intruder_ack(run, "q-control-borrow") is None  # the defect: accepted
    report = await run.finish()
    assert report.stale_acks_accepted == 1
    assert not report.valid


async def test_an_admitted_job_that_disappears_is_reported_lost(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(broken="lose-admitted-job", label="control lose-admitted-job")
    await steady(run, "q-control-lost")
    report = await run.finish()
    assert report.lost > 0
    assert not report.valid
