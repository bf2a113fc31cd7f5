"""The commands the dashboard reads, on two real brokers, over TCP and HTTP:
``ClusterOverview`` (/cluster), ``AlertFigures`` (/figures) and ``JobInspect``
(/jobs/{id}/inspect) — same answers from either broker, bad input refused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance.command_support import Pair, assert_refused, dead_letter, pull, push
from tests.acceptance.conftest import BrokerFactory

Clients = tuple[Connection, Connection]


@pytest.fixture
def pair(brokers: BrokerFactory, db_dsn: str, namespace: str) -> Pair:
    return Pair(brokers.start("a"), brokers.start("b"), db_dsn, namespace, brokers)


@pytest.fixture
async def clients(pair: Pair) -> AsyncIterator[Clients]:
    a = await Connection.open("127.0.0.1", pair.a.tcp_port)
    b = await Connection.open("127.0.0.1", pair.b.tcp_port)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


async def test_cluster_overview_lists_both_brokers_and_postgres_health(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    answer = await a.call("ClusterOverview")
    assert {x["brokerId"] for x in answer["brokers"]} >= {"a", "b"}
    assert sum(x["leader"] for x in answer["brokers"]) <= 1
    assert answer["self"]["brokerId"] == "a"
    assert answer["self"]["listening"] is True and answer["self"]["pollOnly"] is False
    tables = {t["table"]: t for t in answer["postgres"]["tables"]}
    assert tables["pgqueue_jobs"]["bytes"] > 0
    assert isinstance(answer["postgres"]["oldestXminAgeTransactions"], int)
    assert (await b.call("ClusterOverview"))["self"]["brokerId"] == "b"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{pair.b.http_port}") as http:
        body = (await http.get("/cluster")).json()
    assert body["ok"] is True and body["self"]["brokerId"] == "b"
    assert set(body) >= {"brokers", "workers", "workerStats", "postgres", "self"}


async def test_alert_figures_answer_the_same_on_both_transports_and_brokers(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    await dead_letter(a, "fig")
    await push(a, "fig", 1)
    tcp = (await b.call("AlertFigures", {"queue": "fig"}))["queues"]
    [row] = tcp
    assert row["oldestWaitingMs"] is not None and row["dlqTotal"] == 1
    every = (await a.call("AlertFigures"))["queues"]
    assert "fig" in {r["queue"] for r in every}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{pair.a.http_port}") as http:
        body = (await http.get("/figures", params={"queue": "fig"})).json()
    assert body["ok"] is True
    [http_row] = body["queues"]
    assert {k: v for k, v in http_row.items() if k != "oldestWaitingMs"} == {
        k: v for k, v in row.items() if k != "oldestWaitingMs"
    }


async def test_job_inspect_names_the_broker_holding_the_lease_and_the_timeline(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    job_id = await push(a, "insp", {"k": 1})
    await pull(b, "insp")  # leased through broker b, for worker "w"
    answer = await a.call("JobInspect", {"id": job_id})
    lease = answer["lease"]
    assert lease["state"] == "active" and lease["broker"] == "b" and lease["owner"] == "w"
    assert lease["until"] > 0 and lease["leftMs"] > 0
    assert [e["type"] for e in answer["timeline"]][:2] == ["pushed", "active"]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{pair.a.http_port}") as http:
        body = (await http.get(f"/jobs/{job_id}/inspect")).json()
        assert body["lease"]["broker"] == "b"
        gone = (await http.get("/jobs/no-such-job/inspect")).json()
    assert gone == {"ok": True, "lease": None, "timeline": []}


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"cmd": "AlertFigures", "queue": 7}, "Queue name must be a string"),
        ({"cmd": "JobInspect"}, "id is required"),
    ],
)
async def test_bad_dashboard_commands_get_a_clear_error(
    pair: Pair, clients: Clients, message: dict[str, object], error: str
) -> None:
    await assert_refused(pair, clients, message, error)


async def test_every_broker_reports_its_listen_and_projection_status(
    brokers: BrokerFactory,
) -> None:
    """What only a broker knows (LISTEN or poll-only, projection staleness) reaches the
    others through its session row: broker b lists a's, and a poll-only broker says so."""
    brokers.start("a", "--session-heartbeat-ms", "500")
    b = brokers.start("b", "--poll-only", "--session-heartbeat-ms", "500")
    conn = await Connection.open("127.0.0.1", b.tcp_port)
    try:

        async def both_reported() -> dict[str, dict[str, object]] | None:
            rows = (await conn.call("ListBrokers"))["brokers"]
            status = {r["brokerId"]: r["status"] for r in rows if r["brokerId"] in ("a", "b")}
            return status if len(status) == 2 and all(status.values()) else None

        status = await eventually(both_reported, timeout=20)
    finally:
        await conn.close()
    assert status["a"]["listening"] is True and status["a"]["pollOnly"] is False
    assert status["b"]["pollOnly"] is True and status["b"]["listening"] is False
    assert status["a"]["projection"] is True
    assert isinstance(status["a"]["projectionStalenessMs"], int | None)
