"""Editing flows and deduplication keys after admission: nothing stranded, nothing lost."""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.errors import JobNotFound, ValidationError
from pgqueue.runtime import PostgresQueueManager
from tests.helpers import clock_ahead, events_of, sql_value


async def _run_one(m: PostgresQueueManager, queue: str, result: object = None) -> str:
    [claim] = await m.pull_batch(queue, 1)
    await m.ack(claim.id, claim.token, result)
    return claim.id


async def _flow(m: PostgresQueueManager, *children: dict[str, Any]) -> tuple[str, list[str]]:
    tree = await m.push_flow(
        {"name": "parent", "queue": "parents", "data": 0, "children": list(children)}
    )
    return tree["id"], [c["id"] for c in tree["children"]]


def _child(data: int, **extra: Any) -> dict[str, Any]:
    return {"name": "part", "queue": "parts", "data": data, **extra}


# -- RemoveChildDependency -------------------------------------------------------------


async def test_removing_the_last_child_dependency_releases_the_parent(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    parent, [a, b] = await _flow(manager, _child(1), _child(2))
    assert await _run_one(manager, "parts", "ra") in (a, b)
    done, left = (a, b) if await manager.get_state(a) == "completed" else (b, a)
    assert await manager.get_state(parent) == "waiting-children"

    assert await manager.remove_child_dependency(left) is True

    assert await manager.get_state(parent) == "waiting"
    assert "waiting" in await events_of(db_dsn, namespace, parent)
    job = await manager.get_job(left)
    assert job is not None and job.parent_id is None
    assert await manager.get_state(left) == "waiting"  # still queued, runs on its own
    assert await _run_one(manager, "parents") == parent
    assert await _run_one(manager, "parts", "late") == left
    assert await manager.get_children_values(parent) == {f"parts:{done}": "ra"}


async def test_removing_a_child_dependency_keeps_the_parent_waiting_for_the_others(
    manager: PostgresQueueManager,
) -> None:
    parent, [a, b] = await _flow(manager, _child(1), _child(2))
    assert await manager.remove_child_dependency(a) is True
    assert await manager.get_state(parent) == "waiting-children"
    assert await manager.remove_child_dependency(a) is False  # no longer a dependency
    await manager.remove(a)  # a plain job now: removable
    [claim] = await manager.pull_batch("parts", 1)
    assert claim.id == b
    await manager.ack(claim.id, claim.token, "rb")
    assert await manager.get_state(parent) == "waiting"


async def test_remove_child_dependency_of_a_finished_or_parentless_job_is_false(
    manager: PostgresQueueManager,
) -> None:
    parent, [a] = await _flow(manager, _child(1))
    plain = await manager.push("q", "plain", 1)
    assert await manager.remove_child_dependency(plain) is False
    await _run_one(manager, "parts", "ra")
    assert await manager.remove_child_dependency(a) is False
    assert await manager.get_children_values(parent) == {f"parts:{a}": "ra"}
    with pytest.raises(JobNotFound):
        await manager.remove_child_dependency("no-such-job")


async def test_a_child_completing_after_its_dependency_was_removed_does_not_touch_the_parent(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    parent, [a, _] = await _flow(manager, _child(1), _child(2))
    claims = await manager.pull_batch("parts", 2)  # both children run
    [claim] = [c for c in claims if c.id == a]
    assert await manager.remove_child_dependency(a) is True  # a running child: detached
    await manager.ack(claim.id, claim.token, "ra")
    pending = await sql_value(
        db_dsn,
        "SELECT pending_deps FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
        namespace,
        parent,
    )
    assert pending == 1  # still waits for b, and only for b
    assert await manager.get_state(parent) == "waiting-children"
    assert await manager.get_children_values(parent) == {}


# -- RemoveUnprocessedChildren ---------------------------------------------------------


async def test_remove_unprocessed_children_removes_pending_ones_and_releases_the_parent(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    parent, [a, b, c] = await _flow(
        manager, _child(1), _child(2, opts={"delay": 60_000}), _child(3)
    )
    await _run_one(manager, "parts", "ra")  # a or c completes
    done = a if await manager.get_state(a) == "completed" else c

    assert await manager.remove_unprocessed_children(parent) == 2

    assert await manager.get_state(done) == "completed"
    for gone in {a, b, c} - {done}:
        assert await manager.get_state(gone) == "unknown"
        assert "removed" in await events_of(db_dsn, namespace, gone)
    assert await manager.get_state(parent) == "waiting"
    assert await manager.get_children_values(parent) == {f"parts:{done}": "ra"}
    assert await _run_one(manager, "parents") == parent


async def test_remove_unprocessed_children_leaves_running_children_and_the_parent_waiting(
    manager: PostgresQueueManager,
) -> None:
    parent, [a, b] = await _flow(manager, _child(1), _child(2))
    [claim] = await manager.pull_batch("parts", 1)
    other = b if claim.id == a else a
    assert await manager.remove_unprocessed_children(parent) == 1
    assert await manager.get_state(other) == "unknown"
    assert await manager.get_state(parent) == "waiting-children"  # the running one counts
    await manager.ack(claim.id, claim.token, "done")
    assert await manager.get_state(parent) == "waiting"


async def test_remove_unprocessed_children_goes_down_the_tree(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    tree = await manager.push_flow(
        {
            "name": "root",
            "queue": "parents",
            "data": 0,
            "children": [
                _child(1, children=[{"name": "leaf", "queue": "leaves", "data": 2}]),
                _child(3, children=[{"name": "leaf", "queue": "leaves", "data": 4}]),
            ],
        }
    )
    [mid_a, mid_b] = tree["children"]
    # One leaf is already running: it stays, and only loses its (removed) parent.
    [running] = await manager.pull_batch("leaves", 1)
    assert await manager.remove_unprocessed_children(tree["id"]) == 3
    for node in (mid_a, mid_b):
        assert await manager.get_state(node["id"]) == "unknown"
    leaves = [mid_a["children"][0]["id"], mid_b["children"][0]["id"]]
    [idle] = [leaf for leaf in leaves if leaf != running.id]
    assert await manager.get_state(idle) == "unknown"
    job = await manager.get_job(running.id)
    assert job is not None and job.parent_id is None
    await manager.ack(running.id, running.token, "x")
    assert await manager.get_state(tree["id"]) == "waiting"
    edges = await sql_value(
        db_dsn, "SELECT count(*) FROM pgqueue_dependencies WHERE namespace = $1", namespace
    )
    assert edges == 0


async def test_a_child_another_job_waits_on_is_detached_not_removed(
    manager: PostgresQueueManager,
) -> None:
    parent, [a] = await _flow(manager, _child(1, opts={"job_id": "shared-child"}))
    outsider = await manager.push("q", "outsider", 1, depends_on=["shared-child"])
    assert await manager.remove_unprocessed_children(parent) == 1
    assert await manager.get_state(a) == "waiting"
    job = await manager.get_job(a)
    assert job is not None and job.parent_id is None
    assert await manager.get_state(parent) == "waiting"
    await _run_one(manager, "parts")
    assert await manager.get_state(outsider) == "waiting"


async def test_a_child_only_a_removed_sibling_waits_on_is_removed_too(
    manager: PostgresQueueManager,
) -> None:
    parent, [a, b] = await _flow(
        manager,
        _child(1, opts={"job_id": "first"}),
        _child(2, opts={"depends_on": ["first"]}),
    )
    assert await manager.remove_unprocessed_children(parent) == 2
    assert await manager.get_state(a) == "unknown"
    assert await manager.get_state(b) == "unknown"
    assert await manager.get_state(parent) == "waiting"


async def test_remove_unprocessed_children_of_an_unknown_or_childless_job(
    manager: PostgresQueueManager,
) -> None:
    plain = await manager.push("q", "plain", 1)
    assert await manager.remove_unprocessed_children(plain) == 0
    with pytest.raises(JobNotFound):
        await manager.remove_unprocessed_children("no-such-job")


# -- deduplication keys ----------------------------------------------------------------


async def test_deduplication_key_owner_is_the_live_job_holding_it(
    manager: PostgresQueueManager,
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="user-7", dedup={"ttl": 60_000})
    assert await manager.get_deduplication_job_id("q", "user-7") == owner
    assert await manager.get_deduplication_job_id("other", "user-7") is None
    assert await manager.get_deduplication_job_id("q", "user-8") is None
    later = clock_ahead(60_001)
    assert await manager.get_deduplication_job_id("q", "user-7", now=later) is None


async def test_removing_a_deduplication_key_admits_the_next_push(
    manager: PostgresQueueManager,
) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k")
    assert await manager.push("q", "a", 2, unique_key="k") == owner
    assert await manager.remove_deduplication_key("q", "k") == 1
    assert await manager.remove_deduplication_key("q", "k") == 0
    assert await manager.get_state(owner) == "waiting"  # the owner stays
    second = await manager.push("q", "a", 3, unique_key="k")
    assert second != owner
    assert await manager.get_deduplication_job_id("q", "k") == second


async def test_removing_a_jobs_deduplication_key(manager: PostgresQueueManager) -> None:
    owner = await manager.push("q", "a", 1, unique_key="k")
    plain = await manager.push("q", "a", 2)
    assert await manager.remove_job_deduplication_key(plain) is False
    assert await manager.remove_job_deduplication_key("no-such-job") is False
    [claim] = await manager.pull_batch("q", 1)  # the owner runs; it still holds the key
    assert claim.id == owner
    assert await manager.remove_job_deduplication_key(owner) is True
    assert await manager.remove_job_deduplication_key(owner) is False
    assert await manager.push("q", "a", 3, unique_key="k") != owner
    await manager.ack(claim.id, claim.token)


@pytest.mark.parametrize(
    ("queue", "key", "field"),
    [("", "k", "queue"), ("bad queue", "k", "queue"), ("q", "", "deduplicationId")],
)
async def test_deduplication_key_arguments_are_checked(
    manager: PostgresQueueManager, queue: str, key: str, field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        await manager.remove_deduplication_key(queue, key)
    assert caught.value.field == field
