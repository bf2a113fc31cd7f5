"""Flow failure policies through FlowProducer and Worker, on both transports.

A parent has two children: A fails for good (one attempt) with the policy under
test, B has no policy and no worker yet.  What the parent does then, and what
its handler reads (``get_failed_children_values``, ``get_ignored_children_failures``),
differs for every policy; B's worker starts afterwards.
"""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import uuid
from typing import Any

import pytest

from pgqueue.client import Job
from pgqueue.testing import eventually
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)

# policy, parent state once A failed (B still waiting), parent state once B completed,
# whose failure the parent's handler reads as ignored / as failed
POLICIES: list[tuple[str | None, str, str, bool, bool]] = [
    ("fail_parent_on_failure", "failed", "failed", False, False),
    ("ignore_dependency_on_failure", "waiting-children", "completed", True, False),
    ("remove_dependency_on_failure", "waiting-children", "completed", False, False),
    ("continue_parent_on_failure", "completed", "completed", False, True),
    (None, "waiting-children", "waiting-children", False, False),
]


def other_queue() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize(("policy", "after_a", "after_b", "ignored", "failed"), POLICIES)
async def test_each_failure_policy_reaches_the_parent_its_own_way(
    sdk: SDK,
    policy: str | None,
    after_a: str,
    after_b: str,
    ignored: bool,
    failed: bool,
) -> None:
    kids, siblings = other_queue(), other_queue()
    opts: dict[str, Any] = {"attempts": 1}
    if policy is not None:
        opts[policy] = True

    async def fail(job: Job) -> None:
        raise RuntimeError("A broke")

    async def parent(job: Job) -> dict[str, Any]:
        return {
            "failed": await job.get_failed_children_values(),
            "ignored": await job.get_ignored_children_failures(),
        }

    async def sibling(job: Job) -> str:
        return "B done"

    tree = await sdk.flows().add(
        {
            "name": "parent",
            "queue_name": sdk.queue_name,
            "children": [
                {"name": "A", "queue_name": kids, "opts": opts},
                {"name": "B", "queue_name": siblings},
            ],
        }
    )
    a, b = (node.job.id for node in tree.children)
    queue = sdk.queue()
    sdk.worker(parent)
    sdk.worker(fail, name=kids)
    await eventually(lambda: _is(queue, a, "failed"), message="A failed")
    await eventually(lambda: _is(queue, tree.job.id, after_a), message=f"parent {after_a}")
    assert await queue.get_state(b) == "waiting"
    sdk.worker(sibling, name=siblings)
    await eventually(lambda: _is(queue, b, "completed"), message="B completed")
    await eventually(lambda: _is(queue, tree.job.id, after_b), message=f"parent {after_b}")
    if after_b == "completed":
        job = await queue.get_job(tree.job.id)
        assert job is not None
        record = {f"{kids}:{a}": "A broke"}
        assert job.returnvalue == {
            "failed": record if failed else {},
            "ignored": record if ignored else {},
        }


async def _is(queue: Any, job_id: str, state: str) -> bool:
    return bool(await queue.get_state(job_id) == state)
