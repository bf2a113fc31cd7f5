"""Flow failure policies on the wire: a PUSHF flow (as the TS FlowProducer sends it)
through one broker, the child failed and the parent read through the other."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from tests.acceptance import command_support as support
from tests.acceptance.command_support import new_queue, pull, state

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]

POLICIES: list[tuple[str | None, str, str, bool, bool]] = [
    # policy (wire name), parent after A fails, after B completes, ignored?, failed?
    ("failParentOnFailure", "failed", "failed", False, False),
    ("ignoreDependencyOnFailure", "waiting-children", "waiting", True, False),
    ("removeDependencyOnFailure", "waiting-children", "waiting", False, False),
    ("continueParentOnFailure", "waiting", "waiting", False, True),
    (None, "waiting-children", "waiting-children", False, False),
]


async def _push_flow(conn: Connection, policy: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """PUSHF of parent P with children A (the policy, one attempt) and B."""
    ids = {name: str(uuid.uuid4()) for name in ("P", "A", "B")}
    queues = {"P": new_queue("p"), "A": new_queue("a"), "B": new_queue("b")}
    a_input: dict[str, Any] = {"name": "A", "data": {}, "maxAttempts": 1, "parentId": ids["P"]}
    if policy is not None:
        a_input[policy] = True
    jobs = [
        {
            "id": ids["P"],
            "queue": queues["P"],
            "input": {"name": "P", "data": {}, "childrenIds": [ids["A"], ids["B"]]},
        },
        {"id": ids["A"], "queue": queues["A"], "input": a_input},
        {
            "id": ids["B"],
            "queue": queues["B"],
            "input": {"name": "B", "data": {}, "parentId": ids["P"]},
        },
    ]
    answer = await conn.call("PUSHF", {"jobs": jobs})
    assert answer["ok"] is True
    return ids, queues


@pytest.mark.parametrize(("policy", "after_a", "after_b", "ignored", "failed"), POLICIES)
async def test_each_failure_policy_of_a_pushf_child_reaches_its_parent(
    clients: Clients,
    policy: str | None,
    after_a: str,
    after_b: str,
    ignored: bool,
    failed: bool,
) -> None:
    a, b = clients
    ids, queues = await _push_flow(a, policy)
    assert await state(b, ids["P"]) == "waiting-children"
    job, token = await pull(b, queues["A"])
    assert job["id"] == ids["A"]
    await b.call("FAIL", {"id": ids["A"], "token": token, "error": "A broke"})
    assert await state(a, ids["P"]) == after_a
    record = {f"{queues['A']}:{ids['A']}": "A broke"}
    answer = await a.call("GetIgnoredChildrenFailures", {"id": ids["P"]})
    assert answer["values"] == (record if ignored else {})
    answer = await a.call("GetFailedChildrenValues", {"id": ids["P"]})
    assert answer["values"] == (record if failed else {})
    job, token = await pull(a, queues["B"])
    await a.call("ACK", {"id": ids["B"], "token": token, "result": "B done"})
    assert await state(b, ids["P"]) == after_b
