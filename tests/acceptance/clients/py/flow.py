"""Scenario (c), Python SDK: flows. bunqueue-client 0.1.5 uses the legacy child-first
protocol: FlowProducer.add() pushes each child with parentId "pending", then the parent
(PUSH with childrenIds/dependsOn), then UpdateParent per child, and Cancel to roll back
on error. Against the reference 2.9.5 the first child PUSH is rejected with
"Parent job not found: pending" — this scenario records what happens instead of failing.
It also runs add_chain (PUSH with dependsOn) and add_bulk_then (fan-in: PUSH with
childrenIds + dependsOn, then UpdateParent), which do not use the placeholder, and
processes them with a Worker. ok=true means "ran and recorded"; the observations are in
``flowAdd``, ``chain`` and ``bulkThen``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from _common import Env, attempt, count_commands, main, wait_for
from bunqueue import FlowProducer, Queue, Worker


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    flow = FlowProducer(**env.conn())
    flow_cmds = count_commands(flow.connection)
    tree = {
        "name": "parent",
        "queueName": env.queue,
        "data": {"kind": "parent"},
        "children": [
            {"name": "child", "queueName": env.queue, "data": {"kind": "child", "n": 1}},
            {"name": "child", "queueName": env.queue, "data": {"kind": "child", "n": 2}},
        ],
    }
    flow_add = attempt(lambda: flow.add(tree).job.id)
    partial["flowAdd"] = flow_add
    queue = Queue(env.queue, **env.conn())
    counts_after_flow = queue.get_job_counts()

    chain = attempt(
        lambda: flow.add_chain(
            [
                {"name": "step", "queueName": env.queue, "data": {"kind": "step", "n": i}}
                for i in range(3)
            ]
        )
    )
    bulk_then = attempt(
        lambda: flow.add_bulk_then(
            [
                {"name": "part", "queueName": env.queue, "data": {"kind": "part", "n": n}}
                for n in (1, 2)
            ],
            {"name": "final", "queueName": env.queue, "data": {"kind": "final"}},
        )
    )
    partial.update(chain=chain, bulkThen=bulk_then)
    final_id = bulk_then["value"]["final_id"] if bulk_then["ok"] else None
    final_state_before = queue.get_state(final_id) if final_id else None

    order: list[dict[str, Any]] = []
    lock = threading.Lock()
    final_saw: dict[str, Any] = {}
    t0 = time.monotonic()

    def process(job: Any) -> Any:
        kind = job.data.get("kind")
        with lock:
            order.append({"id": job.id, "kind": kind, "at": round((time.monotonic() - t0) * 1000)})
        if kind == "final":
            final_saw.update(job.get_children_values())
            return {"sum": sum((v or {}).get("v", 0) for v in final_saw.values())}
        return {"v": job.data.get("n", 0) * 10}

    expected = (len(chain["value"]) if chain["ok"] else 0) + (3 if bulk_then["ok"] else 0)
    done: set[str] = set()
    worker = Worker(env.queue, process, **env.conn(second=True), concurrency=3, poll_timeout_ms=100)
    worker.on("completed", lambda job, result: done.add(job.id))
    try:
        wait_for(
            f"{expected} flow jobs completed",
            lambda: len(done) >= expected,
            min(20.0, env.timeout_ms / 2000),
        )
        waited = True
    except Exception:
        waited = False
    worker.close(timeout=10)
    final_result = queue.get_result(final_id) if final_id else None
    counts_end = queue.get_job_counts()
    flow.close()
    queue.close()
    return {
        "flowAdd": flow_add,
        "countsAfterFlowAdd": counts_after_flow,
        "chain": chain,
        "bulkThen": bulk_then,
        "finalStateBefore": final_state_before,
        "allCompleted": waited,
        "order": order,
        "finalSawChildrenValues": final_saw,
        "finalResult": final_result,
        "countsEnd": counts_end,
        "flowCmds": flow_cmds,
    }


if __name__ == "__main__":
    main("flow", body)
