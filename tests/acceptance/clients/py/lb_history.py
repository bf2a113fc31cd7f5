"""Scenario: a producer and a Worker of the official Python client behind a load
balancer while brokers die and come back (tests/faults/test_load_balancer.py).

The same protocol as ts/lb_history.ts: the producer pushes batches of PGQ_BATCH jobs
with custom ids ``<PGQ_ID_PREFIX><n>`` (add_bulk) until the file PGQ_STOP_FILE exists;
a failed push is re-sent with the same ids (the custom id makes that safe). The Worker
(concurrency 4) records every execution with a fresh execution id and returns it.
When told to stop, it waits until every admitted job was seen completed, then writes
the history (admitted ids, executions per id, completed execution per id, push errors,
worker errors) as JSON into PGQ_HISTORY_FILE; the test checks it against the database.
An ack whose broker died after its commit, before its answer, completed its job
without the worker hearing so (no ``completed`` event): once only a few jobs are left
unseen, the queue is asked for their state, and those it reports completed go into
the history with the result it stored (``completedUnseen``).

Env: PGQ_STOP_FILE and PGQ_HISTORY_FILE (required), PGQ_ID_PREFIX ('py-'), PGQ_BATCH (5),
     PGQ_WORK_MS (10), PGQ_LOCK_MS (5000).
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from _common import Env, check, main, wait_for
from bunqueue import Queue, Worker

UNSEEN_ASKED = 8
"""The queue is asked about the jobs not seen completed once at most this many are left."""


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    stop_file = Path(os.environ["PGQ_STOP_FILE"])
    history_file = Path(os.environ["PGQ_HISTORY_FILE"])
    prefix = os.environ.get("PGQ_ID_PREFIX", "py-")
    batch = int(os.environ.get("PGQ_BATCH", "5"))
    work_s = int(os.environ.get("PGQ_WORK_MS", "10")) / 1000
    lock_ms = int(os.environ.get("PGQ_LOCK_MS", "5000"))

    lock = threading.Lock()
    admitted: list[str] = []
    push_errors: list[str] = []
    executions: dict[str, list[str]] = {}
    completed: dict[str, list[Any]] = {}
    errors: list[str] = []
    counter = itertools.count(1)
    partial.update(admitted=admitted, pushErrors=push_errors, errors=errors)

    def process(job: Any) -> dict[str, str]:
        execution = f"{job.id}#{next(counter)}"
        with lock:
            executions.setdefault(job.id, []).append(execution)
        time.sleep(work_s)  # the job's work
        return {"exec": execution}

    def on_completed(job: Any, result: Any) -> None:
        with lock:
            completed.setdefault(job.id, []).append((result or {}).get("exec"))

    queue = Queue(env.queue, **env.conn())
    worker = Worker(
        env.queue,
        process,
        **env.conn(second=True),
        concurrency=4,
        poll_timeout_ms=200,
        lock_ttl_ms=lock_ms,
        heartbeat_interval_s=lock_ms / 4000,
    )
    worker.on("completed", on_completed)
    worker.on("error", lambda exc: errors.append(str(exc)))

    n = 0
    while not stop_file.exists():
        ids = [f"{prefix}{n + k}" for k in range(batch)]
        while True:
            try:
                queue.add_bulk([{"name": "lb", "data": {"id": i}, "job_id": i} for i in ids])
                break
            except Exception as exc:
                push_errors.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.1)  # back off before re-sending the same ids
        admitted.extend(ids)
        n += batch
        time.sleep(0.05)  # a steady producer, not a flood

    unseen: dict[str, Any] = {}

    def all_completed() -> bool:
        with lock:
            missing = [i for i in admitted if i not in completed and i not in unseen]
        if not missing or len(missing) > UNSEEN_ASKED:
            return not missing
        for job_id in missing:  # a few stragglers: an ack whose answer was lost?
            if queue.get_state(job_id) == "completed":
                unseen[job_id] = (queue.get_result(job_id) or {}).get("exec")
        return all(i in unseen for i in missing)

    wait_for("every admitted job completed", all_completed, env.timeout_ms / 1000 - 10, 0.05)
    check(worker.close(timeout=15), "the worker closed")
    queue.close()
    with lock:
        history = {
            "admitted": admitted,
            "executions": executions,
            "completed": completed,
            "completedUnseen": unseen,
            "pushErrors": push_errors,
            "errors": errors[:50],
        }
    history_file.write_text(json.dumps(history))
    return {"admitted": len(admitted), "pushErrors": len(push_errors), "errorCount": len(errors)}


if __name__ == "__main__":
    main("lb_history", body)
