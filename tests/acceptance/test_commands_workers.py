"""Worker reports (progress, logs) and the workers registry, over real sockets."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from pgqueue.client.connection import Connection
from pgqueue.protocol import encode_frame
from pgqueue.testing import eventually
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

JS_UNDEFINED = msgpack.ExtType(0, b"\x00")  # how the TS client encodes `undefined`


def bare(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "reqId"}


async def listed(conn: Connection, worker_id: str) -> dict[str, Any] | None:
    workers = (await conn.call("ListWorkers"))["data"]["workers"]
    return next((w for w in workers if w["workerId"] == worker_id), None)


# -- Progress, AddLog ---------------------------------------------------------------------


async def test_progress_of_an_active_job_is_seen_by_the_other_broker(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    _, token = await pull(a, queue)
    answer = await a.call("Progress", {"id": job_id, "progress": 30, "message": "a third"})
    assert bare(answer) == {"ok": True}
    job = (await b.call("GetJob", {"id": job_id}))["job"]
    assert (job["progress"], job["progressMessage"]) == (30, "a third")
    await b.call("Progress", {"id": job_id, "progress": {"step": 2}, "token": token})
    assert (await a.call("GetProgress", {"id": job_id}))["progress"] == {"step": 2}


async def test_progress_with_an_undefined_message_keeps_the_previous_one(
    clients: Clients,
) -> None:
    a, _ = clients
    queue = new_queue()
    job_id = await push(a, queue)
    await pull(a, queue)
    await a.call("Progress", {"id": job_id, "progress": 10, "message": "starting"})
    # sent raw (no reqId: the answer comes back as an unmatched frame)
    frame = {"cmd": "Progress", "id": job_id, "progress": 50, "message": JS_UNDEFINED}
    a.send_raw(encode_frame(msgpack.packb(frame)))
    assert await a.next_raw_answer() == {"ok": True}
    progress = await a.call("GetProgress", {"id": job_id})
    assert (progress["progress"], progress["message"]) == (50, "starting")


async def test_progress_of_a_job_that_is_not_active_is_refused(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue())
    error = await remote_error(b, "Progress", {"id": job_id, "progress": 5})
    assert error == "Job is not active (current state: waiting)"
    assert await remote_error(b, "Progress", {"id": "no-such-job", "progress": 5}) == (
        "Job not found"
    )
    assert (await a.call("GetProgress", {"id": job_id}))["progress"] == 0


async def test_progress_with_a_stale_token_changes_nothing(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await push(a, queue)
    _, first = await pull(a, queue)
    await a.call("MoveToWait", {"id": job_id, "token": first})
    _, second = await pull(b, queue)
    error = await remote_error(b, "Progress", {"id": job_id, "progress": 99, "token": first})
    assert error == f"Invalid or expired lock token for job {job_id}"
    assert (await a.call("GetProgress", {"id": job_id}))["progress"] == 0
    await b.call("ACK", {"id": job_id, "token": second})


async def test_add_log_answers_added_and_the_line_is_kept(clients: Clients) -> None:
    a, b = clients
    job_id = await push(a, new_queue())
    answer = await a.call("AddLog", {"id": job_id, "message": "hello", "level": "warn"})
    assert bare(answer) == {"ok": True, "data": {"added": True}}
    [line] = (await b.call("GetLogs", {"id": job_id}))["data"]["logs"]
    assert (line["level"], line["message"]) == ("warn", "hello")


async def test_add_log_of_an_unknown_job_says_job_not_found(clients: Clients) -> None:
    a, _ = clients
    error = await remote_error(a, "AddLog", {"id": "no-such-job", "message": "x"})
    assert error == "Job not found"


async def test_add_log_for_a_job_that_keeps_no_logs_answers_not_added(clients: Clients) -> None:
    a, _ = clients
    job_id = await push(a, new_queue(), keepLogs=0)
    answer = await a.call("AddLog", {"id": job_id, "message": "dropped"})
    assert answer["data"] == {"added": False}
    assert (await a.call("GetLogs", {"id": job_id}))["data"]["count"] == 0


# -- the workers registry ---------------------------------------------------------------


async def test_register_worker_answers_the_worker_and_every_broker_lists_it(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    answer = await a.call(
        "RegisterWorker",
        {
            "name": "mailer",
            "queues": [queue],
            "concurrency": 4,
            "workerId": f"w-{queue}",
            "hostname": "host-1",
            "pid": 4242,
            "startedAt": 1796000000000.0,
        },
    )
    worker = answer["data"]
    assert set(worker) == {
        "workerId",
        "name",
        "queues",
        "concurrency",
        "hostname",
        "pid",
        "status",
        "registeredAt",
        "lastSeen",
        "activeJobs",
        "processedJobs",
        "failedJobs",
        "currentJob",
    }
    assert (worker["workerId"], worker["name"], worker["queues"], worker["concurrency"]) == (
        f"w-{queue}",
        "mailer",
        [queue],
        4,
    )
    assert (worker["hostname"], worker["pid"], worker["status"]) == ("host-1", 4242, "active")
    seen = await listed(b, f"w-{queue}")
    assert seen is not None
    assert seen["id"] == f"w-{queue}" and seen["status"] == "active"
    assert isinstance(seen["uptime"], float)


async def test_register_worker_without_an_id_gets_one(clients: Clients) -> None:
    a, _ = clients
    answer = await a.call("RegisterWorker", {"name": "anon", "queues": [new_queue()]})
    assert isinstance(answer["data"]["workerId"], str) and answer["data"]["workerId"]
    assert answer["data"]["concurrency"] == 1


async def test_heartbeat_records_the_workers_counters(clients: Clients) -> None:
    a, b = clients
    worker_id = f"w-{new_queue()}"
    await a.call("RegisterWorker", {"name": "n", "queues": ["q"], "workerId": worker_id})
    answer = await a.call(
        "Heartbeat", {"id": worker_id, "activeJobs": 2, "processed": 10, "failed": 1}
    )
    assert bare(answer) == {"ok": True, "data": {"ok": True}}
    seen = await listed(b, worker_id)
    assert seen is not None
    assert (seen["activeJobs"], seen["processedJobs"], seen["failedJobs"]) == (2, 10, 1)


async def test_heartbeat_of_an_unknown_worker_says_worker_not_found(clients: Clients) -> None:
    a, _ = clients
    assert await remote_error(a, "Heartbeat", {"id": "no-such-worker"}) == "Worker not found"


async def test_unregister_worker_removes_it_once(clients: Clients) -> None:
    a, b = clients
    worker_id = f"w-{new_queue()}"
    await a.call("RegisterWorker", {"name": "n", "queues": ["q"], "workerId": worker_id})
    answer = await b.call("UnregisterWorker", {"workerId": worker_id})
    assert bare(answer) == {"ok": True, "data": {"removed": True}}
    assert await listed(a, worker_id) is None
    assert await remote_error(a, "UnregisterWorker", {"workerId": worker_id}) == (
        "Worker not found"
    )


async def test_list_workers_answers_workers_and_totals(clients: Clients) -> None:
    a, b = clients
    worker_id = f"w-{new_queue()}"
    await a.call(
        "RegisterWorker", {"name": "n", "queues": ["q"], "workerId": worker_id, "concurrency": 3}
    )
    data = (await b.call("ListWorkers"))["data"]
    assert set(data) == {"workers", "stats"}
    assert set(data["stats"]) == {
        "total",
        "active",
        "totalProcessed",
        "totalFailed",
        "activeJobs",
        "concurrencySlots",
    }
    assert data["stats"]["total"] == len(data["workers"]) >= 1
    assert data["stats"]["concurrencySlots"] >= 3


async def test_a_closed_connection_takes_its_workers_with_it(pair: Pair, clients: Clients) -> None:
    _, b = clients
    worker_id = f"w-{new_queue()}"
    own = await Connection.open("127.0.0.1", pair.a.tcp_port)
    await own.call("RegisterWorker", {"name": "n", "queues": ["q"], "workerId": worker_id})
    assert await listed(b, worker_id) is not None
    await own.close()

    async def gone() -> bool:
        return await listed(b, worker_id) is None

    await eventually(gone, timeout=10, message="worker removed with its connection")


# -- bad input -----------------------------------------------------------------------------

ID_RULE = "must be a non-empty string of at most 256 characters"

BAD_COMMANDS: list[tuple[dict[str, Any], str]] = [
    ({"cmd": "Progress", "id": "x"}, "progress is required"),
    ({"cmd": "Progress", "id": "x", "progress": "50%"}, "progress must be a number"),
    ({"cmd": "Progress", "id": "x", "progress": True}, "progress must be a number"),
    ({"cmd": "Progress", "id": "x", "progress": 5, "message": 7}, "message must be a string"),
    ({"cmd": "Progress", "progress": 5}, "id is required"),
    ({"cmd": "AddLog", "id": "x"}, "message is required"),
    ({"cmd": "AddLog", "id": "x", "message": ["a"]}, "message must be a string"),
    (
        {"cmd": "AddLog", "id": "x", "message": "m", "level": "debug"},
        "level must be one of info, warn, error",
    ),
    (
        {"cmd": "AddLog", "id": "x", "message": "x" * 10_001},
        "message must be at most 10000 characters long",
    ),
    ({"cmd": "Heartbeat"}, "id is required"),
    ({"cmd": "Heartbeat", "id": "w", "processed": -1}, "processed must be at least 0"),
    ({"cmd": "Heartbeat", "id": "w", "activeJobs": "2"}, "activeJobs must be a number"),
    ({"cmd": "RegisterWorker", "queues": ["q"]}, "name is required"),
    (
        {"cmd": "RegisterWorker", "name": "", "queues": ["q"]},
        "Job name must be a non-empty string of at most 256 characters",
    ),
    ({"cmd": "RegisterWorker", "name": "n"}, "queues is required"),
    ({"cmd": "RegisterWorker", "name": "n", "queues": "q"}, "queues must be an array"),
    (
        {"cmd": "RegisterWorker", "name": "n", "queues": ["bad queue"]},
        "Queue name contains invalid characters",
    ),
    (
        {"cmd": "RegisterWorker", "name": "n", "queues": ["q"], "concurrency": 0},
        "concurrency must be at least 1",
    ),
    ({"cmd": "RegisterWorker", "name": "n", "queues": ["q"], "workerId": 5}, f"workerId {ID_RULE}"),
    ({"cmd": "RegisterWorker", "name": "n", "queues": ["q"], "pid": "1"}, "pid must be a number"),
    ({"cmd": "UnregisterWorker"}, "workerId is required"),
]


@pytest.mark.parametrize(("message", "error"), BAD_COMMANDS)
async def test_bad_worker_commands_get_a_clear_error_and_change_nothing(
    pair: Pair, clients: Clients, message: dict[str, Any], error: str
) -> None:
    a, _ = clients
    await push(a, new_queue())
    await assert_refused(pair, clients, message, error)
