"""Scenario: the Python SDK's global limits, unchanged.

- set_global_concurrency (SetConcurrency{limit}) / remove_global_concurrency;
- set_global_rate_limit (RateLimit{limit}; the SDK drops the duration) /
  remove_global_rate_limit;
- a worker of concurrency 4 under a global concurrency of 1 runs one job at a time.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from _common import Env, check, main, wait_for
from bunqueue import Queue, Worker


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    queue = Queue(env.queue, **env.conn())
    queue.set_global_rate_limit(50)
    queue.remove_global_rate_limit()
    queue.set_global_concurrency(1)
    for i in range(4):
        queue.add("w", {"i": i})
    lock = threading.Lock()
    state = {"active": 0, "highest": 0, "done": 0}

    def handle(job: Any) -> None:
        with lock:
            state["active"] += 1
            state["highest"] = max(state["highest"], state["active"])
        time.sleep(0.05)  # the work
        with lock:
            state["active"] -= 1
            state["done"] += 1

    worker = Worker(env.queue, handle, **env.conn(second=True), concurrency=4, poll_timeout_ms=200)
    wait_for("4 jobs", lambda: state["done"] >= 4, env.timeout_ms / 1000 - 8)
    worker.close(timeout=10)
    queue.remove_global_concurrency()
    queue.close()
    partial.update(state)
    check(state["highest"] == 1, f"one job at a time (saw {state['highest']})")
    return dict(state)


if __name__ == "__main__":
    main("limits", body)
