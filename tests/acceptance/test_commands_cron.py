"""Cron commands over the wire (bunqueue §1.6): Cron, CronGet, CronList, CronDelete,
and the ``repeat`` job option, through two real brokers."""

from __future__ import annotations

from typing import Any

import pytest

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance import command_support as support
from tests.acceptance.command_support import Pair, assert_refused, new_queue, remote_error
from tests.helpers import sql, sql_value

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]

BUNQUEUE_KEYS = [
    "name",
    "jobName",
    "queue",
    "schedule",
    "repeatEvery",
    "nextRun",
    "executions",
    "maxLimit",
    "timezone",
    "priority",
]


async def test_cron_upserts_with_bunqueues_shape_and_every_broker_reads_it(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue("cron")
    name = f"{queue}-nightly"
    answer = await a.call(
        "Cron",
        {
            "name": name,
            "queue": queue,
            "data": {"b": 1, "a": 2},
            "jobName": "report",
            "schedule": "0 3 * * *",
            "timezone": "Europe/Rome",
            "maxLimit": 0,
            "priority": 3,
        },
    )
    cron = answer["cron"]
    assert list(cron)[: len(BUNQUEUE_KEYS)] == BUNQUEUE_KEYS
    assert cron["jobName"] == "report" and cron["schedule"] == "0 3 * * *"
    assert cron["maxLimit"] is None and cron["executions"] == 0 and cron["priority"] == 3
    assert isinstance(cron["nextRun"], float)
    got = (await b.call("CronGet", {"name": name}))["cron"]
    assert got["data"] == {"b": 1, "a": 2} and list(got["data"]) == ["b", "a"]
    assert got["nextRun"] == cron["nextRun"]
    listed = (await b.call("CronList"))["crons"]
    assert name in [c["name"] for c in listed]
    # An update keeps the name, changes the schedule.
    updated = await b.call("Cron", {"name": name, "queue": queue, "repeatEvery": 60_000})
    assert updated["cron"]["schedule"] is None and updated["cron"]["repeatEvery"] == 60_000
    assert (await a.call("CronDelete", {"name": name}))["ok"] is True
    assert (await a.call("CronGet", {"name": name}))["cron"] is None


async def test_cron_get_of_a_missing_name_answers_null_and_delete_says_not_found(
    clients: Clients,
) -> None:
    a, _ = clients
    answer = await a.call("CronGet", {"name": "no-such-cron"})
    assert answer["ok"] is True and answer["cron"] is None
    assert await remote_error(a, "CronDelete", {"name": "no-such-cron"}) == "Cron job not found"


async def test_the_legacy_envelope_names_the_job(clients: Clients) -> None:
    a, _ = clients
    queue = new_queue("cron")
    name = f"{queue}-legacy"
    cron = (
        await a.call(
            "Cron",
            {"name": name, "queue": queue, "data": {"name": "tick", "v": 1}, "repeatEvery": 9_000},
        )
    )["cron"]
    assert cron["jobName"] == "tick" and cron["data"] == {"v": 1}
    await a.call("CronDelete", {"name": name})


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"schedule": "61 * * * *"}, "Invalid cron expression"),
        ({"schedule": "* * *"}, "Invalid cron expression: Cron expression must have 5 fields"),
        ({"schedule": "* * * * *", "timezone": "Not/AZone"}, "Invalid timezone: Not/AZone"),
        ({"repeatEvery": -1000}, "repeatEvery must be at least 1"),
        ({}, "Cron job must have either schedule or repeatEvery"),
        ({"repeatEvery": 1000, "jobOptions": {"maxAttempts": 0}}, "jobOptions.maxAttempts"),
        ({"repeatEvery": 1000, "preventOverlap": "yes"}, "preventOverlap must be a boolean"),
    ],
)
async def test_bad_cron_input_is_refused_and_changes_nothing(
    pair: Pair, clients: Clients, fields: dict[str, Any], error: str
) -> None:
    queue = new_queue("cron")
    message = {"cmd": "Cron", "name": f"{queue}-bad", "queue": queue, **fields}
    a, _ = clients
    before = await sql_value(
        pair.dsn, "SELECT count(*) FROM pgqueue_schedulers WHERE namespace = $1", pair.namespace
    )
    answer = await a.request(message)
    assert answer["ok"] is False and answer["error"].startswith(error), answer
    await assert_refused(pair, clients, message, answer["error"])
    after = await sql_value(
        pair.dsn, "SELECT count(*) FROM pgqueue_schedulers WHERE namespace = $1", pair.namespace
    )
    assert after == before


async def test_a_cron_fires_on_the_brokers_with_its_job_options(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    queue = new_queue("fire")
    name = f"{queue}-now"
    await a.call(
        "Cron",
        {
            "name": name,
            "queue": queue,
            "data": {"x": [1, 2]},
            "jobName": "beat",
            "repeatEvery": 3_600_000,
            "immediately": True,
            "jobOptions": {"maxAttempts": 7, "timeout": 4_000, "removeOnComplete": True},
        },
    )

    async def fired() -> dict[str, Any] | None:
        got = await b.call("GetJobs", {"queue": queue, "state": ["waiting"]})
        jobs = got.get("jobs") or []
        return jobs[0] if jobs else None

    job = await eventually(fired, timeout=15, message="the immediate tick's job")
    assert job["name"] == "beat" and job["data"] == {"x": [1, 2]}
    assert job["maxAttempts"] == 7 and job["timeout"] == 4_000 and job["removeOnComplete"]
    cron = (await b.call("CronGet", {"name": name}))["cron"]
    assert cron["executions"] == 1 and cron["nextRun"] > cron["lastRun"]
    rows = await sql(
        pair.dsn,
        "SELECT job_id FROM pgqueue_scheduler_ticks WHERE namespace = $1 AND scheduler = $2",
        pair.namespace,
        name,
    )
    assert [r["job_id"] for r in rows] == [job["id"]]
    await a.call("CronDelete", {"name": name})


async def test_push_with_repeat_makes_a_scheduler_whose_first_run_is_the_job(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    queue = new_queue("rep")
    pushed = await a.call(
        "PUSH",
        {
            "queue": queue,
            "name": "poll",
            "data": {"k": 1},
            "repeat": {"every": 3_600_000, "limit": 2, "immediately": True},
            "maxAttempts": 4,
        },
    )
    job = (await b.call("GetJob", {"id": pushed["id"]}))["job"]
    assert job["name"] == "poll" and job["maxAttempts"] == 4
    [cron] = [c for c in (await b.call("CronList"))["crons"] if c["queue"] == queue]
    assert cron["source"] == "repeat" and cron["repeatEvery"] == 3_600_000
    assert cron["executions"] == 1 and cron["maxLimit"] == 2
    bulk = await a.call(
        "PUSHB",
        {"queue": queue, "jobs": [{"name": "b", "data": 1, "repeat": {"pattern": "0 0 1 1 *"}}]},
    )
    assert len(bulk["ids"]) == 1
    assert (await b.call("GetState", {"id": bulk["ids"][0]}))["state"] == "delayed"
    refused = await a.request(
        {"cmd": "PUSH", "queue": queue, "name": "x", "repeat": {"every": 1000, "tz": 5}}
    )
    assert refused["ok"] is False and "repeat.tz" in refused["error"], refused
