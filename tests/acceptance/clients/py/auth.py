"""Scenario (f), Python SDK: token authentication (needs PGQ_TOKEN and a server with
auth tokens). Right token: add + get_job_counts + a Worker completes the job. Wrong
token: the SDK's Auth on connect fails (AuthError). No token: the command fails with
"Not authenticated" (CommandError)."""

from __future__ import annotations

from typing import Any

from _common import Env, attempt, check, main, wait_for
from bunqueue import Queue, Worker


def body(env: Env, partial: dict[str, Any]) -> dict[str, Any]:
    if not env.token:
        raise RuntimeError("PGQ_TOKEN must be set for the auth scenario")
    good = Queue(env.queue, **env.conn())
    added = attempt(lambda: good.add("authed", {"v": 1}).id)
    counts = attempt(good.get_job_counts)
    done: list[Any] = []
    worker = Worker(
        env.queue,
        lambda job: {"v": job.data.get("v")},
        **env.conn(second=True),
        concurrency=2,
        poll_timeout_ms=200,
    )
    worker.on("completed", lambda job, result: done.append(result))
    wait_for("authed job completed", lambda: bool(done), min(15.0, env.timeout_ms / 3000))
    worker.close(timeout=10)
    good.close()

    wrong = Queue(
        env.queue,
        host=env.host,
        port=env.port,
        token=env.token + "-wrong",
        command_timeout=3,
        **env.tls(),
    )
    wrong_add = attempt(lambda: wrong.add("wrong", {"v": 2}).id)
    wrong_ping = attempt(wrong.ping)
    wrong.close()
    none = Queue(env.queue, host=env.host, port=env.port, command_timeout=3, **env.tls())
    none_add = attempt(lambda: none.add("none", {"v": 3}).id)
    none.close()

    check(added["ok"] and counts["ok"], f"right token works: {added} {counts}")
    check(not wrong_add["ok"], "wrong token fails")
    check(not none_add["ok"], "no token fails")
    return {
        "goodToken": {"add": added, "counts": counts, "workerResult": done[0]},
        "wrongToken": {"add": wrong_add, "ping": wrong_ping},
        "noToken": {"add": none_add},
    }


if __name__ == "__main__":
    main("auth", body)
