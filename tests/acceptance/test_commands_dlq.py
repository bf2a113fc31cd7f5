"""The dead-letter queue over the wire: listing, stats, audited redrive and purge, settings."""

from __future__ import annotations

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
    state,
)
from tests.acceptance.conftest import BrokerFactory

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]

ENTRY_KEYS = {
    "job",
    "enteredAt",
    "reason",
    "error",
    "attempts",
    "retryCount",
    "lastRetryAt",
    "nextRetryAt",
    "expiresAt",
}
REASONS = (
    "explicit_fail, max_attempts_exceeded, timeout, stalled, ttl_expired, worker_lost, "
    "unknown, dependency_failed"
)


def bare(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "reqId"}


async def discarded(conn: Connection, queue: str) -> str:
    """A job of ``queue`` dead-lettered by an operator (reason explicit_fail)."""
    job_id = await push(conn, queue)
    await conn.call("Discard", {"id": job_id})
    return job_id


# -- Dlq, GetDlqStats -------------------------------------------------------------------


async def test_dlq_answers_jobs_and_entries_of_the_dead_lettered_jobs(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await dead_letter(a, queue, {"to": "x"})
    answer = await b.call("Dlq", {"queue": queue})
    assert set(answer) == {"ok", "reqId", "jobs", "entries", "total"}
    assert answer["total"] == 1
    [job] = answer["jobs"]
    [entry] = answer["entries"]
    assert (job["id"], job["data"]) == (job_id, {"to": "x"})
    assert set(entry) == ENTRY_KEYS
    assert entry["job"] == job
    assert (entry["reason"], entry["error"], entry["retryCount"]) == (
        "max_attempts_exceeded",
        "boom",
        0,
    )
    assert [attempt["error"] for attempt in entry["attempts"]] == ["boom"]
    assert isinstance(entry["enteredAt"], float)


async def test_dlq_count_and_filter_select_the_entries(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    failed = await dead_letter(a, queue)
    first = await discarded(a, queue)
    second = await discarded(a, queue)
    only = await b.call("Dlq", {"queue": queue, "filter": {"reason": "explicit_fail"}})
    assert [job["id"] for job in only["jobs"]] == [first, second]
    capped = await b.call("Dlq", {"queue": queue, "count": 1})
    assert [job["id"] for job in capped["jobs"]] == [failed]
    page = await b.call("Dlq", {"queue": queue, "filter": {"limit": 1, "offset": 1}})
    assert [entry["job"]["id"] for entry in page["entries"]] == [first]


async def test_get_dlq_stats_counts_entries_by_reason(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    await dead_letter(a, queue)
    await discarded(a, queue)
    await discarded(a, queue)
    answer = await b.call("GetDlqStats", {"queue": queue})
    assert set(answer) == {"ok", "reqId", "data"}
    stats = answer["data"]["stats"]
    assert stats["total"] == 3
    assert stats["byReason"]["explicit_fail"] == 2
    assert stats["byReason"]["max_attempts_exceeded"] == 1
    assert stats["byQueue"] == {queue: 3}
    assert stats["oldestEntry"] <= stats["newestEntry"]


# -- RetryDlq, PurgeDlq, RemoveDlqJob ---------------------------------------------------


async def test_retry_dlq_of_one_job_sends_it_back_to_waiting(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await dead_letter(a, queue)
    other = await dead_letter(a, queue)
    assert bare(await b.call("RetryDlq", {"queue": queue, "jobId": job_id})) == {
        "ok": True,
        "count": 1,
    }
    assert await state(a, job_id) == "waiting"
    assert await state(a, other) == "failed"
    job, _ = await pull(b, queue)
    assert (job["id"], job["attempts"]) == (job_id, 0)
    assert (await b.call("RetryDlq", {"queue": queue, "jobId": job_id}))["count"] == 0


async def test_retry_dlq_count_caps_how_many_go_back(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    ids = [await dead_letter(a, queue) for _ in range(3)]
    assert (await b.call("RetryDlq", {"queue": queue, "count": 2}))["count"] == 2
    assert [await state(a, job_id) for job_id in ids] == ["waiting", "waiting", "failed"]


async def test_retry_dlq_with_a_filter_redrives_only_the_selected_entries(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    failed = await dead_letter(a, queue)
    thrown_out = await discarded(a, queue)
    answer = await b.call("RetryDlq", {"queue": queue, "filter": {"reason": "explicit_fail"}})
    assert answer["count"] == 1
    assert (await state(a, thrown_out), await state(a, failed)) == ("waiting", "failed")


async def test_retry_dlq_without_a_selection_redrives_the_whole_queue(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    await dead_letter(a, queue)
    await discarded(a, queue)
    assert (await b.call("RetryDlq", {"queue": queue}))["count"] == 2
    assert (await a.call("Dlq", {"queue": queue}))["jobs"] == []


async def test_purge_dlq_deletes_the_entries_and_their_jobs(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    ids = [await dead_letter(a, queue), await discarded(a, queue)]
    assert bare(await b.call("PurgeDlq", {"queue": queue})) == {"ok": True, "count": 2}
    assert [await state(a, job_id) for job_id in ids] == ["unknown", "unknown"]


async def test_remove_dlq_job_deletes_one_entry_and_says_whether_it_did(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await dead_letter(a, queue)
    kept = await dead_letter(a, queue)
    answer = await b.call("RemoveDlqJob", {"queue": queue, "jobId": job_id})
    assert bare(answer) == {"ok": True, "data": {"removed": True}}
    again = await b.call("RemoveDlqJob", {"queue": queue, "jobId": job_id})
    assert again["data"] == {"removed": False}
    assert (await state(a, job_id), await state(a, kept)) == ("unknown", "failed")


async def test_dlq_operations_are_audited_under_the_connections_actor(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    broker = brokers.start("guarded", "--auth-token", "ops=s3cret", http=False)
    conn = await Connection.open("127.0.0.1", broker.tcp_port, token="s3cret")
    try:
        queue = new_queue()
        retried = await dead_letter(conn, queue)
        removed = await dead_letter(conn, queue)
        await conn.call("RetryDlq", {"queue": queue, "jobId": retried, "why": "SMTP is back"})
        await conn.call("RemoveDlqJob", {"queue": queue, "jobId": removed})
        await conn.call("PurgeDlq", {"queue": queue})
    finally:
        await conn.close()
    rows = await audit_rows(db_dsn, namespace)
    assert [(r["actor"], r["action"], r["job_ids"], r["count"]) for r in rows] == [
        ("ops", "redrive", [retried], 1),
        ("ops", "remove", [removed], 1),
        ("ops", "purge", [], 0),
    ]


# -- settings ----------------------------------------------------------------------------


async def test_set_dlq_config_answers_the_config_in_force_for_every_broker(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    answer = await a.call(
        "SetDlqConfig",
        {"queue": queue, "config": {"autoRetry": True, "maxAutoRetries": 5, "maxAge": None}},
    )
    expected = {
        "autoRetry": True,
        "autoRetryInterval": 3_600_000,
        "maxAutoRetries": 5,
        "maxAge": None,
        "maxEntries": 10_000,
    }
    assert bare(answer) == {"ok": True, "config": expected}
    assert bare(await b.call("GetDlqConfig", {"queue": queue})) == {"ok": True, "config": expected}


async def test_get_dlq_config_of_an_unconfigured_queue_answers_the_defaults(
    clients: Clients,
) -> None:
    a, _ = clients
    config = (await a.call("GetDlqConfig", {"queue": new_queue()}))["config"]
    assert config == {
        "autoRetry": False,
        "autoRetryInterval": 3_600_000,
        "maxAutoRetries": 3,
        "maxAge": 604_800_000,
        "maxEntries": 10_000,
    }


async def test_set_stall_config_changes_only_the_fields_given(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    default = (await b.call("GetStallConfig", {"queue": queue}))["config"]
    answer = await a.call(
        "SetStallConfig", {"queue": queue, "config": {"maxStalls": 7, "enabled": False}}
    )
    assert bare(answer) == {"ok": True, "config": {**default, "maxStalls": 7, "enabled": False}}
    assert (await b.call("GetStallConfig", {"queue": queue}))["config"] == answer["config"]


# -- bad input -----------------------------------------------------------------------------

BAD_COMMANDS: list[tuple[dict[str, Any], str]] = [
    ({"cmd": "Dlq"}, "Queue name is required"),
    ({"cmd": "Dlq", "queue": "q", "filter": "x"}, "filter must be an object"),
    (
        {"cmd": "Dlq", "queue": "q", "filter": {"reason": "bored"}},
        f"reason must be one of {REASONS}",
    ),
    (
        {"cmd": "Dlq", "queue": "q", "filter": {"olderThan": "yesterday"}},
        "filter.olderThan must be a number",
    ),
    (
        {"cmd": "Dlq", "queue": "q", "filter": {"queue": "other"}},
        "filter.queue must be the command's queue",
    ),
    ({"cmd": "Dlq", "queue": "q", "filter": {"limit": 0}}, "filter.limit must be at least 1"),
    ({"cmd": "Dlq", "queue": "q", "count": -1}, "count must be at least 0"),
    ({"cmd": "GetDlqStats", "queue": 5}, "Queue name must be a string"),
    (
        {"cmd": "RetryDlq", "queue": "q", "jobId": 5},
        "jobId must be a non-empty string of at most 256 characters",
    ),
    (
        {"cmd": "RetryDlq", "queue": "q", "filter": {"retriable": "yes"}},
        "filter.retriable must be a boolean",
    ),
    ({"cmd": "RetryDlq", "queue": "q", "why": 5}, "why must be a string"),
    ({"cmd": "RetryDlq", "queue": "q", "count": 1.5}, "count must be an integer"),
    ({"cmd": "PurgeDlq"}, "Queue name is required"),
    ({"cmd": "PurgeDlq", "queue": "q", "reason": "bogus"}, f"reason must be one of {REASONS}"),
    ({"cmd": "RemoveDlqJob", "queue": "q"}, "jobId is required"),
    ({"cmd": "SetDlqConfig", "queue": "q"}, "config is required"),
    ({"cmd": "SetDlqConfig", "queue": "q", "config": "x"}, "config must be an object"),
    (
        {"cmd": "SetDlqConfig", "queue": "q", "config": {"maxAutoRetries": -1}},
        "maxAutoRetries must be at least 0",
    ),
    (
        {"cmd": "SetDlqConfig", "queue": "q", "config": {"color": "red"}},
        "unknown DLQ config field: color",
    ),
    (
        {"cmd": "SetStallConfig", "queue": "q", "config": {"enabled": "yes"}},
        "enabled must be a boolean",
    ),
    ({"cmd": "GetStallConfig"}, "Queue name is required"),
    ({"cmd": "GetDlqConfig", "queue": "a b"}, "Queue name contains invalid characters"),
]


@pytest.mark.parametrize(("message", "error"), BAD_COMMANDS)
async def test_bad_dlq_commands_get_a_clear_error_and_change_nothing(
    pair: Pair, clients: Clients, message: dict[str, Any], error: str
) -> None:
    a, _ = clients
    await dead_letter(a, "q")  # an entry that a stray redrive or purge would touch
    await assert_refused(pair, clients, message, error)
