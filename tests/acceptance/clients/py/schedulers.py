"""Scenario, Python SDK: the cron calls of ``bunqueue-client`` 0.1.5, unchanged.

- add_cron(name, pattern, data, tz=...) and every(name, ms, data, immediately=True,
  limit=3) send ``Cron`` (the job name inside ``data``, legacy envelope);
- the every-scheduler's jobs reach a Worker on the other broker with their data;
- get_job_scheduler (``CronGet``) sees executions and the next run; an unknown
  name → None; get_job_schedulers (``CronList``) filters by queue;
- remove_job_scheduler (``CronDelete``) removes it.
"""

from __future__ import annotations

import uuid
from typing import Any

from _common import Env, check, main, wait_for
from bunqueue import Queue, Worker


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    queue = Queue(env.queue, **env.conn())
    nightly = f"nightly-{uuid.uuid4().hex[:8]}"
    beat = f"beat-{uuid.uuid4().hex[:8]}"
    queue.add_cron(nightly, "0 3 * * *", {"kind": "daily"}, tz="Europe/Rome")
    queue.every(beat, 500, {"n": 1}, immediately=True, limit=3)
    seen: list[dict[str, Any]] = []
    worker = Worker(
        env.queue,
        lambda job: seen.append({"id": job.id, "data": job.data}) or {"ok": True},
        **env.conn(second=True),
        concurrency=2,
        poll_timeout_ms=200,
    )
    wait_for("3 scheduled jobs", lambda: len(seen) >= 3, env.timeout_ms / 1000 - 10)
    got = queue.get_job_scheduler(nightly)
    got_beat = queue.get_job_scheduler(beat)
    missing = queue.get_job_scheduler(f"missing-{uuid.uuid4().hex[:8]}")
    listed = queue.get_job_schedulers()
    count = queue.get_job_schedulers_count()
    queue.remove_job_scheduler(nightly)
    after = queue.get_job_scheduler(nightly)
    worker.close(timeout=10)
    queue.close()
    partial.update(seen=seen, got=got)

    check(got is not None and got["schedule"] == "0 3 * * *", f"add_cron: {got}")
    check(got is not None and got["timezone"] == "Europe/Rome", f"timezone: {got}")
    check(got is not None and got["jobName"] == nightly, f"job name from data.name: {got}")
    check(got is not None and got["data"] == {"kind": "daily"}, f"data: {got}")
    check(isinstance(got and got["nextRun"], float), f"nextRun: {got}")
    check(len(seen) == 3, f"jobs of the every-scheduler: {seen}")
    check(all(j["data"] == {"n": 1} for j in seen), f"their data: {seen}")
    check(got_beat is not None and got_beat["executions"] == 3, f"executions: {got_beat}")
    check(got_beat is not None and got_beat["nextRun"] is None, f"spent: {got_beat}")
    check(missing is None, f"unknown scheduler → None ({missing})")
    check(sorted(s["name"] for s in listed) == sorted([nightly, beat]), f"listed: {listed}")
    check(count == 2, f"count {count}")
    check(after is None, "removed")
    return {"seen": seen, "got": got, "beat": got_beat, "listed": [s["name"] for s in listed]}


if __name__ == "__main__":
    main("schedulers", body)
