"""Queries over jobs and queues, served by two real brokers over real sockets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from tests.acceptance import command_support as support
from tests.acceptance.command_support import (
    Pair,
    assert_refused,
    new_queue,
    pull,
    push,
    remote_error,
)

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]


def bare(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "reqId"}


# -- GetJobs, GetJobByCustomId ----------------------------------------------------------


async def test_get_jobs_lists_the_jobs_of_a_state_with_their_state(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    waiting = [await push(a, queue, i) for i in range(3)]
    delayed = await push(a, queue, "later", delay=600_000)
    answer = await b.call("GetJobs", {"queue": queue, "state": "waiting"})
    assert set(answer) == {"ok", "reqId", "jobs"}
    assert [job["id"] for job in answer["jobs"]] == waiting
    assert {job["state"] for job in answer["jobs"]} == {"waiting"}
    both = await b.call("GetJobs", {"queue": queue, "state": ["waiting", "delayed"]})
    assert {job["id"]: job["state"] for job in both["jobs"]} == {
        **dict.fromkeys(waiting, "waiting"),
        delayed: "delayed",
    }


async def test_get_jobs_pages_in_creation_order_both_ways(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    ids = [await push(a, queue, i) for i in range(5)]
    page = await b.call("GetJobs", {"queue": queue, "offset": 1, "limit": 2})
    assert [job["id"] for job in page["jobs"]] == ids[1:3]
    newest = await b.call("GetJobs", {"queue": queue, "limit": 2, "asc": False})
    assert [job["id"] for job in newest["jobs"]] == [ids[4], ids[3]]
    assert (await b.call("GetJobs", {"queue": queue, "limit": 0}))["jobs"] == []


async def test_get_jobs_of_completed_jobs_carries_their_return_values(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    _, token = await pull(a, queue)
    await a.call("ACK", {"id": job_id, "token": token, "result": {"ok": 1}})
    [job] = (await b.call("GetJobs", {"queue": queue, "state": "completed"}))["jobs"]
    assert (job["id"], job["state"], job["returnvalue"]) == (job_id, "completed", {"ok": 1})


async def test_get_job_by_custom_id_answers_the_job_without_its_state(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    await push(a, queue, {"k": 1}, jobId="order-42-" + queue)
    answer = await b.call("GetJobByCustomId", {"customId": "order-42-" + queue})
    job = answer["job"]
    assert (job["id"], job["customId"], job["data"]) == (
        "order-42-" + queue,
        "order-42-" + queue,
        {"k": 1},
    )
    assert "state" not in job


async def test_get_job_by_custom_id_of_an_unknown_id_says_job_not_found(
    clients: Clients,
) -> None:
    a, _ = clients
    queue = new_queue()
    plain = await push(a, queue)  # a job id that is not a custom id
    assert await remote_error(a, "GetJobByCustomId", {"customId": "nope"}) == "Job not found"
    assert await remote_error(a, "GetJobByCustomId", {"customId": plain}) == "Job not found"


# -- progress, counts -----------------------------------------------------------------


async def test_get_progress_reads_what_the_worker_reported_on_the_other_broker(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    _, token = await pull(a, queue)
    before = await b.call("GetProgress", {"id": job_id})
    assert bare(before) == {"ok": True, "progress": 0, "message": None}
    await a.call("Progress", {"id": job_id, "progress": 40, "message": "half", "token": token})
    assert bare(await b.call("GetProgress", {"id": job_id})) == {
        "ok": True,
        "progress": 40,
        "message": "half",
    }


async def test_get_progress_of_an_unknown_job_says_job_not_found(clients: Clients) -> None:
    a, _ = clients
    assert await remote_error(a, "GetProgress", {"id": "no-such-job"}) == "Job not found"


async def test_count_answers_the_pending_jobs_of_the_queue(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    await push(a, queue)
    await push(a, queue, priority=3)
    await push(a, queue, delay=600_000)
    await push(a, queue)
    await pull(a, queue, lockTtl=600_000)  # the prioritized one: active is not pending
    assert bare(await b.call("Count", {"queue": queue})) == {"ok": True, "count": 3}


async def test_counts_per_priority_answer_pending_jobs_by_priority(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    for priority in (0, 0, 5, 9, 9, 9):
        await push(a, queue, priority=priority)
    answer = await b.call("GetCountsPerPriority", {"queue": queue})
    assert bare(answer) == {"ok": True, "queue": queue, "counts": {"0": 2, "5": 1, "9": 3}}


# -- WaitJob --------------------------------------------------------------------------------


async def test_wait_job_answers_the_result_once_the_other_broker_completes_it(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    waiting = asyncio.create_task(a.call("WaitJob", {"id": job_id, "timeout": 20_000}))
    _, token = await pull(b, queue)
    await b.call("ACK", {"id": job_id, "token": token, "result": {"sum": 3}})
    assert bare(await waiting) == {"ok": True, "completed": True, "result": {"sum": 3}}


async def test_wait_job_answers_not_completed_when_the_timeout_passes(clients: Clients) -> None:
    a, _ = clients
    job_id = await push(a, new_queue())
    assert bare(await a.call("WaitJob", {"id": job_id, "timeout": 50})) == {
        "ok": True,
        "completed": False,
    }


async def test_wait_job_answers_not_completed_for_a_failed_job(clients: Clients) -> None:
    a, _ = clients
    queue = new_queue()
    job_id = await push(a, queue, maxAttempts=1)
    _, token = await pull(a, queue)
    await a.call("FAIL", {"id": job_id, "token": token, "error": "no"})
    answer = await a.call("WaitJob", {"id": job_id, "timeout": 10_000})
    assert bare(answer) == {"ok": True, "completed": False}


async def test_wait_job_of_an_unknown_job_says_job_not_found(clients: Clients) -> None:
    a, _ = clients
    assert await remote_error(a, "WaitJob", {"id": "no-such-job"}) == "Job not found"


# -- logs, queues, children ---------------------------------------------------------------


async def test_get_logs_answers_the_lines_in_order_with_the_total(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue())
    for level, text in (("info", "one"), ("warn", "two"), ("error", "three")):
        assert (await a.call("AddLog", {"id": job_id, "message": text, "level": level}))[
            "data"
        ] == {"added": True}
    answer = await b.call("GetLogs", {"id": job_id})
    assert set(answer) == {"ok", "reqId", "data"}
    logs = answer["data"]["logs"]
    assert answer["data"]["count"] == 3
    assert [(line["level"], line["message"]) for line in logs] == [
        ("info", "one"),
        ("warn", "two"),
        ("error", "three"),
    ]
    assert all(isinstance(line["timestamp"], float) for line in logs)
    middle = (await b.call("GetLogs", {"id": job_id, "start": 1, "end": 1}))["data"]
    assert middle["count"] == 3 and [line["message"] for line in middle["logs"]] == ["two"]


async def test_list_queues_names_every_queue_holding_jobs(clients: Clients) -> None:
    a, b = clients
    first, second = new_queue(), new_queue()
    await push(a, first)
    await push(b, second)
    queues = (await b.call("ListQueues"))["queues"]
    assert {first, second} <= set(queues)
    assert queues == sorted(queues)


async def test_children_failure_queries_name_each_failed_child_and_its_error(
    clients: Clients,
) -> None:
    a, b = clients
    parents, kids = new_queue(), new_queue()
    parent = await push(a, parents)
    failing = await push(a, kids, "fails", maxAttempts=1, continueParentOnFailure=True)
    ignored = await push(a, kids, "ignored", maxAttempts=1, ignoreDependencyOnFailure=True)
    fine = await push(a, kids, "fine")
    for child in (failing, ignored, fine):
        await a.call("UpdateParent", {"childId": child, "parentId": parent})
    for _ in range(3):
        job, token = await pull(a, kids)
        if job["id"] == fine:
            await a.call("ACK", {"id": fine, "token": token})
        else:
            await a.call("FAIL", {"id": job["id"], "token": token, "error": f"{job['id']} broke"})

    failed = await b.call("GetFailedChildrenValues", {"id": parent})
    assert bare(failed) == {"ok": True, "values": {f"{kids}:{failing}": f"{failing} broke"}}
    skipped = await b.call("GetIgnoredChildrenFailures", {"id": parent})
    assert bare(skipped) == {"ok": True, "values": {f"{kids}:{ignored}": f"{ignored} broke"}}
    lonely = await push(a, new_queue())
    assert bare(await b.call("GetFailedChildrenValues", {"id": lonely})) == {
        "ok": True,
        "values": {},
    }


# -- bad input -----------------------------------------------------------------------------

ID_RULE = "must be a non-empty string of at most 256 characters"

BAD_COMMANDS: list[tuple[dict[str, Any], str]] = [
    ({"cmd": "GetJobs"}, "Queue name is required"),
    ({"cmd": "GetJobs", "queue": "q", "state": 5}, "state must be an array"),
    ({"cmd": "GetJobs", "queue": "q", "state": ["waiting", 1]}, "state[1] must be a string"),
    (
        {"cmd": "GetJobs", "queue": "q", "state": "sleeping"},
        "state must be one of waiting, prioritized, delayed, active, waiting-children, "
        "completed, failed (got 'sleeping')",
    ),
    ({"cmd": "GetJobs", "queue": "q", "offset": -1}, "offset must be at least 0"),
    ({"cmd": "GetJobs", "queue": "q", "limit": 20_000}, "limit must be at most 10000"),
    ({"cmd": "GetJobs", "queue": "q", "asc": "yes"}, "asc must be a boolean"),
    ({"cmd": "GetJobByCustomId"}, "customId is required"),
    ({"cmd": "GetJobByCustomId", "customId": 42}, f"customId {ID_RULE}"),
    ({"cmd": "GetProgress", "id": None}, "id is required"),
    ({"cmd": "Count", "queue": ["q"]}, "Queue name must be a string"),
    ({"cmd": "GetCountsPerPriority", "queue": "a b"}, "Queue name contains invalid characters"),
    ({"cmd": "WaitJob", "id": "x", "timeout": 600_001}, "timeout must be at most 600000"),
    ({"cmd": "WaitJob", "id": "x", "timeout": -1}, "timeout must be at least 0"),
    ({"cmd": "WaitJob", "id": "x", "timeout": "1s"}, "timeout must be a number"),
    ({"cmd": "GetLogs", "id": "x", "start": "0"}, "start must be a number"),
    ({"cmd": "GetLogs", "id": "x", "end": 0.5}, "end must be an integer"),
    ({"cmd": "GetFailedChildrenValues"}, "id is required"),
    ({"cmd": "GetIgnoredChildrenFailures", "id": ""}, f"id {ID_RULE}"),
]


@pytest.mark.parametrize(("message", "error"), BAD_COMMANDS)
async def test_bad_queries_get_a_clear_error_and_change_nothing(
    pair: Pair, clients: Clients, message: dict[str, Any], error: str
) -> None:
    a, _ = clients
    await push(a, new_queue())
    await assert_refused(pair, clients, message, error)
