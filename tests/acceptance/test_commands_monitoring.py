"""Monitoring commands: Stats, Metrics, Prometheus (each test on a namespace of its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance.command_support import Pair, assert_refused, dead_letter, pull, push
from tests.acceptance.conftest import BrokerFactory
from tests.helpers import sql

Clients = tuple[Connection, Connection]


@pytest.fixture
def pair(brokers: BrokerFactory, db_dsn: str, namespace: str) -> Pair:
    a, b = brokers.start("a", http=False), brokers.start("b", http=False)
    return Pair(a, b, db_dsn, namespace, brokers)


@pytest.fixture
async def clients(pair: Pair) -> AsyncIterator[Clients]:
    a = await Connection.open("127.0.0.1", pair.a.tcp_port)
    b = await Connection.open("127.0.0.1", pair.b.tcp_port)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


async def fill(conn: Connection) -> None:
    """Across four queues: 2 waiting, 1 prioritized, 1 delayed, 1 active, 1 completed,
    1 failed (in the DLQ)."""
    done = await push(conn, "q3")
    _, token = await pull(conn, "q3")
    await conn.call("ACK", {"id": done, "token": token})
    await dead_letter(conn, "q2")
    await push(conn, "q4")
    await pull(conn, "q4")
    await push(conn, "q1")
    await push(conn, "q2")
    await push(conn, "q1", priority=2)
    await push(conn, "q2", delay=600_000)


async def test_stats_count_the_jobs_of_the_whole_namespace(clients: Clients) -> None:
    a, b = clients
    await fill(a)
    answer = await b.call("Stats")
    assert set(answer) == {"ok", "reqId", "stats"}
    stats = answer["stats"]
    assert {
        key: stats[key]
        for key in (
            "waiting",
            "prioritized",
            "waitingChildren",
            "active",
            "delayed",
            "dlq",
            "completed",
            "failed",
        )
    } == {
        "waiting": 2,
        "prioritized": 1,
        "waitingChildren": 0,
        "active": 1,
        "delayed": 1,
        "dlq": 1,
        "completed": 1,
        "failed": 1,
    }
    assert stats["uptime"] > 0


async def test_stats_rates_count_the_namespaces_pushes_and_claims_on_any_broker(
    clients: Clients,
) -> None:
    a, b = clients
    await fill(a)  # 7 pushes and 3 claims through broker a, in well under 10 s

    async def rates() -> tuple[float, float] | None:
        stats = (await b.call("Stats"))["stats"]
        seen = (round(stats["pushPerSec"] * 10), round(stats["pullPerSec"] * 10))
        return seen if seen == (7, 3) else None

    # Broker b learns of them from the outbox; a second must end before it counts.
    assert await eventually(rates, timeout=8, interval=0.05) == (7, 3)


async def test_legacy_metrics_answer_the_totals_and_this_brokers_latencies(
    clients: Clients,
) -> None:
    a, _ = clients
    await fill(a)
    metrics = (await a.call("Metrics"))["metrics"]
    assert set(metrics) == {
        "totalPushed",
        "totalPulled",
        "totalCompleted",
        "totalFailed",
        "avgLatencyMs",
        "avgProcessingMs",
        "memoryUsageMb",
        "sqliteSizeMb",
        "activeConnections",
    }
    assert (metrics["totalPushed"], metrics["totalPulled"]) == (7, 3)
    assert (metrics["totalCompleted"], metrics["totalFailed"]) == (1, 1)
    assert metrics["avgLatencyMs"] > 0 and metrics["avgProcessingMs"] > 0
    assert metrics["memoryUsageMb"] > 1
    assert metrics["activeConnections"] == 1


async def complete(conn: Connection, queue: str) -> str:
    job_id = await push(conn, queue)
    job, token = await pull(conn, queue)
    assert job["id"] == job_id
    await conn.call("ACK", {"id": job_id, "token": token})
    return job_id


async def test_queue_metrics_answer_completions_per_minute_newest_first(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    now, earlier, long_ago = [await complete(a, "series") for _ in range(3)]
    await dead_letter(a, "series")  # a failure is not a completion
    await sql(
        pair.dsn,
        "UPDATE pgqueue_finished SET finished_at = now() - (CASE id WHEN $2 THEN '3 minutes'"
        " ELSE '8 days' END)::interval WHERE namespace = $1 AND id IN ($2, $3)",
        pair.namespace,
        earlier,
        long_ago,
    )
    finished_ms = {
        row["id"]: row["ms"]
        for row in await sql(
            pair.dsn,
            "SELECT id, (extract(epoch FROM finished_at) * 1000)::bigint AS ms"
            " FROM pgqueue_finished WHERE namespace = $1 AND id IN ($2, $3)",
            pair.namespace,
            now,
            earlier,
        )
    }

    answer = (await b.call("Metrics", {"queue": "series", "type": "completed"}))["data"]

    minute = int(answer["meta"]["prevTS"])  # wide integers travel as float64
    assert minute % 60_000 == 0
    # Where each job belongs, counted from the minute the broker answered in.
    expected = [0] * answer["count"]
    for ms in finished_ms.values():
        expected[(minute - ms // 60_000 * 60_000) // 60_000] += 1
    assert answer["data"] == expected, "the 8-day-old completion is outside the week"
    assert answer["count"] in (4, 5), "back to the minute 3 minutes ago, not further"
    assert answer["meta"] == {"count": 3, "prevTS": minute, "prevCount": 3}

    tail = await b.call("Metrics", {"queue": "series", "type": "completed", "start": 1})
    assert tail["data"]["data"] == expected[1:]
    head = await b.call("Metrics", {"queue": "series", "type": "completed", "end": 0})
    assert head["data"]["data"] == expected[:1]
    failed = (await b.call("Metrics", {"queue": "series", "type": "failed"}))["data"]
    assert sum(failed["data"]) == 1 and failed["meta"]["count"] == 1


async def test_queue_metrics_of_an_idle_queue_are_an_empty_series(clients: Clients) -> None:
    a, _ = clients
    answer = await a.call("Metrics", {"queue": "idle", "type": "failed"})
    data = answer["data"]
    assert (data["data"], data["count"], data["meta"]["count"]) == ([], 0, 0)


async def test_prometheus_answers_the_text_exposition(clients: Clients) -> None:
    a, _ = clients
    await push(a, "q1")
    await a.call("Ping")
    answer = await a.call("Prometheus")
    text = answer["data"]["metrics"]
    assert isinstance(text, str)
    assert 'pgqueue_commands_total{command="PUSH",outcome="ok"} 1.0' in text
    assert "# TYPE pgqueue_command_duration_seconds histogram" in text


BAD_COMMANDS: list[tuple[dict[str, Any], str]] = [
    ({"cmd": "Metrics", "queue": "q1"}, "Metrics type must be 'completed' or 'failed'"),
    (
        {"cmd": "Metrics", "queue": "q1", "type": "pushed"},
        "Metrics type must be 'completed' or 'failed'",
    ),
    ({"cmd": "Metrics", "queue": 7, "type": "failed"}, "Queue name must be a string"),
    ({"cmd": "Metrics", "queue": "q1", "type": "failed", "start": -1}, "start must be at least 0"),
    ({"cmd": "Metrics", "queue": "q1", "type": "failed", "end": "last"}, "end must be a number"),
]


@pytest.mark.parametrize(("message", "error"), BAD_COMMANDS)
async def test_bad_metrics_commands_get_a_clear_error(
    pair: Pair, clients: Clients, message: dict[str, Any], error: str
) -> None:
    await assert_refused(pair, clients, message, error)
