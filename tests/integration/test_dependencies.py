"""Dependencies and flows: dependents run after what they wait for, never stuck."""

from __future__ import annotations

import asyncio

import pytest

from pgqueue.errors import DependencyNotFound
from pgqueue.runtime import PostgresQueueManager


async def _run_one(m: PostgresQueueManager, queue: str, result: object = None) -> str:
    [claim] = await m.pull_batch(queue, 1)
    await m.ack(claim.id, claim.token, result)
    return claim.id


async def test_depends_on_waits_for_every_dependency(manager: PostgresQueueManager) -> None:
    a = await manager.push("q", "a", 1)
    b = await manager.push("q", "b", 2)
    c = await manager.push("q", "c", 3, depends_on=[a, b])
    assert await manager.get_state(c) == "waiting-children"
    assert {await _run_one(manager, "q"), await _run_one(manager, "q")} == {a, b}
    assert await manager.get_state(c) == "waiting"
    assert await _run_one(manager, "q") == c


async def test_depends_on_a_completed_job_is_resolved_at_once(
    manager: PostgresQueueManager,
) -> None:
    a = await manager.push("q", "a", 1)
    await _run_one(manager, "q")
    c = await manager.push("q", "c", 3, depends_on=[a])
    assert await manager.get_state(c) == "waiting"


async def test_depends_on_can_name_a_custom_id_in_the_same_batch(
    manager: PostgresQueueManager,
) -> None:
    ids = await manager.push_bulk(
        "q",
        [
            {"name": "second", "data": 2, "depends_on": ["first-job"]},
            {"name": "first", "data": 1, "job_id": "first-job"},
        ],
    )
    assert ids[1] == "first-job"
    assert await manager.get_state(ids[0]) == "waiting-children"
    assert await _run_one(manager, "q") == "first-job"
    assert await _run_one(manager, "q") == ids[0]


async def test_a_custom_id_twice_in_a_batch_still_releases_its_dependent(
    manager: PostgresQueueManager,
) -> None:
    ids = await manager.push_bulk(
        "q",
        [
            {"name": "first", "data": 1, "job_id": "twice"},
            {"name": "second", "data": 2, "depends_on": ["twice"]},
            {"name": "first again", "data": 3, "job_id": "twice"},
        ],
    )
    assert ids[0] == ids[2] == "twice"
    assert await manager.get_state(ids[1]) == "waiting-children"
    assert await _run_one(manager, "q") == "twice"
    assert await manager.get_state(ids[1]) == "waiting"


async def test_a_dependency_cycle_is_refused(manager: PostgresQueueManager) -> None:
    with pytest.raises(DependencyNotFound, match="cycle"):
        await manager.push_bulk(
            "q",
            [
                {"name": "a", "data": 1, "job_id": "a", "depends_on": ["b"]},
                {"name": "b", "data": 1, "job_id": "b", "depends_on": ["a"]},
            ],
        )


async def test_flow_parent_runs_after_its_children_and_reads_their_results(
    manager: PostgresQueueManager,
) -> None:
    tree = await manager.push_flow(
        {
            "name": "report",
            "queue": "parents",
            "data": {"k": 1},
            "children": [
                {"name": "part", "queue": "parts", "data": 1},
                {
                    "name": "part",
                    "queue": "parts",
                    "data": 2,
                    "children": [{"name": "leaf", "queue": "leaves", "data": 3}],
                },
            ],
        }
    )
    parent = tree["id"]
    assert await manager.get_state(parent) == "waiting-children"
    assert await manager.pull_batch("parents", 1) == []
    leaf = await _run_one(manager, "leaves", "leaf-result")
    assert leaf == tree["children"][1]["children"][0]["id"]
    for claim in await manager.pull_batch("parts", 2):
        await manager.ack(claim.id, claim.token, claim.data * 10)
    assert await manager.get_state(parent) == "waiting"
    values = await manager.get_children_values(parent)
    assert sorted(values.values()) == [10, 20]
    assert all(key.startswith("parts:") for key in values)
    assert await _run_one(manager, "parents") == parent


async def test_child_failure_with_fail_parent_on_failure_dead_letters_the_parent(
    manager: PostgresQueueManager,
) -> None:
    tree = await manager.push_flow(
        {
            "name": "p",
            "queue": "parents",
            "children": [
                {
                    "name": "c",
                    "queue": "kids",
                    "opts": {"attempts": 1, "fail_parent_on_failure": True},
                },
            ],
        }
    )
    [child] = await manager.pull_batch("kids", 1)
    await manager.fail(child.id, child.token, "child broke")
    assert await manager.get_state(tree["id"]) == "failed"


async def test_child_failure_with_ignore_lets_the_parent_go_on(
    manager: PostgresQueueManager,
) -> None:
    tree = await manager.push_flow(
        {
            "name": "p",
            "queue": "parents",
            "children": [
                {
                    "name": "c",
                    "queue": "kids",
                    "opts": {"attempts": 1, "ignore_dependency_on_failure": True},
                },
            ],
        }
    )
    [child] = await manager.pull_batch("kids", 1)
    await manager.fail(child.id, child.token, "child broke")
    assert await manager.get_state(tree["id"]) == "waiting"


async def test_a_dependent_pushed_while_its_dependency_completes_is_never_stranded(
    manager: PostgresQueueManager,
) -> None:
    """Admission and completion race on the dependency's row; either order must end
    with the dependent released (no job left in waiting-children forever)."""
    for _ in range(30):
        a = await manager.push("race", "a", 1)
        [claim] = await manager.pull_batch("race", 1)
        _, dependent = await asyncio.gather(
            manager.ack(a, claim.token), manager.push("race", "b", 2, depends_on=[a])
        )
        assert await manager.get_state(dependent) == "waiting"
        await _run_one(manager, "race")


async def test_children_failures_are_told_apart_by_the_policy_they_applied(
    manager: PostgresQueueManager,
) -> None:
    tree = await manager.push_flow(
        {
            "name": "p",
            "queue": "parents",
            "children": [
                {"name": "strict", "queue": "kids", "opts": {"attempts": 1}},
                {
                    "name": "urgent",
                    "queue": "kids",
                    "opts": {"attempts": 1, "continue_parent_on_failure": True},
                },
                {
                    "name": "lenient",
                    "queue": "kids",
                    "opts": {"attempts": 1, "ignore_dependency_on_failure": True},
                },
                {"name": "fine", "queue": "kids"},
            ],
        }
    )
    ids = {child["name"]: child["id"] for child in tree["children"]}
    for claim in await manager.pull_batch("kids", 4):
        if claim.name == "fine":
            await manager.ack(claim.id, claim.token, "ok")
        else:
            await manager.fail(claim.id, claim.token, f"{claim.name} broke")

    failed = await manager.get_children_failures(tree["id"], ignored=False)
    ignored = await manager.get_children_failures(tree["id"], ignored=True)
    assert failed == {f"kids:{ids['urgent']}": "urgent broke"}  # not 'strict': no policy
    assert ignored == {f"kids:{ids['lenient']}": "lenient broke"}
    assert await manager.get_children_values(tree["id"]) == {f"kids:{ids['fine']}": "ok"}
