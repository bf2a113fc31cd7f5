"""Monitoring commands: Stats, Metrics, Prometheus (each test on a namespace of its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from tests.acceptance.command_support import Pair, assert_refused, dead_letter, pull, push
from tests.acceptance.conftest import BrokerFactory

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
    assert (stats["pushPerSec"], stats["pullPerSec"]) == (0, 0)


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


async def test_queue_metrics_answer_the_count_and_an_empty_series(clients: Clients) -> None:
    a, _ = clients
    await fill(a)
    answer = await a.call("Metrics", {"queue": "q3", "type": "completed"})
    assert {k: v for k, v in answer.items() if k != "reqId"} == {
        "ok": True,
        "data": {"meta": {"count": 1, "prevTS": 0, "prevCount": 0}, "data": [], "count": 0},
    }


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
