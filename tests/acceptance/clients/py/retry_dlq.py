"""Scenario (e), Python SDK: failures, retries and the DLQ.

- ``flaky``: attempts=2, backoff {"type": "fixed", "delay": PGQ_BACKOFF_MS (300)}, always
  raises → runs twice, then ``failed`` + DLQ;
- ``fatal``: attempts=5, raises UnrecoverableError → runs once (FAIL unrecoverable:true);
- ``recovers``: attempts=3, backoff=100, fails once then succeeds.
Reports runs, states, get_job() failure fields, get_dlq() and the worker's FAIL traffic.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from _common import Env, check, count_commands, main, wait_for
from bunqueue import Queue, UnrecoverableError, Worker


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    backoff_ms = int(os.environ.get("PGQ_BACKOFF_MS", "300"))
    queue = Queue(env.queue, **env.conn())
    flaky, fatal, recovers = queue.add_bulk(
        [
            {
                "name": "flaky",
                "data": {"kind": "flaky"},
                "attempts": 2,
                "backoff": {"type": "fixed", "delay": backoff_ms},
            },
            {"name": "fatal", "data": {"kind": "fatal"}, "attempts": 5},
            {"name": "recovers", "data": {"kind": "recovers"}, "attempts": 3, "backoff": 100},
        ]
    )
    ids = {"flaky": flaky, "fatal": fatal, "recovers": recovers}
    partial["ids"] = ids
    t0 = time.monotonic()
    runs: list[dict[str, Any]] = []
    lock = threading.Lock()
    completed: set[str] = set()
    failed_events: list[dict[str, Any]] = []
    errors: list[str] = []
    partial["runs"] = runs

    def process(job: Any) -> Any:
        kind = job.data.get("kind")
        with lock:
            runs.append(
                {
                    "name": kind,
                    "attempts": job.attempts,
                    "at": round((time.monotonic() - t0) * 1000),
                }
            )
        if kind == "flaky":
            raise RuntimeError(f"flaky failure #{job.attempts + 1}")
        if kind == "fatal":
            raise UnrecoverableError("fatal: do not retry")
        if job.attempts == 0:
            raise RuntimeError("recovers: first run fails")
        return {"recovered": True}

    worker = Worker(
        env.queue,
        process,
        **env.conn(second=True),
        concurrency=2,
        poll_timeout_ms=100,
        autorun=False,
    )
    worker_cmds = count_commands(worker.connection)
    worker.on("completed", lambda job, result: completed.add(job.id))
    worker.on(
        "failed",
        lambda job, exc: failed_events.append(
            {"id": job.id, "attempts": job.attempts, "error": str(exc)}
        ),
    )
    worker.on("error", lambda exc: errors.append(str(exc)))
    worker.start()
    wait_for(
        "flaky+fatal failed, recovers completed",
        lambda: (
            recovers in completed
            and queue.get_state(flaky) == "failed"
            and queue.get_state(fatal) == "failed"
        ),
        env.timeout_ms / 1000 - 8,
        0.1,
    )
    worker.close(timeout=10)

    states = {k: queue.get_state(v) for k, v in ids.items()}
    jobs = {}
    for k, v in ids.items():
        j = queue.get_job(v)
        jobs[k] = (
            None
            if j is None
            else {
                "attempts": j.attempts,
                "failedReason": j.raw.get("failedReason"),
                "stacktrace": j.stacktrace,
                "returnvalue": j.raw.get("returnvalue"),
                "state": j.state,
            }
        )
    dlq = queue.get_dlq()
    counts = queue.get_job_counts()
    queue.close()

    flaky_runs = [r for r in runs if r["name"] == "flaky"]
    check(len(flaky_runs) == 2, f"flaky ran twice: {flaky_runs}")
    gap = flaky_runs[1]["at"] - flaky_runs[0]["at"]
    check(gap >= backoff_ms * 0.75, f"fixed backoff respected (gap {gap} ms)")
    check(len([r for r in runs if r["name"] == "fatal"]) == 1, "unrecoverable ran once")
    check(
        states == {"flaky": "failed", "fatal": "failed", "recovers": "completed"},
        f"states {states}",
    )
    dlq_ids = {str(j.get("id")) for j in dlq}
    check(flaky in dlq_ids and fatal in dlq_ids and recovers not in dlq_ids, f"DLQ ids {dlq_ids}")
    return {
        "ids": ids,
        "runs": runs,
        "flakyGapMs": gap,
        "states": states,
        "jobs": jobs,
        "dlq": [{"id": j.get("id"), "attempts": j.get("attempts")} for j in dlq],
        "counts": counts,
        "failedEvents": failed_events,
        "workerErrors": errors,
        "workerCmds": worker_cmds,
    }


if __name__ == "__main__":
    main("retry_dlq", body)
