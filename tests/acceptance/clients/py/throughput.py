"""Scenario (g), Python SDK: push PGQ_N (default 20000) jobs with add_bulk in chunks of
PGQ_CHUNK (1000), then drain them with one Worker (concurrency PGQ_CONCURRENCY (50),
batch_size PGQ_BATCH (50), ACKB batching via ack_batch) and report jobs/s per phase.
The SDK is thread-based and uses one connection per Queue/Worker, so this measures the
SDK as much as the server."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from _common import Env, check, main, wait_for
from bunqueue import Queue, Worker


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    n = int(os.environ.get("PGQ_N", "20000"))
    chunk = int(os.environ.get("PGQ_CHUNK", "1000"))
    concurrency = int(os.environ.get("PGQ_CONCURRENCY", "50"))
    batch = int(os.environ.get("PGQ_BATCH", "50"))
    params = {"n": n, "chunk": chunk, "concurrency": concurrency, "batch": batch}
    partial["params"] = params
    queue = Queue(env.queue, **env.conn(), command_timeout=60)
    queue.ping()
    t = time.perf_counter()
    pushed: list[str] = []
    for start in range(0, n, chunk):
        pushed += queue.add_bulk(
            [{"name": "bench", "data": {"i": i}} for i in range(start, min(n, start + chunk))]
        )
    push_s = time.perf_counter() - t
    check(len(set(pushed)) == n, f"pushed {len(pushed)} ids")

    seen: set[str] = set()
    lock = threading.Lock()
    dup = 0

    def on_completed(job: Any, result: Any) -> None:
        nonlocal dup
        with lock:
            if job.id in seen:
                dup += 1
            seen.add(job.id)

    t = time.perf_counter()
    worker = Worker(
        env.queue,
        lambda job: None,
        **env.conn(second=True),
        concurrency=concurrency,
        batch_size=batch,
        poll_timeout_ms=1000,
        ack_batch={"max_size": batch, "max_delay_ms": 5},
    )
    worker.on("completed", on_completed)
    wait_for(f"{n} completions", lambda: len(seen) >= n, env.timeout_ms / 1000 - push_s - 10, 0.02)
    drain_s = time.perf_counter() - t
    worker.close(timeout=30)
    counts = queue.get_job_counts()
    queue.close()
    return {
        "params": params,
        "push": {"ms": round(push_s * 1000), "jobsPerSec": round(n / push_s)},
        "drain": {"ms": round(drain_s * 1000), "jobsPerSec": round(n / drain_s)},
        "completed": len(seen),
        "duplicates": dup,
        "counts": counts,
    }


if __name__ == "__main__":
    main("throughput", body)
