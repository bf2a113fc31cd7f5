"""Scenario (d), Python SDK: custom job id deduplication.

- add(..., job_id=X) twice (PUSH with ``jobId``) → the same id, one job, first data kept;
- add_bulk with job_id X again + a new Y (PUSHB entries with ``customId``) → [X, Y];
- deduplication={"id": key} (``uniqueKey``) twice → the same id;
- get_job_by_custom_id(X) finds it;
- after X completed, add(job_id=X) again → same id (the retained job; a new generation
  starts only once the job was removed).
"""

from __future__ import annotations

import uuid
from typing import Any

from _common import Env, check, count_commands, main, wait_for
from bunqueue import Queue, Worker


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    queue = Queue(env.queue, **env.conn())
    cmds = count_commands(queue.connection)
    x, y = f"order-{uuid.uuid4().hex[:8]}", f"order-{uuid.uuid4().hex[:8]}"
    first = queue.add("d", {"v": 1}, job_id=x)
    second = queue.add("d", {"v": 2}, job_id=x)
    bulk = queue.add_bulk(
        [
            {"name": "d", "data": {"v": 3}, "job_id": x},
            {"name": "d", "data": {"v": 4}, "job_id": y},
        ]
    )
    uniq1 = queue.add("u", {"v": 20}, deduplication={"id": f"key-{x}"})
    uniq2 = queue.add("u", {"v": 21}, deduplication={"id": f"key-{x}"})
    counts = queue.get_job_counts()
    job_x = queue.get_job(x)
    by_custom = queue.get_job_by_custom_id(x)
    partial.update(first=first.id, second=second.id, bulk=bulk)

    check(
        first.id == x and second.id == x, f"same id for the same job_id ({first.id}, {second.id})"
    )
    check(bulk == [x, y], f"add_bulk ids {bulk}")
    check(uniq1.id == uniq2.id, "unique_key dedup returns the owner id")
    check(counts.get("waiting", 0) + counts.get("prioritized", 0) == 3, f"3 jobs pending: {counts}")
    check(job_x is not None and job_x.data == {"v": 1}, f"first data kept: {job_x and job_x.data}")
    assert job_x is not None

    done: set[str] = set()
    worker = Worker(
        env.queue,
        lambda job: {"v": job.data.get("v")},
        **env.conn(second=True),
        concurrency=3,
        poll_timeout_ms=200,
    )
    worker.on("completed", lambda job, result: done.add(job.id))
    wait_for("3 completions", lambda: len(done) >= 3, env.timeout_ms / 1000 - 8)
    worker.close(timeout=10)
    state_done = queue.get_state(x)
    again = queue.add("d", {"v": 99}, job_id=x)
    state_again = queue.get_state(x)
    counts_end = queue.get_job_counts()
    queue.close()
    check(again.id == x, "job_id reused after completion")
    return {
        "jobIds": {"x": x, "y": y},
        "first": first.id,
        "second": second.id,
        "bulk": bulk,
        "uniqueKey": [uniq1.id, uniq2.id],
        "countsAfterAdds": counts,
        "jobX": {
            "id": job_x.id,
            "rawName": job_x.raw.get("name"),
            "data": job_x.data,
            "customId": job_x.custom_id,
        },
        "byCustomId": None if by_custom is None else {"id": by_custom.id, "state": by_custom.state},
        "stateXDone": state_done,
        "readdAfterComplete": {"id": again.id, "state": state_again},
        "countsEnd": counts_end,
        "queueCmds": cmds,
    }


if __name__ == "__main__":
    main("dedup", body)
