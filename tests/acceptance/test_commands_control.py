"""Job and queue control commands, served by two real brokers over real sockets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from tests.acceptance import command_support as support
from tests.acceptance.command_support import (
    Pair,
    assert_refused,
    audit_rows,
    dead_letter,
    new_queue,
    pull,
    push,
    remote_error,
    state,
)
from tests.helpers import sql_value

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]


def bare(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without its reqId."""
    return {key: value for key, value in answer.items() if key != "reqId"}


async def complete(conn: Connection, queue: str, result: Any = None) -> str:
    job_id = await push(conn, queue)
    job, token = await pull(conn, queue)
    await conn.call("ACK", {"id": job["id"], "token": token, "result": result})
    return job_id


# -- Cancel, Update, ChangePriority, Promote ----------------------------------------------


async def test_cancel_removes_a_waiting_job_for_every_broker(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue())
    assert bare(await b.call("Cancel", {"id": job_id})) == {"ok": True}
    assert await state(a, job_id) == "unknown"


async def test_cancel_of_an_active_job_ends_it_and_its_heartbeats_say_so(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    other = await push(a, queue)
    _, token = await pull(a, queue)
    _, other_token = await pull(a, queue)
    assert bare(await b.call("Cancel", {"id": job_id})) == {"ok": True}
    assert await state(a, job_id) == "unknown"
    answer = await a.call("JobHeartbeatB", {"ids": [job_id, other], "tokens": [token, other_token]})
    assert answer["data"] == {"ok": True, "count": 1, "cancelled": [job_id]}
    answer = await b.call(
        "ExtendLocks",
        {"ids": [job_id, other], "tokens": [token, other_token], "durations": [30_000] * 2},
    )
    assert (answer["count"], answer["cancelled"]) == (1, [job_id])
    for cmd, fields in (
        ("JobHeartbeat", {"id": job_id, "token": token}),
        ("ExtendLock", {"id": job_id, "token": token, "duration": 30_000}),
    ):
        assert await remote_error(b, cmd, fields) == f"Job {job_id} was cancelled"
    # The late ACK changes nothing; a job nobody cancelled keeps bunqueue's shapes.
    late = await a.call("ACK", {"id": job_id, "token": token, "result": "late"})
    assert late["data"] == {"applied": False, "reason": "already-finalized"}
    assert await state(b, job_id) == "unknown"
    answer = await a.call("JobHeartbeatB", {"ids": [other], "tokens": [other_token]})
    assert answer["data"] == {"ok": True, "count": 1}
    await a.call("ACK", {"id": other, "token": other_token})


async def test_cancel_of_an_unknown_job_says_it_cannot_be_cancelled(clients: Clients) -> None:
    a, _ = clients
    error = await remote_error(a, "Cancel", {"id": "no-such-job"})
    assert error == "Job not found or cannot be cancelled"


async def test_update_replaces_the_data_the_worker_then_receives(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue, {"v": 1})
    assert bare(await b.call("Update", {"id": job_id, "data": {"v": 2}})) == {"ok": True}
    job, _ = await pull(a, queue)
    assert job["id"] == job_id and job["data"] == {"v": 2}


async def test_update_of_an_unknown_job_is_refused(clients: Clients) -> None:
    a, _ = clients
    error = await remote_error(a, "Update", {"id": "no-such-job", "data": 1})
    assert error == "Job not found or cannot be updated"


async def test_change_priority_makes_a_waiting_job_prioritized(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue())
    answer = await b.call("ChangePriority", {"id": job_id, "priority": 7, "lifo": True})
    assert bare(answer) == {"ok": True}
    job = (await a.call("GetJob", {"id": job_id}))["job"]
    assert (job["state"], job["priority"], job["lifo"]) == ("prioritized", 7, True)


async def test_change_priority_of_a_completed_job_is_refused(clients: Clients) -> None:
    a, b = clients
    job_id = await complete(a, new_queue())
    error = await remote_error(b, "ChangePriority", {"id": job_id, "priority": 3})
    assert error == "Job not found or not in queue"


async def test_promote_makes_a_delayed_job_waiting(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue(), delay=600_000)
    assert await state(a, job_id) == "delayed"
    assert bare(await b.call("Promote", {"id": job_id})) == {"ok": True}
    assert await state(a, job_id) == "waiting"


async def test_promote_of_a_waiting_job_says_it_is_not_delayed(clients: Clients) -> None:
    a, _ = clients
    job_id = await push(a, new_queue())
    assert await remote_error(a, "Promote", {"id": job_id}) == "Job not found or not delayed"


async def test_promote_jobs_promotes_at_most_count_delayed_jobs(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    for _ in range(3):
        await push(a, queue, delay=600_000)
    assert bare(await b.call("PromoteJobs", {"queue": queue, "count": 2})) == {
        "ok": True,
        "count": 2,
    }
    counts = (await a.call("GetJobCounts", {"queue": queue}))["counts"]
    assert (counts["waiting"], counts["delayed"]) == (2, 1)


# -- moves of one job ----------------------------------------------------------------


async def test_move_to_delayed_by_the_worker_puts_its_job_back_for_later(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    _, token = await pull(a, queue)
    answer = await b.call("MoveToDelayed", {"id": job_id, "delay": 600_000, "token": token})
    assert bare(answer) == {"ok": True}
    assert await state(a, job_id) == "delayed"


async def test_move_to_delayed_without_a_token_uses_the_one_the_broker_handed_out(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    await pull(a, queue)
    await a.call("MoveToDelayed", {"id": job_id, "delay": 600_000})
    assert await state(b, job_id) == "delayed"


async def test_after_a_move_the_broker_no_longer_offers_the_old_token(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    await pull(a, queue)
    await a.call("MoveToDelayed", {"id": job_id, "delay": 600_000})
    await a.call("Promote", {"id": job_id})
    _, token = await pull(b, queue)
    error = await remote_error(a, "MoveToDelayed", {"id": job_id, "delay": 1000})
    assert error == f"Lock token required for job {job_id}"
    await b.call("ACK", {"id": job_id, "token": token})


async def test_move_to_delayed_of_a_waiting_job_delays_it_on_the_database_clock(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    queue = new_queue()
    waiting = await push(a, queue)
    prioritized = await push(a, queue, priority=5)
    for job_id in (waiting, prioritized):
        assert bare(await b.call("MoveToDelayed", {"id": job_id, "delay": 600_000})) == {"ok": True}
        assert await state(a, job_id) == "delayed"
    left = await sql_value(
        pair.dsn,
        "SELECT extract(epoch FROM run_at - statement_timestamp()) * 1000"
        " FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
        pair.namespace,
        waiting,
    )
    assert 590_000 < float(left) <= 600_000
    answer = await a.call("PULL", {"queue": queue, "owner": "w", "timeout": 0})
    assert answer["job"] is None, "a delayed job is not claimed before it is due"


async def test_move_to_delayed_of_a_finished_or_unknown_job_is_refused(clients: Clients) -> None:
    a, _ = clients
    job_id = await complete(a, new_queue())
    error = await remote_error(a, "MoveToDelayed", {"id": job_id, "delay": 1000})
    assert error == "Job is not active (current state: completed)"
    error = await remote_error(a, "MoveToDelayed", {"id": "no-such-job", "delay": 1000})
    assert error == "Job not found"


async def test_move_to_delayed_of_an_active_job_without_its_token_is_refused(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    _, token = await pull(a, queue)
    error = await remote_error(b, "MoveToDelayed", {"id": job_id, "delay": 1000})
    assert error == f"Lock token required for job {job_id}"
    assert await state(a, job_id) == "active"
    await a.call("ACK", {"id": job_id, "token": token})


async def test_move_to_delayed_with_a_stale_token_changes_nothing(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    _, first = await pull(a, queue)
    await a.call("MoveToWait", {"id": job_id, "token": first})
    _, second = await pull(b, queue)
    error = await remote_error(b, "MoveToDelayed", {"id": job_id, "delay": 1000, "token": first})
    assert error == f"Invalid or expired lock token for job {job_id}"
    assert await state(a, job_id) == "active"
    await b.call("ACK", {"id": job_id, "token": second})


async def test_change_delay_delays_a_waiting_job(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue())
    assert bare(await b.call("ChangeDelay", {"id": job_id, "delay": 600_000})) == {"ok": True}
    assert await state(a, job_id) == "delayed"


async def test_change_delay_of_an_unknown_job_is_refused(clients: Clients) -> None:
    a, _ = clients
    error = await remote_error(a, "ChangeDelay", {"id": "no-such-job", "delay": 5})
    assert error == "Job not found or cannot change delay"


async def test_change_delay_of_an_active_job_needs_the_workers_token(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    await pull(a, queue)
    error = await remote_error(b, "ChangeDelay", {"id": job_id, "delay": 600_000})
    assert error == f"Lock token required for job {job_id}"
    assert await state(b, job_id) == "active"
    await a.call("ChangeDelay", {"id": job_id, "delay": 600_000})  # a handed the token out
    assert await state(b, job_id) == "delayed"


async def test_move_to_wait_gives_an_active_job_back_to_waiting(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    _, token = await pull(a, queue)
    assert bare(await b.call("MoveToWait", {"id": job_id, "token": token})) == {"ok": True}
    assert await state(a, job_id) == "waiting"


async def test_move_to_wait_promotes_a_delayed_job(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue(), delay=600_000)
    await b.call("MoveToWait", {"id": job_id})
    assert await state(a, job_id) == "waiting"


async def test_move_to_wait_redrives_a_failed_job_out_of_the_dlq(
    clients: Clients, pair: Pair
) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await dead_letter(a, queue)
    assert bare(await b.call("MoveToWait", {"id": job_id})) == {"ok": True}
    assert await state(a, job_id) == "waiting"
    assert (await a.call("Dlq", {"queue": queue}))["entries"] == []
    [audit] = [row for row in await audit_rows(pair.dsn, pair.namespace) if row["queue"] == queue]
    assert (audit["actor"], audit["action"], audit["job_ids"]) == (
        "anonymous",
        "redrive",
        [job_id],
    )


async def test_move_to_wait_of_a_completed_job_is_refused(clients: Clients) -> None:
    a, _ = clients
    job_id = await complete(a, new_queue())
    error = await remote_error(a, "MoveToWait", {"id": job_id})
    assert error == "Cannot move job from state 'completed' to waiting"


async def test_move_to_waiting_children_parks_a_job_until_its_child_completes(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    parent = await push(a, queue)
    _, token = await pull(a, queue)
    child = await push(a, new_queue())
    await a.call("UpdateParent", {"childId": child, "parentId": parent})
    answer = await b.call("MoveToWaitingChildren", {"id": parent, "token": token})
    assert bare(answer) == {"ok": True, "data": {"moved": True}}
    assert await state(a, parent) == "waiting-children"


async def test_move_to_waiting_children_with_nothing_to_wait_for_keeps_the_job_active(
    clients: Clients,
) -> None:
    a, _ = clients
    queue = new_queue()
    job_id = await push(a, queue)
    await pull(a, queue)
    answer = await a.call("MoveToWaitingChildren", {"id": job_id})
    assert answer["data"] == {"moved": False}
    assert await state(a, job_id) == "active"


async def test_discard_dead_letters_a_waiting_job(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    assert bare(await b.call("Discard", {"id": job_id})) == {"ok": True}
    assert await state(a, job_id) == "failed"
    [entry] = (await a.call("Dlq", {"queue": queue}))["entries"]
    assert (entry["job"]["id"], entry["reason"]) == (job_id, "explicit_fail")


async def test_discard_of_an_unknown_job_says_not_found(clients: Clients) -> None:
    a, _ = clients
    assert await remote_error(a, "Discard", {"id": "no-such-job"}) == "Job not found"


async def test_clear_logs_keeps_only_the_newest_lines(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue())
    for text in ("first", "second", "third"):
        await a.call("AddLog", {"id": job_id, "message": text})
    assert bare(await b.call("ClearLogs", {"id": job_id, "keepLogs": 1})) == {"ok": True}
    logs = (await a.call("GetLogs", {"id": job_id}))["data"]
    assert logs["count"] == 1 and [line["message"] for line in logs["logs"]] == ["third"]


# -- flows and deduplication keys ----------------------------------------------------------


async def _parent_with_children(conn: Connection, count: int) -> tuple[str, list[str]]:
    parent = await push(conn, new_queue())
    children_queue = new_queue()
    children = [await push(conn, children_queue, i) for i in range(count)]
    for child in children:
        await conn.call("UpdateParent", {"childId": child, "parentId": parent})
    assert await state(conn, parent) == "waiting-children"
    return parent, children


async def test_remove_child_dependency_releases_a_parent_waiting_only_for_it(
    clients: Clients,
) -> None:
    a, b = clients
    parent, [child] = await _parent_with_children(a, 1)
    answer = await b.call("RemoveChildDependency", {"id": child})
    assert bare(answer) == {"ok": True, "removed": True}
    assert await state(a, parent) == "waiting"
    assert await state(a, child) == "waiting"  # still queued, on its own
    again = await a.call("RemoveChildDependency", {"id": child})
    assert bare(again) == {"ok": True, "removed": False}
    assert await remote_error(a, "RemoveChildDependency", {"id": "no-such-job"}) == (
        "Job not found"
    )


async def test_remove_unprocessed_children_removes_them_and_releases_the_parent(
    clients: Clients,
) -> None:
    a, b = clients
    parent, children = await _parent_with_children(a, 2)
    answer = await b.call("RemoveUnprocessedChildren", {"id": parent})
    assert bare(answer) == {"ok": True}
    assert [await state(a, child) for child in children] == ["unknown", "unknown"]
    assert await state(a, parent) == "waiting"


async def test_deduplication_keys_are_read_and_freed_through_any_broker(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    owner = await push(a, queue, 1, uniqueKey="order-7")
    assert await push(b, queue, 2, uniqueKey="order-7") == owner
    found = await b.call("GetDeduplicationJobId", {"queue": queue, "deduplicationId": "order-7"})
    assert bare(found) == {"ok": True, "data": {"jobId": owner}}
    freed = await b.call("RemoveDeduplicationKey", {"queue": queue, "deduplicationId": "order-7"})
    assert bare(freed) == {"ok": True, "data": {"count": 1}}
    nobody = await a.call("GetDeduplicationJobId", {"queue": queue, "deduplicationId": "order-7"})
    assert nobody["data"] == {"jobId": None}
    second = await a.call("PUSH", {"queue": queue, "data": 3, "uniqueKey": "order-7"})
    assert second["id"] != owner and await state(a, owner) == "waiting"
    removed = await b.call("RemoveJobDeduplicationKey", {"id": second["id"]})
    assert bare(removed) == {"ok": True, "data": {"removed": True}}
    again = await b.call("RemoveJobDeduplicationKey", {"id": second["id"]})
    assert again["data"] == {"removed": False}


async def test_the_official_python_client_edits_a_flow(pair: Pair, clients: Clients) -> None:
    from bunqueue import Queue

    a, _ = clients
    parent, [kept, *others] = await _parent_with_children(a, 3)

    def scenario() -> None:
        queue = Queue("any", host="127.0.0.1", port=pair.b.tcp_port)
        try:
            queue.remove_child_dependency(kept)
            queue.remove_unprocessed_children(parent)
        finally:
            queue.close()

    await asyncio.to_thread(scenario)
    assert await state(a, kept) == "waiting"  # detached first, so not removed
    assert [await state(a, child) for child in others] == ["unknown", "unknown"]
    assert await state(a, parent) == "waiting"


# -- queues ------------------------------------------------------------------------


async def test_pause_stops_pulls_on_every_broker_until_resumed(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    assert bare(await a.call("Pause", {"queue": queue})) == {"ok": True}
    assert bare(await b.call("IsPaused", {"queue": queue})) == {"ok": True, "paused": True}
    assert (await b.call("PULL", {"queue": queue}))["job"] is None
    assert bare(await b.call("Resume", {"queue": queue})) == {"ok": True}
    assert (await a.call("IsPaused", {"queue": queue}))["paused"] is False
    job, _ = await pull(a, queue)
    assert job["id"] == job_id


async def test_drain_removes_waiting_and_delayed_jobs_and_answers_the_count(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    running = await push(a, queue)
    await pull(a, queue)
    await push(a, queue)
    await push(a, queue, priority=5)
    await push(a, queue, delay=600_000)
    assert bare(await b.call("Drain", {"queue": queue})) == {"ok": True, "count": 3}
    counts = (await a.call("GetJobCounts", {"queue": queue}))["counts"]
    assert counts["active"] == 1
    assert counts["waiting"] + counts["prioritized"] + counts["delayed"] == 0
    assert await state(a, running) == "active"


async def test_obliterate_refuses_a_queue_with_active_jobs_unless_forced(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    await push(a, queue)
    await push(a, queue)
    await pull(a, queue)
    error = await remote_error(b, "Obliterate", {"queue": queue})
    assert error == "Cannot obliterate queue with active jobs (1 active; use force)"
    assert (await b.call("Count", {"queue": queue}))["count"] == 1
    assert bare(await b.call("Obliterate", {"queue": queue, "force": True})) == {"ok": True}
    counts = (await a.call("GetJobCounts", {"queue": queue}))["counts"]
    assert set(counts.values()) == {0}
    assert queue not in (await a.call("ListQueues"))["queues"]


async def test_clean_removes_completed_jobs_older_than_the_grace(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    done = [await complete(a, queue) for _ in range(2)]
    young = await b.call("Clean", {"queue": queue, "grace": 3_600_000, "state": "completed"})
    assert bare(young) == {"ok": True, "count": 0, "ids": []}
    answer = await b.call("Clean", {"queue": queue, "grace": 0, "state": "completed"})
    assert answer["count"] == 2 and sorted(answer["ids"]) == sorted(done)
    assert (await a.call("GetJobCounts", {"queue": queue}))["counts"]["completed"] == 0


async def test_clean_without_a_state_removes_pending_jobs_up_to_the_limit(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    ids = [await push(a, queue), await push(a, queue), await push(a, queue, delay=600_000)]
    first = await b.call("Clean", {"queue": queue, "grace": 0, "limit": 2})
    assert first["count"] == 2
    rest = await b.call("Clean", {"queue": queue, "grace": 0})
    assert sorted(first["ids"] + rest["ids"]) == sorted(ids)
    assert (await a.call("Count", {"queue": queue}))["count"] == 0


async def test_retry_completed_runs_a_completed_job_again(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await complete(a, queue, result="first run")
    assert bare(await b.call("RetryCompleted", {"queue": queue})) == {"ok": True, "count": 1}
    assert await state(a, job_id) == "waiting"
    job, _ = await pull(b, queue)
    assert job["id"] == job_id


# -- bad input -----------------------------------------------------------------------------

ID_RULE = "must be a non-empty string of at most 256 characters"

BAD_COMMANDS: list[tuple[dict[str, Any], str]] = [
    ({"cmd": "Cancel"}, "id is required"),
    ({"cmd": "Cancel", "id": 5}, f"id {ID_RULE}"),
    ({"cmd": "Update", "id": "x"}, "data is required"),
    (
        {"cmd": "Update", "id": "x", "data": float("nan")},
        "data must be JSON serializable: NaN and Infinity are not allowed",
    ),
    ({"cmd": "ChangePriority", "id": "x", "priority": "high"}, "priority must be a number"),
    (
        {"cmd": "ChangePriority", "id": "x", "priority": 2_000_000},
        "priority must be at most 1000000",
    ),
    ({"cmd": "ChangePriority", "id": "x", "priority": 1, "lifo": "yes"}, "lifo must be a boolean"),
    ({"cmd": "ChangePriority", "id": "x"}, "priority is required"),
    ({"cmd": "Promote", "id": ["a"]}, f"id {ID_RULE}"),
    ({"cmd": "PromoteJobs", "queue": "q", "count": 0}, "count must be at least 1"),
    ({"cmd": "PromoteJobs"}, "Queue name is required"),
    ({"cmd": "MoveToDelayed", "id": "x"}, "delay is required"),
    ({"cmd": "MoveToDelayed", "id": "x", "delay": -1}, "delay must be at least 0"),
    ({"cmd": "MoveToDelayed", "id": "x", "delay": 1.5}, "delay must be an integer"),
    ({"cmd": "MoveToDelayed", "id": "x", "delay": 1, "token": 7}, "token must be a string"),
    ({"cmd": "ChangeDelay", "id": "x", "delay": "soon"}, "delay must be a number"),
    ({"cmd": "MoveToWait", "id": {"a": 1}}, f"id {ID_RULE}"),
    ({"cmd": "MoveToWait", "id": "x", "token": 5}, "token must be a string"),
    ({"cmd": "MoveToWaitingChildren"}, "id is required"),
    ({"cmd": "Discard", "id": "x", "token": []}, "token must be a string"),
    ({"cmd": "ClearLogs", "id": "x", "keepLogs": -1}, "keepLogs must be at least 0"),
    ({"cmd": "RemoveChildDependency", "id": ["a"]}, f"id {ID_RULE}"),
    ({"cmd": "RemoveUnprocessedChildren"}, "id is required"),
    ({"cmd": "GetDeduplicationJobId", "queue": "q"}, "deduplicationId is required"),
    (
        {"cmd": "RemoveDeduplicationKey", "queue": "q", "deduplicationId": {"k": 1}},
        f"deduplicationId {ID_RULE}",
    ),
    ({"cmd": "RemoveDeduplicationKey", "deduplicationId": "k"}, "Queue name is required"),
    ({"cmd": "RemoveJobDeduplicationKey", "id": 7}, f"id {ID_RULE}"),
    ({"cmd": "Pause", "queue": 1}, "Queue name must be a string"),
    ({"cmd": "Resume", "queue": "bad queue!"}, "Queue name contains invalid characters"),
    ({"cmd": "IsPaused"}, "Queue name is required"),
    ({"cmd": "Drain", "queue": "q", "delayed": "no"}, "delayed must be a boolean"),
    ({"cmd": "Obliterate", "queue": "q", "force": 1}, "force must be a boolean"),
    ({"cmd": "Clean", "queue": "q"}, "grace is required"),
    (
        {"cmd": "Clean", "queue": "q", "grace": 0, "state": "bogus"},
        "state must be one of completed, failed, waiting, wait, prioritized, delayed (got 'bogus')",
    ),
    ({"cmd": "Clean", "queue": "q", "grace": 0, "limit": "all"}, "limit must be a number"),
    ({"cmd": "RetryCompleted", "queue": "q", "count": 0}, "count must be at least 1"),
    ({"cmd": "RetryCompleted", "queue": "q", "timestamp": "now"}, "timestamp must be a number"),
    ({"cmd": "RetryCompleted", "queue": "q", "id": ""}, f"id {ID_RULE}"),
]


@pytest.mark.parametrize(("message", "error"), BAD_COMMANDS)
async def test_bad_control_commands_get_a_clear_error_and_change_nothing(
    pair: Pair, clients: Clients, message: dict[str, Any], error: str
) -> None:
    a, _ = clients
    queue = new_queue()
    await push(a, queue, delay=600_000)  # something that a stray write would change
    await assert_refused(pair, clients, message, error)
