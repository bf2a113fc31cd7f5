"""FlowProducer: parents, children and nested flows, atomically, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import uuid
from typing import Any

import pytest

from pgqueue.client import Job
from pgqueue.errors import DependencyNotFound, ValidationError
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)


def other_queue() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


async def test_a_parent_runs_after_its_children_and_reads_their_results(sdk: SDK) -> None:
    parents, children = sdk.queue_name, other_queue()
    order: list[str] = []

    async def child(job: Job) -> int:
        order.append(job.name)
        return int(job.data["n"]) ** 2

    async def parent(job: Job) -> dict[str, Any]:
        order.append(job.name)
        return await job.get_children_values()

    sdk.worker(child, name=children, concurrency=2)
    sdk.worker(parent)
    tree = await sdk.flows().add(
        {
            "name": "sum",
            "queue_name": parents,
            "data": {},
            "children": [
                {"name": "square-3", "queue_name": children, "data": {"n": 3}},
                {"name": "square-4", "queue": children, "data": {"n": 4}},
            ],
        }
    )
    assert tree.job.queue_name == parents
    assert [node.job.name for node in tree.children] == ["square-3", "square-4"]
    queue = sdk.queue()
    values = await queue.wait_for(tree.job, timeout=15)
    ids = [node.job.id for node in tree.children]
    assert values == {f"{children}:{ids[0]}": 9, f"{children}:{ids[1]}": 16}
    assert order[-1] == "sum" and sorted(order[:2]) == ["square-3", "square-4"]


async def test_a_parent_waits_for_its_children_in_waiting_children(sdk: SDK) -> None:
    children = other_queue()
    tree = await sdk.flows().add(
        {
            "name": "report",
            "queue_name": sdk.queue_name,
            "children": [{"name": "part", "queue_name": children, "data": 1}],
        }
    )
    queue = sdk.queue()
    assert await queue.get_state(tree.job.id) == "waiting-children"
    assert await queue.get_state(tree.children[0].job.id) == "waiting"


async def test_nested_flows_complete_from_the_leaves_up(sdk: SDK) -> None:
    finished: list[str] = []

    async def handler(job: Job) -> str:
        finished.append(job.name)
        return job.name

    sdk.worker(handler, concurrency=4)
    q = sdk.queue_name
    tree = await sdk.flows().add(
        {
            "name": "root",
            "queue_name": q,
            "children": [
                {
                    "name": "middle",
                    "queue_name": q,
                    "children": [
                        {"name": "leaf-1", "queue_name": q},
                        {"name": "leaf-2", "queue_name": q},
                    ],
                }
            ],
        }
    )
    queue = sdk.queue()
    root_values = await queue.wait_for(tree.job, timeout=15)
    middle = tree.children[0]
    assert root_values == "root"
    assert finished.index("middle") > max(finished.index("leaf-1"), finished.index("leaf-2"))
    assert finished[-1] == "root"
    middle_job = await queue.get_job(middle.job.id)
    assert middle_job is not None and middle_job.returnvalue == "middle"


async def test_an_invalid_node_anywhere_refuses_the_whole_flow(sdk: SDK) -> None:
    flows = sdk.flows()
    with pytest.raises(ValidationError) as caught:
        await flows.add(
            {
                "name": "root",
                "queue_name": sdk.queue_name,
                "children": [
                    {"name": "ok", "queue_name": sdk.queue_name},
                    {"name": "bad", "queue_name": sdk.queue_name, "opts": {"attempts": -1}},
                ],
            }
        )
    assert caught.value.message.startswith("flow.children[1]: ")
    assert sum((await sdk.queue().get_counts()).values()) == 0


async def test_a_flow_the_engine_refuses_leaves_no_job_behind(sdk: SDK) -> None:
    children = other_queue()
    with pytest.raises(DependencyNotFound):
        await sdk.flows().add(
            {
                "name": "root",
                "queue_name": sdk.queue_name,
                "children": [
                    {"name": "fine", "queue_name": children},
                    {
                        "name": "dangling",
                        "queue_name": children,
                        "opts": {"depends_on": ["no-such-job"]},
                    },
                ],
            }
        )
    assert sum((await sdk.queue().get_counts()).values()) == 0
    assert sum((await sdk.queue(children).get_counts()).values()) == 0


async def test_a_child_taken_out_of_its_flow_runs_alone_and_frees_the_parent(sdk: SDK) -> None:
    children = other_queue()
    tree = await sdk.flows().add(
        {
            "name": "report",
            "queue_name": sdk.queue_name,
            "children": [{"name": "part", "queue_name": children, "data": 1}],
        }
    )
    queue = sdk.queue()
    [child] = [node.job for node in tree.children]
    assert await child.remove_child_dependency() is True
    assert await queue.get_state(tree.job.id) == "waiting"
    assert await queue.get_state(child.id) == "waiting"
    assert await queue.remove_child_dependency(child.id) is False  # no longer a child


async def test_a_parents_unstarted_children_are_removed_and_the_parent_runs(sdk: SDK) -> None:
    children = other_queue()
    tree = await sdk.flows().add(
        {
            "name": "report",
            "queue_name": sdk.queue_name,
            "children": [{"name": "part", "queue_name": children, "data": n} for n in range(3)],
        }
    )
    queue = sdk.queue()
    await tree.job.remove_unprocessed_children()
    assert [await queue.get_state(node.job.id) for node in tree.children] == ["unknown"] * 3
    assert await queue.get_state(tree.job.id) == "waiting"
    await queue.remove_unprocessed_children(tree.job.id)  # nothing left: a no-op
