"""Worker faults on real processes: paused past the lease, killed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.faults.harness import FaultRun, assert_safe
from tests.faults.scenarios import intruder_ack, stale_worker

pytestmark = pytest.mark.timeout(120)


async def test_a_worker_paused_past_its_lease_has_its_acks_rejected_and_the_new_owner_wins(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(label="sigstop-worker")
    await stale_worker(run, "q-stale-worker", jobs=4)
    report = await run.finish()
    assert_safe(report)
    assert report.acks_rejected >= 4  # every late ack of w1 was refused
    assert report.redeliveries >= 4 and report.stalls >= 4


async def test_a_token_less_ack_from_another_connection_is_refused_and_the_owner_wins(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(label="intruder-ack")
    error = await intruder_ack(run, "q-intruder")
    assert error is not None and "token" in error.lower(), error
    report = await run.finish()
    assert_safe(report)
    assert report.admitted == 1 and report.acks_rejected == 0
