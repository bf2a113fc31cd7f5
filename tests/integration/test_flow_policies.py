"""Flow failure policies: what a parent does when one of its children fails for good.

Each policy leaves a different mark; the table below is the contract, and a test
that two policies pass alike would fail here:

| policy (child)              | parent after A fails | after B completes | ignored  | failed   |
| --------------------------- | -------------------- | ----------------- | -------- | -------- |
| fail_parent_on_failure      | failed (DLQ)         | failed            | {}       | {}       |
| ignore_dependency_on_failure| waiting-children     | waiting           | {A: err} | {}       |
| remove_dependency_on_failure| waiting-children     | waiting           | {}       | {}       |
| continue_parent_on_failure  | waiting (at once)    | waiting           | {}       | {A: err} |
| none                        | waiting-children     | waiting-children  | {}       | {}       |

A is the failing child (one attempt), B a sibling without a policy that is still
waiting when A fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.runtime import PostgresQueueManager
from tests.helpers import sql_value

POLICIES: list[tuple[str | None, str, str, bool, bool]] = [
    # policy, parent after A fails, parent after B completes, ignored?, failed?
    ("fail_parent_on_failure", "failed", "failed", False, False),
    ("ignore_dependency_on_failure", "waiting-children", "waiting", True, False),
    ("remove_dependency_on_failure", "waiting-children", "waiting", False, False),
    ("continue_parent_on_failure", "waiting", "waiting", False, True),
    (None, "waiting-children", "waiting-children", False, False),
]


async def _flow(m: PostgresQueueManager, policy: str | None, **a_opts: Any) -> dict[str, str]:
    opts: dict[str, Any] = {"attempts": 1, **a_opts}
    if policy is not None:
        opts[policy] = True
    tree = await m.push_flow(
        {
            "name": "parent",
            "queue": "parents",
            "data": 0,
            "children": [
                {"name": "A", "queue": "kids", "data": 1, "opts": opts},
                {"name": "B", "queue": "siblings", "data": 2},
            ],
        }
    )
    return {
        "parent": tree["id"],
        "A": tree["children"][0]["id"],
        "B": tree["children"][1]["id"],
    }


async def _fail_a(m: PostgresQueueManager, error: str = "A broke") -> None:
    [claim] = await m.pull_batch("kids", 1)
    await m.fail(claim.id, claim.token, error)


async def _complete_b(m: PostgresQueueManager) -> None:
    [claim] = await m.pull_batch("siblings", 1)
    await m.ack(claim.id, claim.token, "B done")


@pytest.mark.parametrize(("policy", "after_a", "after_b", "ignored", "failed"), POLICIES)
async def test_each_child_failure_policy_leaves_its_own_mark(
    manager: PostgresQueueManager,
    policy: str | None,
    after_a: str,
    after_b: str,
    ignored: bool,
    failed: bool,
) -> None:
    ids = await _flow(manager, policy)
    await _fail_a(manager)
    assert await manager.get_state(ids["parent"]) == after_a
    record = {f"kids:{ids['A']}": "A broke"}
    assert await manager.get_children_failures(ids["parent"], ignored=True) == (
        record if ignored else {}
    )
    assert await manager.get_children_failures(ids["parent"], ignored=False) == (
        record if failed else {}
    )
    await _complete_b(manager)
    assert await manager.get_state(ids["parent"]) == after_b


async def test_a_failed_parent_names_the_child_and_its_error(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    ids = await _flow(manager, "fail_parent_on_failure")
    await _fail_a(manager, "disk full")
    reason, error = (
        await sql_value(
            db_dsn,
            "SELECT reason FROM pgqueue_dlq WHERE namespace = $1 AND job_id = $2",
            namespace,
            ids["parent"],
        ),
        await sql_value(
            db_dsn,
            "SELECT error FROM pgqueue_dlq WHERE namespace = $1 AND job_id = $2",
            namespace,
            ids["parent"],
        ),
    )
    assert reason == "dependency_failed"
    assert error == f"Child job {ids['A']} failed: disk full"


async def test_a_failed_parent_fails_its_own_parent_by_its_own_policy(
    manager: PostgresQueueManager,
) -> None:
    tree = await manager.push_flow(
        {
            "name": "root",
            "queue": "roots",
            "children": [
                {
                    "name": "mid",
                    "queue": "parents",
                    "opts": {"fail_parent_on_failure": True},
                    "children": [
                        {
                            "name": "leaf",
                            "queue": "kids",
                            "opts": {"attempts": 1, "fail_parent_on_failure": True},
                        }
                    ],
                },
                {
                    "name": "other",
                    "queue": "parents",
                    "opts": {"continue_parent_on_failure": True},
                    "children": [
                        {
                            "name": "leaf2",
                            "queue": "kids2",
                            "opts": {"attempts": 1, "fail_parent_on_failure": True},
                        }
                    ],
                },
            ],
        }
    )
    mid, other = tree["children"]
    await _fail_a(manager)
    assert await manager.get_state(mid["id"]) == "failed"
    assert await manager.get_state(tree["id"]) == "failed"
    assert await manager.get_state(other["id"]) == "waiting-children"


async def test_a_continued_parent_runs_while_its_other_children_still_wait(
    manager: PostgresQueueManager,
) -> None:
    ids = await _flow(manager, "continue_parent_on_failure")
    await _fail_a(manager)
    [claim] = await manager.pull_batch("parents", 1)
    assert claim.id == ids["parent"]
    assert await manager.get_state(ids["B"]) == "waiting"
    await manager.ack(claim.id, claim.token, "handled")
    await _complete_b(manager)  # the late sibling finds nothing waiting on it
    assert await manager.get_state(ids["parent"]) == "completed"


async def test_an_ignored_failure_is_recorded_also_when_the_child_is_removed_on_fail(
    manager: PostgresQueueManager,
) -> None:
    ids = await _flow(manager, "ignore_dependency_on_failure", remove_on_fail=True)
    await _fail_a(manager)
    assert await manager.get_children_failures(ids["parent"], ignored=True) == {
        f"kids:{ids['A']}": "A broke"
    }
    assert await manager.get_job(ids["A"]) is None  # removed all the same


async def test_a_child_removed_on_fail_that_its_parent_waits_for_stays_in_the_dlq(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    """removeOnFail does not delete a job that a live parent still waits for (no
    policy): it is dead-lettered as without the option, so a redrive can still
    complete it and release the parent."""
    ids = await _flow(manager, None, remove_on_fail=True)
    await _fail_a(manager)
    assert await manager.get_state(ids["A"]) == "failed"
    entries = await sql_value(
        db_dsn,
        "SELECT count(*) FROM pgqueue_dlq WHERE namespace = $1 AND job_id = $2",
        namespace,
        ids["A"],
    )
    assert entries == 1
    await _complete_b(manager)
    assert await manager.redrive("kids", actor="test", job_id=ids["A"]) == 1
    [claim] = await manager.pull_batch("kids", 1)
    await manager.ack(claim.id, claim.token, "second time lucky")
    assert await manager.get_state(ids["parent"]) == "waiting"


async def test_a_job_removed_on_fail_that_nobody_waits_for_is_removed(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job = await manager.push("kids", "alone", 1, attempts=1, remove_on_fail=True)
    await _fail_a(manager)
    assert await manager.get_job(job) is None
    entries = await sql_value(
        db_dsn, "SELECT count(*) FROM pgqueue_dlq WHERE namespace = $1", namespace
    )
    assert entries == 0


async def test_when_several_policies_are_set_the_first_in_order_wins(
    manager: PostgresQueueManager,
) -> None:
    """fail > continue > ignore > remove, in the engine and in what the parent reads."""
    ids = await _flow(manager, "continue_parent_on_failure", ignore_dependency_on_failure=True)
    await _fail_a(manager)
    assert await manager.get_state(ids["parent"]) == "waiting"
    assert await manager.get_children_failures(ids["parent"], ignored=False) == {
        f"kids:{ids['A']}": "A broke"
    }
    assert await manager.get_children_failures(ids["parent"], ignored=True) == {}
