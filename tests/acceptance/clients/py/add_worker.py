"""Scenario (a), Python SDK: add() (PUSH) + add_bulk() (PUSHB), then a Worker with
concurrency 4 processes them and returns results. One job runs PGQ_SLOW_MS (3000) with
lock_ttl_ms PGQ_LOCK_MS (2000): it can only be ACKed if the worker's periodic
Heartbeat + JobHeartbeatB (every PGQ_HEARTBEAT_MS, 500) renew its lease. Then
get_job / get_state / get_job_counts. With PGQ_ACK_BATCH=1 the worker acks through
ACKB (ack_batch) instead of one ACK per job.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from _common import Env, check, count_commands, main, wait_for
from bunqueue import Queue, Worker


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    slow_ms = int(os.environ.get("PGQ_SLOW_MS", "3000"))
    lock_ms = int(os.environ.get("PGQ_LOCK_MS", "2000"))
    heartbeat_s = int(os.environ.get("PGQ_HEARTBEAT_MS", "500")) / 1000
    ack_batch = os.environ.get("PGQ_ACK_BATCH") == "1"

    queue = Queue(env.queue, **env.conn())
    queue_cmds = count_commands(queue.connection)
    single = queue.add("single", {"n": 1, "nested": {"list": [1, 2, 3], "s": "ü"}})
    bulk_ids = queue.add_bulk(
        [
            {"name": "bulk", "data": {"n": 2}},
            {"name": "bulk", "data": {"n": 3}},
            {"name": "bulk", "data": {"n": 4}, "priority": 5},
            {"name": "slow", "data": {"n": 5, "sleepMs": slow_ms}},
            {"name": "bulk", "data": {"n": 6}},
            {"name": "scalar", "data": 42},
        ]
    )
    ids = [single.id, *bulk_ids]
    partial["ids"] = ids
    check(all(isinstance(i, str) and i for i in ids), "ids are non-empty strings")
    check(len(set(ids)) == len(ids), "ids are distinct")
    counts_before = queue.get_job_counts()

    lock = threading.Lock()
    active = 0
    max_active = 0
    processed: list[dict[str, Any]] = []
    completed: dict[str, Any] = {}
    failed: list[dict[str, Any]] = []
    errors: list[str] = []

    def process(job: Any) -> Any:
        nonlocal active, max_active
        with lock:
            active += 1
            max_active = max(max_active, active)
            processed.append(
                {
                    "id": job.id,
                    "rawName": job.raw.get("name"),
                    "nameProperty": job.name,
                    "attempts": job.attempts,
                    "token": bool(job.token),
                    "data": job.data,
                }
            )
        try:
            data = job.data if isinstance(job.data, dict) else {}
            if data.get("n") == 1:
                job.update_progress(50, "half")
            time.sleep(data.get("sleepMs", 150) / 1000)
            n = int(data.get("n") or data.get("payload") or 0)
            return {"doubled": n * 2, "id": job.id}
        finally:
            with lock:
                active -= 1

    worker = Worker(
        env.queue,
        process,
        **env.conn(second=True),
        concurrency=4,
        lock_ttl_ms=lock_ms,
        heartbeat_interval_s=heartbeat_s,
        autorun=False,
        ack_batch={"max_size": 10, "max_delay_ms": 5} if ack_batch else None,
    )
    worker_cmds = count_commands(worker.connection)
    partial["workerCmds"] = worker_cmds
    worker.on("completed", lambda job, result: completed.__setitem__(job.id, result))
    worker.on("failed", lambda job, exc: failed.append({"id": job.id, "error": str(exc)}))
    worker.on("error", lambda exc: errors.append(str(exc)))
    worker.start()
    wait_for(
        "all jobs settled",
        lambda: len(completed) + len(failed) >= len(ids),
        env.timeout_ms / 1000 - 8,
    )
    worker.close(timeout=15)

    counts = queue.get_job_counts()
    states = {i: queue.get_state(i) for i in ids}
    jobs = []
    for n, i in enumerate(ids):
        job = queue.get_job(i)
        jobs.append(
            None
            if job is None
            else {
                "id": job.id,
                "rawName": job.raw.get("name"),
                "data": job.data,
                "state": job.state,
                "returnvalue": job.raw.get("returnvalue"),
                "attempts": job.attempts,
                "progress": job.progress,
                **({"keys": sorted(job.raw.keys())} if n == 0 else {}),
            }
        )
    result_first = queue.get_result(ids[0])
    missing = queue.get_job(f"no-such-job-{env.queue}")
    missing_state = queue.get_state(f"no-such-job-{env.queue}")
    missing_result = queue.get_result(f"no-such-job-{env.queue}")
    queue.close()

    check(not failed, f"no failures: {failed}")
    check(max_active > 1, f"ran concurrently (max_active={max_active})")
    check(all(s == "completed" for s in states.values()), f"states {states}")
    check(counts.get("completed") == len(ids) and counts.get("waiting") == 0, f"counts {counts}")
    check(worker_cmds.get("JobHeartbeatB", 0) >= 2, "lock heartbeats were sent")
    check(missing is None and missing_state == "unknown", "unknown job → None / 'unknown'")
    return {
        "ackBatch": ack_batch,
        "ids": ids,
        "results": completed,
        "countsBefore": counts_before,
        "counts": counts,
        "states": states,
        "jobs": jobs,
        "getResultFirst": result_first,
        "missingJob": missing,
        "missingState": missing_state,
        "missingResult": missing_result,
        "maxActive": max_active,
        "processed": processed,
        "workerErrors": errors,
        "workerCmds": worker_cmds,
        "queueCmds": queue_cmds,
    }


if __name__ == "__main__":
    main("add_worker", body)
