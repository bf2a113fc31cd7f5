"""Negative controls: the checker says ``valid: NO`` when a defect is put back.

Each test runs a scenario against a broker with one defect monkeypatched in
(tests/faults/broken_builds.py, through a sitecustomize on the broker's
PYTHONPATH) and checks that the figure that defect breaks is reported.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.faults.harness import FaultRun
from tests.faults.scenarios import stale_worker

pytestmark = pytest.mark.timeout(120)


async def test_an_ack_without_the_fence_check_is_reported_as_a_stale_ack_accepted(
    fault_run: Callable[..., FaultRun],
) -> None:
    run = fault_run(broken="ack-without-fence", label="control ack-without-fence")
    await stale_worker(run, "q-control-fence")
    report = await run.finish()
    assert report.stale_acks_accepted > 0
    assert not report.valid
